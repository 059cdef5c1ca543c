"""`SQLiteMemoryStore`: a durable store in one SQLite file.

The store is here; its schema and migrations are in
[`lionmem.adapters.sqlite.schema`][lionmem.adapters.sqlite.schema], and the private
modules beside it hold the writes, the search planner, the file checks and the
connections. Governed by [ADR-0096][adr-0096]. Uses only the standard library;
`import lionmem` never imports this package.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import threading
from collections.abc import AsyncIterator, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal, cast
from uuid import UUID

from lionmem._internal.arguments import as_batch_size, as_cutoff, as_uuid, as_uuids, require_type
from lionmem._internal.timeouts import milliseconds
from lionmem.adapters._codec import DURABLE_PROFILE, as_batch, decode_in_slices, decode_item, encode_batch
from lionmem.adapters._narrowing import MAX_SQL_LIMIT
from lionmem.adapters.lifecycle import ClosesOnExit, PendingOpen, process_id, refuse_forked
from lionmem.adapters.sqlite._connect import connect
from lionmem.adapters.sqlite._files import log_files
from lionmem.adapters.sqlite._planner import COLUMNS, search
from lionmem.adapters.sqlite._writes import Write, delete_rows, put, put_many, write_transaction
from lionmem.adapters.sqlite.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from lionmem.errors import StoreClosedError
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.stats import StoreStats

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "SQLITE_PROFILE", "SQLiteMemoryStore"]

SQLITE_PROFILE: Final = DURABLE_PROFILE
"""What `SQLiteMemoryStore` promises: the reference's rules, except that results are
copies, items survive a restart and content must be a JSON value. Not a dimension of
the profile, but a limit all the same: an item may take at most 100 MB. The same
profile as every durable store's."""

# A checkpoint copies the write-ahead log into the database file. SQLite runs one
# inside the write that fills the log to 1,000 pages, which then waits for all of it
# (ADR-0096 gives the cost). The store's checkpoint thread copies the log beside the
# writes instead, every `_CHECKPOINT_AFTER` items. The writer still
# checkpoints at `_WRITER_CHECKPOINT_PAGES`, by then with little left to copy: only
# its own checkpoint restarts the log from the beginning under a stream of writes.
# Seam for tests: `_CHECKPOINT_AFTER`, read to write just enough to start a checkpoint.
_CHECKPOINT_AFTER = 32

_IDS_AT_ONCE = 500

_CREATED_AT = "(CASE WHEN typeof(created_at) = 'blob' THEN -0.0 ELSE created_at END)"
"""`created_at` as a number SQL orders: -0.0 is kept as its 8 bytes (see `stored_time`),
which SQL would sort after every number, and is read here as the zero it is."""
"""Ids a delete names in one statement, well under SQLite's limit on parameters."""


