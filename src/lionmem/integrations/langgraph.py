"""LangGraph's `BaseStore` on any lionmem store: `put`, `get`, `search`, `delete` and
`list_namespaces`, sync and async, over lionmem's exact filters, recall and expiry.

A LangGraph application changes the store it constructs, and nothing else:

```python
from lionmem import InMemoryStore
from lionmem.integrations.langgraph import StoreForLangGraph

with StoreForLangGraph(InMemoryStore()) as store:
    store.put(("users", "ana"), "prefs", {"channel": "email", "score": 7})
    assert store.get(("users", "ana"), "prefs").value == {"channel": "email", "score": 7}
    found = store.search(("users",), filter={"score": {"$gte": 5}})
    assert [item.key for item in found] == ["prefs"]
```

Needs the `langgraph` extra; `import lionmem` never imports this module. Governed by
[ADR-0106][adr-0106].
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Iterable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from types import TracebackType
from typing import Any, Protocol, Self, TypeVar

from lionmem._internal.arguments import kind_of
from lionmem._internal.loops import await_on, call_on
from lionmem.adapters.lifecycle import ClosesOnExit
from lionmem.adapters.synchronous import SyncStore
from lionmem.adapters.urls import open_store
from lionmem.protocols.expiry import Sweeper
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.recall import Embedder, RecallStore

try:
    from langchain_core.embeddings import Embeddings
    from langgraph.store.base import BaseStore, IndexConfig, Op, Result, TTLConfig
    from langgraph.store.base.embed import ensure_embeddings

    from lionmem.integrations._langgraph_ops import Operations, checked
except ImportError:  # LangGraph's own error stays chained, as the context
    raise ImportError("lionmem.integrations.langgraph needs LangGraph: pip install 'lionmem[langgraph]'")  # noqa: B904

__all__ = ["EmbedderFromLangGraph", "StoreForLangGraph"]

T = TypeVar("T")
Work = Callable[[ForgettingStore], Coroutine[Any, Any, T]]


class _Calls(Protocol):
    """Runs a call of the store on the store's loop, from any thread, and waits."""

    def __call__(self, work: Work[T], /) -> T: ...


class _Awaits(Protocol):
    """Runs a call of the store on the store's loop, from any loop, and awaits it."""

    def __call__(self, work: Work[T], /) -> Awaitable[T]: ...


class EmbedderFromLangGraph:
    """A lionmem [`Embedder`][lionmem.protocols.recall.Embedder] from LangGraph's
    `index` configuration: its `embed` (LangChain embeddings, a function of a list of
    texts, async or not, or a `"provider:model"` name) and its `dims`."""

    def __init__(self, index: IndexConfig) -> None:
        """Make the embedding `index` names, once.

        Raises:
            ValueError: `index` has no `embed` or no positive int `dims`.
        """
        embed, dims = index.get("embed"), index.get("dims")
        if embed is None or not isinstance(dims, int) or isinstance(dims, bool) or dims <= 0:
            raise ValueError(f"a LangGraph index needs its 'embed' and a positive int 'dims'; got {dict(index)!r}")
        self.embeddings: Embeddings = ensure_embeddings(embed)
        """The LangChain embeddings the index's `embed` makes."""
        name = embed if isinstance(embed, str) else getattr(embed, "__name__", type(embed).__name__)
        self._identity = f"langgraph:{name}:{dims}"
        self._dimensions = dims

    @property
    def identity(self) -> str:
        """`langgraph:` and the embedding's name and dimensions."""
        return self._identity

    @property
    def dimensions(self) -> int:
        """The `dims` of the index."""
        return self._dimensions

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The embedding's vectors of `texts`, through its async form."""
        return await self.embeddings.aembed_documents(list(texts))


