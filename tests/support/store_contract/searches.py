"""Searches that must agree with `InMemoryStore`'s: random queries over awkward stored
values, Unicode text, integers past 64 bits, strings no row can hold, long tags,
many filters and tags, every filter operator, and the newest first."""

from __future__ import annotations

import random
from typing import Any
from uuid import uuid4

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery, MemoryStore
from lionmem.filters import AllOf, AnyOf, Condition, Ge, Gt, In, Le, Lt, Missing, Ne, NotIn, Present
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.recent import RecentStore

AWKWARD: list[Any] = [
    0,
    1,
    -1,
    True,
    False,
    0.0,
    -0.0,
    1.0,
    0.5,
    "1",
    "",
    None,
    [1],
    [True],
    {"a": 1},
    {},
    2**53,
    2**53 + 1,
    float(2**53),
    2**63 - 1,
    -(2**63),
    -(2**63) - 1,
    2**63,
    2.0**63,
    -(2.0**63),
    2**64,
    2**64 + 1,
    2.0**64,
    10**400,
    1e300,
]
"""Values where Python's `==` is easy to get wrong in SQL: bool against int against
float, the edges of 64-bit and float-exact integers, integers beyond float range."""


async def assert_searches_agree(store: MemoryStore, *, seed: int, rounds: int) -> None:
    """Store the same 120 items in `store` and an InMemoryStore, then check that
    `rounds` random queries return the same ids in the same order from both."""
    rng = random.Random(seed)
    items = []
    for n in range(120):
        metadata = {key: rng.choice(AWKWARD) for key in ("a", "b") if rng.random() < 0.8}
        tags = rng.sample(["x", "y", "z"], rng.randrange(3))
        content = f"item {n} {rng.choice(['red', 'blue'])}"
        items.append(MemoryItem(content=content, tags=tags, metadata=metadata))
    reference = InMemoryStore()
    for item in items:
        await reference.store(item)
        await store.store(item)
    # Queries may also name what no store can hold (U+0000, which PostgreSQL refuses,
    # and lone surrogates) or what SQL gives a meaning to (wildcards, quotes).
    values = [*AWKWARD, "\x00", "1\x00", "1\ud800"]
    keys = ["a", "b", "c", "a\x00", "a\udc00", "b' OR '1'='1"]
    for _ in range(rounds):
        filters = {key: rng.choice(values) for key in rng.sample(keys, rng.randrange(3))}
        query = MemoryQuery(
            text=rng.choice([None, None, "red", "BLUE", "m 1", "e", "\x00", "\ud800", "m%1", "_"]),
            tags=rng.choice([None, None, ["x"], ["y", "z"], ["z", "z"], ["x\x00"], ["\x00", "y"], ["\udfff", "z"]]),
            filters=filters or None,
            limit=rng.choice([0, 1, 3, 20, 1000, -1, -3]),
        )
        got = [i.id for i in await store.search(query)]
        assert got == [i.id for i in await reference.search(query)], query


UNICODE_TEXTS = [
    "İstanbul",
    "istanbul",
    "ΟΔΟΣ",
    "ΟΔΟΣΑ",
    "Straße",
    "STRASSE",
    "ﬃx",
    "e\u0301te",
    "été",
    "\u212a-9",
    "ǅemal",
]
"""Contents whose `lower()` is not one ASCII-like mapping per character."""


UNICODE_MATCHES = {
    "İST": [0],
    "IST": [1],  # "İ".lower() is "i" and a combining dot, so "ist" is not in "İstanbul"
    "ΔΟΣ": [2],  # a final sigma lowers to "ς"; "ΟΔΟΣΑ" holds "δοσ"
    "δοσ": [3],
    "SS": [5],  # lower(), not casefold(): "ß" is not "ss"
    "ẞ": [4],
    "ffi": [],  # the ligature stays one character
    "ﬃ": [6],
    "ÉTÉ": [8],  # no normalisation: "é" is not "e" and a combining acute
    "e\u0301t": [7],
    "k-9": [9],  # the Kelvin sign lowers to "k"
    "ǆem": [10],
}
"""Which of `UNICODE_TEXTS` each needle finds under the reference's rule,
`needle.lower() in str(content).lower()`. Needles of three or more characters go
through a durable store's trigram index, shorter ones do not."""


