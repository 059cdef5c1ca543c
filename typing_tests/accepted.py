"""Positive cases: mypy and pyright must accept every line (never run)."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, assert_type
from uuid import UUID, uuid4

from lionmem import (
    BatchingStore,
    Branch,
    ExpiringStore,
    ForgettingStore,
    InMemoryStore,
    MemoryItem,
    MemoryQuery,
    MemoryStore,
    NamespacedStore,
    PagingStore,
    Session,
    Sweeper,
)
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.urls import open_store
from lionmem.protocols.paging import Page
from lionmem.testing import REFERENCE_PROFILE, ConformanceKit
from lionmem.testing.pytest_plugin import MemoryStoreContract, memory_store_contract


class BareStore:
    """A structural adapter: no base class, no registration."""

    async def store(self, item: MemoryItem) -> UUID:
        return item.id

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return None

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return []


def wants_a_store(store: MemoryStore) -> MemoryStore:
    return store


wants_a_store(InMemoryStore())
wants_a_store(BareStore())
Branch(memory=BareStore())
Session(memory=InMemoryStore())
Session(branches=[Branch(memory=BareStore())], name="s")


async def awaited_results(store: MemoryStore) -> None:
    assert_type(await store.store(MemoryItem()), UUID)
    assert_type(await store.retrieve(uuid4()), MemoryItem | None)
    assert_type(await store.search(MemoryQuery()), list[MemoryItem])


async def reference_results(store: InMemoryStore) -> None:
    assert_type(await store.store(MemoryItem()), UUID)
    assert_type(await store.retrieve(uuid4()), MemoryItem | None)
    assert_type(await store.search(MemoryQuery(text="x")), list[MemoryItem])


assert_type(Branch().memory, MemoryStore)
assert_type(Session().memory, MemoryStore)
assert_type(Session().default_branch, Branch | None)

item = MemoryItem(content={"any": "thing"}, tags=["a"], metadata={"k": 1})
assert_type(item.id, UUID)
assert_type(item.created_at, float)
assert_type(item.metadata, dict[str, Any])
assert_type(item.content, Any)
assert_type(item.tags, list[str])

query = MemoryQuery(text="t", tags=["a"], filters={"k": None}, limit=-1)
assert_type(query.text, str | None)
assert_type(query.tags, list[str] | None)
assert_type(query.filters, dict[str, Any] | None)
assert_type(query.limit, int)


async def durable_stores(path: Path, dsn: str) -> None:
    """The shipped adapters conform to the protocol, opened either way."""
    async with SQLiteMemoryStore.open(path, synchronous="FULL") as sqlite:
        assert_type(sqlite, SQLiteMemoryStore)
        wants_a_store(sqlite)
        Branch(memory=sqlite)
        assert_type(await sqlite.store_many([MemoryItem()]), list[UUID])
    postgres = await PostgresMemoryStore.open(dsn, namespace="notes")
    assert_type(postgres, PostgresMemoryStore)
    Session(memory=postgres)
    await postgres.close()
    assert_type(open_store("memory:"), AbstractAsyncContextManager[ForgettingStore])
    async with open_store("sqlite:///notes.db") as named:
        assert_type(named, ForgettingStore)
        Branch(memory=named)
        assert_type(await named.delete_matching(MemoryQuery(tags=["old"])), int)
        assert_type(await named.delete(uuid4()), bool)


def forgetting_stores(memory: InMemoryStore, sqlite: SQLiteMemoryStore, postgres: PostgresMemoryStore) -> None:
    """Every store lionmem ships is a ForgettingStore (ADR-0100)."""
    stores: list[ForgettingStore] = [memory, sqlite, postgres]
    wants_a_store(stores[0])


def batching_stores(memory: InMemoryStore, sqlite: SQLiteMemoryStore, postgres: PostgresMemoryStore) -> None:
    """Every store lionmem ships writes a batch in one call, and says so."""
    stores: list[BatchingStore] = [memory, sqlite, postgres]
    assert isinstance(InMemoryStore(), BatchingStore)
    wants_a_store(stores[0])


def conformance_kits() -> None:
    """Any structural adapter's class or factory; a timeout in seconds, or none."""

    def on_workspace(workspace: Path) -> AbstractAsyncContextManager[SQLiteMemoryStore]:
        return SQLiteMemoryStore.open(workspace / "kit.db")

    ConformanceKit(BareStore, REFERENCE_PROFILE, timeout=5)
    ConformanceKit(InMemoryStore, REFERENCE_PROFILE, stateful_examples=10, timeout=None)
    ConformanceKit(on_workspace, REFERENCE_PROFILE, timeout=2.5)
    assert_type(memory_store_contract(BareStore, REFERENCE_PROFILE), type[MemoryStoreContract])
    memory_store_contract(on_workspace, REFERENCE_PROFILE, stateful_examples=10, timeout=None)


