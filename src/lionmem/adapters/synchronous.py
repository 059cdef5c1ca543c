"""`SyncStore`: any store, called from code that does not await.

A script, a notebook cell or a synchronous web handler calls `store.search(query)` and
gets the list. Each `SyncStore` runs one event loop on a thread of its own, opens the
store there, and hands every call to that loop, waiting for its answer; the store
itself stays the async store the record describes. Governed by [ADR-0107][adr-0107].

Seam for tests: `_loop`, the store's loop and thread, and `_close_at_exit`, the hook
that closes a store left open.

Examples:
    ```python
    import tempfile
    from pathlib import Path

    from lionmem import MemoryItem, MemoryQuery
    from lionmem.adapters.synchronous import SyncStore

    url = f"sqlite:///{Path(tempfile.mkdtemp()) / 'notes.db'}"
    with SyncStore.open(url) as store:
        item_id = store.store(MemoryItem(content="The customer prefers email"))
        assert [i.id for i in store.search(MemoryQuery(text="email"))] == [item_id]
    ```
"""

from __future__ import annotations

import asyncio
import concurrent.futures.thread  # noqa: F401  # pyright: ignore[reportUnusedImport]
import threading
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Generator, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import datetime
from types import TracebackType
from typing import Any, Generic, Self, TypeVar, cast, overload
from uuid import UUID

from lionmem._internal.arguments import kind_of
from lionmem._internal.loops import await_on, call_on
from lionmem.adapters.lifecycle import ClosesOnExit
from lionmem.adapters.urls import open_store
from lionmem.protocols.batching import BatchingStore
from lionmem.protocols.expiry import ExpiringStore
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.hybrid import HybridRecalled, HybridStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore
from lionmem.protocols.namespaces import NamespacedStore
from lionmem.protocols.paging import Page, PagingStore
from lionmem.protocols.recall import Embedder, Recalled, RecallStore, recall_many
from lionmem.protocols.recent import RecentStore
from lionmem.protocols.stats import StatsStore, StoreStats
from lionmem.protocols.verifying import Verification, VerifyingStore

__all__ = ["SyncStore"]

S = TypeVar("S", bound=MemoryStore)
Opened = TypeVar("Opened", bound=MemoryStore)  # what `open` opens: its own, not the class's
T = TypeVar("T")