class StoreForLangGraph(BaseStore):
    """A LangGraph `BaseStore` keeping its items in a lionmem store.

    Each LangGraph item is one `MemoryItem` of the wrapped store's namespace, with an
    id made from its namespace and key. Filters are lionmem's, compared by JSON type
    in every store; `query=` is the store's recall (hybrid recall with
    `hybrid=True`); a TTL is the item's expiry, and an expired item is gone from
    every read. Made with the class, the store runs on an event loop of its own
    thread and answers the sync and async methods from anywhere; made by
    [`open`][lionmem.integrations.langgraph.StoreForLangGraph.open], it runs on the
    caller's loop. See [ADR-0106][adr-0106].
    """

    supports_ttl: bool = True
    """True: every lionmem store keeps a TTL, as the item's expiry."""
    index_config: IndexConfig | None
    """LangGraph's index settings the store was made with, or `None`."""
    embeddings: Embeddings | None
    """The index's embedding, as LangGraph's stores name it: the store's own when its
    embedder came from the index, or `None` without an index."""

    def __init__(
        self,
        source: str | AbstractAsyncContextManager[ForgettingStore] | ForgettingStore,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        hybrid: bool = False,
    ) -> None:
        """Open `source` on an event loop of its own thread, as
        [`SyncStore.open`][lionmem.adapters.synchronous.SyncStore.open] does; close it
        with `close()` or a `with` block.

        Args:
            source: a store URL (opened with an embedder from `index`), a store's
                opening, or a store that holds no connection, such as an
                `InMemoryStore`.
            index: LangGraph's index: its `fields` choose the text each item is
                embedded and found by; its `embed` and `dims` make the embedder of a
                URL's store (a store or an opening brings its own).
            ttl: LangGraph's TTL settings, in minutes; with a `sweep_interval_minutes`,
                a [`Sweeper`][lionmem.protocols.expiry.Sweeper] runs until `close`.
            hybrid: answer `query=` with hybrid recall, by meaning and words.

        Raises:
            TypeError: `source` is none of these, or its store lacks an extension the
                bridge needs (batching, expiry, paging; hybrid recall with `hybrid`).
        """
        _check(source)
        if isinstance(source, ClosesOnExit):
            name = type(source).__name__
            raise TypeError(
                f"an open {name} belongs to the event loop it was opened on; give StoreForLangGraph its opening, "
                f"{name}.open(...), or make it with StoreForLangGraph.open on that loop"
            )
        opens: Any = SyncStore.open
        sync: SyncStore[ForgettingStore] = opens(source, embedder=_embedder(index) if isinstance(source, str) else None)
        try:
            self._setup(sync.store_of, sync.run, sync.arun, index=index, ttl=ttl, hybrid=hybrid)
            self._sweeper = sweeper = _sweeper_of(self._operations, ttl)
            if sweeper is not None:
                sync.run(lambda _: sweeper.__aenter__())
        except BaseException:
            sync.close()
            raise
        self._sync: SyncStore[ForgettingStore] | None = sync

    def _setup(
        self,
        store: ForgettingStore,
        call: _Calls,
        acall: _Awaits,
        *,
        index: IndexConfig | None,
        ttl: TTLConfig | None,
        hybrid: bool,
    ) -> None:
        self._operations = Operations(store, (index or {}).get("fields"), hybrid=hybrid)
        self._call, self._acall = call, acall
        self.index_config = index
        embedder = store.embedder if isinstance(store, RecallStore) else None
        if isinstance(embedder, EmbedderFromLangGraph):  # made from the index already: not twice
            self.embeddings = embedder.embeddings
        else:
            embed = (index or {}).get("embed")
            self.embeddings = None if embed is None else ensure_embeddings(embed)
        self.ttl_config = ttl

    @classmethod
    @asynccontextmanager
    async def open(
        cls,
        source: str | AbstractAsyncContextManager[ForgettingStore] | ForgettingStore,
        *,
        index: IndexConfig | None = None,
        ttl: TTLConfig | None = None,
        hybrid: bool = False,
    ) -> AsyncGenerator[Self, None]:
        """Open `source` on the running loop, as a LangGraph store, for an `async with`;
        the arguments are the class's, and `source` may also be a store already open
        on this loop. The async methods await the store directly. The sync methods may
        be called from other threads; from the loop's own thread they would wait for
        themselves, and raise `asyncio.InvalidStateError`, as LangGraph's async stores
        do."""
        loop, thread = asyncio.get_running_loop(), threading.get_ident()
        async with _opened(source, index) as store:

            def call(work: Work[T]) -> T:
                if threading.get_ident() == thread:
                    raise asyncio.InvalidStateError(
                        "a sync method of StoreForLangGraph was called on the event loop it was opened on, "
                        "where it would wait for itself for ever; await its async form (aget, aput, asearch...)"
                    )
                return call_on(loop, work(store))

            async def acall(work: Work[T]) -> T:
                if asyncio.get_running_loop() is loop:
                    return await work(store)
                return await await_on(loop, work(store))

            bridge = cls.__new__(cls)
            bridge._setup(store, call, acall, index=index, ttl=ttl, hybrid=hybrid)
            bridge._sync = None
            bridge._sweeper = _sweeper_of(bridge._operations, ttl)
            if bridge._sweeper is None:
                yield bridge
                return
            async with bridge._sweeper:
                yield bridge

    @property
    def store_of(self) -> ForgettingStore:
        """The lionmem store the items are kept in."""
        return self._operations.store

    def sweep_ttl(self) -> int:
        """Delete every expired item of the store now, as LangGraph's durable stores'
        `sweep_ttl` does; return how many. Reads pass over expired items either way."""
        return self._call(lambda _: self._operations.expiring.sweep())

    async def asweep_ttl(self) -> int:
        """`sweep_ttl`, awaited."""
        return await self._acall(lambda _: self._operations.expiring.sweep())

    def close(self) -> None:
        """Stop the sweeper, close the store if this opened it, and stop its thread;
        again, nothing. A store made by `open` closes as its block ends."""
        sync, self._sync = self._sync, None
        if sync is None:
            return
        try:
            if self._sweeper is not None:
                sweeper = self._sweeper
                sync.run(lambda _: sweeper.__aexit__(None, None, None))
        finally:
            sync.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` in order, each seeing the ones before it; consecutive puts and
        deletes go to the store as one `store_many` and one `delete_many`."""
        listed = checked(ops)
        return self._call(lambda _: self._operations.run(listed))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch`, awaited."""
        listed = checked(ops)
        return await self._acall(lambda _: self._operations.run(listed))


def _check(source: object) -> None:
    if not isinstance(source, str | ForgettingStore | AbstractAsyncContextManager):
        raise TypeError(f"StoreForLangGraph takes a store URL, a store's opening or a store, got {kind_of(source)}")


@asynccontextmanager
async def _opened(source: object, index: IndexConfig | None) -> AsyncGenerator[ForgettingStore, None]:
    _check(source)
    given: Any = source
    if isinstance(given, str):
        async with open_store(given, embedder=_embedder(index)) as store:
            yield store
    elif isinstance(given, ForgettingStore):
        yield given
    else:
        async with given as store:
            yield store


def _sweeper_of(operations: Operations, ttl: TTLConfig | None) -> Sweeper | None:
    minutes = (ttl or {}).get("sweep_interval_minutes")
    return None if minutes is None else Sweeper(operations.expiring, every=minutes * 60)


def _embedder(index: IndexConfig | None) -> Embedder | None:
    return None if index is None or "embed" not in index else EmbedderFromLangGraph(index)