async def assert_unicode_text_agrees(store: MemoryStore) -> None:
    """Text search follows Python's `lower()` on both sides exactly, where it changes
    a string's length, depends on context, or differs from `casefold()`."""
    reference = InMemoryStore()
    items = [MemoryItem(content=text) for text in UNICODE_TEXTS]
    for item in items:
        await store.store(item)
        await reference.store(item)
    for needle, expected in UNICODE_MATCHES.items():
        query = MemoryQuery(text=needle)
        want = [items[n].id for n in expected]
        assert [i.id for i in await reference.search(query)] == want, needle
        assert [i.id for i in await store.search(query)] == want, needle


async def assert_big_integers_exact(store: MemoryStore) -> None:
    """Integers beyond 64 bits and beyond float range are kept and compared exactly."""
    big = MemoryItem(
        content="big", metadata={"k": 10**400, "n": -(2**63) - 1, "b": 2**64 + 1, "lo": -(2**64), "hi": 2**63}
    )
    await store.store(big)
    assert await store.retrieve(big.id) == big

    async def found(**filters: Any) -> bool:
        return [i.id for i in await store.search(MemoryQuery(filters=filters))] == [big.id]

    assert await found(k=10**400) and not await found(k=10**400 + 1)
    assert await found(n=-(2**63) - 1) and not await found(n=-(2**63))
    assert not await found(n=-(2.0**63))
    assert await found(b=2**64 + 1) and not await found(b=2.0**64)
    # A float beyond 64-bit integers may equal one: compared in Python, not in SQL.
    assert await found(lo=-(2.0**64)) and await found(hi=2.0**63)
    unwritable = MemoryItem(metadata={"k": 10**5000})
    with pytest.raises(ValueError, match=r"^metadata\['k'\] is an integer of more than \d+ digits"):
        await store.store(unwritable)
    assert await store.retrieve(unwritable.id) is None


class EqualsNone:
    """A filter value that a missing key matches, because `None == EqualsNone()`."""

    def __eq__(self, other: object) -> bool:
        return other is None

    __hash__ = None  # type: ignore[assignment]


UNSTORABLE = ["\x00", "\ud800", "\udfff"]
"""Characters no durable store keeps: U+0000 (PostgreSQL text cannot hold it) and
lone surrogates (no string holding one is written)."""


async def assert_unstorable_queries_agree(store: MemoryStore) -> None:
    """A query naming a character no stored text, tag or key holds gets the reference's
    answer, not an error: such text or string value matches nothing, such a tag is
    on no item, and a filter on such a key compares `None`."""
    items = [
        MemoryItem(content="a b", tags=["t"], metadata={"k": "v"}),
        MemoryItem(content="c", tags=["u"], metadata={"k": None}),
    ]
    reference = InMemoryStore()
    for item in items:
        await store.store(item)
        await reference.store(item)
    for odd in UNSTORABLE:
        queries = [
            MemoryQuery(text=odd),
            MemoryQuery(text=f"a{odd}b", limit=-1),
            MemoryQuery(tags=[f"a{odd}"]),
            MemoryQuery(tags=["t", f"a{odd}"]),
            MemoryQuery(tags=[f"a{odd}", "u"], limit=-1),
            MemoryQuery(filters={"k": f"v{odd}"}),
            MemoryQuery(filters={f"k{odd}": 1}),
            MemoryQuery(filters={f"k{odd}": None}),
            MemoryQuery(filters={f"k{odd}": None, "k": "v"}),
            MemoryQuery(filters={f"k{odd}": EqualsNone()}),
            MemoryQuery(filters={f"k{odd}": [1]}),
            MemoryQuery(filters={"k": [f"v{odd}"]}),
            MemoryQuery(filters={"k": {odd: 1}}),
            MemoryQuery(text="a", tags=["t"], filters={f"k{odd}": None, "k": "v"}),
        ]
        for query in queries:
            want = [i.id for i in await reference.search(query)]
            assert [i.id for i in await store.search(query)] == want, query
        assert len(await store.search(MemoryQuery(filters={f"k{odd}": None}))) == 2


async def assert_limits_beyond_64_bits_agree(store: MemoryStore) -> None:
    """`MemoryQuery` takes any int as a limit; one beyond what SQL's LIMIT holds asks
    for every match, as slicing does, whichever path the store plans."""
    reference = InMemoryStore()
    for n in range(3):
        item = MemoryItem(content=f"x{n}", tags=["t"], metadata={"k": [n]})
        await store.store(item)
        await reference.store(item)
    for limit in (2**63 - 1, 2**63, 10**20, -(2**63), -(10**20)):
        for fields in ({}, {"tags": ["t"]}, {"text": "X"}, {"filters": {"k": [1]}}):
            query = MemoryQuery(limit=limit, **fields)
            got = [i.id for i in await store.search(query)]
            assert got == [i.id for i in await reference.search(query)], query


