"""SQLite searches: the reference's results, from the plan an index drives."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import (
    SQLiteMemoryStore,
)
from lionmem.adapters.sqlite import _planner as sqlite_planner
from lionmem.adapters.sqlite._namespaces import span_of
from lionmem.filters import AllOf, Ge, In, Lt, Ne
from tests.support.sqlite_support import on_writer, run, traced_search, with_store
from tests.support.store_contract import (
    assert_searches_agree,
)

# One search of each kind of plan: a scan, each driving index (a tag, several tags, a
# filter value, the trigram index), predicates checked row by row, a recheck in
# Python (a list value), and limits.
EVERY_PLAN = [
    MemoryQuery(),
    MemoryQuery(text="apple"),
    MemoryQuery(text="ap"),
    MemoryQuery(tags=["a"]),
    MemoryQuery(tags=["t0", "t1"]),
    MemoryQuery(filters={"k": 1}),
    MemoryQuery(filters={"k": 1.0, "n": 0}),
    MemoryQuery(filters={"l": [1]}),
    MemoryQuery(text="note", tags=["a", "t1"], filters={"k": True}),
    MemoryQuery(tags=["a"], limit=3),
    MemoryQuery(filters={"l": [1]}, limit=2),
    MemoryQuery(text="apple", limit=-2),
]


def test_every_plan_returns_insertion_order_when_sqlite_may_return_rows_in_any_order(tmp_path: Path) -> None:
    """`PRAGMA reverse_unordered_selects` makes SQLite return the rows of any query
    without an ORDER BY in reverse, to find code that relies on the order a plan
    happens to give."""
    items = [
        MemoryItem(content=f"note {i} apple", tags=["a", f"t{i % 2}"], metadata={"k": 1, "n": i % 2, "l": [1]})
        for i in range(6)
    ]
    replaced = items[2].model_copy(update={"content": "note 2 apple again", "tags": ["t1", "a"]})
    reference = InMemoryStore()
    for item in [*items, replaced]:
        run(reference.store(item))

    async def body(store: SQLiteMemoryStore) -> None:
        await on_writer(store, lambda db: db.execute("PRAGMA reverse_unordered_selects = 1"))
        await store.store_many(items)
        await store.store(replaced)
        for query in EVERY_PLAN:
            found = [i.id for i in await store.search(query)]
            assert found == [i.id for i in await reference.search(query)], query
            assert len(found) > 1, query

    with_store(tmp_path / "s.db", body)


def search_contents(path: Path, items: list[MemoryItem], **query: Any) -> list[Any]:
    async def body(store: SQLiteMemoryStore) -> list[Any]:
        await store.store_many(items)
        return [i.content for i in await store.search(MemoryQuery(**query))]

    result: list[Any] = with_store(path, body)
    return result


@pytest.mark.parametrize(
    ("needle", "expected"),
    [
        ("%", ["100% sure"]),
        ("_", ["snake_case"]),
        ("\\", ["back\\slash"]),
        ("0% S", ["100% sure"]),
        ("e_c", ["snake_case"]),
        ("k\\s", ["back\\slash"]),
        ("É", ["Écran", "ÉCOLE"]),
        ("école", ["ÉCOLE"]),
        ("'k'", [{"k": 1}]),
        ("", ["100% sure", "snake_case", "back\\slash", "Écran", "ÉCOLE", {"k": 1}, "plain"]),
    ],
)
def test_text_wildcards_are_literal_and_case_follows_python(tmp_path: Path, needle: str, expected: list[Any]) -> None:
    contents: list[Any] = ["100% sure", "snake_case", "back\\slash", "Écran", "ÉCOLE", {"k": 1}, "plain"]
    items = [MemoryItem(content=c) for c in contents]
    assert search_contents(tmp_path / "m.db", items, text=needle) == expected


def test_long_needles_ask_the_index_for_their_opening_and_match_whole(tmp_path: Path) -> None:
    opening = "the same opening words, long enough to fill the index's phrase " * 2
    contents = [opening + "then one ending", opening + "then another ending", "unrelated " * 40]
    items = [MemoryItem(content=c) for c in contents]
    for needle, expected in [
        (opening + "THEN ONE", [contents[0]]),
        (opening + "then", contents[:2]),
        (opening * 3, []),
        ("unrelated " * 40, [contents[2]]),
    ]:
        assert search_contents(tmp_path / f"{len(needle)}.db", items, text=needle) == expected
    (driver,) = sqlite_planner._drivers(MemoryQuery(text="xyz" * 100_000), [], {}, {}, span_of(0))
    span = span_of(0)
    assert driver.params == ['"xyz" "yzx"', span.first, span.last]  # at 0, 3, ... 60, and the last, at 61


def test_the_index_is_asked_for_the_covering_trigrams_and_instr_decides(tmp_path: Path) -> None:
    """Rows that hold every trigram of a needle, but not the needle, are candidates
    only: a run of one letter holds the single trigram of a longer run."""
    contents = ["x" * 5_000 + "y", "x" * 4_999, "yxx" + "x" * 60, "xyxy"]
    items = [MemoryItem(content=c) for c in contents]
    for number, (needle, expected) in enumerate(
        [
            ("x" * 100 + "y", [contents[0]]),
            ("x" * 4_999, contents[:2]),
            ("x" * 5_000, [contents[0]]),
            ("yxxx", [contents[2]]),
            ("xyx", [contents[3]]),
        ]
    ):
        assert search_contents(tmp_path / f"{number}.db", items, text=needle) == expected
    (driver,) = sqlite_planner._drivers(MemoryQuery(text="X" * 64), [], {}, {}, span_of(0))
    assert driver.params == ['"xxx"', 0, 2**40 - 1]


def test_quotes_in_a_needle_are_text_for_the_trigram_index(tmp_path: Path) -> None:
    """The index is asked for a quoted FTS5 phrase; a needle's own quotes and FTS5
    operators must reach it as characters."""
    contents = ['say "hi" now', "a AND b", "x OR y*", "abc bcd"]
    items = [MemoryItem(content=c) for c in contents]
    for number, (needle, expected) in enumerate(
        [
            ('"hi"', ['say "hi" now']),
            ('y "', ['say "hi" now']),
            ('"', ['say "hi" now']),
            ("a and b", ["a AND b"]),
            ("or y*", ["x OR y*"]),
            ("abcd", []),
        ]
    ):
        assert search_contents(tmp_path / f"{number}.db", items, text=needle) == expected


def test_tags_any_of_case_sensitive(tmp_path: Path) -> None:
    items = [MemoryItem(content=n, tags=t) for n, t in ((1, ["a", "b"]), (2, ["A"]), (3, []), (4, ["b", "b"]))]
    assert search_contents(tmp_path / "m.db", items, tags=["b", "zzz"]) == [1, 4]
    assert search_contents(tmp_path / "n.db", items, tags=["A"]) == [2]


def test_filters_python_equality_and_none_for_missing(tmp_path: Path) -> None:
    metadata: list[dict[str, Any]] = [
        {"n": 1},
        {"n": 1.0},
        {"n": True},
        {"n": "1"},
        {},
        {"n": None},
        {"n": [1, 2]},
        {"n": {"a": [1]}},
        {"n": 2**60},
        {"n": 0},
        {"n": False},
    ]
    items = [MemoryItem(content=i, metadata=m) for i, m in enumerate(metadata)]
    path = tmp_path / "m.db"

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many(items)

        async def ids(**filters: Any) -> list[Any]:
            return [i.content for i in await store.search(MemoryQuery(filters=filters, limit=100))]

        assert await ids(n=1) == [0, 1, 2]
        assert await ids(n=True) == [0, 1, 2]
        assert await ids(n="1") == [3]
        assert await ids(n=None) == [4, 5]
        assert await ids(n=[1, 2]) == [6] and await ids(n=[1.0, True + 1]) == [6]
        assert await ids(n={"a": [1]}) == [7]
        assert await ids(n=2**60) == [8] and await ids(n=2**60 + 1) == []
        assert await ids(n=float(2**60)) == [8]
        assert await ids(n=0) == [9, 10] and await ids(n=-0.0) == [9, 10]
        assert await ids(n=2**70) == []
        assert await ids(n=(1, 2)) == []  # a tuple never equals a JSON list
        assert await ids(missing=None, n=1) == [0, 1, 2]

    with_store(path, body)


def test_searches_agree_with_the_reference_on_awkward_values(tmp_path: Path) -> None:
    with_store(tmp_path / "m.db", lambda store: assert_searches_agree(store, seed=96, rounds=1500))


def test_searches_read_only_rows_an_index_leads_to(tmp_path: Path) -> None:
    """One index drives each search in order and the other predicates are looked up per
    row, so no search scans the items table, and none but a several-tags-only search
    collects rows before returning the first (a LIST SUBQUERY or TEMP B-TREE)."""
    path = tmp_path / "m.db"
    queries = [
        MemoryQuery(text="abc", tags=["t", "u"], filters={"k": 1, "s": "v", "gone": None}),
        MemoryQuery(tags=["t"], filters={"k": 1, "l": [1]}),
        MemoryQuery(filters={"s": "v", "k": True}),
        MemoryQuery(tags=["t", "u"], filters={"gone": None}),
    ]

    async def body(store: SQLiteMemoryStore) -> list[str]:
        await store.store(MemoryItem(content="abcd", tags=["t", "u"], metadata={"k": 1, "s": "v", "l": [1]}))
        statements: list[str] = []
        for query in queries:
            found, read = await traced_search(store, query)
            assert len(found) == 1
            statements += read

        def plans(db: sqlite3.Connection) -> list[str]:
            return [" / ".join(row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + sql)) for sql in statements]

        explained = await on_writer(store, plans)
        return explained

    plans = with_store(path, body)
    assert len(plans) == len(queries)
    for plan in plans:
        assert "SCAN items " not in plan + " " and "TEMP B-TREE" not in plan, plan
    for plan in plans[:3]:
        assert "LIST SUBQUERY" not in plan and "CORRELATED SCALAR SUBQUERY" in plan, plan
    assert "LIST SUBQUERY" in plans[3] and "SEARCH items USING INTEGER PRIMARY KEY" in plans[3]


def test_the_newest_first_reads_each_driving_index_backwards_without_sorting(tmp_path: Path) -> None:
    """`search_newest` reads the index that drives a search from its end: no search
    sorts its rows (a TEMP B-TREE) or scans the items table, so a limit stops the read
    after that many matches (ADR-0099)."""
    queries = [
        MemoryQuery(limit=5),
        MemoryQuery(text="note", limit=5),
        MemoryQuery(tags=["t"], limit=5),
        MemoryQuery(tags=["t", "u"], limit=5),
        MemoryQuery(filters={"k": 1}, limit=5),
    ]

    async def body(store: SQLiteMemoryStore) -> list[tuple[list[int], str]]:
        await store.store_many(
            [MemoryItem(content=f"note {n}", tags=["t", "u"], metadata={"k": 1, "n": n}) for n in range(50)]
        )
        results: list[tuple[list[int], str]] = []
        for query in queries:
            found, read = await traced_search(store, query, newest_first=True)

            def plan(db: sqlite3.Connection, sql: str = read[0]) -> str:
                return " / ".join(row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + sql))

            results.append(([i.metadata["n"] for i in found], await on_writer(store, plan)))
        return results

    read = with_store(tmp_path / "m.db", body)
    for (newest, plan), query in zip(read, queries, strict=True):
        assert newest == [49, 48, 47, 46, 45], query
        assert "TEMP B-TREE" not in plan, (query, plan)
    # Without a predicate the table itself is the index: the namespace's range of its
    # rowids, backwards.
    assert read[0][1] == "SEARCH items USING INTEGER PRIMARY KEY (rowid>? AND rowid<?)"
    assert all("SCAN items " not in plan + " " for _, plan in read[1:]), read


def test_range_and_in_set_filters_are_read_from_the_metadata_index(tmp_path: Path) -> None:
    """An order comparison or a set of values on a metadata key reads the rows of the
    value index in that range, then walks their items in order; none scans the items
    table (ADR-0099). `AllOf` of two bounds reads one range between them."""
    queries = [
        MemoryQuery(filters={"n": Ge(45)}),
        MemoryQuery(filters={"n": AllOf(Ge(10), Lt(13))}),
        MemoryQuery(filters={"n": In([3, 47])}),
        MemoryQuery(filters={"s": Lt("b")}),
        MemoryQuery(filters={"n": Lt(2.5)}, tags=["t"]),
        MemoryQuery(filters={"s": In(["a", "q"])}),
    ]

    async def body(store: SQLiteMemoryStore) -> list[tuple[list[int], str]]:
        await store.store_many(
            [
                MemoryItem(content=f"note {n}", tags=["t"], metadata={"n": n, "s": "a" if n == 7 else "z"})
                for n in range(50)
            ]
        )
        results: list[tuple[list[int], str]] = []
        for query in queries:
            found, read = await traced_search(store, query)

            def plan(db: sqlite3.Connection, sql: str = read[0]) -> str:
                return " / ".join(row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + sql))

            results.append(([i.metadata["n"] for i in found], await on_writer(store, plan)))
        return results

    read = with_store(tmp_path / "m.db", body)
    assert [found for found, _ in read] == [[45, 46, 47, 48, 49], [10, 11, 12], [3, 47], [7], [0, 1, 2], [7]]
    assert "(key=? AND value>? AND value<?)" in read[1][1]
    for index in range(6):
        assert "INDEX item_meta_by_value (key=? AND value" in read[index][1], (index, read[index][1])
        assert "SCAN items" not in read[index][1], (index, read[index][1])


def test_the_narrowest_index_drives(tmp_path: Path) -> None:
    """Of several usable indexes, the one with the fewest entries leads the search."""
    common = [
        MemoryItem(content=f"common note {n}", tags=["all"], metadata={"kind": 1, "owner": "many"}) for n in range(400)
    ]
    rare = MemoryItem(content="common note rare", tags=["all", "few"], metadata={"kind": 1, "owner": "one"})
    cases = [
        (MemoryQuery(filters={"kind": 1, "owner": "one"}), "d.key = 'owner'"),
        (MemoryQuery(filters={"owner": "one", "kind": 1}), "d.key = 'owner'"),
        (MemoryQuery(text="common", tags=["few"]), "d.tag = 'few'"),
        (MemoryQuery(text="rare", tags=["all"], filters={"kind": 1}), "items_text MATCH"),
        (MemoryQuery(tags=["all", "few"], filters={"owner": "one"}), "d.key = 'owner'"),
        (MemoryQuery(tags=["few", "nothing"], filters={"kind": 1}), "items.seq IN"),
        (MemoryQuery(text="RAR"), "items_text MATCH"),  # three characters are one trigram
    ]

    async def body(store: SQLiteMemoryStore) -> list[str]:
        await store.store_many([*common[:200], rare, *common[200:]])
        statements: list[str] = []
        for query, _ in cases:
            found, read = await traced_search(store, query)
            assert [i.id for i in found] == [rare.id], query
            statements += read
        return statements

    for sql, (query, lead) in zip(with_store(tmp_path / "m.db", body), cases, strict=True):
        where = sql.split(" WHERE ", 1)[1]
        assert where.startswith(lead), (query, sql)
        # What the leading index settles is not looked up again.
        settles_tags = lead.startswith(("d.tag", "items.seq IN"))
        assert ("t.tag IN" in where) is (bool(query.tags) and not settles_tags), (query, sql)
        assert where.count("'owner'") == (1 if "owner" in (query.filters or {}) else 0), (query, sql)


@pytest.mark.parametrize(("limit", "lead"), [(1000, "d.key = 'owner'"), (-1, "d.key = 'owner'"), (4, "d.key = 'kind'")])
def test_ties_at_the_count_cap_are_counted_further_for_long_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int, lead: str
) -> None:
    """With a cap of 4, kind (60 items) and owner (30) tie; a search wanting more than
    4 rows counts them to 64 and is led by owner, a shorter one keeps the first."""
    monkeypatch.setattr(sqlite_planner, "_PROBE", 4)
    items = [MemoryItem(content=n, metadata={"kind": 1, "owner": "half" if n % 2 else "other"}) for n in range(60)]
    query = MemoryQuery(filters={"kind": 1, "owner": "half"}, limit=limit)

    async def body(store: SQLiteMemoryStore) -> tuple[list[MemoryItem], list[str]]:
        await store.store_many(items)
        return await traced_search(store, query)

    found, statements = with_store(tmp_path / "m.db", body)
    assert [i.content for i in found] == list(range(1, 60, 2))[:limit]
    assert statements[0].split(" WHERE ")[1].startswith(lead), statements


@pytest.mark.parametrize(
    ("value", "decided_in_sql"),
    [
        ("v", True),
        (7, True),
        (True, True),
        (2.5, True),
        (None, True),
        (2**70, False),
        (2.0**70, False),
        ([1], False),
        ({"a": 1}, False),
    ],
)
def test_a_limit_goes_into_the_sql_when_the_sql_decides_the_filter(
    tmp_path: Path, value: Any, decided_in_sql: bool
) -> None:
    """Values SQL compares exactly are settled there, with the limit; the others are
    narrowed by kind and checked in Python, which must read every candidate. The
    filter on `j` leads (the first of equal counts), so `k` is a condition of its own."""
    match = MemoryItem(content="m", metadata={"j": "only", "k": value})
    other = MemoryItem(content="o", metadata={"k": "other"})

    async def body(store: SQLiteMemoryStore) -> tuple[list[MemoryItem], list[str]]:
        await store.store_many([other, match])
        return await traced_search(store, MemoryQuery(filters={"j": "only", "k": value}, limit=5))

    found, (statement,) = with_store(tmp_path / "m.db", body)
    assert [i.id for i in found] == [match.id]
    assert statement.split(" WHERE ")[1].startswith("d.key = 'j'"), statement
    assert "m.key = 'k'" in statement, statement  # narrowed in SQL either way
    assert statement.endswith(" LIMIT 5") is decided_in_sql, statement


def test_a_metadata_key_named_like_a_predicate_is_still_checked(tmp_path: Path) -> None:
    both = MemoryItem(content="a", tags=["t"], metadata={"tags": "t", "text": 1})
    tag_only = MemoryItem(content="b", tags=["t"])

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many([both, tag_only])
        for query in (
            MemoryQuery(tags=["t"], filters={"tags": "t"}),
            MemoryQuery(tags=["t", "u"], filters={"tags": "t"}),
            MemoryQuery(text="a", filters={"text": 1}),
        ):
            assert [i.id for i in await store.search(query)] == [both.id], query

    with_store(tmp_path / "m.db", body)


def test_limits_follow_the_reference(tmp_path: Path) -> None:
    items = [MemoryItem(content=f"n{i}", tags=["t", "u"], metadata={"k": 1, "s": "v"}) for i in range(5)]
    decoy = MemoryItem(content="other", tags=["x"], metadata={"k": 2})

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many([*items[:2], decoy, *items[2:]])
        for limit in (0, 2, 5, 9, -1, -4, -5, -9):
            want = [i.content for i in items][:limit]
            for query in (
                MemoryQuery(tags=["t"], limit=limit),
                MemoryQuery(text="N", limit=limit),
                MemoryQuery(text="n", tags=["t"], limit=limit),
                MemoryQuery(filters={"k": 1.0}, limit=limit),
                MemoryQuery(tags=["t"], filters={"k": True, "s": "v"}, limit=limit),
                MemoryQuery(tags=["u", "t"], filters={"s": "v", "gone": None}, limit=limit),
            ):
                assert [i.content for i in await store.search(query)] == want, query

    with_store(tmp_path / "m.db", body)


@pytest.mark.parametrize(
    ("query", "newest_first", "read"),
    [
        (MemoryQuery(filters={"n": Ge(5)}, limit=3), False, "walk"),  # 95 of 100, 7 in the first 12 rows
        (MemoryQuery(filters={"n": Ge(5)}, limit=3), True, "walk"),
        (MemoryQuery(filters={"n": Ge(10)}, limit=3), False, "gather"),  # 2 in the first 12 rows
        (MemoryQuery(filters={"n": Ge(80)}, limit=3), False, "gather"),  # the first 12 rows hold none
        (MemoryQuery(filters={"n": Ge(80)}, limit=3), True, "walk"),  # but the last 12 do
        (MemoryQuery(filters={"n": Ge(97)}, limit=3), True, "gather"),  # 3 candidates: gathered
        (MemoryQuery(filters={"n": Ge(5)}, limit=-1), False, "gather"),  # no limit stops a walk
        (MemoryQuery(filters={"n": Ge(5)}, limit=1_001), False, "gather"),  # past _WALK_MOST
        (MemoryQuery(filters={"n": Ge(5)}, tags=["even", "third"], limit=3), False, "walk"),
        # Tags or a set alone: the first 3 of each tag or value, never all of them.
        (MemoryQuery(tags=["even", "third"], limit=3), False, "merge"),
        (MemoryQuery(tags=["even", "third"], limit=3), True, "merge"),
        (MemoryQuery(filters={"n": In(list(range(0, 100, 2)))}, limit=3), False, "merge"),
        (MemoryQuery(tags=["even", "third"], filters={"n": Ge(10)}, limit=3), False, "gather"),  # n decides too
        (MemoryQuery(tags=["even", "third"], limit=-1), False, "gather"),  # the slice needs every match
    ],
)
def test_a_broad_search_with_a_small_limit_walks_the_items_in_order_or_merges_its_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, query: MemoryQuery, newest_first: bool, read: str
) -> None:
    """A range that gathers at least `_GATHER_MOST` candidates is read by walking the
    items in order instead, when the first `_WALK_ROWS_A_RESULT` rows a result hold the
    limit's matches. Several tags or a set of values that decide the search alone are
    read as the first `limit` entries of each, merged. The results are the reference's
    every way."""
    monkeypatch.setattr(sqlite_planner, "_GATHER_MOST", 8)
    monkeypatch.setattr(sqlite_planner, "_WALK_ROWS_A_RESULT", 4)
    items = [
        MemoryItem(
            content=f"note {n}",
            tags=["even" if n % 2 == 0 else "odd", *(["third"] if n % 3 == 0 else [])],
            metadata={"n": n},
        )
        for n in range(100)
    ]

    async def body(store: SQLiteMemoryStore) -> tuple[list[MemoryItem], list[str]]:
        await store.store_many(items)
        return await traced_search(store, query, newest_first=newest_first)

    async def expected() -> list[MemoryItem]:
        reference = InMemoryStore()
        await reference.store_many(items)
        return await (reference.search_newest(query) if newest_first else reference.search(query))

    found, statements = with_store(tmp_path / "m.db", body)
    assert found == run(expected())
    (statement,) = statements
    merged = re.search(r"ORDER BY seq( DESC)? LIMIT", statement) is not None
    shape = "merge" if merged else "gather" if "items.seq IN" in statement else "walk"
    assert shape == read, statement


@pytest.mark.parametrize("newest_first", [False, True])
def test_merged_reads_take_at_most_the_limit_of_each_tag_or_value_and_sort_nothing(
    tmp_path: Path, newest_first: bool
) -> None:
    """At any size a search for several tags, or a set of values, alone reads `limit`
    index entries for each and sorts nothing: each read walks its index in order and
    stops at the limit. An item holding two of the tags, or two equal members
    (`1` and `True`), is one result."""
    queries = [
        MemoryQuery(tags=["a", "b", "c"], limit=4),
        MemoryQuery(filters={"k": In([1, True, "x"])}, limit=4),
        MemoryQuery(filters={"k": In(["x", "y"])}, limit=2),
    ]
    items = [
        MemoryItem(
            content=f"note {n}",
            tags=[["a"], ["b"], ["a", "b"], ["d"]][n % 4],
            metadata={"k": [1, "x", 2, "y", True, 1.0][n % 6], "n": n},
        )
        for n in range(240)
    ]

    async def body(store: SQLiteMemoryStore) -> list[tuple[list[MemoryItem], str]]:
        await store.store_many(items)
        results: list[tuple[list[MemoryItem], str]] = []
        for query in queries:
            found, read = await traced_search(store, query, newest_first=newest_first)

            def plan(db: sqlite3.Connection, sql: str = read[0]) -> str:
                return " / ".join(row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + sql))

            results.append((found, read[0] + " => " + await on_writer(store, plan)))
        return results

    async def expected() -> list[list[MemoryItem]]:
        reference = InMemoryStore()
        await reference.store_many(items)
        search = reference.search_newest if newest_first else reference.search
        return [await search(query) for query in queries]

    read = with_store(tmp_path / "m.db", body)
    assert [found for found, _ in read] == run(expected())
    for (_, plan), query in zip(read, queries, strict=True):
        members = len(query.tags or ()) or len(next(iter((query.filters or {}).values())).values)
        assert plan.count(f"LIMIT {query.limit})") == members, plan
        assert "TEMP B-TREE" not in plan and "SCAN items" not in plan, plan


@pytest.mark.parametrize(
    ("condition", "narrowed"),
    [
        (AllOf(Ge(10), Lt(13)), ["(d.value >= 10 AND", "(d.value < 13 AND"]),
        (AllOf(Ge(10), 11), ["(d.value >= 10 AND", "(d.value = 11 AND"]),  # a plain member is an equality
        (AllOf(Ge(10), Ne(11), Lt(13)), ["(d.value >= 10 AND", "(d.value < 13 AND"]),  # Ne: Python decides
        (AllOf(Ge(10), [11]), ["(d.value >= 10 AND"]),  # nor does SQL narrow a list
        (AllOf(Ne(11), [11]), []),  # no member narrows: read in order, decided in Python
    ],
)
def test_all_of_reads_the_rows_every_member_sql_can_narrow_keeps(
    tmp_path: Path, condition: AllOf, narrowed: list[str]
) -> None:
    """`AllOf` reads the index rows its narrowable members all keep; a member SQL
    cannot narrow is left to Python, so the results are the reference's."""
    items = [MemoryItem(content=f"note {n}", metadata={"n": [11] if n == 20 else n}) for n in range(30)]
    query = MemoryQuery(filters={"n": condition})

    async def body(store: SQLiteMemoryStore) -> tuple[list[MemoryItem], list[str]]:
        await store.store_many(items)
        return await traced_search(store, query)

    async def expected() -> list[MemoryItem]:
        reference = InMemoryStore()
        await reference.store_many(items)
        return await reference.search(query)

    found, (statement,) = with_store(tmp_path / "m.db", body)
    assert found == run(expected())
    assert ("item_meta AS d" in statement) is bool(narrowed), statement
    assert all(part in statement for part in narrowed), statement
