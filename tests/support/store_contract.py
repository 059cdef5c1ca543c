"""The durable stores' shared contract, beyond what the public kit checks: random
searches over awkward stored values compared with InMemoryStore, the rules for call
arguments, batches that stay whole when their tasks are cancelled, and the limits of
what a durable store keeps.

`STORE_CHECKS` is run against every durable store by one test module,
`tests/adapters/test_store_contract.py`; the profile each store declares is checked
by the kit, through the pytest plugin. Some checks also serve `InMemoryStore`'s own
tests."""

from __future__ import annotations

import asyncio
import copy
import gc
import json
import math
import os
import pickle
import random
import re
import warnings
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Protocol, cast
from uuid import UUID, uuid4

import pytest

from lionmem import Branch, InMemoryStore, MemoryItem, MemoryQuery, MemoryStore
from lionmem._internal.json_values import MAX_NESTING
from lionmem.adapters._codec import ENCODE_EVERY, MAX_ITEM_BYTES
from lionmem.adapters.errors import StoreClosedError
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


class LabelledQuery(MemoryQuery):
    """A caller's own kind of query: a subclass is a MemoryQuery to every store."""

    label: str = ""


async def assert_call_arguments_checked(store: MemoryStore) -> None:
    """A store takes a UUID or its string form as an id, refuses other arguments with
    errors naming them, and stores nothing it refused."""
    item = MemoryItem(content="kept")
    await store.store(item)
    for same in (item.id, str(item.id), str(item.id).upper(), item.id.hex):
        found = await store.retrieve(same)  # type: ignore[arg-type]
        assert found is not None and found.id == item.id, same
    assert await store.retrieve(str(MemoryItem().id)) is None  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="item_id 'seven' is not a UUID"):
        await store.retrieve("seven")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="item_id must be a UUID or its string form, got int"):
        await store.retrieve(item.id.int)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="query must be a MemoryQuery, got dict"):
        await store.search({"text": "kept"})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MemoryItem, got dict"):
        await store.store({"content": "x"})  # type: ignore[arg-type]
    assert [i.id for i in await store.search(MemoryQuery())] == [item.id]
    assert [i.id for i in await store.search(LabelledQuery(text="KEPT", label="mine"))] == [item.id]


@asynccontextmanager
async def ticking(interval: float = 0) -> AsyncIterator[Callable[[], int]]:
    """Run a task that counts its turns on the event loop while the block runs; the
    block gets the count so far, to see whether the loop ran between two points.

    With the default interval the task takes every turn the loop offers; with one
    above 0 it sleeps that long between turns, which leaves the GIL to a worker
    thread (a loop spinning at full speed slows one under coverage a hundredfold)."""
    turns = 0

    async def tick() -> None:
        nonlocal turns
        while True:
            turns += 1
            await asyncio.sleep(interval)

    ticker = asyncio.ensure_future(tick())
    await asyncio.sleep(0)
    try:
        yield lambda: turns
    finally:
        ticker.cancel()


class Batching(MemoryStore, Protocol):
    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]: ...


async def assert_batches_checked(store: Batching) -> None:
    """`store_many` writes a whole batch or nothing, and names one item passed alone."""
    item = MemoryItem(content="one")
    with pytest.raises(TypeError, match="takes an iterable of MemoryItem, got one MemoryItem"):
        await store.store_many(item)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MemoryItem, got str"):
        await store.store_many(iter([item, "two"]))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^store_many takes an iterable of MemoryItem, got int$"):
        await store.store_many(5)  # type: ignore[arg-type]
    assert await store.search(MemoryQuery()) == []
    assert await store.store_many(x for x in (item,)) == [item.id]
    assert await store.store_many([]) == []