async def assert_long_tags_agree(store: MemoryStore) -> None:
    """Tags of any length are kept and found as the reference finds them, and a
    replaced item is no longer found by its old long tag. Random characters, so that
    no index can compress them: a PostgreSQL index entry holds about 2,700 bytes."""
    rng = random.Random(11)
    letters = "abcdefghijklmnopqrstuvwxyzé€\U0001f600"

    def noise(length: int, alphabet: str = letters) -> str:
        return "".join(rng.choice(alphabet) for _ in range(length))

    tags = [noise(2_000, "abcdefghijklmnopqrstuvwxyz"), noise(1_000), noise(2_500), noise(100_000)]
    items = [MemoryItem(content=f"i{n}", tags=[tag, "short"]) for n, tag in enumerate(tags)]
    items.append(MemoryItem(content="plain", tags=["short"]))
    reference = InMemoryStore()
    for item in items:
        await store.store(item)
        await reference.store(item)
    queries = [MemoryQuery(tags=[tag]) for tag in tags] + [
        MemoryQuery(tags=[tags[2] + "x"]),
        MemoryQuery(tags=[tags[3][:-1]]),
        MemoryQuery(tags=[tags[3], tags[1]], limit=1),
        MemoryQuery(tags=[tags[2], tags[3]], limit=-1),
        MemoryQuery(tags=["short", tags[3]], limit=3),
        MemoryQuery(tags=[tags[3]], text="I3"),
    ]
    for query in queries:
        assert [i.id for i in await store.search(query)] == [i.id for i in await reference.search(query)]
    replaced = items[3].model_copy(update={"tags": [noise(3_000)]})
    await store.store(replaced)
    assert await store.search(MemoryQuery(tags=[tags[3]])) == []
    assert [i.id for i in await store.search(MemoryQuery(tags=replaced.tags))] == [replaced.id]
    assert await store.retrieve(replaced.id) == replaced


async def assert_many_filters_agree(store: MemoryStore) -> None:
    """A query may hold any number of filters: thousands agree with the reference,
    including one that decides the result from far beyond the first few."""
    reference = InMemoryStore()
    for n in range(40):
        item = MemoryItem(content=n, metadata={"even": n % 2 == 0, f"k{n}": n})
        await store.store(item)
        await reference.store(item)
    missing = {f"absent{i}": None for i in range(3000)}
    for filters in (
        missing,
        {**missing, "even": True},
        {**missing, "k7": 7},
        {**missing, "k7": 7, "even": True},
        {f"k{n}": None for n in range(39)},
    ):
        for limit in (3, 100, -2):
            query = MemoryQuery(filters=filters, limit=limit)
            got = [i.id for i in await store.search(query)]
            assert got == [i.id for i in await reference.search(query)], (len(filters), limit)
    # More parameters than one PostgreSQL statement may carry (65,535).
    query = MemoryQuery(filters={**{f"absent{i}": None for i in range(33_000)}, "even": True})
    assert [i.id for i in await store.search(query)] == [i.id for i in await reference.search(query)]


