"""`SQLiteMemoryStore`: a durable store in one SQLite file.

The store is here; its schema and migrations are in
[`lionmem.adapters.sqlite.schema`][lionmem.adapters.sqlite.schema], and the private
modules beside it hold the writes, the index rows, the search planner, the
checkpoint thread, the file checks and the connections. Governed by
[ADR-0096][adr-0096].
"""

from __future__ import annotations

import time
import warnings
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Concatenate, Literal, ParamSpec, TypeVar
from uuid import UUID

from lionmem._internal.arguments import as_batch, as_uuid, require_type
from lionmem._internal.timeouts import milliseconds
from lionmem.adapters._codec import decode_item, encode_batch
from lionmem.adapters._expiring import NEVER, ExpiringRows, Lifetime
from lionmem.adapters._profiles import SQLITE_PROFILE
from lionmem.adapters.lifecycle import ClosesOnExit, PendingOpen
from lionmem.adapters.sqlite._connections import Connections
from lionmem.adapters.sqlite._files import database_path
from lionmem.adapters.sqlite._forgetting import ForgettingOnWorker
from lionmem.adapters.sqlite._namespaces import Space
from lionmem.adapters.sqlite._opening import opened
from lionmem.adapters.sqlite._recall import Vectors, recall_settings
from lionmem.adapters.sqlite._worker import item_row
from lionmem.adapters.sqlite._writes import Write
from lionmem.errors import NoEmbedderError
from lionmem.protocols.expiry import Clock
from lionmem.protocols.forgetting import ErasureWarning
from lionmem.protocols.hybrid import HybridRecall
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.namespaces import DEFAULT_NAMESPACE, check_namespace
from lionmem.protocols.paging import Page, check_page, cursor_of
from lionmem.protocols.recall import Embedder, Recalled, TextOf
from lionmem.protocols.stats import StoreStats
from lionmem.protocols.verifying import Verification

__all__ = ["SQLITE_PROFILE", "SQLiteMemoryStore"]

P = ParamSpec("P")
T = TypeVar("T")