class SQLiteMemoryStore(ClosesOnExit):
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
        path: Path,
        executor: ThreadPoolExecutor,
        writer: sqlite3.Connection,
        reader: sqlite3.Connection,
    ) -> None:
        """Use [`open`][lionmem.adapters.sqlite.SQLiteMemoryStore.open] instead."""
        self.path = path
        """The database file."""
        # Seam for tests: `_executor`, `_writer`, and the checkpoint thread's `_checkpointer`,
        # `_checkpoint_db` and `_checkpoint`, which the tests occupy, trace, break or wait for
        # to show what the threads do; never used from outside otherwise.
        self._executor = executor
        self._writer = writer
        self._reader: sqlite3.Connection | None = reader
        # One read at a time: from Python 3.12, threads sharing a connection can share
        # one prepared statement, so that one thread's read returned the row another
        # thread asked for, or none.
        self._reading = threading.Lock()
        # Started by the first write that asks for a checkpoint; a store that only
        # reads has no checkpoint thread. Its connection opens the file the other two
        # did, even after a change of directory, and never creates one.
        self._checkpoint_uri = path.absolute().as_uri() + "?mode=rw"
        self._checkpointer: ThreadPoolExecutor | None = None
        self._checkpoint_db: sqlite3.Connection | None = None  # the checkpoint thread's
        self._checkpoint: Future[None] | None = None
        self._checkpoint_sync = 0  # the writer's PRAGMA synchronous, read with the thread
        self._written = 0
        self._forgot = False  # whether a delete ran, so closing must merge the text index
        self._closing: Future[None] | None = None
        self._pid = process_id()

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        busy_timeout: float = 10.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        create: bool = True,
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

        Raises:
            ValueError: `path` is empty, holds a NUL, ends with a separator, or is
                `":memory:"` (each connection would get its own database;
                `InMemoryStore` is the store for memory that ends with the process),
                or a bad setting.
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
                number, or `create` is not a bool.
        """
        try:
            named: object = os.fspath(path)
        except TypeError:
            named = None
        if not isinstance(named, str):  # bytes too, which Path() refuses
            raise TypeError(f"path must be a str or a path, got {type(path).__name__}")
        if named == "":
            # Path("") is the current directory, which the file checks would report.
            raise ValueError("path is empty; name the database file")
        if "\0" in named:
            raise ValueError(f"path {named!r} holds a NUL character, which no file name can")
        if named.endswith(("/", os.sep)):
            # Path() would drop the separator, which says the name is a directory's.
            raise ValueError(f"path {named!r} ends with a separator, as a directory's does; name the file")
        if named == ":memory:":
            raise ValueError(
                "SQLiteMemoryStore needs a file: ':memory:' would give its writer and its "
                "reader separate databases; use InMemoryStore for memory that ends with the process"
            )
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        busy_ms = milliseconds("busy_timeout", busy_timeout, zero=True)
        require_type(create, "create", bool)
        return PendingOpen(partial(_open, Path(path), busy_ms, synchronous, create))

    def __repr__(self) -> str:
        return f"<SQLiteMemoryStore {str(self.path)!r} {'closed' if self.closed else 'open'}>"

    # -- lifecycle --------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether `close()` has been called."""
        return self._reader is None

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
        self._refuse_forked()
        with self._reading:
            if self._closing is None:
                cast(sqlite3.Connection, self._reader).close()
                self._reader = None
                self._closing = self._executor.submit(self._close_on_worker)
            closing = self._closing
        await asyncio.shield(asyncio.wrap_future(closing))
        self._executor.shutdown(wait=True)

    # Seam for tests: `_live_reader`, `_on_writer`: the reader, and a way to run a function
    # of the tests' own on the store's worker thread.
    def _live_reader(self) -> sqlite3.Connection:
        if self._reader is None:
            raise StoreClosedError(f"the SQLiteMemoryStore on {self.path} is closed")
        return self._reader

    def _refuse_forked(self) -> None:
        # Before any lock: one the parent held when it forked stays held in the child.
        # A closed store says so in any process, as a PostgreSQL store does.
        if self._reader is not None:
            refuse_forked(self._pid, f"the SQLiteMemoryStore on {self.path}")

    async def _on_writer(self, function: Any, *args: Any) -> Any:
        self._live_reader()
        self._refuse_forked()
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    # -- the protocol -------------------------------------------------------------

    async def store(self, item: MemoryItem) -> UUID:
        """Write `item` (replacing, in place, an item with its id) and return its id.

        A write cancelled before the store's thread takes it up is dropped; once
        taken up, it commits whole although its caller was cancelled.

        Raises:
            TypeError: not a `MemoryItem`, or content, tags or metadata that are not
                JSON values; nothing is written.
            ValueError: content or metadata nesting lists and objects more than
                500 levels deep, or holding an integer with more digits than Python
                writes as text; or an item over 100 MB, counted as the UTF-8 of
                its content, tags and metadata in JSON or of the text search reads,
                `str(content).lower()`. Nothing is written.
            sqlite3.OperationalError: the database refused the write, such as when
                another connection held the write lock for longer than
                `busy_timeout`, or the disk is full; nothing is written.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        await self._on_writer(self._write, [Write.of(item)])
        return item.id

    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]:
        """Write several items in one transaction: all of them or, on error, none.

        A large batch is read 200 items at a time, letting other tasks run between
        slices; nothing is written until every item has been read and checked. A
        cancelled call writes all of the items or none, as `store` does one.

        Raises:
            TypeError: `items` is not an iterable, or one `MemoryItem` alone; or
                as for [`store`][lionmem.adapters.sqlite.SQLiteMemoryStore.store],
                an item the store cannot keep. Nothing is written.
            ValueError: as for `store`; nothing is written.
            sqlite3.OperationalError: as for `store`; nothing is written.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        batch = as_batch(items)
        await self._on_writer(self._write, await encode_batch(batch, Write.of))
        return [item.id for item in batch]

    async def optimize(self) -> None:
        """Merge the text index into one segment, in one transaction.

        Each write adds a segment to the trigram index, and later writes merge them a
        little at a time; after a bulk load that leftover merging makes some single
        writes slow ([ADR-0096][adr-0096] measures both). Run this after loading many
        items: it rewrites the whole index, in time that grows with it, holds the
        write lock meanwhile (searches and writes on this store wait for it; `retrieve`
        does not), and leaves text searches reading one segment. Items and results do
        not change. See [ADR-0096][adr-0096].

        Raises:
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
            sqlite3.OperationalError: another connection held the write lock for
                longer than `busy_timeout`; nothing changed.
        """
        await self._on_writer(self._optimize)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        """Return a copy of the item with `item_id`, or `None`.

        A string in UUID form is taken as that UUID ([ADR-0095][adr-0095]).

        Raises:
            ValueError: `item_id` is a string that is not a UUID.
            TypeError: `item_id` is neither a UUID nor a string.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        key = str(as_uuid(item_id, "item_id"))
        self._refuse_forked()
        with self._reading:
            row = self._live_reader().execute(f"SELECT {COLUMNS} FROM items WHERE id = ?", (key,)).fetchone()
        return None if row is None else decode_item(*row)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """Return copies of the items matching `query`, in insertion order.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        return await self._search(query, newest_first=False)

    async def search_newest(self, query: MemoryQuery) -> list[MemoryItem]:
        """Copies of the items matching `query`, the last in insertion order first, cut
        by `limit` ([ADR-0099][adr-0099-d7]): the driving index is read backwards, so
        a limit stops the read early.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        return await self._search(query, newest_first=True)

    async def _search(self, query: MemoryQuery, *, newest_first: bool) -> list[MemoryItem]:
        require_type(query, "query", MemoryQuery)
        found: list[MemoryItem] = await self._on_writer(partial(search, newest_first=newest_first), self._writer, query)
        return found

    # -- forgetting: the optional extension of ADR-0100 --------------------------------

    async def delete(self, item_id: UUID) -> bool:
        """Delete the item with `item_id`; return whether there was one.

        Its bytes leave the file by the time the store is closed ([ADR-0100][adr-0100]).
        Storing an item with that id afterwards adds it at the end of the order.

        Raises:
            ValueError: `item_id` is a string that is not a UUID.
            TypeError: `item_id` is neither a UUID nor a string.
            sqlite3.OperationalError: as for `store`; nothing is deleted.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        key = as_uuid(item_id, "item_id")
        return bool(await self._on_writer(self._delete_ids, [key]))

    async def delete_many(self, item_ids: Iterable[UUID]) -> int:
        """Delete the items with these ids in one transaction; return how many there were.

        Raises:
            TypeError: `item_ids` is a string or not iterable, or holds something
                that is neither a UUID nor a string; nothing is deleted.
            ValueError: `item_ids` holds a string that is not a UUID; nothing is
                deleted.
            sqlite3.OperationalError: as for `store`; nothing is deleted.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        keys = as_uuids(item_ids, "item_ids")
        deleted: int = await self._on_writer(self._delete_ids, keys)
        return deleted

    async def delete_matching(self, query: MemoryQuery) -> int:
        """Delete exactly the items `search(query)` would return, `limit` included,
        in one transaction; return how many ([ADR-0100][adr-0100]).

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
            sqlite3.OperationalError: as for `store`; nothing is deleted.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        require_type(query, "query", MemoryQuery)
        deleted: int = await self._on_writer(self._delete_matching, query)
        return deleted

    async def count(self, query: MemoryQuery) -> int:
        """The number of items `query`'s text, tags and filters match; `limit` is
        not applied.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        require_type(query, "query", MemoryQuery)
        counted: int = await self._on_writer(self._count, query)
        return counted

    async def delete_created_before(self, cutoff: float | datetime) -> int:
        """Delete every item whose `created_at` is before `cutoff`, in one
        transaction; return how many.

        Raises:
            TypeError: `cutoff` is neither a number nor a datetime.
            ValueError: `cutoff` is NaN or infinite.
            sqlite3.OperationalError: as for `store`; nothing is deleted.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        before = as_cutoff(cutoff, "cutoff")
        deleted: int = await self._on_writer(self._delete_where, f"{_CREATED_AT} < ?", [before])
        return deleted

    async def stats(self) -> StoreStats:
        """The number of items, the size of the files, the schema version and the
        span of `created_at`, read together ([ADR-0100][adr-0100-d9]).

        Raises:
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        stats: StoreStats = await self._on_writer(self._stats)
        return stats

    def scan(self, batch_size: int = 500) -> AsyncIterator[list[MemoryItem]]:
        """Copies of every item, in insertion order, in lists of at most `batch_size`.

        Each list is one read, from where the last one ended; an item written while a
        scan runs is in it if it comes after that point, and a replacement keeps its
        place, so no item comes twice.

        Raises:
            TypeError: `batch_size` is not an int.
            ValueError: `batch_size` is less than 1.
            StoreClosedError: the store is closed (raised by the first list).
            RuntimeError: called in a process forked from the one that opened
                the store (raised by the first list).
        """
        return self._pages(as_batch_size(batch_size))

    async def _pages(self, size: int) -> AsyncIterator[list[MemoryItem]]:
        after = 0
        while True:
            after, items = await self._on_writer(self._page, after, size)
            if items:
                yield items
            if len(items) < size:
                return

    # -- on the worker thread -------------------------------------------------------

    def _page(self, after: int, size: int) -> tuple[int, list[MemoryItem]]:
        """The next `size` items after position `after`, and the position they end at."""
        rows = self._writer.execute(
            "SELECT seq, id, created_at, body FROM items WHERE seq > ? ORDER BY seq LIMIT ?", (after, size)
        ).fetchall()
        return (rows[-1][0] if rows else after), decode_in_slices([row[1:] for row in rows])

    def _stats(self) -> StoreStats:
        # One statement, so one snapshot of the count and the span.
        items, oldest, newest = self._writer.execute(
            f"SELECT count(*), min({_CREATED_AT}), max({_CREATED_AT}) FROM items"
        ).fetchone()
        (version,) = self._writer.execute("PRAGMA user_version").fetchone()
        files = [self.path, *log_files(self.path)]
        size = sum(path.stat().st_size for path in files if path.exists())
        return StoreStats(
            items=items,
            bytes_on_disk=size,
            size_covers="the database file, its write-ahead log and the log's index",
            schema_version=version,
            oldest=oldest,
            newest=newest,
        )

    def _delete_ids(self, keys: list[UUID]) -> int:
        with write_transaction(self._writer):
            return self._deleted(self._delete_keys(keys))

    def _delete_matching(self, query: MemoryQuery) -> int:
        with write_transaction(self._writer):
            # Read inside the transaction, so the items deleted are those it found.
            return self._deleted(self._delete_keys([item.id for item in search(self._writer, query)]))

    def _delete_keys(self, keys: list[UUID]) -> int:
        deleted = 0
        for start in range(0, len(keys), _IDS_AT_ONCE):
            chunk = [str(key) for key in keys[start : start + _IDS_AT_ONCE]]
            deleted += delete_rows(self._writer, f"id IN ({', '.join('?' * len(chunk))})", chunk)
        return deleted

    def _deleted(self, deleted: int) -> int:
        """Note that closing must merge the text index, if anything was deleted."""
        self._forgot = self._forgot or deleted > 0
        return deleted

    def _delete_where(self, where: str, params: list[object]) -> int:
        with write_transaction(self._writer):
            return self._deleted(delete_rows(self._writer, where, params))

    def _count(self, query: MemoryQuery) -> int:
        if not (query.text or query.tags or query.filters):
            (counted,) = self._writer.execute("SELECT count(*) FROM items").fetchone()
            return int(counted)
        return len(search(self._writer, query.model_copy(update={"limit": MAX_SQL_LIMIT})))

    def _write(self, writes: Sequence[Write]) -> None:
        db = self._writer
        with write_transaction(db):
            if len(writes) == 1:
                put(db, writes[0])
            else:
                put_many(db, writes)
        self._written += len(writes)
        if self._written >= _CHECKPOINT_AFTER and (self._checkpoint is None or self._checkpoint.done()):
            self._written = 0
            if self._checkpointer is None:
                self._checkpointer = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lionmem-sqlite-checkpoint")
                # As the writer's, so that a checkpoint syncs the file as hard.
                (self._checkpoint_sync,) = db.execute("PRAGMA synchronous").fetchone()
            self._checkpoint = self._checkpointer.submit(self._run_checkpoint)

    def _optimize(self) -> None:
        with write_transaction(self._writer):
            self._writer.execute("INSERT INTO items_text (items_text) VALUES ('optimize')")

    # Seam for tests: `_close_on_worker`, `_write` and `_run_checkpoint`, replaced to make
    # closing, a write or a checkpoint slow or fail. Seam for tests: `_optimize`, traced
    # to see when closing merges the text index.
    def _close_on_worker(self) -> None:
        if self._forgot:
            # The text index drops a deleted row's words only when its segments are
            # merged; merged into one, none of them is left (ADR-0100).
            self._optimize()
        self._writer.close()
        # No write is left to ask for a checkpoint. Closed last, the checkpoint
        # connection copies what the log still holds into the file and removes the log.
        if self._checkpointer is not None:
            self._checkpointer.submit(self._close_checkpoint_db).result()
            self._checkpointer.shutdown(wait=True)
        # Ends this thread once this call returns, should close() no longer be waiting.
        self._executor.shutdown(wait=False)

    # -- on the checkpoint thread ----------------------------------------------------

    def _run_checkpoint(self) -> None:
        """Copy what the log holds into the database file, as far as readers allow,
        without waiting for a lock or holding up writers."""
        try:
            db = self._checkpoint_db
            if db is None:
                db = sqlite3.connect(self._checkpoint_uri, uri=True, isolation_level=None)
                db.execute(f"PRAGMA synchronous = {self._checkpoint_sync}")
                self._checkpoint_db = db
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
        except sqlite3.Error:
            # As with SQLite's own checkpoints, a failure loses nothing: the log keeps
            # its pages for the next checkpoint, and readers and writers use it meanwhile.
            pass

    def _close_checkpoint_db(self) -> None:
        if self._checkpoint_db is not None:
            self._checkpoint_db.close()


async def _open(path: Path, busy_ms: int, synchronous: str, create: bool) -> SQLiteMemoryStore:
    return SQLiteMemoryStore(path, *await connect(path, busy_ms, synchronous, create))
