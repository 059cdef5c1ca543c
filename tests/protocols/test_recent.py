"""`RecentStore`: the newest matches first, as `search` without a limit reversed and
then cut (ADR-0099)."""

from __future__ import annotations

import asyncio

from lionmem import InMemoryStore, MemoryItem, MemoryQuery, RecentStore
from lionmem.protocols.memory import MemoryStore
from tests.support.store_contract import assert_search_newest_agrees


def test_every_store_lionmem_ships_is_a_recent_store_and_a_bare_one_is_not() -> None:
    from lionmem.adapters.postgres import PostgresMemoryStore
    from lionmem.adapters.sqlite import SQLiteMemoryStore

    assert isinstance(InMemoryStore(), RecentStore)
    for store_class in (SQLiteMemoryStore, PostgresMemoryStore):
        assert callable(getattr(store_class, "search_newest"))

    class ThreeMethods:
        async def store(self, item: MemoryItem) -> object: ...
        async def retrieve(self, item_id: object) -> object: ...
        async def search(self, query: MemoryQuery) -> object: ...

    assert isinstance(ThreeMethods(), MemoryStore) and not isinstance(ThreeMethods(), RecentStore)


def test_the_reference_answers_newest_first_with_slice_limits() -> None:
    async def scenario() -> list[list[str]]:
        store = InMemoryStore()
        for n in range(6):
            await store.store(MemoryItem(content=f"n{n}", tags=["even"] if n % 2 == 0 else []))
        found = [
            await store.search_newest(MemoryQuery(limit=2)),
            await store.search_newest(MemoryQuery(tags=["even"])),
            await store.search_newest(MemoryQuery(tags=["even"], limit=-1)),
            await store.search_newest(MemoryQuery(limit=0)),
        ]
        return [[str(i.content) for i in items] for items in found]

    assert asyncio.run(scenario()) == [["n5", "n4"], ["n4", "n2", "n0"], ["n4", "n2"], []]


def test_the_reference_agrees_with_its_own_search_reversed() -> None:
    asyncio.run(assert_search_newest_agrees(InMemoryStore()))
