"""Expiry alike in the three stores (ADR-0105 D2): an item whose expiry is at or before
the call's one reading of the clock is gone from every read, exactly at the boundary;
a store's ttl and a refresh on read move expiries as asked; `sweep` alone removes
what expired; bad expiries are refused by name and change nothing."""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.sqlite import _planner as sqlite_planner
from lionmem.embedders import HashingEmbedder
from lionmem.filters import Ge, In, Lt
from lionmem.protocols.expiry import ExpiringStore, check_expiring, check_ttl, expiry_of
from lionmem.protocols.stats import StatsStore
from tests.support.postgres_support import fresh_namespace

Store = InMemoryStore | SQLiteMemoryStore | PostgresMemoryStore
T = 1_000_000_000.0
"""The time each test's clock starts at."""


class Clock:
    """A clock a test sets, counting how often it is read."""

    def __init__(self) -> None:
        self.now = T
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        return self.now


Opener = Callable[..., contextlib.AbstractAsyncContextManager[Store]]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    """Opens a store of the parameter's kind with an embedder, the settings given and,
    each time, the same database."""
    embedder = HashingEmbedder(64)
    if request.param == "memory":
        shelf: list[InMemoryStore] = []

        @contextlib.asynccontextmanager
        async def memory(**settings: Any) -> AsyncIterator[InMemoryStore]:
            if not shelf:
                shelf.append(InMemoryStore(embedder=embedder, **settings))
                yield shelf[0]
            else:  # the same database, with these settings
                store = InMemoryStore(embedder=embedder, **settings)
                store._items, store._index, store._order, expiries = shelf[0]._shelf["default"]
                store._life = store._life.sibling(expiries, store._items)
                yield store

        return memory
    if request.param == "sqlite":
        return lambda **settings: SQLiteMemoryStore.open(tmp_path / "m.db", embedder=embedder, **settings)
    pg_url: str = request.getfixturevalue("pgvector_server_url")
    namespace = fresh_namespace()
    return lambda **settings: PostgresMemoryStore.open(pg_url, namespace=namespace, embedder=embedder, **settings)


def _notes(count: int) -> list[MemoryItem]:
    return [
        MemoryItem(content=f"note {n} {'even' if n % 2 == 0 else 'odd'}", tags=[f"t{n % 3}"], metadata={"n": n})
        for n in range(count)
    ]


async def _scanned(store: Store, size: int = 3) -> list[MemoryItem]:
    return [item for batch in [b async for b in store.scan(size)] for item in batch]


async def _every_read(store: Store, live: list[MemoryItem], gone: list[MemoryItem]) -> None:
    """Assert that every read of `store` sees `live`, in order, and none of `gone`."""
    everything = MemoryQuery(limit=10_000)
    assert await store.search(everything) == live
    assert await store.search_newest(everything) == live[::-1]
    assert await store.search(MemoryQuery(limit=2)) == live[:2]
    assert await store.search(MemoryQuery(limit=-1)) == live[:-1]
    assert await store.search(MemoryQuery(text="even", limit=10_000)) == [i for i in live if "even" in str(i.content)]
    assert await store.search(MemoryQuery(tags=["t1"], limit=10_000)) == [i for i in live if "t1" in i.tags]
    assert await store.search(MemoryQuery(filters={"n": 3}, limit=10_000)) == [i for i in live if i.metadata["n"] == 3]
    assert await store.count(MemoryQuery()) == len(live)
    assert await store.count(MemoryQuery(tags=["t0"])) == len([i for i in live if "t0" in i.tags])
    assert await store.count_up_to(1_000) == len(live)
    assert await _scanned(store) == live
    assert (await store.search_page(MemoryQuery(limit=len(live) or 1))).items == live
    recalled = await store.recall("note odd even", k=100)
    assert sorted(str(hit.item.id) for hit in recalled) == sorted(str(i.id) for i in live)
    held = await store.holding(["note"], 100)
    assert sorted(str(item.id) for item, _ in held[0]) == sorted(str(i.id) for i in live)
    if isinstance(store, StatsStore):  # the durable stores
        stats = await store.stats()
        assert stats.items == len(live)
        assert (stats.oldest, stats.newest) == (
            (min(i.created_at for i in live), max(i.created_at for i in live)) if live else (None, None)
        )
    for item in live:
        assert await store.retrieve(item.id) == item
    for item in gone:
        assert await store.retrieve(item.id) is None