class SQLiteMemoryStore(HybridRecall, ForgettingOnWorker, ExpiringRows, ClosesOnExit):
    """A `MemoryStore` in one SQLite file, opened explicitly on a path you choose.

    Follows the reference's rules (insertion order with replace in place, the
    case-insensitive substring of `str(content)`, any-of tags, Python-equality filters
    where `None` matches a missing key, slice limits) and declares where it differs in
    [`SQLITE_PROFILE`][lionmem.adapters.sqlite.SQLITE_PROFILE]: results are copies and
    content must be a JSON value. Writes and searches run on one worker thread, so
    they never block the event loop; `retrieve` is a primary-key read on a read-only
    WAL connection, which does not wait for writers. A second thread copies the
    write-ahead log into the database file beside the writes. A store may be used
    from any event loop, on any thread. See [ADR-0096][adr-0096].

    Every method but `close` raises `StoreClosedError` once the store is closed, and
    `RuntimeError` when called in a process forked from the one that opened the
    store. A write or delete the database refuses (another connection held the write
    lock past `busy_timeout`, a full disk) raises `sqlite3.OperationalError` and
    changes nothing; one after damage was found raises `DatabaseCorruptError`. An item
    the store cannot keep is refused before anything is written: a `TypeError` for a
    value that is not JSON, a `ValueError` for lists and objects nested more than 500
    levels deep, an integer of more digits than Python writes as text, or an item over
    100 MB (the UTF-8 of its JSON, or of `str(content).lower()`). Each method's own
    errors are listed with it.

    Examples:
        ```python
        import tempfile
        from pathlib import Path

        from lionmem import MemoryItem
        from lionmem.adapters.sqlite import SQLiteMemoryStore

        path = Path(tempfile.mkdtemp()) / "memory.db"
        async with SQLiteMemoryStore.open(path) as store:
            item = MemoryItem(content="kept")
            await store.store(item)
        async with SQLiteMemoryStore.open(path) as store:
            assert await store.retrieve(item.id) == item
        ```
    """

    def __init__(
        self,
        connections: Connections,
        vectors: Vectors | None = None,
        space: Space | None = None,
        lifetime: Lifetime = NEVER,
    ) -> None:
        """Use [`open`][lionmem.adapters.sqlite.SQLiteMemoryStore.open] instead."""
        self.path: Path = connections.path
        """The database file."""
        # Seam for tests: `_connections`, whose threads and connections the tests
        # occupy, trace, break or wait for to show what they do.
        self._connections = connections
        self._vectors = vectors
        # Seam for tests: `_space`, the namespace the tests hand to the worker's calls.
        self._space = Space(DEFAULT_NAMESPACE) if space is None else space
        self._lifetime = lifetime

    @property
    def namespace(self) -> str:
        """The namespace this store reads and writes ([ADR-0105][adr-0105-d1])."""
        return self._space.name

    def in_namespace(self, namespace: str) -> SQLiteMemoryStore:
        """The store of `namespace` in this file, on this store's connections, with its
        embedder and expiry settings: closing either closes both. The namespace enters the file with its
        first item.

        Raises:
            TypeError: `namespace` is not a str.
            ValueError: `namespace` is not a namespace's name (see
                [`check_namespace`][lionmem.protocols.namespaces.check_namespace]).
        """
        vectors = None if self._vectors is None else Vectors(self._vectors.embedder, self._vectors.text_of)
        return SQLiteMemoryStore(self._connections, vectors, Space(check_namespace(namespace)), self._lifetime)

    async def _on_worker(self, call: Callable[Concatenate[Space, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`call` on the worker thread, given this namespace at the clock's one reading."""
        return await self._connections.on_writer(call, self._space.at(self._lifetime.clock()), *args, **kwargs)

    async def namespaces(self) -> list[str]:
        """The namespaces of this file that hold an item, by name."""
        return await self._connections.on_writer(self._connections.worker.namespaces)

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        busy_timeout: float = 10.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        create: bool = True,
        embedder: Embedder | None = None,
        text_of: TextOf | None = None,
        reembed: bool = False,
        namespace: str = DEFAULT_NAMESPACE,
        ttl: float | None = None,
        refresh_on_read: bool = False,
        clock: Clock = time.time,
    ) -> PendingOpen[SQLiteMemoryStore]:
        """Open (creating or migrating) the database at `path`.

        Use as `async with SQLiteMemoryStore.open(path) as store:` or
        `store = await SQLiteMemoryStore.open(path)` followed by `await store.close()`.
        `synchronous="FULL"` also survives power loss, at the cost of an fsync a write.
        `busy_timeout` bounds waiting for another connection's lock, in seconds up to
        [`MAX_TIMEOUT`][lionmem.adapters.lifecycle.MAX_TIMEOUT].
        With `create=False` a missing file, or one that holds no lionmem schema yet
        (empty, or an SQLite database without tables), is an error instead of a new
        database, for readers that should not write a schema into a mistyped path.
        With an `embedder` the store can also
        [`recall`][lionmem.adapters.sqlite.SQLiteMemoryStore.recall] by meaning: each
        item stored is embedded (`text_of(item)`, `str(item.content)` by default), and
        items the file holds without a vector are embedded as it opens;
        `reembed=True` rebuilds every vector of the file, as changing the embedder requires
        ([ADR-0102][adr-0102-d4]). The store reads and writes `namespace` of the file
        ([ADR-0105][adr-0105-d1]); the file's other namespaces are the same store
        [`in_namespace`][lionmem.adapters.sqlite.SQLiteMemoryStore.in_namespace].
        With a `ttl`, each item stored expires `ttl` seconds after, by `clock`; with
        `refresh_on_read` too, a read moves the expiry of what it returns to `ttl` from
        then ([ADR-0105][adr-0105-d2]).

        Raises:
            ValueError: `path` is empty, holds a NUL, ends with a separator, or is
                `":memory:"` (each connection would get its own database;
                `InMemoryStore` is the store for memory that ends with the process),
                or a bad setting, namespace or `ttl`.
            IncompatibleDatabaseError: the file is not a lionmem database, or is newer,
                or is damaged, or holds tables that are not those of the version it
                records; or `path` is a directory, a device, a pipe or a socket. The
                file is left as it was.
            MissingSchemaError: with `create=False`, an empty file or an SQLite
                database without lionmem's schema (an `IncompatibleDatabaseError`).
            FileNotFoundError: the directory that should hold the file does not exist,
                or, with `create=False`, the file does not.
            PermissionError: this process may not write the file, its write-ahead log
                or the log's index, or the directory where SQLite keeps them; a store
                writes all of them, even to read. The message names which.
            TypeError: `path` is neither a str nor a path, `busy_timeout` is not a
                number, `create` or `reembed` is not a bool, `embedder` is not an
                `Embedder`, `text_of` not callable, `namespace` not a str, or
                an expiry setting is not one (see [`check_expiring`][lionmem.protocols.expiry.check_expiring]).
            EmbedderMismatchError: the file's vectors were made by another embedder.
        """
        named = database_path(path)
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        busy_ms = milliseconds("busy_timeout", busy_timeout, zero=True)
        require_type(create, "create", bool)
        vectors = recall_settings(embedder, text_of, reembed)
        space = Space(check_namespace(namespace))
        make = partial(cls, lifetime=Lifetime.of(ttl, refresh_on_read, clock))
        return PendingOpen(
            partial(opened, make, named, busy_ms, synchronous, create, vectors, reembed, space), "SQLiteMemoryStore"
        )

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<SQLiteMemoryStore {str(self.path)!r} namespace={self.namespace!r} {state}>"

    # -- lifecycle --------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether `close()` has been called."""
        return self._connections.closed

    async def close(self) -> None:
        """Close the database; later calls raise `StoreClosedError`. Idempotent.

        Calls already waiting for the store's thread finish first. A `close()` that is
        cancelled while it waits still closes everything on the store's threads; a
        second `close()` waits for that.

        Raises:
            RuntimeError: the store is open and this process was forked from the
                one that opened it; nothing is closed, the connections being the
                parent's.
        """
        first, unproven = await self._connections.close()
        if first and unproven is not None:
            warnings.warn(ErasureWarning(unproven), stacklevel=2)

    # -- the protocol -------------------------------------------------------------

    async def store(self, item: MemoryItem) -> UUID:
        """Write `item` (replacing, in place, an item with its id) and return its id.

        A write cancelled before the store's thread takes it up is dropped; once
        taken up, it commits whole although its caller was cancelled.

        Raises:
            TypeError: not a `MemoryItem`, or an item the store cannot keep.
            ValueError: an item the store cannot keep.
        """
        write = Write.of(item)
        vectors = [] if self._vectors is None else await self._vectors.embedded([item])
        await self._write([write], vectors)
        return item.id

    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]:
        """Write several items in one transaction: all of them or, on error, none.

        A large batch is read 200 items at a time, letting other tasks run between
        slices; nothing is written until every item has been read and checked. A
        cancelled call writes all of the items or none, as `store` does one.

        Raises:
            TypeError: `items` is not an iterable, or one `MemoryItem` alone, or an
                item the store cannot keep; nothing is written.
            ValueError: an item the store cannot keep; nothing is written.
        """
        batch = as_batch(items, MemoryItem)
        writes = await encode_batch(batch, Write.of)
        vectors = [] if self._vectors is None else await self._vectors.embedded(batch)
        await self._write(writes, vectors)
        return [item.id for item in batch]

    async def _write(self, writes: list[Write], vectors: list[tuple[bytes, bytes, str]]) -> None:
        now = self._lifetime.clock()
        worker = self._connections.worker
        await self._connections.on_writer(
            worker.write, self._space.at(now), writes, vectors, self._lifetime.expires(now)
        )

    async def optimize(self) -> None:
        """Merge the text index into one segment, in one transaction.

        Run this after loading many items: the merging a bulk load leaves makes some
        later single writes slow ([ADR-0096][adr-0096] measures both). It rewrites the
        whole index, holding the write lock meanwhile (`retrieve` does not wait), and
        leaves text searches reading one segment. Items and results do not change.

        Raises:
            sqlite3.OperationalError: another connection held the write lock for
                longer than `busy_timeout`; nothing changed.
        """
        await self._connections.on_writer(self._connections.worker.optimize)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        """Return a copy of the item with `item_id`, or `None`.

        A string in UUID form is taken as that UUID ([ADR-0095][adr-0095]).

        Raises:
            ValueError: `item_id` is a string that is not a UUID.
            TypeError: `item_id` is neither a UUID nor a string.
        """
        key = str(as_uuid(item_id, "item_id"))
        now = self._lifetime.clock()
        row = self._connections.read(partial(item_row, self._space.at(now), key))
        return None if row is None else (await self._refreshed(now, [decode_item(*row)]))[0]

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """Return copies of the items matching `query`, in insertion order.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        return await self._search(query, newest_first=False)

    async def search_newest(self, query: MemoryQuery) -> list[MemoryItem]:
        """Copies of the items matching `query`, the last in insertion order first, cut
        by `limit` ([ADR-0099][adr-0099-d7]): the driving index is read backwards, so
        a limit stops the read early.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        return await self._search(query, newest_first=True)

    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        """Copies of the first `query.limit` items matching `query` after the cursor
        `after`, in insertion order, and the cursor after them, read in one snapshot
        ([ADR-0105][adr-0105-d3]).

        Raises:
            TypeError, ValueError: as [`check_page`][lionmem.protocols.paging.check_page].
        """
        _, start = check_page(query, after)
        now = self._lifetime.clock()
        found, last = await self._connections.on_writer(
            self._connections.worker.search_page, self._space.at(now), query, start
        )
        return Page(await self._refreshed(now, found), None if last is None else cursor_of(last))

    async def _search(self, query: MemoryQuery, *, newest_first: bool) -> list[MemoryItem]:
        require_type(query, "query", MemoryQuery)
        now = self._lifetime.clock()
        worker = self._connections.worker
        found = await self._connections.on_writer(worker.search, self._space.at(now), query, newest_first=newest_first)
        return await self._refreshed(now, found)

    # -- recall: the optional extension of ADR-0102 -----------------------------------

    @property
    def embedder(self) -> Embedder | None:
        """The embedder the store was opened with, or `None`: then it cannot recall."""
        return None if self._vectors is None else self._vectors.embedder

    async def recall(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Recalled]:
        """Copies of the `k` items most like `query`, as
        [`InMemoryStore.recall`][lionmem.protocols.in_memory.InMemoryStore.recall] finds
        them: exact, narrowed by `tags` and `filters` first, ties in insertion order,
        none scoring below `min_score`. Follows other processes' writes
        ([ADR-0102][adr-0102-d4]).

        Raises:
            NoEmbedderError: the store was opened without an embedder.
            TypeError, ValueError: as `InMemoryStore.recall` raises them.
        """
        if self._vectors is None:
            raise NoEmbedderError(f"the SQLiteMemoryStore on {self.path} was opened without an embedder")
        now = self._lifetime.clock()
        found = await self._vectors.recall(self._connections, self._space.at(now), query, k, tags, filters, min_score)
        await self._refreshed(now, [hit.item for hit in found])
        return found

    # -- expiry: the optional extension of ADR-0105, its writes --------------------------

    async def _set_expiry(self, now: float, keys: list[str], at: float | None, *, refresh: bool) -> int:
        return await self._connections.on_writer(
            self._connections.worker.expire, self._space.at(now), keys, at, refresh=refresh
        )

    async def _sweep(self, now: float) -> int:
        return await self._connections.on_writer(self._connections.worker.sweep, self._space.at(now))

    # -- the rest of the extensions of ADR-0100 and ADR-0104 -----------------------

    async def holding(self, terms: list[str], limit: int) -> list[list[tuple[MemoryItem, int]]]:
        """For each of `terms`, the first `limit` items holding it, in insertion order,
        each with how often: hybrid recall's words ([ADR-0104][adr-0104])."""
        return await self._on_worker(self._connections.worker.holding, terms, limit)

    async def count_up_to(self, most: int) -> int:
        """How many items the store holds, counted up to `most` ([ADR-0104][adr-0104])."""
        return await self._on_worker(self._connections.worker.count_up_to, most)

    async def stats(self) -> StoreStats:
        """The number of items of this namespace and the span of their `created_at`,
        the size of the files and the schema version, read together
        ([ADR-0100][adr-0100-d9])."""
        return await self._on_worker(self._connections.worker.stats)

    async def verify(self) -> Verification:
        """Check the file whole: SQLite's integrity check, the schema, the text index,
        every item's index rows and every vector ([ADR-0096][adr-0096-damage]). Damage
        found makes the store refuse writes from then on.
        """
        text_of = None if self._vectors is None else self._vectors.text_of
        damage, stale = await self._connections.on_writer(self._connections.worker.verify, text_of)
        return Verification(tuple(damage), tuple(stale))
