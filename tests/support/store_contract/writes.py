"""What a write keeps and what it refuses: call arguments, batches checked whole and
kept whole when their task is cancelled, subclass fields, nesting, unreadable
content, the size limit, the item as it was when called, `created_at` bit for bit,
and copies."""

from __future__ import annotations

import asyncio
import copy
import math
import pickle
import random
from collections.abc import AsyncIterator, Callable, Iterable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any, Protocol
from uuid import UUID

import pytest

from lionmem import Branch, MemoryItem, MemoryQuery, MemoryStore
from lionmem._internal.json_values import MAX_NESTING
from lionmem.adapters._codec import ENCODE_EVERY, MAX_ITEM_BYTES


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