def test_an_item_expires_exactly_at_its_expiry_in_every_read(opener: Opener) -> None:
    async def body() -> None:
        clock = Clock()
        async with opener(clock=clock) as store:
            assert isinstance(store, ExpiringStore)
            items = _notes(8)
            await store.store_many(items)
            assert await store.expire([items[1].id, items[4].id], at=T + 10) == 2
            assert await store.expire([items[6].id], at=math.nextafter(T + 10, math.inf)) == 1
            clock.now = math.nextafter(T + 10, -math.inf)
            await _every_read(store, items, [])
            clock.now = T + 10  # the boundary: expired
            await _every_read(store, [i for n, i in enumerate(items) if n not in (1, 4)], [items[1], items[4]])
            clock.now = math.nextafter(T + 10, math.inf)
            await _every_read(
                store, [i for n, i in enumerate(items) if n not in (1, 4, 6)], [items[1], items[4], items[6]]
            )

    asyncio.run(body())


def test_every_call_reads_the_clock_at_most_once(opener: Opener) -> None:
    async def body() -> None:
        clock = Clock()
        async with opener(clock=clock, ttl=60.0) as store:
            items = _notes(4)
            calls: list[Callable[[], Any]] = [
                lambda: store.store(items[0]),
                lambda: store.store_many(items[1:]),
                lambda: store.expire([items[0].id], at=T + 5),
                lambda: store.search(MemoryQuery(text="note")),
                lambda: store.search_newest(MemoryQuery()),
                lambda: store.retrieve(items[1].id),
                lambda: store.count(MemoryQuery()),
                lambda: store.count_up_to(10),
                lambda: store.search_page(MemoryQuery(limit=2)),
                lambda: _scanned(store),
                lambda: store.recall("note", k=3),
                lambda: store.holding(["note"], 3),
                lambda: store.persist([items[1].id]),
                lambda: store.sweep(),
            ]
            for call in calls:
                before = clock.readings
                await call()
                assert clock.readings - before == 1, call

    asyncio.run(body())


def test_a_store_ttl_gives_each_item_stored_its_expiry(opener: Opener) -> None:
    async def body() -> None:
        clock = Clock()
        async with opener(clock=clock, ttl=30) as store:
            assert store.ttl == 30.0
            first, second, third = _notes(3)
            await store.store(first)
            clock.now = T + 10
            await store.store_many([second, third])
            clock.now = T + 20
            await store.store(first.model_copy(update={"content": "replaced"}))  # a new expiry, T + 50
            clock.now = T + 39
            assert [i.content for i in await store.search(MemoryQuery())] == ["replaced", "note 1 odd", "note 2 even"]
            clock.now = T + 40
            assert [i.content for i in await store.search(MemoryQuery())] == ["replaced"]
            clock.now = T + 50
            assert await store.search(MemoryQuery()) == []
        async with opener(clock=clock) as plain:  # storing without a ttl takes the expiry away
            await plain.store(third)
            assert await plain.search(MemoryQuery()) == [third]

    asyncio.run(body())


def test_a_refresh_on_read_moves_the_expiry_of_what_a_read_returns(opener: Opener) -> None:
    async def body() -> None:
        clock = Clock()
        async with opener(clock=clock, ttl=10, refresh_on_read=True) as store:
            items = _notes(6)
            await store.store_many(items)
            assert await store.persist([items[5].id]) == 1
            clock.now = T + 8
            assert await store.search(MemoryQuery(tags=["t0"])) == [items[0], items[3]]  # now T + 18
            assert await store.retrieve(items[1].id) == items[1]
            assert [hit.item for hit in await store.recall("note 2 even", k=1)] == [items[2]]
            assert (await store.search_page(MemoryQuery(limit=1))).items == [items[0]]
            assert await store.count(MemoryQuery()) == 6  # a count returns no item, so refreshes none
            assert await _scanned(store) == items
            clock.now = T + 10
            assert await store.search(MemoryQuery()) == [items[0], items[1], items[2], items[3], items[5]]
            clock.now = T + 18
            assert await store.search(MemoryQuery()) == [items[0], items[1], items[2], items[3], items[5]]
            clock.now = T + 28  # read at T + 10 and T + 18, so expiring at T + 28
            assert await store.search(MemoryQuery()) == [items[5]]

    asyncio.run(body())