def filter_operators() -> None:
    """Operators go where filter values go, from `lionmem` or `lionmem.filters` (ADR-0099)."""
    from lionmem import AllOf, AnyOf, Ge, In, Missing, Present
    from lionmem.filters import Condition, Le, Lt, Ne, NotIn

    query = MemoryQuery(
        filters={
            "importance": Ge(3),
            "kind": In(["fact", "preference"]),
            "source": NotIn(("spam",)),
            "user_id": Present(),
            "deleted_at": Missing(),
            "score": AllOf(Ge(0.5), Lt(1)),
            "tier": AnyOf("gold", Le("b"), Ne(None)),
            "ids": In({1, 2}),
        }
    )
    condition: Condition = query.filters["importance"] if query.filters else Ge(0)
    assert_type(5 == condition, bool)
    assert_type(condition.holds(5), bool)


async def recent_stores(memory: InMemoryStore, sqlite: SQLiteMemoryStore, postgres: PostgresMemoryStore) -> None:
    """Every store lionmem ships answers newest first (ADR-0099)."""
    from lionmem import RecentStore

    stores: list[RecentStore] = [memory, sqlite, postgres]
    newest: list[MemoryItem] = await stores[0].search_newest(MemoryQuery(tags=["todo"], limit=20))
    print(newest)


async def lionagi_bridges() -> None:
    """A lionmem store behind lionagi's Branch; a lionagi store before the kit (ADR-0101)."""
    from lionagi import Branch as LionagiBranch
    from lionagi.protocols.memory import InMemoryStore as LionagiStore
    from lionagi.protocols.memory import MemoryItem as LionagiItem

    from lionmem.integrations.lionagi import StoreForLionagi, StoreFromLionagi, for_lionagi, from_lionagi

    bridge: StoreForLionagi = for_lionagi(InMemoryStore())
    LionagiBranch(memory=bridge)
    assert_type(await bridge.store(LionagiItem()), UUID)
    assert_type(await bridge.retrieve(uuid4()), LionagiItem | None)
    checked: StoreFromLionagi = from_lionagi(LionagiStore())
    ConformanceKit(LionagiStore, REFERENCE_PROFILE, lionagi=True)
    memory_store_contract(LionagiStore, REFERENCE_PROFILE, lionagi=True)
    ConformanceKit(lambda: checked, REFERENCE_PROFILE)


async def semantic_recall(path: Path) -> None:
    """Recall is an extension a store takes an embedder for (ADR-0102)."""
    from collections.abc import Sequence

    from lionmem import Embedder, Recalled, RecallStore
    from lionmem.embedders import FunctionEmbedder, HashingEmbedder, WordLlamaEmbedder

    class Mine:
        identity = "mine:v1"
        dimensions = 2

        async def embed(self, texts: Sequence[str]) -> list[list[float]]:
            return [[1.0, 0.0] for _ in texts]

    def wants_an_embedder(embedder: Embedder) -> Embedder:
        return embedder

    def wants_a_recall_store(store: RecallStore) -> RecallStore:
        return store

    wants_an_embedder(Mine())
    wants_an_embedder(WordLlamaEmbedder())
    wants_an_embedder(FunctionEmbedder(lambda texts: [[0.0] for _ in texts], dimensions=1, identity="zero"))
    store = InMemoryStore(embedder=HashingEmbedder(8), text_of=lambda item: str(item.tags))
    wants_a_recall_store(store)
    found = await store.recall("text", 3, tags=["t"], filters={"k": 1})
    assert_type(found, list[Recalled])
    assert_type(found[0].score, float)
    assert_type(found[0].item, MemoryItem)
    await store.recall([0.5] * 8)
    async with SQLiteMemoryStore.open(path, embedder=Mine(), reembed=True) as durable:
        wants_a_recall_store(durable)
        assert_type(await durable.recall("text"), list[Recalled])


async def hybrid_recall(path: Path) -> None:
    """Hybrid recall is an extension of recall that every lionmem store has (ADR-0104)."""
    from lionmem import HybridRecalled, HybridStore
    from lionmem.embedders import HashingEmbedder
    from lionmem.protocols.hybrid import recall_hybrid

    def wants_a_hybrid_store(store: HybridStore) -> HybridStore:
        return store

    store = InMemoryStore(embedder=HashingEmbedder(8))
    wants_a_hybrid_store(store)
    found = await store.recall_hybrid("ticket 40107", 3, tags=["t"], filters={"k": 1})
    assert_type(found, list[HybridRecalled])
    assert_type(found[0].score, float)
    assert_type(found[0].meaning_rank, int | None)
    assert_type(found[0].words_score, float | None)
    assert_type(await recall_hybrid(store, "ticket"), list[HybridRecalled])
    async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(8)) as durable:
        wants_a_hybrid_store(durable)
        assert_type(await durable.recall_hybrid_many(["a", "b"], 2, min_score=0.3), list[list[HybridRecalled]])


