"""Negative cases: each line must be an error, pinned by a coded ignore.

mypy runs with warn_unused_ignores and pyright with reportUnnecessaryTypeIgnoreComment,
so if a checker stops rejecting a line, the run fails (never run).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

from lionmem import (
    Branch,
    ExpiringStore,
    InMemoryStore,
    MemoryItem,
    MemoryQuery,
    MemoryStore,
    NamespacedStore,
    PagingStore,
    Recalled,
)
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.testing import REFERENCE_PROFILE, ConformanceKit
from lionmem.testing.pytest_plugin import memory_store_contract


def wants_a_store(store: MemoryStore) -> MemoryStore:
    return store


class SyncStore:
    def store(self, item: MemoryItem) -> UUID:
        return item.id

    def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return None

    def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return []


class MissingSearch:
    async def store(self, item: MemoryItem) -> UUID:
        return item.id

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return None


class WrongReturn:
    async def store(self, item: MemoryItem) -> str:
        return str(item.id)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return None

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return []


class WrongParameter:
    async def store(self, item: MemoryItem) -> UUID:
        return item.id

    async def retrieve(self, item_id: str) -> MemoryItem | None:
        return None

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return []


wants_a_store(SyncStore())  # type: ignore[arg-type]
wants_a_store(MissingSearch())  # type: ignore[arg-type]
wants_a_store(WrongReturn())  # type: ignore[arg-type]
wants_a_store(WrongParameter())  # type: ignore[arg-type]
Branch(memory=SyncStore())  # type: ignore[arg-type]
Branch(memory=WrongReturn())  # type: ignore[arg-type]
Branch(memory=InMemoryStore)  # type: ignore[arg-type]  # the class, not a store
Branch(name=1)  # type: ignore[arg-type]

branch = Branch()
branch.memory = InMemoryStore()  # type: ignore[misc]

MemoryQuery(limit="ten")  # type: ignore[arg-type]
MemoryItem(tags="solo")  # type: ignore[arg-type]
MemoryItem(colour="red")  # type: ignore[call-arg]
MemoryQuery(txt="typo")  # type: ignore[call-arg]


async def forgotten_await(store: MemoryStore) -> None:
    store.store(MemoryItem())  # type: ignore[unused-coroutine]
    item_id: UUID = store.store(MemoryItem())  # type: ignore[assignment]
    found: list[MemoryItem] = store.search(MemoryQuery())  # type: ignore[assignment]
    print(item_id, found)


async def unopened_stores(path: Path, dsn: str) -> None:
    """`open` returns a pending open, not a store: it must be awaited or entered."""
    wants_a_store(SQLiteMemoryStore.open(path))  # type: ignore[arg-type]
    Branch(memory=PostgresMemoryStore.open(dsn, namespace="n"))  # type: ignore[arg-type]
    SQLiteMemoryStore.open(path, synchronous="OFF")  # type: ignore[arg-type]
    PostgresMemoryStore.open(dsn)  # type: ignore[call-arg]


def conformance_kits() -> None:
    """The kit's options are keyword-only and typed."""
    ConformanceKit(InMemoryStore, REFERENCE_PROFILE, timeout="30")  # type: ignore[call-overload]
    ConformanceKit(InMemoryStore, REFERENCE_PROFILE, 60)  # type: ignore[call-overload]


class SearchGivesDicts:
    async def store(self, item: MemoryItem) -> UUID:
        return item.id

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return None

    async def search(self, query: MemoryQuery) -> list[dict[str, object]]:
        return []