def test_expire_and_persist_change_only_unexpired_items(opener: Opener) -> None:
    async def body() -> None:
        clock = Clock()
        async with opener(clock=clock) as store:
            items = _notes(4)
            await store.store_many(items)
            when = datetime.fromtimestamp(T + 5, UTC)
            assert await store.expire([items[0].id, items[0].id, str(items[1].id), MemoryItem().id], at=when) == 2  # type: ignore[list-item]
            assert await store.expire([items[2].id], ttl=5) == 1
            clock.now = T + 5
            assert await store.search(MemoryQuery()) == [items[3]]
            assert await store.expire([items[0].id], ttl=100) == 0  # expired: not brought back
            assert await store.persist(i.id for i in items) == 1
            clock.now = T + 1_000_000
            assert await store.search(MemoryQuery()) == [items[3]]

    asyncio.run(body())


def test_bad_expiries_are_refused_by_name_and_change_nothing(opener: Opener) -> None:
    async def body() -> None:
        clock = Clock()
        async with opener(clock=clock) as store:
            item = MemoryItem(content="kept")
            await store.store(item)
            with pytest.raises(TypeError, match=r"expire takes exactly one of at= \(a time\) and ttl="):
                await store.expire([item.id])
            with pytest.raises(TypeError, match="expire takes exactly one"):
                await store.expire([item.id], at=T, ttl=5)
            with pytest.raises(ValueError, match="ttl must be a finite number of seconds above 0, got 0"):
                await store.expire([item.id], ttl=0)
            with pytest.raises(ValueError, match="ttl must be a finite number of seconds above 0, got nan"):
                await store.expire([item.id], ttl=math.nan)
            with pytest.raises(TypeError, match="ttl must be a number of seconds or None, got a bool"):
                await store.expire([item.id], ttl=True)
            with pytest.raises(ValueError, match="at must be a finite timestamp, got inf"):
                await store.expire([item.id], at=math.inf)
            with pytest.raises(TypeError, match="at must be a timestamp or a datetime, got a str"):
                await store.expire([item.id], at="soon")  # type: ignore[arg-type]
            with pytest.raises(ValueError, match="not a UUID"):
                await store.expire([item.id, "nope"], at=T)  # type: ignore[list-item]
            with pytest.raises(TypeError, match="item_ids"):
                await store.persist(item.id)  # type: ignore[arg-type]
            clock.now = T + 10**9
            assert await store.search(MemoryQuery()) == [item]

    asyncio.run(body())


def test_bad_settings_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="refresh_on_read needs a ttl"):
        check_expiring(None, True, lambda: 0.0)
    with pytest.raises(TypeError, match="refresh_on_read must be a bool"):
        check_expiring(5, 1, lambda: 0.0)
    with pytest.raises(TypeError, match="clock must be callable, got a float"):
        check_expiring(5, False, 0.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="ttl must be a finite number of seconds above 0, got -1"):
        InMemoryStore(ttl=-1)
    assert check_ttl(None) is None and check_ttl(2) == 2.0
    assert expiry_of(T, None, 5) == T + 5 and expiry_of(T, T - 1, None) == T - 1


def test_sweep_alone_removes_what_expired(opener: Opener) -> None:
    async def body() -> None:
        clock = Clock()
        async with opener(clock=clock) as store:
            items = _notes(6)
            await store.store_many(items)
            await store.expire([items[0].id, items[2].id], at=T + 1)
            await store.expire([items[3].id], at=T + 2)
            clock.now = T + 1
            assert await store.delete_matching(MemoryQuery(text="even")) == 1  # the unexpired even one, 4
            assert await store.sweep() == 2
            assert await store.sweep() == 0
            clock.now = T - 100  # expired items swept are gone for good, whatever the clock says
            assert await store.search(MemoryQuery()) == [items[1], items[3], items[5]]
            assert [hit.item for hit in await store.recall("note 0 even", k=10) if hit.item.id == items[0].id] == []
            await store.store(items[0])  # an id swept may be stored again, and lasts
            clock.now = T + 100
            assert await store.search(MemoryQuery()) == [items[1], items[5], items[0]]

    asyncio.run(body())