class _Loop:
    """An event loop running on a thread of its own until `stop`."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop = asyncio.new_event_loop()
        self.thread: threading.Thread = threading.Thread(target=self._run, name="lionmem-sync-store", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()
        self.loop.run_until_complete(self.loop.shutdown_asyncgens())
        self.loop.run_until_complete(self.loop.shutdown_default_executor())
        self.loop.close()

    def call(self, work: Coroutine[Any, Any, T]) -> T:
        """Run `work` on the loop and wait for it; an interrupt of the wait (Ctrl-C)
        cancels it there."""
        if threading.get_ident() == self.thread.ident:
            work.close()
            raise RuntimeError(
                "a SyncStore was called from its own event loop (from inside a call of its store, "
                "such as an embedder's), which would wait for itself for ever; await the store there"
            )
        return call_on(self.loop, work)

    def stop(self) -> None:
        """Stop the loop once what it runs now is done, and wait for its thread to end."""
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join()


# Python shuts its thread pools down before it runs `atexit`, and a store's close may use
# its loop's pool; threading's own exit hooks run before that, newest first. The pools'
# module registers its hook as it loads (loading it at exit fails), so it loads with
# this one, and every SyncStore's hook comes after it and runs before it.
_at_exit: Callable[..., None] = getattr(threading, "_register_atexit")


def _close_at_exit(store: weakref.ref[SyncStore[Any]]) -> None:
    """Close a store its user left open, as Python exits."""
    alive = store()
    if alive is not None:
        alive.close()


class SyncStore(Generic[S]):
    """A store whose methods return their answers instead of awaitables.

    Made by [`open`][lionmem.adapters.synchronous.SyncStore.open], it runs the store
    on an event loop of its own, on its own thread, and is safe to call from any
    number of threads at once, as the store is from many tasks. Each method is the
    store's method of the same name, with its arguments, answers and errors; a method
    of an extension the store does not implement raises `TypeError` naming it, and
    [`run`][lionmem.adapters.synchronous.SyncStore.run] reaches anything else. Close
    it with `close()` or a `with` block; one left open is closed as Python exits.
    See [ADR-0107][adr-0107].
    """

    def __init__(self, store: S, loop: _Loop, opening: AbstractAsyncContextManager[S] | None) -> None:
        """Use [`SyncStore.open`][lionmem.adapters.synchronous.SyncStore.open]."""
        self._store = store
        self._loop: _Loop | None = loop
        self._opening = opening
        _at_exit(_close_at_exit, weakref.ref(self))

    @overload
    @classmethod
    def open(cls, source: str, *, embedder: Embedder | None = None) -> SyncStore[ForgettingStore]: ...

    @overload
    @classmethod
    def open(cls, source: AbstractAsyncContextManager[Opened]) -> SyncStore[Opened]: ...

    @overload
    @classmethod
    def open(cls, source: Opened) -> SyncStore[Opened]: ...

    @classmethod
    def open(cls, source: object, *, embedder: Embedder | None = None) -> SyncStore[Any]:
        """Open a store on a new thread's event loop, and return it to call.

        Args:
            source: a store URL, as [`open_store`][lionmem.adapters.urls.open_store]
                takes (and `embedder` with it); a store's opening, such as
                `SQLiteMemoryStore.open(path)`, opened and closed on the new loop;
                or a store that holds no connection, such as an `InMemoryStore`,
                used as it is.

        Raises:
            TypeError: `source` is none of these (an open durable store belongs to
                the loop it was opened on: give its opening instead), or `embedder`
                is given without a URL.
            ValueError, OSError: as opening the store raises them.
        """
        if embedder is not None and not isinstance(source, str):
            raise TypeError("embedder goes with a store URL; give a store's opening its embedder itself")
        if isinstance(source, ClosesOnExit):
            name = type(source).__name__
            raise TypeError(
                f"an open {name} belongs to the event loop it was opened on; "
                f"give SyncStore.open its opening, {name}.open(...), to open it on the store's own loop"
            )
        given: Any = source
        if isinstance(given, str):
            opening: AbstractAsyncContextManager[Any] | None = open_store(given, embedder=embedder)
        elif isinstance(given, MemoryStore):
            opening = None
        elif isinstance(given, AbstractAsyncContextManager):
            opening = cast("AbstractAsyncContextManager[Any]", given)
        else:
            raise TypeError(f"SyncStore.open takes a store URL, a store's opening or a store, got {kind_of(source)}")
        loop = _Loop()
        try:
            store: object = source if opening is None else loop.call(opening.__aenter__())
        except BaseException:
            loop.stop()
            raise
        return cls(cast("Any", store), loop, opening)

    @property
    def store_of(self) -> S:
        """The async store the calls go to, which only this store's loop may await."""
        return self._store

    def close(self) -> None:
        """Close the store, if this opened it, and stop its loop; again, nothing."""
        loop, self._loop = self._loop, None
        if loop is None:
            return
        try:
            if self._opening is not None:
                loop.call(self._opening.__aexit__(None, None, None))
        finally:
            loop.stop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def run(self, work: Callable[[S], Awaitable[T]]) -> T:
        """What `work(store)` gives, awaited on the store's loop: any call this class
        does not name, such as `run(lambda s: s.count_up_to(100))`."""

        async def awaited() -> T:
            return await work(self._store)

        return self._call(awaited())

    async def arun(self, work: Callable[[S], Awaitable[T]]) -> T:
        """What `work(store)` gives, awaited on the store's loop from code that runs on
        another loop, which goes on meanwhile: `await sync.arun(lambda s: s.search(q))`.
        Cancelling the await cancels the call there.

        Raises:
            RuntimeError: the SyncStore is closed.
        """
        if self._loop is None:
            raise RuntimeError("the SyncStore is closed")

        async def awaited() -> T:
            return await work(self._store)

        if asyncio.get_running_loop() is self._loop.loop:  # a call of its store's, such as an embedder's
            return await awaited()
        return await await_on(self._loop.loop, awaited())

    def _call(self, work: Coroutine[Any, Any, T]) -> T:
        if self._loop is None:
            work.close()
            raise RuntimeError("the SyncStore is closed")
        return self._loop.call(work)

    def _lacks(self, method: str, kind: str) -> TypeError:
        return TypeError(f"{method} needs a store that implements {kind}; {type(self._store).__name__} does not")

    # -- MemoryStore --------------------------------------------------------------

    def store(self, item: MemoryItem) -> UUID:
        """As [`MemoryStore.store`][lionmem.protocols.memory.MemoryStore.store]."""
        return self._call(self._store.store(item))

    def retrieve(self, item_id: UUID) -> MemoryItem | None:
        """As [`MemoryStore.retrieve`][lionmem.protocols.memory.MemoryStore.retrieve]."""
        return self._call(self._store.retrieve(item_id))

    def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """As [`MemoryStore.search`][lionmem.protocols.memory.MemoryStore.search]."""
        return self._call(self._store.search(query))

    # -- the extensions ------------------------------------------------------------

    def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]:
        """As [`BatchingStore.store_many`][lionmem.protocols.batching.BatchingStore.store_many]."""
        store = self._store
        if not isinstance(store, BatchingStore):
            raise self._lacks("store_many", "BatchingStore")
        return self._call(store.store_many(items))

    def delete(self, item_id: UUID) -> bool:
        """As [`ForgettingStore.delete`][lionmem.protocols.forgetting.ForgettingStore.delete]."""
        store = self._store
        if not isinstance(store, ForgettingStore):
            raise self._lacks("delete", "ForgettingStore")
        return self._call(store.delete(item_id))

    def delete_many(self, item_ids: Iterable[UUID]) -> int:
        """As [`ForgettingStore.delete_many`][lionmem.protocols.forgetting.ForgettingStore.delete_many]."""
        store = self._store
        if not isinstance(store, ForgettingStore):
            raise self._lacks("delete_many", "ForgettingStore")
        return self._call(store.delete_many(item_ids))

    def delete_matching(self, query: MemoryQuery) -> int:
        """As [`ForgettingStore.delete_matching`][lionmem.protocols.forgetting.ForgettingStore.delete_matching]."""
        store = self._store
        if not isinstance(store, ForgettingStore):
            raise self._lacks("delete_matching", "ForgettingStore")
        return self._call(store.delete_matching(query))

    def delete_created_before(self, cutoff: float | datetime) -> int:
        """As [`ForgettingStore.delete_created_before`][lionmem.protocols.forgetting.ForgettingStore.delete_created_before]."""
        store = self._store
        if not isinstance(store, ForgettingStore):
            raise self._lacks("delete_created_before", "ForgettingStore")
        return self._call(store.delete_created_before(cutoff))

    def count(self, query: MemoryQuery) -> int:
        """As [`ForgettingStore.count`][lionmem.protocols.forgetting.ForgettingStore.count]."""
        store = self._store
        if not isinstance(store, ForgettingStore):
            raise self._lacks("count", "ForgettingStore")
        return self._call(store.count(query))

    def scan(self, batch_size: int = 500) -> Generator[list[MemoryItem], None, None]:
        """As [`ForgettingStore.scan`][lionmem.protocols.forgetting.ForgettingStore.scan]:
        every item, in insertion order, `batch_size` at a time; leaving the loop early
        closes the scan."""
        store = self._store
        if not isinstance(store, ForgettingStore):
            raise self._lacks("scan", "ForgettingStore")
        return self._each(store.scan(batch_size))

    def _each(self, batches: AsyncIterator[list[MemoryItem]]) -> Generator[list[MemoryItem], None, None]:
        async def following() -> list[MemoryItem] | None:
            try:
                return await anext(batches)
            except StopAsyncIteration:
                return None

        async def closed() -> None:
            aclose: Callable[[], Awaitable[object]] | None = getattr(batches, "aclose", None)
            if aclose is not None:
                await aclose()

        try:
            while (batch := self._call(following())) is not None:
                yield batch
        finally:
            if self._loop is not None:
                self._call(closed())

    def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        """As [`PagingStore.search_page`][lionmem.protocols.paging.PagingStore.search_page]."""
        store = self._store
        if not isinstance(store, PagingStore):
            raise self._lacks("search_page", "PagingStore")
        return self._call(store.search_page(query, after))

    def search_newest(self, query: MemoryQuery) -> list[MemoryItem]:
        """As [`RecentStore.search_newest`][lionmem.protocols.recent.RecentStore.search_newest]."""
        store = self._store
        if not isinstance(store, RecentStore):
            raise self._lacks("search_newest", "RecentStore")
        return self._call(store.search_newest(query))

    def recall(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Recalled]:
        """As [`RecallStore.recall`][lionmem.protocols.recall.RecallStore.recall]."""
        store = self._store
        if not isinstance(store, RecallStore):
            raise self._lacks("recall", "RecallStore")
        return self._call(store.recall(query, k, tags=tags, filters=filters, min_score=min_score))

    def recall_many(
        self,
        queries: Sequence[str | Sequence[float]],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[list[Recalled]]:
        """As [`recall_many`][lionmem.protocols.recall.recall_many]."""
        store = self._store
        if not isinstance(store, RecallStore):
            raise self._lacks("recall_many", "RecallStore")
        return self._call(recall_many(store, queries, k, tags=tags, filters=filters, min_score=min_score))

    def recall_hybrid(
        self,
        query: str,
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[HybridRecalled]:
        """As [`HybridStore.recall_hybrid`][lionmem.protocols.hybrid.HybridStore.recall_hybrid]."""
        store = self._store
        if not isinstance(store, HybridStore):
            raise self._lacks("recall_hybrid", "HybridStore")
        return self._call(store.recall_hybrid(query, k, tags=tags, filters=filters, min_score=min_score))

    def expire(self, item_ids: Iterable[UUID], *, at: float | datetime | None = None, ttl: float | None = None) -> int:
        """As [`ExpiringStore.expire`][lionmem.protocols.expiry.ExpiringStore.expire]."""
        store = self._store
        if not isinstance(store, ExpiringStore):
            raise self._lacks("expire", "ExpiringStore")
        return self._call(store.expire(item_ids, at=at, ttl=ttl))

    def persist(self, item_ids: Iterable[UUID]) -> int:
        """As [`ExpiringStore.persist`][lionmem.protocols.expiry.ExpiringStore.persist]."""
        store = self._store
        if not isinstance(store, ExpiringStore):
            raise self._lacks("persist", "ExpiringStore")
        return self._call(store.persist(item_ids))

    def sweep(self) -> int:
        """As [`ExpiringStore.sweep`][lionmem.protocols.expiry.ExpiringStore.sweep]."""
        store = self._store
        if not isinstance(store, ExpiringStore):
            raise self._lacks("sweep", "ExpiringStore")
        return self._call(store.sweep())

    def namespaces(self) -> list[str]:
        """As [`NamespacedStore.namespaces`][lionmem.protocols.namespaces.NamespacedStore.namespaces]."""
        store = self._store
        if not isinstance(store, NamespacedStore):
            raise self._lacks("namespaces", "NamespacedStore")
        return self._call(store.namespaces())

    def stats(self) -> StoreStats:
        """As [`StatsStore.stats`][lionmem.protocols.stats.StatsStore.stats]."""
        store = self._store
        if not isinstance(store, StatsStore):
            raise self._lacks("stats", "StatsStore")
        return self._call(store.stats())

    def verify(self) -> Verification:
        """As [`VerifyingStore.verify`][lionmem.protocols.verifying.VerifyingStore.verify]."""
        store = self._store
        if not isinstance(store, VerifyingStore):
            raise self._lacks("verify", "VerifyingStore")
        return self._call(store.verify())
