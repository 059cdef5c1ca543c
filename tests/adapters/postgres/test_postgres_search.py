"""PostgreSQL searches: the reference's results, the plans behind them, and long results."""

from __future__ import annotations

import math
import random
import struct
import threading
from collections.abc import Callable
from typing import Any

import psycopg
import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import (
    PostgresMemoryStore,
)
from lionmem.adapters.postgres._planner import plan_search
from lionmem.filters import Ge, Gt, In, Le, Lt
from tests.support.postgres_support import with_store
from tests.support.store_contract import (
    assert_searches_agree,
    ticking,
)


def test_searches_agree_with_the_reference_on_awkward_values(pg_url: str) -> None:
    with_store(pg_url, lambda store: assert_searches_agree(store, seed=97, rounds=400))


def test_filters_follow_python_equality(pg_url: str) -> None:
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
        {"n": 2.5},
    ]
    items = [MemoryItem(content=i, metadata=m) for i, m in enumerate(metadata)]

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many(items)

        async def ids(**filters: Any) -> list[Any]:
            return [i.content for i in await store.search(MemoryQuery(filters=filters, limit=100))]

        assert await ids(n=1) == [0, 1, 2] and await ids(n=True) == [0, 1, 2]
        assert await ids(n="1") == [3] and await ids(n=None) == [4, 5]
        assert await ids(n=[1.0, True + 1]) == [6] and await ids(n={"a": [True]}) == [7]
        assert await ids(n=2**60) == [8] and await ids(n=float(2**60)) == [8]
        assert await ids(n=0) == [9, 10] and await ids(n=False) == [9, 10]
        assert await ids(n=2.5) == [11] and await ids(n=(1, 2)) == []
        for limit in (0, 1, -1, -3):
            assert [i.content for i in await store.search(MemoryQuery(filters={"n": 1}, limit=limit))] == [0, 1, 2][
                :limit
            ]

    with_store(pg_url, body)


def _neighbours(rng: random.Random) -> list[float | int]:
    """Numbers where decimals and floats part: floats of every magnitude with their
    neighbours, integers about 2**53 and the floats beside them, and 1e23 beside 10**23."""
    values: list[float | int] = []
    for _ in range(25):
        x = struct.unpack("<d", rng.randbytes(8))[0]
        if math.isfinite(x):
            values += [x, math.nextafter(x, math.inf), math.nextafter(x, -math.inf)]
    for exponent in (53, 54, 63, 70):
        for n in (2**exponent - 1, 2**exponent, 2**exponent + 1):
            values += [n, -n, float(n)]
    values += [10**23, 1e23, 10**23 - 1, 5e-324, 1e-323, -0.0, 0, 1, True, False, 0.1, 0.30000000000000004]
    return values


def test_order_comparisons_on_numbers_are_exact(pg_url: str) -> None:
    """An order comparison is decided from the decimals `numeric` holds; whatever the
    magnitude, the results are Python's (ADR-0099 D5)."""
    rng = random.Random(53)
    held = _neighbours(rng)
    items = [MemoryItem(content=n, metadata={"v": value}) for n, value in enumerate(held)]
    bounds = [*rng.sample(held, 40), math.nextafter(2.0**53, 0), 9.5, -(2**53) - 0.5]

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many(items)
        for order in (Gt, Ge, Lt, Le):
            for bound in bounds:
                query = MemoryQuery(filters={"v": order(bound)}, limit=len(items))
                want = [item.id for item in items if order(bound) == item.metadata["v"]]
                assert [i.id for i in await store.search(query)] == want, query

    with_store(pg_url, body)


def test_an_equality_or_set_alone_reads_the_first_rows_of_each_value_in_order(pg_url: str) -> None:
    """An equality or `In` filter that is the whole query, under a limit of 1 to 1,000,
    reads at most `limit` rows of each value from `lionmem_meta`'s B-trees in order,
    not every match from the GIN index; with anything else in the query, or a value
    those rows cannot decide exactly, it does not. Every way, the reference's results
    (ADR-0099 D5)."""
    long = "x" * 200  # as long as the start a row keeps: not decided by the rows
    values: list[Any] = [1, 1.0, True, "1", 2.5, long, long + "y", 0, False, 2**60, float(2**60), "u1"]
    items = [
        MemoryItem(content=f"n{n}", tags=["t"] if n % 2 else [], metadata={"k": values[n % len(values)], "n": n})
        for n in range(120)
    ]
    merged = [
        MemoryQuery(filters={"k": 1}, limit=4),
        MemoryQuery(filters={"k": "1"}, limit=3),
        MemoryQuery(filters={"k": In([2.5, "u1", False])}, limit=5),
        MemoryQuery(filters={"k": True}, limit=200),
        MemoryQuery(filters={"k": In([1, True, 1.0, "1"])}, limit=6),  # equal members are one read
    ]
    reads_of = [1, 1, 3, 1, 2]
    unmerged = [
        MemoryQuery(filters={"k": long}, limit=3),  # the rows keep only its start
        MemoryQuery(filters={"k": 2**60}, limit=3),  # past 2**53
        MemoryQuery(filters={"k": In([1, long])}, limit=3),
        MemoryQuery(filters={"k": 1}, tags=["t"], limit=3),  # the tags decide too
        MemoryQuery(filters={"k": 1, "n": Ge(10)}, limit=3),
        MemoryQuery(filters={"k": 1}, limit=-2),  # the slice needs every match
        MemoryQuery(filters={"k": 1}, limit=1_001),  # a bitmap fetches many matches faster
        MemoryQuery(filters={"k" * 1_001: 1}, limit=3),  # a key too long to have rows
    ]
    reference = InMemoryStore()

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many(items)
        await reference.store_many(items)
        for newest_first in (False, True):
            for query in [*merged, *unmerged]:
                search = store.search_newest if newest_first else store.search
                expected = reference.search_newest if newest_first else reference.search
                assert await search(query) == await expected(query), (query, newest_first)
                for now in (None, 1.0):  # with a time, each read joins its rows to their items' expiry
                    plan = plan_search(store.namespace, query, newest_first=newest_first, now=now)
                    statement = plan.statement.as_string()
                    reads = statement.count("(SELECT m.seq FROM lionmem_meta AS m")
                    assert reads == (reads_of[merged.index(query)] if query in merged else 0), statement
                    joined = statement.count("JOIN lionmem_items AS e ON e.namespace = m.namespace")
                    assert joined == (0 if now is None else reads), statement

    with_store(pg_url, body)