async def floors_and_many_questions() -> None:
    """A recall may take a floor on its scores, and many questions in one call
    (ADR-0102, ADR-0104)."""
    from lionmem import HybridRecalled, Recalled, RecallStore
    from lionmem.embedders import HashingEmbedder
    from lionmem.protocols.hybrid import recall_hybrid_many
    from lionmem.protocols.recall import recall_many

    store = InMemoryStore(embedder=HashingEmbedder(8))
    assert_type(await store.recall("text", 3, min_score=0.5), list[Recalled])
    assert_type(await store.recall("text", min_score=1), list[Recalled])
    assert_type(await store.recall_many(["a", [0.5] * 8], 3, tags=["t"], min_score=0.2), list[list[Recalled]])
    assert_type(await store.recall_hybrid("a", min_score=-0.5), list[HybridRecalled])

    def any_recall_store(recalling: RecallStore) -> RecallStore:
        return recalling

    assert_type(await recall_many(any_recall_store(store), ("a", "b")), list[list[Recalled]])
    assert_type(await recall_hybrid_many(store, ["a"], filters={"k": 1}), list[list[HybridRecalled]])


async def export_and_import(path: Path) -> None:
    """A store's items to a file and back, from Python (ADR-0100)."""
    from lionmem.adapters.transfer import export_items, import_items

    store = InMemoryStore()
    assert_type(await export_items(store, path / "out.jsonl", query=MemoryQuery(tags=["t"])), int)
    assert_type(await import_items(store, str(path / "out.jsonl"), progress=print), int)
    async with SQLiteMemoryStore.open(path / "m.db") as durable:
        assert_type(await import_items(durable, path / "out.jsonl", check=lambda item: None), int)


async def namespaced_stores(memory: InMemoryStore, sqlite: SQLiteMemoryStore, postgres: PostgresMemoryStore) -> None:
    """Every store lionmem ships is a NamespacedStore, whose `in_namespace` is a store of
    its own class (ADR-0105)."""
    stores: list[NamespacedStore] = [memory, sqlite, postgres]
    assert_type(memory.in_namespace("ana"), InMemoryStore)
    assert_type(sqlite.in_namespace("ana"), SQLiteMemoryStore)
    assert_type(postgres.in_namespace("ana"), PostgresMemoryStore)
    assert_type(await stores[0].namespaces(), list[str])
    assert_type(stores[1].namespace, str)
    wants_a_store(InMemoryStore(namespace="ana"))


async def paging_stores(memory: InMemoryStore, sqlite: SQLiteMemoryStore, postgres: PostgresMemoryStore) -> None:
    """Every store lionmem ships pages; a page's cursor is a str, or `None` at the end (ADR-0105)."""
    stores: list[PagingStore] = [memory, sqlite, postgres]
    page = await stores[0].search_page(MemoryQuery(limit=50))
    assert_type(page, Page)
    assert_type(page.items, list[MemoryItem])
    assert_type(page.next, str | None)
    await sqlite.search_page(MemoryQuery(text="x", limit=5), page.next)
    async for batch in postgres.scan(100, after=page.next):
        assert_type(batch, list[MemoryItem])


async def expiring_stores(memory: InMemoryStore, sqlite: SQLiteMemoryStore, postgres: PostgresMemoryStore) -> None:
    """Every store lionmem ships expires items; an expiry is a timestamp, a datetime or
    seconds from now (ADR-0105)."""
    stores: list[ExpiringStore] = [memory, sqlite, postgres]
    assert_type(stores[0].ttl, float | None)
    assert_type(await stores[1].expire([uuid4()], at=datetime.now(UTC)), int)
    assert_type(await stores[2].expire([uuid4()], ttl=3_600), int)
    assert_type(await memory.persist([uuid4()]), int)
    assert_type(await sqlite.sweep(), int)
    wants_a_store(InMemoryStore(ttl=60, refresh_on_read=True, clock=lambda: 0.0))
    async with Sweeper(postgres, every=600) as sweeper:
        assert_type(sweeper.swept, int)


def synchronous_stores(path: Path) -> None:
    """A `SyncStore` is typed by what it opened, and answers without `await` (ADR-0107)."""
    from lionmem import Recalled
    from lionmem.adapters.synchronous import SyncStore

    by_url = SyncStore.open("sqlite:///notes.db")
    assert_type(by_url, SyncStore[ForgettingStore])
    with SyncStore.open(SQLiteMemoryStore.open(path)) as sqlite:
        assert_type(sqlite, SyncStore[SQLiteMemoryStore])
        assert_type(sqlite.store_of, SQLiteMemoryStore)
        assert_type(sqlite.store(MemoryItem(content="x")), UUID)
        assert_type(sqlite.search(MemoryQuery(text="x")), list[MemoryItem])
        assert_type(sqlite.recall("x", k=3), list[Recalled])
        assert_type(sqlite.run(lambda store: store.count(MemoryQuery())), int)
        for batch in sqlite.scan(100):
            assert_type(batch, list[MemoryItem])
    memory = SyncStore.open(InMemoryStore())
    assert_type(memory, SyncStore[InMemoryStore])
    assert_type(memory.retrieve(uuid4()), MemoryItem | None)
    memory.close()