def contract_classes() -> None:
    """`memory_store_contract` is typed as the kit is: a factory of something that is
    not a store is refused before any test runs."""
    memory_store_contract(int, REFERENCE_PROFILE)  # type: ignore[arg-type]
    memory_store_contract(SearchGivesDicts, REFERENCE_PROFILE)  # type: ignore[arg-type]
    memory_store_contract(WrongParameter, REFERENCE_PROFILE)  # type: ignore[arg-type]
    memory_store_contract(SyncStore, REFERENCE_PROFILE)  # type: ignore[arg-type]
    memory_store_contract(InMemoryStore, REFERENCE_PROFILE, timeout="30")  # type: ignore[call-overload]
    memory_store_contract(InMemoryStore, REFERENCE_PROFILE, examples=5)  # type: ignore[call-overload]


def filter_operators() -> None:
    """An order takes a number or a string; membership a collection, never a string;
    a condition is abstract (ADR-0099)."""
    from lionmem import Ge, In, Present
    from lionmem.filters import Condition, NotIn

    Ge(None)  # type: ignore[arg-type]
    Ge([1])  # type: ignore[arg-type]
    In("abc")  # type: ignore[arg-type]
    NotIn({"a": 1})  # type: ignore[arg-type]
    Present(1)  # type: ignore[call-arg]
    Condition()  # type: ignore[abstract]


async def lionagi_bridges() -> None:
    """Each bridge takes its own library's items, and the kit pairs a factory with its
    flag (ADR-0101)."""
    from lionagi.protocols.memory import InMemoryStore as LionagiStore
    from lionagi.protocols.memory import MemoryItem as LionagiItem

    from lionmem.integrations.lionagi import for_lionagi, from_lionagi

    for_lionagi(LionagiStore())  # type: ignore[arg-type]
    from_lionagi(InMemoryStore())  # type: ignore[arg-type]
    await for_lionagi(InMemoryStore()).store(MemoryItem())  # type: ignore[arg-type]
    await from_lionagi(LionagiStore()).store(LionagiItem())  # type: ignore[arg-type]
    ConformanceKit(LionagiStore, REFERENCE_PROFILE)  # type: ignore[arg-type]
    # The flag without a lionagi store type-checks: the kit's lionagi types are structural,
    # so that they need no lionagi, and lionmem's stores fit them; every check then fails.


async def semantic_recall() -> None:
    """An embedder has its identity, dimensions and an async batched embed; recall takes
    a text or a vector and an int k (ADR-0102)."""

    from lionmem import Embedder, RecallStore
    from lionmem.embedders import FunctionEmbedder

    class SyncEmbed:
        identity = "sync"
        dimensions = 2

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return []

    class OneText:
        identity = "one"
        dimensions = 2

        async def embed(self, text: str) -> list[float]:
            return []

    def wants_an_embedder(embedder: Embedder) -> Embedder:
        return embedder

    def wants_a_recall_store(store: RecallStore) -> RecallStore:
        return store

    wants_an_embedder(SyncEmbed())  # type: ignore[arg-type]
    wants_an_embedder(OneText())  # type: ignore[arg-type]
    InMemoryStore(embedder="wordllama")  # type: ignore[arg-type]
    wants_a_recall_store(BareRecall())  # type: ignore[arg-type]
    FunctionEmbedder(lambda texts: [[0.0]], dimensions="1", identity="x")  # type: ignore[arg-type]
    await InMemoryStore().recall("text", k="3")  # type: ignore[arg-type]
    await InMemoryStore().recall({"text": 1.0})  # type: ignore[arg-type]


async def hybrid_recall() -> None:
    """Hybrid recall ranks the words of a text: no vector, and k an int (ADR-0104)."""
    from lionmem import HybridStore

    def wants_a_hybrid_store(store: HybridStore) -> HybridStore:
        return store

    wants_a_hybrid_store(BareRecall())  # type: ignore[arg-type]
    await InMemoryStore().recall_hybrid([0.5, 0.5])  # type: ignore[arg-type]
    await InMemoryStore().recall_hybrid("text", k="3")  # type: ignore[arg-type]


