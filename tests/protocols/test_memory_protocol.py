"""The MemoryStore protocol: exactly three async methods (ADR-0092 D2)."""

from __future__ import annotations

import asyncio
import inspect
from typing import get_type_hints
from uuid import UUID, uuid4

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery, MemoryStore
from lionmem.protocols import types
from tests.support.kit_stores import BareStore


def test_protocol_has_exactly_three_async_methods() -> None:
    members = {name for name, value in vars(MemoryStore).items() if callable(value) and not name.startswith("_")}
    assert members == {"store", "retrieve", "search"}
    for name in members:
        assert inspect.iscoroutinefunction(getattr(MemoryStore, name))


def test_protocol_signatures() -> None:
    assert get_type_hints(MemoryStore.store) == {"item": MemoryItem, "return": UUID}
    assert get_type_hints(MemoryStore.retrieve) == {"item_id": UUID, "return": MemoryItem | None}
    assert get_type_hints(MemoryStore.search) == {"query": MemoryQuery, "return": list[MemoryItem]}


def test_structural_implementors_pass_isinstance_without_subclassing() -> None:
    assert isinstance(InMemoryStore(), MemoryStore)
    assert isinstance(BareStore(), MemoryStore)
    assert not issubclass(BareStore, InMemoryStore)


def test_isinstance_checks_names_only() -> None:
    class SyncImposter:
        def store(self, item: object) -> None: ...  # pragma: no cover
        def retrieve(self) -> None: ...  # pragma: no cover
        def search(self) -> None: ...  # pragma: no cover

    class MissingSearch:
        async def store(self, item: MemoryItem) -> UUID:  # pragma: no cover
            return item.id

        async def retrieve(self, item_id: UUID) -> None: ...  # pragma: no cover

    assert isinstance(SyncImposter(), MemoryStore)
    assert not isinstance(MissingSearch(), MemoryStore)


def test_portable_fence_holds_for_reference_and_bare_store() -> None:
    async def fence(store: MemoryStore) -> None:
        item = MemoryItem(content="x", tags=["t"])
        assert await store.store(item) == item.id
        assert await store.retrieve(item.id) == item
        assert await store.retrieve(uuid4()) is None
        found = await store.search(MemoryQuery())
        assert type(found) is list
        assert all(type(i) is MemoryItem for i in found)

    for store in (InMemoryStore(), BareStore()):
        asyncio.run(fence(store))


def test_backend_exceptions_propagate_unchanged() -> None:
    class Boom(Exception):
        pass

    class Failing(BareStore):
        async def store(self, item: MemoryItem) -> UUID:
            raise Boom("disk on fire")

    async def call() -> None:
        store: MemoryStore = Failing()
        await store.store(MemoryItem())

    with pytest.raises(Boom, match="^disk on fire$"):
        asyncio.run(call())


def test_types_module_reexports_the_contract() -> None:
    from lionmem.protocols import forgetting, memory, recent
    from lionmem.protocols.generic import element, pile, progression

    assert types.MemoryItem is memory.MemoryItem
    assert types.MemoryQuery is memory.MemoryQuery
    assert types.MemoryStore is memory.MemoryStore
    assert types.InMemoryStore is memory.InMemoryStore
    assert types.Element is element.Element
    assert types.Pile is pile.Pile
    assert types.Progression is progression.Progression
    assert types.ForgettingStore is forgetting.ForgettingStore
    assert types.RecentStore is recent.RecentStore
    assert sorted(types.__all__) == sorted(
        [
            "MemoryItem",
            "MemoryQuery",
            "MemoryStore",
            "ForgettingStore",
            "RecentStore",
            "InMemoryStore",
            "Element",
            "Pile",
            "Progression",
        ]
    )