async def assert_cancelled_writes_stay_whole(store: Batching) -> None:
    """Cancel half of 40 batch writes and 300 single writes at random points: every
    batch is then all there or all absent, whatever was acknowledged is there, and
    the store goes on working."""
    rng = random.Random(3)
    batches = [[MemoryItem(content=f"{b}.{i}", tags=[f"b{b}"]) for i in range(300)] for b in range(40)]
    singles = [MemoryItem(content=f"single {i}") for i in range(300)]
    writes: list[asyncio.Future[Any]] = [asyncio.ensure_future(store.store_many(b)) for b in batches]
    writes += [asyncio.ensure_future(store.store(item)) for item in singles]
    for write in writes:
        if rng.random() < 0.5:
            await asyncio.sleep(rng.random() * 0.002)
            write.cancel()
    outcomes = await asyncio.gather(*writes, return_exceptions=True)
    assert all(isinstance(o, (list, UUID, asyncio.CancelledError)) for o in outcomes)
    assert any(isinstance(o, asyncio.CancelledError) for o in outcomes)
    found = await store.search(MemoryQuery(limit=100_000))
    sizes: dict[str, int] = {}
    for item in found:
        for tag in item.tags:
            sizes[tag] = sizes.get(tag, 0) + 1
    assert set(sizes.values()) <= {300}, "a batch was written in part"
    for batch, outcome in zip(batches, outcomes, strict=False):
        if not isinstance(outcome, BaseException):
            assert sizes.get(batch[0].tags[0]) == 300
    stored = {item.id for item in found}
    for item, outcome in zip(singles, outcomes[len(batches) :], strict=True):
        if not isinstance(outcome, BaseException):
            assert item.id in stored
    after = MemoryItem(content="after the cancellations")
    await store.store(after)
    assert await store.retrieve(after.id) == after


class Note(MemoryItem):
    """A subclass that adds a field a durable store has no column for."""

    priority: int = 0


class Tagged(MemoryItem):
    """A subclass that adds behaviour only."""

    def shout(self) -> str:
        return str(self.content).upper()


async def assert_subclass_fields_are_never_dropped(store: MemoryStore) -> None:
    """A subclass whose fields would be lost is refused and nothing is written; one
    that adds no field is kept, and comes back as a MemoryItem."""
    note = Note(content="n", priority=5)
    with pytest.raises(TypeError, match="Note adds the field.s. priority, which this store would lose"):
        await store.store(note)
    assert await store.retrieve(note.id) is None
    tagged = Tagged(content="t", tags=["x"])
    await store.store(tagged)
    back = await store.retrieve(tagged.id)
    assert back is not None and type(back) is MemoryItem
    assert (back.content, back.tags, back.created_at) == ("t", ["x"], tagged.created_at)
    assert [i.id for i in await store.search(MemoryQuery())] == [tagged.id]