async def assert_filter_operators_agree(store: MemoryStore) -> None:
    """Every operator, on every kind of value a store keeps, alone, nested, beside
    other predicates and under limits, gives the reference's results (ADR-0099)."""
    reference = InMemoryStore()
    long = "x" * 199 + "y"  # as long as a PostgreSQL index keeps of a string
    held: list[Any] = [
        True,
        False,
        0,
        1,
        1.0,
        -0.0,
        2.5,
        2**53 + 1,
        float(2**53),
        2**70,
        -(2**70),
        "",
        "a",
        "B",
        "10",
        [],
        [1],
        [1, "a"],
        {},
        {"a": 1},
        None,
        # Where a decimal, a prefix or UTF-16 would order otherwise than Python does:
        1e23,
        10**23,
        5e-324,
        -1e308,
        0.1,
        long,
        long + "a",
        long[:-1] + "z",
        "\uffff",
        "\U0001f600",
        "é",
    ]
    long_key = "k" * 1_001
    for n, value in enumerate(held):
        metadata = {"v": value, "odd key.with dots": n % 3, "n": n, long_key: value}
        item = MemoryItem(content=f"item {n} {'even' if n % 2 == 0 else 'odd'}", tags=[f"t{n % 4}"], metadata=metadata)
        await store.store(item)
        await reference.store(item)
    bare = MemoryItem(content="bare item", metadata={"n": -1})
    await store.store(bare)
    await reference.store(bare)
    conditions: list[Condition] = [
        Ne(1),
        Ne(None),
        Ne("a"),
        Ne([1]),
        *(
            order(bound)
            for order in (Gt, Ge, Lt, Le)
            for bound in (
                1,
                0.5,
                True,
                2**53,
                2**53 + 1,
                -(2**70),
                "a",
                "",
                1e23,
                10**23,
                10**23 - 1,
                0.1,
                -1e308,
                5e-324,
                long,
                long[:-1],
                long + "a",
                "\U0001f600",
            )
        ),
        In([1]),
        In([None, "a", 2.5]),
        In([[1], {"a": 1}]),
        In([]),
        In({2**70, 0}),
        In(["a", "B"]),
        In([0, "10", 2.5]),
        NotIn([1, None]),
        NotIn([]),
        NotIn(["a", True]),
        Present(),
        Missing(),
        AnyOf(Lt(0.5), "a", Missing()),
        AllOf(Ge(0), Lt(2)),
        AnyOf(AllOf(Gt(0), Le(1)), In([[1]])),
        Ne(Present()),
    ]
    for condition in conditions:
        for query in (
            MemoryQuery(filters={"v": condition}, limit=100),
            MemoryQuery(filters={"v": condition}, limit=2),
            MemoryQuery(filters={"v": condition}, limit=-3),
            MemoryQuery(text="even", tags=["t0", "t2"], filters={"v": condition, "odd key.with dots": Le(1)}),
            MemoryQuery(filters={"missing key": condition, "n": Gt(15)}),
            MemoryQuery(filters={long_key: condition}),
        ):
            got = [i.id for i in await store.search(query)]
            assert got == [i.id for i in await reference.search(query)], query
            if isinstance(store, ForgettingStore):
                assert await store.count(query) == await reference.count(query), query


async def assert_search_newest_agrees(store: MemoryStore, *, seed: int = 11, rounds: int = 150) -> None:
    """`search_newest` is `search` without a limit, reversed, then cut by the limit,
    after replacements and deletions too, for every kind of predicate (ADR-0099)."""
    assert isinstance(store, RecentStore) and isinstance(store, ForgettingStore)
    reference = InMemoryStore()
    rng = random.Random(seed)
    ids = [uuid4() for _ in range(60)]
    for step in range(rounds):
        if rng.random() < 0.7:
            item = MemoryItem(
                id=rng.choice(ids),
                content=f"v{step} {rng.choice(['red', 'blue'])}",
                tags=rng.sample(["x", "y"], rng.randrange(3)),
                metadata={"k": rng.randrange(4)},
            )
            await store.store(item)
            await reference.store(item)
        elif rng.random() < 0.3:
            gone = rng.choice(ids)
            assert await store.delete(gone) == await reference.delete(gone)
        query = MemoryQuery(
            text=rng.choice([None, "red", "v1"]),
            tags=rng.choice([None, ["x"], ["x", "y"]]),
            filters=rng.choice([None, {"k": 1}, {"k": Ge(2)}, {"k": In([0, 3])}]),
            limit=rng.choice([-3, 0, 1, 5, 20, 100]),
        )
        want = [i.id for i in reversed(await reference.search(query.model_copy(update={"limit": 1000})))]
        assert [i.id for i in await store.search_newest(query)] == want[: query.limit], (step, query)
        assert [i.id for i in await reference.search_newest(query)] == want[: query.limit], (step, query)


async def assert_many_tags_agree(store: MemoryStore) -> None:
    """A query may name any number of tags, more than an SQL statement takes
    parameters for, alone or with the other predicates."""
    reference = InMemoryStore()
    for n in range(40):
        item = MemoryItem(content=f"n{n}", tags=[f"t{n}", "all"], metadata={"even": n % 2 == 0})
        await store.store(item)
        await reference.store(item)
    tags = [f"x{i}" for i in range(1_001)] + ["t3", "t8", "t9"]  # beyond lionmem's SQL share
    for fields in ({}, {"text": "N"}, {"filters": {"even": True}}):
        for limit in (1, 100, -1):
            query = MemoryQuery(tags=tags, limit=limit, **fields)
            got = [i.id for i in await store.search(query)]
            assert got == [i.id for i in await reference.search(query)], (fields, limit)
    # Beyond what this machine's SQLite takes in one statement (250,000 parameters).
    query = MemoryQuery(tags=[f"x{i}" for i in range(260_000)] + ["t3"])
    assert [i.id for i in await store.search(query)] == [i.id for i in await reference.search(query)]