def test_deleting_by_id_reaches_expired_items_too(opener: Opener) -> None:
    """Erasure leaves nothing behind: a delete by id or by age removes an expired item
    as well, and says so."""

    async def body() -> None:
        clock = Clock()
        async with opener(clock=clock) as store:
            items = _notes(4)
            await store.store_many(items)
            await store.expire([i.id for i in items], at=T)
            assert await store.delete(items[0].id) is True
            assert await store.delete_many([items[1].id]) == 1
            assert await store.delete_created_before(datetime.now(UTC).timestamp() + 60) == 2
            assert await store.sweep() == 0

    asyncio.run(body())


def _many(count: int) -> list[MemoryItem]:
    words = ["river", "stone", "cloud", "ember"]
    return [
        MemoryItem(
            content=f"note {n} {words[n % 4]} {words[(n // 4) % 4]}",
            tags=[f"t{n % 5}", f"g{n % 2}"],
            metadata={"n": n, "kind": "odd" if n % 2 else "even"},
        )
        for n in range(count)
    ]


AGAINST_THE_REFERENCE = [
    MemoryQuery(limit=10_000),
    MemoryQuery(limit=7),
    MemoryQuery(limit=-3),
    MemoryQuery(text="RIVER", limit=10_000),
    MemoryQuery(text="stone cloud", limit=5),
    MemoryQuery(tags=["t1"], limit=10_000),
    MemoryQuery(tags=["t1"], limit=4),
    MemoryQuery(tags=["t1", "t2"], limit=6),
    MemoryQuery(filters={"kind": "odd"}, limit=5),
    MemoryQuery(filters={"n": In([3, 4, 5, 6, 7, 30, 31])}, limit=3),
    MemoryQuery(filters={"n": Ge(2_000)}, limit=10_000),
    MemoryQuery(filters={"n": Lt(40)}, limit=4),
    MemoryQuery(text="ember", tags=["t0", "t3"], filters={"kind": "even"}, limit=10_000),
]


def test_every_read_agrees_with_the_reference_holding_the_same_expiries(
    opener: Opener, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every driving index, each read newest first too, a walk in order, counts and
    recall, with a third of 2,500 items expired and unswept: what the reference finds
    at the same clock. PostgreSQL's recall goes through its index here, approximate
    by its profile: it finds `k` unexpired items."""
    if "sqlite" in request.node.name:  # a walk in order is tried from the smallest gathers up
        monkeypatch.setattr(sqlite_planner, "_GATHER_MOST", 1)

    async def body() -> None:
        clock = Clock()
        items = _many(2_500)
        reference = InMemoryStore(embedder=HashingEmbedder(64), clock=clock)
        async with opener(clock=clock) as store:
            for each in (store, reference):
                await each.store_many(items)
                await each.expire([i.id for i in items[::3]], at=T + 1)
                await each.expire([i.id for i in items[1::7]], at=T + 5)
            clock.now = T + 1
            for query in AGAINST_THE_REFERENCE:
                assert await store.search(query) == await reference.search(query), query
                assert await store.search_newest(query) == await reference.search_newest(query), query
                assert await store.count(query) == await reference.count(query), query
            assert await store.count_up_to(10_000) == await reference.count_up_to(10_000)
            gone = {i.id for i in items[::3]} - {i.id for i in items[1::7]}  # the later expire() wins
            for question, tags in (("river stone", None), ("cloud ember", ["t2"])):
                found = await store.recall(question, k=10, tags=tags)
                if isinstance(store, PostgresMemoryStore):
                    assert len(found) == 10 and not gone & {hit.item.id for hit in found}
                else:
                    assert found == await reference.recall(question, k=10, tags=tags), question

    asyncio.run(body())