def _outcomes_in_a_forked_child(calls: dict[str, Callable[[], Coroutine[Any, Any, object]]]) -> dict[str, str]:
    """Fork, start each call in the child and report how it ended there: the child
    has no event loop of its own, so a call is started by hand and stopped at its
    first suspension ("waited")."""
    read, write = os.pipe()
    with warnings.catch_warnings():
        # From Python 3.12 fork() warns when threads are running, as the stores' are.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: its outcomes go back through the pipe
        try:
            outcomes: dict[str, str] = {}
            for name, call in calls.items():
                coroutine = call()
                try:
                    coroutine.send(None)
                    outcomes[name] = "waited"
                except StopIteration:
                    outcomes[name] = "returned"
                except BaseException as exc:
                    outcomes[name] = f"{type(exc).__name__}: {exc}"
                finally:
                    coroutine.close()
            os.write(write, json.dumps({"pid": os.getpid(), "outcomes": outcomes}).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        report = json.loads(pipe.read())
    os.waitpid(pid, 0)
    assert report["pid"] == pid
    return cast("dict[str, str]", report["outcomes"])


async def assert_forked_child_refused(store: Batching) -> None:
    """In a process forked after the store was opened, every call raises RuntimeError
    at once, before touching the parent's connections (SQLite's waited for ever on
    a worker thread the child does not have); the parent's store goes on. Once the
    store is closed, a child finds it closed, as the parent does, in both stores."""
    item = MemoryItem(content="the parent's")
    await store.store(item)
    calls: dict[str, Callable[[], Coroutine[Any, Any, object]]] = {
        "store": lambda: store.store(MemoryItem(content="the child's")),
        "store_many": lambda: store.store_many([MemoryItem(content="the child's")]),
        "retrieve": lambda: store.retrieve(item.id),
        "search": lambda: store.search(MemoryQuery()),
        "close": lambda: store.close(),  # type: ignore[attr-defined]
    }
    outcomes = _outcomes_in_a_forked_child(calls)
    refused = re.compile(
        rf"^RuntimeError: the {type(store).__name__} .* was opened in process {os.getpid()}, "
        r"and this is process \d+, forked from it: .* open another store in this process$"
    )
    assert {name: bool(refused.match(outcomes[name])) for name in calls} == dict.fromkeys(calls, True), outcomes
    assert [i.content for i in await store.search(MemoryQuery())] == ["the parent's"]
    assert await store.retrieve(item.id) == item
    await store.close()  # type: ignore[attr-defined]
    del calls["close"]  # which would wait on the loop the child does not run
    outcomes = _outcomes_in_a_forked_child(calls)
    assert all(outcome.startswith("StoreClosedError: ") for outcome in outcomes.values()), outcomes


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


async def assert_unvalidated_fields_refused(store: Batching) -> None:
    """An item built without validation (`model_construct`) whose id is not a UUID,
    whose `created_at` is not a finite float or whose metadata is not a dict is refused, alone or in a batch, and
    nothing is written: the store keeps answering, and the item's own row stays one."""
    kept = MemoryItem(content="kept")
    same = str(kept.id).upper()
    bad = [
        (MemoryItem.model_construct(id="abc", content="x"), TypeError, "^id is a str, not a UUID$"),
        (MemoryItem.model_construct(id=same, content="x"), TypeError, "^id is a str, not a UUID$"),
        (MemoryItem.model_construct(id=kept.id.int, content="x"), TypeError, "^id is an int, not a UUID$"),
        (MemoryItem.model_construct(created_at="2026-01-01"), TypeError, "^created_at is a str, not a float$"),
        (MemoryItem.model_construct(created_at=5), TypeError, "^created_at is an int, not a float$"),
        (MemoryItem.model_construct(created_at=True), TypeError, "^created_at is a bool, not a float$"),
        (
            MemoryItem.model_construct(created_at=math.nan),
            ValueError,
            "^created_at must be a finite timestamp, got nan$",
        ),
        (MemoryItem.model_construct(created_at=-math.inf), ValueError, "must be a finite timestamp, got -inf$"),
        (MemoryItem.model_construct(metadata=["k", 1]), TypeError, "^metadata is a list, not a dict$"),
        (MemoryItem.model_construct(metadata=None), TypeError, "^metadata is a NoneType, not a dict$"),
    ]
    await store.store(kept)
    for item, error, message in bad:
        with pytest.raises(error, match=message):
            await store.store(item)
        with pytest.raises(error, match=message):
            await store.store_many([MemoryItem(content="batched"), item])
    assert await store.search(MemoryQuery()) == [kept]
    assert await store.retrieve(kept.id) == kept
    # A float subclass is a float: it is kept as its value.
    timed = MemoryItem.model_construct(created_at=_Seconds(1.5), content="timed")
    await store.store(timed)
    back = await store.retrieve(timed.id)
    assert back is not None and type(back.created_at) is float and back.created_at == 1.5


class _Seconds(float):
    """A float of another type, as numpy's float64 is."""


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


def nested(levels: int, inner: object = "needle") -> object:
    """`inner` inside `levels` lists, each inside the next."""
    value = inner
    for _ in range(levels):
        value = [value]
    return value


async def assert_nesting_limit_holds(store: Batching) -> None:
    """Content and metadata nested `MAX_NESTING` levels deep are kept, read back and
    found; one level more, or far more than Python's recursion limit, is refused with
    `ValueError` before anything of the call is written."""
    deepest = MemoryItem(content=nested(MAX_NESTING), metadata={"k": nested(MAX_NESTING - 1)})
    await store.store(deepest)
    back = await store.retrieve(deepest.id)
    assert back is not None
    assert (back.content, back.metadata) == (deepest.content, deepest.metadata)
    assert [i.id for i in await store.search(MemoryQuery(text="NEEDLE"))] == [deepest.id]
    kept = MemoryItem(content="kept")
    too_deep = [
        MemoryItem(content=nested(MAX_NESTING + 1)),
        MemoryItem(content=nested(20 * MAX_NESTING)),
        MemoryItem(metadata={"k": nested(MAX_NESTING)}),
    ]
    for item in too_deep:
        where = "content" if item.content is not None else "metadata"
        with pytest.raises(ValueError, match=f"^{where} nests lists and objects more than {MAX_NESTING} levels"):
            await store.store(item)
        with pytest.raises(ValueError, match="more than"):
            await store.store_many([kept, item])
        assert await store.retrieve(item.id) is None
    assert await store.retrieve(kept.id) is None


async def assert_forgetting_follows_the_reference(store: MemoryStore) -> None:
    """The extension of ADR-0100: what each call deletes and returns, how it refuses
    bad arguments (deleting nothing), and that a deleted id stored again comes last."""
    assert isinstance(store, ForgettingStore)
    items = [
        MemoryItem(content=f"note {n}", tags=["odd" if n % 2 else "even"], metadata={"n": n}, created_at=n)
        for n in range(12)
    ]
    for item in items:
        await store.store(item)

    async def contents() -> list[object]:
        return [i.content for i in await store.search(MemoryQuery(limit=100))]

    assert await store.delete(items[0].id) is True
    assert await store.delete(str(items[0].id)) is False  # type: ignore[arg-type]
    await store.store(items[0])  # comes back last, as a new item
    assert (await contents())[-1] == "note 0" and (await contents())[0] == "note 1"
    for bad, error in [("nope", ValueError), (7, TypeError)]:
        with pytest.raises(error, match="item_id"):
            await store.delete(bad)  # type: ignore[arg-type]
    before = await contents()
    for bad_ids, error in [([items[1].id, "nope"], ValueError), ([items[1].id, 3], TypeError), ("abc", TypeError)]:
        with pytest.raises(error, match="item_ids"):
            await store.delete_many(bad_ids)  # type: ignore[arg-type]
    assert await contents() == before  # a bad id anywhere deletes nothing
    assert await store.delete_many([]) == 0
    mixed = iter([items[1].id, str(items[3].id), items[1].id, uuid4()])  # a string id is taken too
    assert await store.delete_many(mixed) == 2  # type: ignore[arg-type]
    assert "note 1" not in await contents() and "note 3" not in await contents()

    odd = MemoryQuery(tags=["odd"], limit=2)
    assert await store.count(odd) == 4  # 5, 7, 9, 11: the limit does not cut a count
    assert await store.count(MemoryQuery()) == 10
    expected = [i.id for i in await store.search(odd)]
    assert await store.delete_matching(odd) == 2
    assert [await store.retrieve(item_id) for item_id in expected] == [None, None]
    assert await store.count(MemoryQuery(tags=["odd"])) == 2
    assert await store.delete_matching(MemoryQuery(tags=["odd"], limit=-1)) == 1  # all but the last
    assert await store.count(MemoryQuery(tags=["odd"])) == 1
    assert await store.delete_matching(MemoryQuery(limit=0)) == 0
    with pytest.raises(TypeError, match="MemoryQuery"):
        await store.delete_matching({"tags": ["odd"]})  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MemoryQuery"):
        await store.count("odd")  # type: ignore[arg-type]

    left = await contents()
    for bad, error in [(True, TypeError), ("5", TypeError), (math.nan, ValueError), (10**400, ValueError)]:
        with pytest.raises(error, match="cutoff"):
            await store.delete_created_before(bad)  # type: ignore[arg-type]
    assert await contents() == left
    remaining = {i.content: i.created_at for i in await store.search(MemoryQuery(limit=100))}
    assert await store.delete_created_before(2) == len([t for t in remaining.values() if t < 2]) == 1
    naive = datetime(1970, 1, 1, 0, 0, 6)  # read as UTC: 6.0
    assert await store.delete_created_before(naive) == len([t for t in remaining.values() if 2 <= t < 6])
    aware = datetime(1970, 1, 1, 0, 0, 9, tzinfo=UTC)
    assert await store.delete_created_before(aware) == len([t for t in remaining.values() if 6 <= t < 9])
    assert all(i.created_at >= 9 for i in await store.search(MemoryQuery(limit=100)))
    zero = MemoryItem(content="negative zero", created_at=-0.0)
    await store.store(zero)
    assert await store.delete_created_before(0.0) == 0  # -0.0 is not before 0.0
    assert await store.delete_created_before(1e-300) == 1


async def assert_forgetting_agrees_with_the_reference(store: MemoryStore, *, seed: int = 5, rounds: int = 120) -> None:
    """Random stores, replacements and each kind of delete, on `store` and an
    `InMemoryStore`: every call returns the same, and the two hold the same items in
    the same order after each."""
    assert isinstance(store, ForgettingStore)
    reference = InMemoryStore()
    rng = random.Random(seed)
    ids = [uuid4() for _ in range(30)]
    for step in range(rounds):
        kind = rng.choice(["store", "store", "store", "delete", "many", "matching", "aged", "before", "count"])
        if kind == "store":
            item = MemoryItem(
                id=rng.choice(ids),
                content=f"v{step} {rng.choice(['red', 'blue'])}",
                tags=rng.sample(["x", "y"], rng.randrange(3)),
                metadata={"k": rng.randrange(3)},
                created_at=float(step),
            )
            assert await store.store(item) == await reference.store(item)
            continue
        outcome: tuple[int, int]
        query = MemoryQuery(
            text=rng.choice([None, "red"]),
            tags=rng.choice([None, ["x"]]),
            filters=rng.choice([None, {"k": 1}]),
            limit=rng.choice([-2, 0, 1, 3, 100]),
        )
        if kind == "delete":
            chosen = rng.choice(ids)
            outcome = (await store.delete(chosen), await reference.delete(chosen))
        elif kind == "many":
            chosen_ids = rng.sample(ids, 4)
            outcome = (await store.delete_many(chosen_ids), await reference.delete_many(chosen_ids))
        elif kind == "matching":
            outcome = (await store.delete_matching(query), await reference.delete_matching(query))
        elif kind == "aged":
            # lionmem's own stores take the age in delete_matching (ADR-0100 D10).
            cutoff = rng.choice([rng.uniform(0, step), float(rng.randrange(step + 1))])
            outcome = (
                await cast(Any, store).delete_matching(query, created_before=cutoff),
                await reference.delete_matching(query, created_before=cutoff),
            )
        elif kind == "before":
            cutoff = rng.uniform(0, step)
            outcome = (await store.delete_created_before(cutoff), await reference.delete_created_before(cutoff))
        else:
            outcome = (await store.count(query), await reference.count(query))
        assert outcome[0] == outcome[1], (step, kind, query)
        everything = MemoryQuery(limit=1000)
        assert [i.id for i in await store.search(everything)] == [i.id for i in await reference.search(everything)]


async def assert_scan_hands_over_everything_in_order(store: MemoryStore) -> None:
    """`scan` yields every item once, in insertion order, in lists of at most
    `batch_size` (none empty); an item stored during a scan comes at its end or not
    at all, and no item comes twice."""
    assert isinstance(store, ForgettingStore)
    assert [batch async for batch in store.scan()] == []
    for bad, error in [(0, ValueError), (-1, ValueError), (True, TypeError), ("5", TypeError), (1.5, TypeError)]:
        with pytest.raises(error, match="batch_size"):
            store.scan(bad)  # type: ignore[arg-type]
    items = [MemoryItem(content=f"n{n}", metadata={"n": n}) for n in range(23)]
    for item in items:
        await store.store(item)
    await store.store(MemoryItem(id=items[3].id, content="replaced"))  # keeps its place
    await store.delete(items[5].id)
    await store.store(items[5])  # comes last
    expected = [i.id for i in await store.search(MemoryQuery(limit=1000))]
    for size in (1, 5, 6, 24, 500):
        batches = [batch async for batch in store.scan(batch_size=size)]
        assert all(0 < len(batch) <= size for batch in batches), size
        assert [i.id for batch in batches for i in batch] == expected, size
    assert [i.content for batch in [b async for b in store.scan()] for i in batch][3] == "replaced"
    late = MemoryItem(content="stored during the scan")
    seen: list[UUID] = []
    async for batch in store.scan(batch_size=10):
        if not seen:
            await store.store(late)
            await store.store(MemoryItem(id=items[0].id, content="replaced during the scan"))
        seen += [i.id for i in batch]
    assert seen in ([*expected, late.id], expected)


UNREADABLE_CONTENT: list[object] = [10**5_000, nested(5_000)]
"""Content whose `str()` raises: more digits than Python writes as text, and nesting
far past the recursion limit. The reference stores both, and every text search of
the store raises from then on ([ADR-0092][adr-0092-notes] declares the difference)."""


async def assert_unreadable_content_refused(store: MemoryStore) -> None:
    """Content the text rule cannot read is refused with `ValueError`, as new content
    and as a replacement; the store keeps what it had, and text search still works."""
    kept = MemoryItem(content="alpha kept")
    replaced = MemoryItem(content="alpha first")
    await store.store(kept)
    await store.store(replaced)
    for content in UNREADABLE_CONTENT:
        fresh = MemoryItem(content=content)
        with pytest.raises(ValueError, match="content"):
            await store.store(fresh)
        assert await store.retrieve(fresh.id) is None
        with pytest.raises(ValueError, match="content"):
            await store.store(MemoryItem(id=replaced.id, content=content))
        back = await store.retrieve(replaced.id)
        assert back is not None and back.content == "alpha first"
    assert [i.id for i in await store.search(MemoryQuery(text="ALPHA"))] == [kept.id, replaced.id]


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


async def assert_size_limit_holds(store: Batching) -> None:
    """An item whose JSON takes all of `MAX_ITEM_BYTES` is kept, read back and found;
    one byte more is refused with `ValueError` before anything of the call is
    written. A query naming a string longer than either database takes as a
    parameter gets the reference's answer."""
    largest = MemoryItem(content="x" * (MAX_ITEM_BYTES - len('["",[],{}]')))
    await store.store(largest)
    back = await store.retrieve(largest.id)
    assert back is not None and back.content == largest.content
    assert [i.id for i in await store.search(MemoryQuery(text="XXX"))] == [largest.id]
    kept = MemoryItem(content="kept", tags=["t"])
    over = MemoryItem(content=f"{largest.content}x")
    with pytest.raises(ValueError, match=f"^the item is too large: .* takes {MAX_ITEM_BYTES + 1:,} bytes"):
        await store.store(over)
    with pytest.raises(ValueError, match="^the item is too large"):
        await store.store_many([kept, over])
    assert await store.retrieve(over.id) is None and await store.retrieve(kept.id) is None
    await store.store(kept)
    beyond = "x" * (10**9 + 1)  # SQLite binds at most 10**9 bytes, PostgreSQL receives 2**30
    assert await store.search(MemoryQuery(text=beyond)) == []
    assert await store.search(MemoryQuery(tags=["t", beyond])) == [kept]
    assert await store.search(MemoryQuery(filters={"k": beyond})) == []
    assert await store.search(MemoryQuery(tags=["t"], filters={beyond: None})) == [kept]


Pause = Callable[[], AbstractAsyncContextManager[None]]
"""Holds back the store's writing (its worker thread, or its connections) while
entered, so that a test can act between a call and its write."""


async def assert_writes_keep_the_item_as_called(store: Batching, paused: Pause) -> None:
    """An item changed after `store` or `store_many` was called, while the write is
    still in flight, is stored as it was at the call, and searches agree with what
    was stored: the index is built from the same moment as the row."""
    single = MemoryItem(content="single", tags=["old"], metadata={"k": "old", "n": 1})
    batched = MemoryItem(content="batched", tags=["old"], metadata={"k": "old", "n": 1})
    async with paused():
        writes = asyncio.gather(store.store(single), store.store_many([batched]))
        await asyncio.sleep(0.05)  # both calls have run up to the held-back write
        for item in (single, batched):
            item.tags[0] = "new"
            item.metadata["k"] = "new"
            item.metadata["added"] = 2
    await writes
    both = [single.id, batched.id]
    for item_id in both:
        back = await store.retrieve(item_id)
        assert back is not None and (back.tags, back.metadata) == (["old"], {"k": "old", "n": 1})

    async def ids(**fields: Any) -> list[UUID]:
        return [i.id for i in await store.search(MemoryQuery(**fields))]

    assert await ids(tags=["old"]) == both and await ids(tags=["new"]) == []
    assert await ids(filters={"k": "old"}) == both and await ids(filters={"k": "new"}) == []
    assert await ids(filters={"added": 2}) == [] and await ids(filters={"added": None}) == both


async def assert_large_batches_let_other_tasks_run(store: Batching) -> None:
    """A large `store_many` batch is encoded a slice at a time, so the event loop runs
    other tasks meanwhile: one that changes the batch's last item after the first
    slice is seen, since that item is read later. Every item is still written."""
    batch = [MemoryItem(content=n) for n in range(3 * ENCODE_EVERY)]

    async def change_the_last() -> None:
        batch[-1].content = "changed while the batch was encoded"

    changing = asyncio.ensure_future(change_the_last())
    assert await store.store_many(batch) == [item.id for item in batch]
    await changing
    last = await store.retrieve(batch[-1].id)
    assert last is not None and last.content == "changed while the batch was encoded"
    assert [i.id for i in await store.search(MemoryQuery(limit=len(batch)))] == [i.id for i in batch]


TIMES = [-0.0, 0.0, 5e-324, -5e-324, 2.0**62, -(2.0**63), 2.0**64, 1e300, -1.7976931348623157e308, 1767225600.123456789]
"""Timestamps whose bits a database could lose: signed zero, subnormals, whole
numbers that fit in 64-bit integers (which SQLite may keep as integers), extremes."""


async def assert_created_at_bit_exact(store: MemoryStore) -> None:
    """Every `created_at` comes back with the same bits, from `retrieve` and from
    both ways a search can decode rows (limited in SQL, and re-checked in Python)."""
    items = [MemoryItem(content=n, created_at=t, metadata={"k": [1]}) for n, t in enumerate(TIMES)]
    for item in items:
        await store.store(item)
    want = [t.hex() for t in TIMES]
    back = [await store.retrieve(item.id) for item in items]
    assert [None if i is None else i.created_at.hex() for i in back] == want
    for query, count in [
        (MemoryQuery(limit=100), len(TIMES)),
        (MemoryQuery(limit=-1), len(TIMES) - 1),
        (MemoryQuery(filters={"k": [1]}, limit=100), len(TIMES)),
    ]:
        assert [i.created_at.hex() for i in await store.search(query)] == want[:count], query


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


async def assert_copies_refused(store: MemoryStore) -> None:
    """A durable store cannot be copied or pickled: a copy would share the store's
    connections, and closing either would break the other. The refusal names the
    store and leaves it working."""
    item = MemoryItem(content="kept")
    await store.store(item)
    name = type(store).__name__
    for duplicate in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match=f"^{name} cannot be copied or pickled"):
            duplicate(store)
    holder = Branch(memory=store)
    with pytest.raises(TypeError, match=f"^{name} cannot be copied or pickled"):
        holder.model_copy(deep=True)
    assert holder.model_copy().memory is store
    assert (await store.retrieve(item.id)) == item