def test_the_server_reads_a_merged_equality_from_the_b_tree_and_stops_at_the_limit(pg_url: str) -> None:
    """At a size where the server plans by its statistics, the ordered reads are
    index scans that a LIMIT stops, and the GIN index is not asked."""
    items = [MemoryItem(content=n, metadata={"owner": f"u{n % 50}", "n": n % 7}) for n in range(20_000)]

    async def body(store: PostgresMemoryStore) -> list[str]:
        await store.store_many(items)
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as conn:
            await conn.execute("ANALYZE lionmem_items, lionmem_meta")
        return [
            await store.explain(MemoryQuery(filters={"owner": "u7"})),
            await store.explain(MemoryQuery(filters={"n": In([2, 5])}), newest_first=True),
        ]

    strings, numbers = with_store(pg_url, body)
    assert "Index Only Scan using lionmem_meta_strings" in strings, strings
    assert numbers.count("Index Only Scan Backward using lionmem_meta_numbers") == 2, numbers
    for plan in (strings, numbers):
        assert "lionmem_items_metadata" not in plan and "Bitmap" not in plan, plan


def test_a_limited_search_reads_further_when_python_drops_candidates(pg_url: str) -> None:
    # 300 lists narrow by kind but fail Python's ==; the matches sit behind them.
    items = [MemoryItem(content=i, metadata={"v": [i + 10]}) for i in range(300)]
    items += [MemoryItem(content=f"hit{i}", metadata={"v": [True]}) for i in range(3)]

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many(items)
        for limit, want in ((1, ["hit0"]), (2, ["hit0", "hit1"]), (9, ["hit0", "hit1", "hit2"]), (0, [])):
            found = await store.search(MemoryQuery(filters={"v": [1]}, limit=limit))
            assert [i.content for i in found] == want

    with_store(pg_url, body)


def test_long_results_are_fetched_in_slices_with_other_tasks_between(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lionmem.adapters._codec import SHARE_EVERY

    def turns() -> int:
        return 0

    seen: list[tuple[int, int]] = []  # (rows fetched, loop turns so far) at each fetch
    fetchmany = psycopg.AsyncCursor.fetchmany

    async def recorded(cursor: psycopg.AsyncCursor[Any], size: int = 0) -> list[Any]:
        rows = await fetchmany(cursor, size)
        seen.append((len(rows), turns()))
        return rows

    monkeypatch.setattr(psycopg.AsyncCursor, "fetchmany", recorded)
    items = [MemoryItem(content=i) for i in range(2 * SHARE_EVERY + 1)]

    async def body(store: PostgresMemoryStore) -> None:
        nonlocal turns
        await store.store_many(items)
        async with ticking() as turns:
            seen.clear()
            found = await store.search(MemoryQuery(limit=-1))
        assert len(found) == 2 * SHARE_EVERY
        assert [n for n, _ in seen] == [SHARE_EVERY, SHARE_EVERY, 1]
        assert seen[0][1] < seen[1][1] < seen[2][1]  # other tasks ran between slices
        seen.clear()
        assert await store.retrieve(items[0].id) is not None and [n for n, _ in seen] == [1]
        seen.clear()
        await store.store(items[0])
        assert seen == []  # a statement without rows fetches nothing

    with_store(pg_url, body)


def test_long_results_are_decoded_off_the_event_loop(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from lionmem.adapters import _codec, _settling

    threads: list[tuple[str, bool]] = []

    def recorded(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            threads.append((name, threading.get_ident() == loop_thread))
            return function(*args)

        return wrapper

    monkeypatch.setattr("lionmem.adapters._settling.decode_in_slices", recorded("slices", _codec.decode_in_slices))
    monkeypatch.setattr("lionmem.adapters._settling.matching", recorded("matching", _settling.matching))
    loop_thread = threading.get_ident()
    few = _codec.SHARE_EVERY
    items = [MemoryItem(content=i, metadata={"v": [i % 2]}) for i in range(few + 2)]

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many(items)
        for query, count, where in [
            (MemoryQuery(limit=few), few, ("slices", True)),
            (MemoryQuery(limit=few + 1), few + 1, ("slices", False)),
            (MemoryQuery(limit=-1), few + 1, ("slices", False)),
            (MemoryQuery(filters={"v": [0]}, limit=-1), few // 2, ("matching", False)),
            (MemoryQuery(filters={"v": [0]}, limit=2), 2, ("matching", True)),
        ]:
            threads.clear()
            found = await store.search(query)
            assert [i.content for i in found] == [
                i.content for i in items if not query.filters or i.metadata["v"] == [0]
            ][:count]
            assert threads == [where], query

    with_store(pg_url, body)
