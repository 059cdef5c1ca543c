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
import math
import threading
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine, Iterable, Sequence
from concurrent.futures import Future
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

    from lionmem.integrations._langgraph_batches import Batches
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
            if (ttl or {}).get("sweep_interval_minutes") is not None:
                self.start_ttl_sweeper()
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
        self._operations = Operations(store, _fields(index), hybrid=hybrid)
        self._batches = Batches(self._operations.run)
        self._call, self._acall = call, acall
        self._sweeping: tuple[Sweeper, Future[None]] | None = None
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
            if (ttl or {}).get("sweep_interval_minutes") is not None:
                await bridge.astart_ttl_sweeper()
            try:
                yield bridge
            finally:
                await bridge._stop_sweeping()

    @property
    def store_of(self) -> ForgettingStore:
        """The lionmem store the items are kept in."""
        return self._operations.store

    def setup(self) -> None:
        """Nothing: a lionmem store makes and migrates its schema as it opens. Here so
        that code written for LangGraph's durable stores, which call it first, runs
        unchanged."""

    async def asetup(self) -> None:
        """`setup`, awaited: nothing."""

    def sweep_ttl(self) -> int:
        """Delete every expired item of the store now, as LangGraph's durable stores'
        `sweep_ttl` does; return how many. Reads pass over expired items either way."""
        return self._call(lambda _: self._operations.expiring.sweep())

    async def asweep_ttl(self) -> int:
        """`sweep_ttl`, awaited."""
        return await self._acall(lambda _: self._operations.expiring.sweep())

    def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Future[None]:
        """Delete what expired every `sweep_interval_minutes` (else the TTL settings'
        `sweep_interval_minutes`, else 5), first at once, until `stop_ttl_sweeper` or
        `close`, as LangGraph's durable stores' sweeper does; if one runs, nothing more.

        Returns:
            The running sweeper's future: done when it stops, or failed with the error
            that stopped it.

        Raises:
            TypeError: `sweep_interval_minutes` is not a number.
            ValueError: it is not a finite number above 0.
        """
        return self._call(lambda _: self._start_sweeping(sweep_interval_minutes))

    async def astart_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Future[None]:
        """`start_ttl_sweeper`, awaited."""
        return await self._acall(lambda _: self._start_sweeping(sweep_interval_minutes))

    def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """Stop the sweeper, waiting at most `timeout` seconds for a sweep under way
        (`None`: as long as it takes); True once it stopped or if none ran, False if
        the timeout came first (it stops as that sweep ends)."""
        return self._call(lambda _: self._stopping(timeout))

    async def astop_ttl_sweeper(self, timeout: float | None = None) -> bool:
        """`stop_ttl_sweeper`, awaited."""
        return await self._acall(lambda _: self._stopping(timeout))

    async def _start_sweeping(self, minutes: float | None) -> Future[None]:
        if self._sweeping is not None:
            return self._sweeping[1]
        every: object = minutes if minutes is not None else (self.ttl_config or {}).get("sweep_interval_minutes")
        every = 5 if every is None else every
        if isinstance(every, bool) or not isinstance(every, int | float):
            raise TypeError(f"sweep_interval_minutes must be a number of minutes, got {kind_of(every)}")
        if not (math.isfinite(every) and every > 0):
            raise ValueError(f"sweep_interval_minutes must be a finite number of minutes above 0, got {every!r}")
        sweeper = Sweeper(self._operations.expiring, every=every * 60)
        await sweeper.__aenter__()
        self._sweeping = (sweeper, Future())
        return self._sweeping[1]

    async def _stopping(self, timeout: float | None) -> bool:
        stop = asyncio.ensure_future(self._stop_sweeping())
        done, _ = await asyncio.wait([stop], timeout=timeout)
        return bool(done)

    async def _stop_sweeping(self) -> None:
        if self._sweeping is None:
            return
        (sweeper, stopped), self._sweeping = self._sweeping, None
        try:
            await sweeper.__aexit__(None, None, None)
        except Exception as error:  # a sweep's failure ended it: the future's, not the caller's
            stopped.set_exception(error)
        else:
            stopped.set_result(None)

    def close(self) -> None:
        """Stop the sweeper, close the store if this opened it, and stop its thread;
        again, nothing. A store made by `open` closes as its block ends."""
        sync, self._sync = self._sync, None
        if sync is None:
            return
        try:
            sync.run(lambda _: self._stop_sweeping())
        finally:
            sync.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run `ops` in order, each seeing the ones before it; consecutive puts and
        deletes go to the store as one `store_many` and one `delete_many`. A batch that
        comes while another runs waits, and all that waited run as one when it ends,
        each caller still answered alone."""
        listed = checked(ops)
        return self._call(lambda _: self._batches(listed))

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """`batch`, awaited."""
        listed = checked(ops)
        return await self._acall(lambda _: self._batches(listed))


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


def _fields(index: IndexConfig | None) -> list[str] | None:
    """The index's fields: `fields`, or `text_fields` as LangGraph's SQLite store names them."""
    given: dict[str, Any] = dict(index or {})
    fields, text_fields = given.get("fields"), given.get("text_fields")
    if fields is not None and text_fields is not None and fields != text_fields:
        raise ValueError(
            f"an index names its fields once, as 'fields' or 'text_fields'; got {fields!r} and {text_fields!r}"
        )
    chosen = fields if fields is not None else text_fields
    return [chosen] if isinstance(chosen, str) else chosen


def _embedder(index: IndexConfig | None) -> Embedder | None:
    return None if index is None or "embed" not in index else EmbedderFromLangGraph(index)