async def assert_async_with_closes_it(store: Any) -> None:
    """`async with` on an opened store gives the store itself and closes it on the
    way out, also when the block raises."""
    item = MemoryItem(content="kept")
    with pytest.raises(LookupError):  # noqa: PT012 (the block is what is tested)
        async with store as entered:
            assert entered is store
            await store.store(item)
            raise LookupError
    with pytest.raises(StoreClosedError):
        await store.retrieve(item.id)


async def assert_freed_once_dropped(opener: Callable[[], Awaitable[Any]], writes: int) -> None:
    """Nothing of lionmem's (a thread, its queue, a pool, a per-process registry) keeps
    a closed store alive: once its caller lets go of it, after `writes` single
    writes, a batch, a search and a retrieve, it is freed."""
    store = await opener()
    for n in range(writes):
        await store.store(MemoryItem(content=n))
    await store.store_many([MemoryItem(content="batch")])
    assert len(await store.search(MemoryQuery(text="batch"))) == 1
    assert await store.retrieve(MemoryItem().id) is None
    freed = weakref.ref(store)
    await store.close()
    del store
    gc.collect()
    assert freed() is None, "a closed store is still referenced"


StoreCheck = Callable[[Any], Coroutine[Any, Any, None]]

STORE_CHECKS: list[StoreCheck] = [
    assert_copies_refused,
    assert_call_arguments_checked,
    assert_batches_checked,
    assert_big_integers_exact,
    assert_limits_beyond_64_bits_agree,
    assert_many_filters_agree,
    assert_filter_operators_agree,
    assert_search_newest_agrees,
    assert_many_tags_agree,
    assert_unicode_text_agrees,
    assert_subclass_fields_are_never_dropped,
    assert_unvalidated_fields_refused,
    assert_unstorable_queries_agree,
    assert_forked_child_refused,
    assert_nesting_limit_holds,
    assert_unreadable_content_refused,
    assert_forgetting_follows_the_reference,
    assert_forgetting_agrees_with_the_reference,
    assert_scan_hands_over_everything_in_order,
    assert_size_limit_holds,
    assert_long_tags_agree,
    assert_created_at_bit_exact,
    assert_large_batches_let_other_tasks_run,
    assert_cancelled_writes_stay_whole,
    assert_async_with_closes_it,
]
"""The checks above that need nothing but a store with `store_many`; each durable
store's tests run every one on a fresh store."""
