"""Forgetting as the reference forgets, and a scan that hands over every item once, in
order."""

from __future__ import annotations

import math
import random
from datetime import UTC, datetime
from typing import Any, cast
from uuid import UUID, uuid4

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery, MemoryStore
from lionmem.protocols.forgetting import ForgettingStore


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