async def floors_and_many_questions() -> None:
    """A floor is a number, the questions a sequence of them (ADR-0102, ADR-0104); a
    store whose recall takes no floor is not a `RecallStore`."""
    from lionmem import RecallStore

    def wants_a_recall_store(store: RecallStore) -> RecallStore:
        return store

    await InMemoryStore().recall("text", min_score="0.5")  # type: ignore[arg-type]
    await InMemoryStore().recall_many([{"text": 1.0}])  # type: ignore[list-item]
    await InMemoryStore().recall_hybrid_many([[0.5, 0.5]])  # type: ignore[list-item]
    await InMemoryStore().recall_hybrid("text", min_score=None, k=None)  # type: ignore[arg-type]
    wants_a_recall_store(NoFloor())  # type: ignore[arg-type]


class NoFloor:
    """The three methods, an embedder and a recall that takes no `min_score`."""

    embedder = None

    async def store(self, item: MemoryItem) -> UUID:
        return item.id

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return None

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return []

    async def recall(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
    ) -> list[Recalled]:
        return []


class BareRecall:
    """The three methods and a recall, but no embedder."""

    async def store(self, item: MemoryItem) -> UUID:
        return item.id

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return None

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return []

    async def recall(self, query: str, k: int = 10) -> list[object]:
        return []


async def export_and_import() -> None:
    """A path is a str or a path, a query a `MemoryQuery` (ADR-0100)."""
    from lionmem.adapters.transfer import export_items, import_items

    await export_items(InMemoryStore(), 3)  # type: ignore[arg-type]
    await export_items(InMemoryStore(), "out.jsonl", query={"tags": ["t"]})  # type: ignore[arg-type]
    await import_items(InMemoryStore(), "out.jsonl", progress="bar")  # type: ignore[arg-type]


async def namespaces(path: Path) -> None:
    """A namespace is a str, chosen when a store is made or opened (ADR-0105)."""
    InMemoryStore(namespace=3)  # type: ignore[arg-type]
    SQLiteMemoryStore.open(path, namespace=None)  # type: ignore[arg-type]
    InMemoryStore().in_namespace(b"ana")  # type: ignore[arg-type]
    MemoryQuery(namespace="ana")  # type: ignore[call-arg]
    namespaced: NamespacedStore = BareRecall()  # type: ignore[assignment]
    print(namespaced)


async def paging(store: PagingStore) -> None:
    """A cursor is the str a page gave, a page a `Page` (ADR-0105)."""
    await store.search_page(MemoryQuery(), after=3)  # type: ignore[arg-type]
    await store.search_page(limit=3)  # type: ignore[call-arg]
    cursor: int = (await store.search_page(MemoryQuery())).next  # type: ignore[assignment]
    print(cursor)


async def expiry(store: ExpiringStore, path: Path) -> None:
    """An expiry is a time or seconds, never a field of an item or a query (ADR-0105)."""
    await store.expire([UUID(int=1)], at="tomorrow")  # type: ignore[arg-type]
    await store.expire([UUID(int=1)], 30)  # type: ignore[call-arg]
    await store.persist([UUID(int=1)], ttl=5)  # type: ignore[call-arg]
    swept: str = await store.sweep()  # type: ignore[assignment]
    InMemoryStore(ttl="1d")  # type: ignore[arg-type]
    SQLiteMemoryStore.open(path, clock=3.0)  # type: ignore[arg-type]
    MemoryItem(content="x", ttl=5)  # type: ignore[call-arg]
    MemoryQuery(include_expired=True)  # type: ignore[call-arg]
    print(swept)


def synchronous_store_answers_are_not_awaitables() -> None:
    """A `SyncStore` answers with the list itself, and opens only what it can (ADR-0107)."""
    from lionmem.adapters.synchronous import SyncStore as Facade

    store = Facade.open(InMemoryStore())
    store.search(MemoryQuery()).__await__()  # type: ignore[attr-defined]
    Facade.open(42)  # type: ignore[call-overload]
    Facade.open(InMemoryStore(), embedder=None)  # type: ignore[call-overload]
