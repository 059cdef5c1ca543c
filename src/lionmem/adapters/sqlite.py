"""`SQLiteMemoryStore`: a durable store in one SQLite file.

Governed by [ADR-0096][adr-0096]. Uses only the standard library; `import lionmem`
never imports this module.
"""

from __future__ import annotations

import asyncio
import math
import os
import sqlite3
import stat
import struct
import threading
import time
from collections.abc import Callable, Generator, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any, Final, Literal, NamedTuple, cast
from uuid import UUID

from lionmem.adapters._encoding import (
    MAX_SQL_LIMIT,
    SQL_FILTERS,
    as_batch,
    decode_in_slices,
    decode_item,
    encode_batch,
    encode_item,
    loads,
    matching,
    settle_unstorable,
)
from lionmem.adapters.errors import IncompatibleDatabaseError, StoreClosedError
from lionmem.adapters.lifecycle import ClosesOnExit, PendingOpen, milliseconds, process_id, refuse_forked
from lionmem.protocols._arguments import as_uuid, require_type
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.testing.profile import (
    ContentKind,
    Durability,
    FidelityProfile,
    ReturnedObjects,
)

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "SQLITE_PROFILE", "SQLiteMemoryStore"]

APPLICATION_ID: Final = 0x4C4D454D
"""`PRAGMA application_id` of a lionmem database ("LMEM")."""

SCHEMA_VERSION: Final = 4
"""The schema this code writes; `PRAGMA user_version` of a current database."""

SQLITE_PROFILE: Final = FidelityProfile(
    returned_objects=ReturnedObjects.COPIES,
    durability=Durability.RESTART,
    content=ContentKind.JSON_VALUES,
)
"""What `SQLiteMemoryStore` promises: the reference's rules, except that results are
copies, items survive a restart and content must be a JSON value. Not a dimension of
the profile, but a limit all the same: an item may take at most 100 MB."""

_HEADER = b"SQLite format 3\x00"

# SQLite's default 2 MB page cache holds about 2% of a 100k-item database; a search
# that joins thousands of index hits to their rows then reads pages from the OS, which
# made a 5,000-row tag search 2.5 times slower. A limit, not an allocation.
_CACHE_SIZE = "PRAGMA cache_size = -65536"

# Seconds between tries of a lock SQLite will not wait for itself.
_BUSY_RETRY = 0.005

# A checkpoint copies the write-ahead log into the database file. SQLite runs one
# inside the write that fills the log to 1,000 pages, which made one single-item write
# in 50 take 5-60 ms at 100k items. The store's checkpoint thread copies the log
# beside the writes instead, every `_CHECKPOINT_AFTER` items. The writer still
# checkpoints at `_WRITER_CHECKPOINT_PAGES`, by then with little left to copy: only
# its own checkpoint restarts the log from the beginning under a stream of writes.
_CHECKPOINT_AFTER = 32
_WRITER_CHECKPOINT_PAGES = 4_000

_ITEMS_V1 = """
    CREATE TABLE items (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        id TEXT NOT NULL UNIQUE,
        created_at REAL NOT NULL,
        body TEXT NOT NULL,
        folded TEXT NOT NULL
    )
"""

# The search indexes are written from Python, not by json_each() in triggers: SQLite's
# JSON functions cut strings at a NUL character, and a bound parameter does not.
_INDEXES_V2 = [
    """CREATE TABLE item_tags (
        seq INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (seq, tag)
    ) WITHOUT ROWID""",
    "CREATE INDEX item_tags_by_tag ON item_tags (tag, seq)",
    """CREATE TABLE item_meta (
        seq INTEGER NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL, value,
        PRIMARY KEY (seq, key)
    ) WITHOUT ROWID""",
    "CREATE INDEX item_meta_by_value ON item_meta (key, value, seq)",
    """CREATE VIRTUAL TABLE items_text USING fts5(
        indexed, content='', tokenize='trigram case_sensitive 1'
    )""",
]


def _version_1(db: sqlite3.Connection) -> None:
    db.execute(_ITEMS_V1)


def _version_2(db: sqlite3.Connection) -> None:
    for statement in _INDEXES_V2:
        db.execute(statement)
    rows = db.execute("SELECT seq, folded, body FROM items").fetchall()
    for seq, folded, body in rows:
        _content, tags, metadata = loads(body)
        _index(db, seq, folded, *_index_rows(tags, metadata))


def _version_3(db: sqlite3.Connection) -> None:
    # Version 2 indexed integers beyond 64 bits as 'integer' rows holding a rounded
    # float, which SQL cannot compare exactly; they become 'bigint' rows without a
    # value. The value index gains `kind`, so a filter never reads the table.
    db.execute(
        "UPDATE item_meta SET kind = 'bigint', value = NULL"
        " WHERE kind = 'integer' AND typeof(value) = 'real'"
    )
    db.execute("DROP INDEX item_meta_by_value")
    db.execute(_META_BY_VALUE)


def _version_4(db: sqlite3.Connection) -> None:
    """No table changes: from version 4, `created_at` may hold the 8 bytes of -0.0
    (see `_stored_time`), which version 3 code would misread, so it must refuse
    the file. Version 3 stored -0.0 as 0.0; that sign is lost."""


MIGRATIONS: Final[dict[int, Callable[[sqlite3.Connection], None]]] = {
    1: _version_1,
    2: _version_2,
    3: _version_3,
    4: _version_4,
}
"""Each step moves a database from the previous version to this one, inside the
transaction that records the new `user_version`."""

_META_BY_VALUE = "CREATE INDEX item_meta_by_value ON item_meta (key, value, seq, kind)"
# A BLOB in created_at is only ever -0.0 (see `_stored_time`), which the decoder reads
# back; a CASE turning it into a REAL here cost 0.2 µs a row, 5-10% of a broad search.
_COLUMNS = "items.id, items.created_at, items.body"
_NEGATIVE_ZERO = struct.pack("<d", -0.0)


def _stored_time(created_at: float) -> float | bytes:
    """`created_at` as the items table keeps it. SQLite writes a whole-number REAL as
    an integer on disk, and the integer 0 has no sign, so -0.0 alone is stored as
    its 8 bytes, which a REAL column keeps as they are."""
    return _NEGATIVE_ZERO if created_at == 0.0 and math.copysign(1.0, created_at) < 0 else created_at


_INT64 = range(-(2**63), 2**63)
_MIN_TRIGRAM = 3
_SQL_TAGS = 1_000
_OPENING = 64
"""The most characters of a needle the trigram index is asked for: a 100,000-character
needle of common words took 660 ms to look up whole; what matches its opening is
then checked whole by instr()."""
_PROBE = 256


def _trigrams(opening: str) -> str:
    """An FTS5 query for the rows holding the trigrams that cover `opening` (one at
    every third character, and its last), each quoted, joined by `AND`.

    Not the phrase `"opening"`: for a phrase FTS5 compares the trigrams' positions
    in each row, which in a row holding a long run of one trigram (a million "x",
    or one sentence repeated) took 280 ms against 2 ms. Nor every trigram: each is a
    list of rows to read, and these narrow as well at a third of the cost.
    """
    starts = [*range(0, len(opening) - 2, 3), len(opening) - 3]
    trigrams = dict.fromkeys(opening[start : start + 3] for start in starts)
    return " ".join('"' + trigram.replace('"', '""') + '"' for trigram in trigrams)


def _indexable(folded: str) -> str:
    # FTS5 stops reading text at a NUL; index it as U+0001. The index only narrows the
    # candidates and instr() on the real text decides, so the stand-in cannot mislead.
    return folded.replace("\x00", "\x01")


def _meta_row(value: object) -> tuple[str, object]:
    """The (kind, comparable value) of a metadata value for the narrowing index."""
    if value is None:
        return "null", None
    if value is True or value is False:
        return ("true" if value else "false"), int(value)
    if type(value) is int:
        return ("integer", value) if value in _INT64 else ("bigint", None)
    if type(value) is float:
        return "real", value
    if type(value) is str:
        return "text", value
    return ("array" if type(value) is list else "object"), None


_MetaRow = tuple[str, str, object]
"""`(key, kind, comparable value)` of one metadata entry in the narrowing index."""


def _index_rows(tags: list[str], metadata: dict[str, Any]) -> tuple[list[str], list[_MetaRow]]:
    """The distinct tags and the metadata rows that index an item."""
    return list(dict.fromkeys(tags)), [(key, *_meta_row(value)) for key, value in metadata.items()]


class _Write(NamedTuple):
    """One item as its write needs it, taken whole when `store` or `store_many` is
    called: changes to the item while the write waits for the worker thread reach
    neither its row nor its index."""

    columns: tuple[str, float | bytes, str, str]
    """`(id, created_at, body, folded)` as the items table keeps them."""
    tags: list[str]
    meta: list[_MetaRow]

    @classmethod
    def of(cls, item: object) -> _Write:
        row = encode_item(item)
        stored = cast(MemoryItem, item)  # encode_item refuses anything else
        columns = (row.id, _stored_time(row.created_at), row.body, row.folded)
        return cls(columns, *_index_rows(stored.tags, stored.metadata))


def _index(db: sqlite3.Connection, seq: int, folded: str, tags: list[str], meta: list[_MetaRow]) -> None:
    db.execute("INSERT INTO items_text (rowid, indexed) VALUES (?, ?)", (seq, _indexable(folded)))
    db.executemany("INSERT INTO item_tags (seq, tag) VALUES (?, ?)", [(seq, t) for t in tags])
    db.executemany(
        "INSERT INTO item_meta (seq, key, kind, value) VALUES (?, ?, ?, ?)", [(seq, *m) for m in meta]
    )


def _unindex(db: sqlite3.Connection, seq: int, folded: str) -> None:
    # A contentless FTS5 table forgets a row only when given the text it indexed.
    db.execute(
        "INSERT INTO items_text (items_text, rowid, indexed) VALUES ('delete', ?, ?)",
        (seq, _indexable(folded)),
    )
    db.execute("DELETE FROM item_tags WHERE seq = ?", (seq,))
    db.execute("DELETE FROM item_meta WHERE seq = ?", (seq,))


@contextmanager
def _write_transaction(db: sqlite3.Connection) -> Generator[None, None, None]:
    """Take the write lock at once (waiting up to the busy timeout), commit when the
    block ends, roll back everything it did if it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _put(db: sqlite3.Connection, write: _Write) -> None:
    """Insert or replace one item in place, with its index rows."""
    item_id, *values = write.columns
    found = db.execute("SELECT seq, folded FROM items WHERE id = ?", (item_id,)).fetchone()
    if found is None:
        inserted = db.execute(
            "INSERT INTO items (id, created_at, body, folded) VALUES (?, ?, ?, ?)", write.columns
        ).lastrowid
        assert inserted is not None  # an INSERT into a rowid table always sets it
        seq = inserted
    else:
        seq, old_folded = found
        db.execute(
            "UPDATE items SET created_at = ?, body = ?, folded = ? WHERE seq = ?", (*values, seq)
        )
        _unindex(db, seq, old_folded)
    _index(db, seq, write.columns[3], write.tags, write.meta)


_NUMBER_KINDS = "('integer', 'real', 'true', 'false')"


def _same_value(value: object, row: str) -> str | None:
    """The condition on the `item_meta` row named `row` that holds exactly when its
    value `==` `value` in Python (given its key), or `None` when SQL cannot decide that.

    SQLite compares a 64-bit integer with a float exactly, as Python does, and stores
    `True` and `False` as 1 and 0. Integers beyond 64 bits are 'bigint' rows without a
    value; no float smaller than 2**63 in size can equal one.
    """
    kind = type(value)
    if kind is str:
        return f"{row}.value = ? AND {row}.kind = 'text'"
    if (kind is bool or kind is int) and value in _INT64 or (
        kind is float and -(2.0**63) <= cast(float, value) < 2.0**63
    ):
        return f"{row}.value = ? AND {row}.kind IN {_NUMBER_KINDS}"
    return None


_ROW = "m.seq = items.seq AND m.key = ?"
"""Correlates a lookup of one item's metadata row for one key."""


def _filter_condition(key: str, value: object) -> tuple[str, list[object], bool] | None:
    """`(condition on items, its parameters, exact)` for one filter: the condition keeps
    every match, and `exact` says it also drops every other item. `None` when nothing
    narrows it (a value that is no JSON value), so Python alone decides."""
    same = _same_value(value, "m")
    if same is not None:
        return f"EXISTS (SELECT 1 FROM item_meta AS m WHERE {_ROW} AND {same})", [key, value], True
    if value is None:  # a missing key matches, so does a stored null
        return f"NOT EXISTS (SELECT 1 FROM item_meta AS m WHERE {_ROW} AND m.kind != 'null')", [key], True
    kind = type(value)
    if kind is int or kind is float:
        # Beyond 64 bits (or NaN): a float or a big integer may be equal; Python decides.
        kinds = "m.kind IN ('real', 'bigint')"
    elif kind is list:
        kinds = "m.kind = 'array'"
    elif kind is dict:
        kinds = "m.kind = 'object'"
    else:
        return None
    return f"EXISTS (SELECT 1 FROM item_meta AS m WHERE {_ROW} AND {kinds})", [key], False


class _Driver(NamedTuple):
    """An index that lists a search's candidates in insertion order."""

    source: str
    """The `FROM` clause joining the index to `items`."""
    order: str
    """The index column in insertion order."""
    condition: str
    """Which index rows are candidates."""
    params: list[object]
    """The values of `condition`."""
    entries: str
    """A query for those index rows alone, to count them."""
    settles_tags: bool = False
    """Whether the condition decides the tag predicate exactly."""
    settles_key: str | None = None
    """The filter key whose predicate the condition decides exactly, if any."""


def _drivers(query: MemoryQuery, tags: list[str], filters: dict[str, Any]) -> list[_Driver]:
    """The indexes that could drive `query`, in the order preferred on a tie: the
    trigram index comes last because each of its candidates costs the most to list."""
    drivers: list[_Driver] = []
    if len(tags) == 1:
        drivers.append(_Driver(
            "item_tags AS d JOIN items ON items.seq = d.seq", "d.seq",
            "d.tag = ?", [tags[0]], "SELECT 1 FROM item_tags AS d WHERE d.tag = ?", settles_tags=True,
        ))
    for key, value in filters.items():
        same = _same_value(value, "d")
        if same is not None:
            drivers.append(_Driver(
                "item_meta AS d JOIN items ON items.seq = d.seq", "d.seq",
                f"d.key = ? AND {same}", [key, value],
                f"SELECT 1 FROM item_meta AS d WHERE d.key = ? AND {same}", settles_key=key,
            ))
    if len(tags) > 1:
        # SQLite collects the items holding any of the tags into a sorted set and
        # walks it in order.
        within = f"SELECT seq FROM item_tags WHERE tag IN ({', '.join('?' * len(tags))})"
        drivers.append(
            _Driver("items", "items.seq", f"items.seq IN ({within})", [*tags], within, settles_tags=True)
        )
    needle = (query.text or "").lower()
    if len(needle) >= _MIN_TRIGRAM:
        # Narrows only: instr() on the stored text decides, so wildcards stay literal,
        # and a long needle's opening narrows as well as all of it, at a bounded cost.
        drivers.append(_Driver(
            "items_text JOIN items ON items.seq = items_text.rowid", "items_text.rowid",
            "items_text MATCH ?", [_trigrams(_indexable(needle[:_OPENING]))],
            "SELECT 1 FROM items_text WHERE items_text MATCH ?",
        ))
    return drivers


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
                or `path` is a directory, a device, a pipe or a socket; with
                `create=False`, an empty file or an empty SQLite database too.
            FileNotFoundError: the directory that should hold the file does not exist,
                or, with `create=False`, the file does not.
            PermissionError: this process may not write the file, or the directory
                where SQLite keeps the write-ahead log; a store writes both, even to
                read.
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
        await self._on_writer(self._write, [_Write.of(item)])
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
        await self._on_writer(self._write, await encode_batch(batch, _Write.of))
        return [item.id for item in batch]

    async def optimize(self) -> None:
        """Merge the text index into one segment, in one transaction.

        Each write adds a segment to the trigram index, and later writes merge them a
        little at a time; after a bulk load that leftover merging makes some single
        writes slow (at 100k items, 1 in 100 took 9 ms or more, the slowest over 100 ms).
        Run this after loading many items: it takes about 2 µs an item, holds the
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
            row = self._live_reader().execute(f"SELECT {_COLUMNS} FROM items WHERE id = ?", (key,)).fetchone()
        return None if row is None else decode_item(*row)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """Return copies of the items matching `query`, in insertion order.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
            StoreClosedError: the store is closed.
            RuntimeError: called in a process forked from the one that opened
                the store.
        """
        if not isinstance(query, MemoryQuery):
            raise TypeError(f"query must be a MemoryQuery, got {type(query).__name__}")
        found: list[MemoryItem] = await self._on_writer(self._search, query)
        return found

    # -- on the worker thread -------------------------------------------------------

    def _write(self, writes: Sequence[_Write]) -> None:
        db = self._writer
        with _write_transaction(db):
            for write in writes:
                _put(db, write)
        self._written += len(writes)
        if self._written >= _CHECKPOINT_AFTER and (self._checkpoint is None or self._checkpoint.done()):
            self._written = 0
            if self._checkpointer is None:
                self._checkpointer = ThreadPoolExecutor(
                    max_workers=1, thread_name_prefix="lionmem-sqlite-checkpoint"
                )
                # As the writer's, so that a checkpoint syncs the file as hard.
                (self._checkpoint_sync,) = db.execute("PRAGMA synchronous").fetchone()
            self._checkpoint = self._checkpointer.submit(self._run_checkpoint)

    def _optimize(self) -> None:
        with _write_transaction(self._writer):
            self._writer.execute("INSERT INTO items_text (items_text) VALUES ('optimize')")

    def _search(self, asked: MemoryQuery) -> list[MemoryItem]:
        query = settle_unstorable(asked, allow_nul=True)
        if query is None:
            return []
        tags = list(dict.fromkeys(query.tags or ()))
        # More tags than a statement safely takes parameters for (SQLite's default
        # limit is 32,766) are checked in Python instead.
        any_tag = frozenset(tags) if len(tags) > _SQL_TAGS else frozenset[str]()
        if any_tag:
            tags = []
        every_filter = list((query.filters or {}).items())
        filters = dict(every_filter[:SQL_FILTERS])
        recheck: list[tuple[str, Any]] = every_filter[SQL_FILTERS:]
        driver = self._narrowest(_drivers(query, tags, filters), query.limit)
        # The driving index lists candidates in insertion order, so a limit stops the
        # scan early; every other predicate is looked up row by row on primary keys.
        clauses = [] if driver is None else [driver.condition]
        params = [] if driver is None else [*driver.params]
        if query.text:
            clauses.append("instr(items.folded, ?) > 0")
            params.append(query.text.lower())
        if tags and (driver is None or not driver.settles_tags):
            marks = ", ".join("?" * len(tags))
            clauses.append(
                f"EXISTS (SELECT 1 FROM item_tags AS t WHERE t.seq = items.seq AND t.tag IN ({marks}))"
            )
            params.extend(tags)
        for key, value in filters.items():
            if driver is not None and key == driver.settles_key:
                continue
            condition = _filter_condition(key, value)
            if condition is None or not condition[2]:
                recheck.append((key, value))
            if condition is not None:
                clauses.append(condition[0])
                params.extend(condition[1])
        source, order = ("items", "items.seq") if driver is None else (driver.source, driver.order)
        sql = f"SELECT {_COLUMNS} FROM {source}"
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        sql += f" ORDER BY {order}"
        limit = query.limit
        if not recheck and not any_tag and limit >= 0:
            rows = self._writer.execute(sql + " LIMIT ?", (*params, min(limit, MAX_SQL_LIMIT))).fetchall()
            return decode_in_slices(rows)
        matches = list(matching(self._writer.execute(sql, params), recheck, limit, any_tag))
        return matches[:limit]

    def _narrowest(self, drivers: list[_Driver], limit: int) -> _Driver | None:
        """The driver with the fewest index entries, without statistics: count at most
        `_PROBE` entries of each and, while every count reaches that cap and the search
        wants more rows than the cap, count 16 times further. A count below the cap is
        exact, so the loop ends once one index runs out."""
        cap = _PROBE
        while len(drivers) > 1:
            counts = [
                self._writer.execute(f"SELECT count(*) FROM ({d.entries} LIMIT ?)", [*d.params, cap])
                .fetchone()[0]
                for d in drivers
            ]
            least = min(counts)
            if least < cap or 0 <= limit <= cap:
                return drivers[counts.index(least)]
            # No count exceeds the cap, so here every driver is tied at it.
            cap *= 16
        return drivers[0] if drivers else None

    def _close_on_worker(self) -> None:
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
    # Both connections name the file by a URI, so that it is exactly `path`: an SQLite
    # built with SQLITE_USE_URI, as Debian's is, reads a plain name that starts with
    # "file:" as a URI, and "file:notes.db?mode=memory" would keep nothing.
    location = path.absolute().as_uri()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lionmem-sqlite")
    writer_uri = f"{location}?mode={'rwc' if create else 'rw'}"
    connecting = executor.submit(_connect_and_migrate, path, writer_uri, busy_ms, synchronous, create)
    try:
        writer = await asyncio.wrap_future(connecting)
        # A store may be used from event loops on other threads, as its worker thread
        # allows; the store's lock lets one thread at a time use the reader.
        reader = sqlite3.connect(
            f"{location}?mode=rw", uri=True, isolation_level=None, check_same_thread=False
        )
    except BaseException:
        # Cancelled, or no reader: the writer the worker opens, or has opened, is
        # closed there, once it exists; nothing stays open.
        executor.submit(_close_writer, connecting)
        executor.shutdown(wait=False)
        raise
    reader.execute(f"PRAGMA busy_timeout = {busy_ms}")
    reader.execute("PRAGMA query_only = 1")
    reader.execute(_CACHE_SIZE)
    return SQLiteMemoryStore(path, executor, writer, reader)


def _close_writer(connecting: Future[sqlite3.Connection]) -> None:
    """On the worker thread, after `connecting` ran or was cancelled."""
    if not connecting.cancelled() and connecting.exception() is None:
        connecting.result().close()


def _connect_and_migrate(
    path: Path, uri: str, busy_ms: int, synchronous: str, create: bool
) -> sqlite3.Connection:
    _refuse_foreign_file(path, create)
    # SQLite opens a file it cannot write read-only, fails at the first write with
    # "attempt to write a readonly database", and leaves a log and an index beside it.
    if path.exists() and not os.access(path, os.W_OK):
        raise _not_writable(path, path)
    try:
        return _connect_writer(path, uri, busy_ms, synchronous, create)
    except sqlite3.OperationalError as exc:
        # The directory is asked only now: SQLite needs it only to create the log and
        # its index, which a running writer may already have made.
        if not os.access(path.parent, os.W_OK):
            raise _not_writable(path, path.parent) from exc
        raise


def _not_writable(path: Path, place: Path) -> PermissionError:
    return PermissionError(
        f"cannot open {path}: {place} is not writable here, and the store writes the "
        "database file and keeps its write-ahead log beside it, even to read"
    )


def _connect_writer(
    path: Path, uri: str, busy_ms: int, synchronous: str, create: bool
) -> sqlite3.Connection:
    db = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        db.execute(f"PRAGMA busy_timeout = {busy_ms}")
        _refuse_foreign_schema(db, path, create)
        _switch_to_wal(db, busy_ms)
        db.execute(f"PRAGMA synchronous = {synchronous}")
        db.execute(f"PRAGMA wal_autocheckpoint = {_WRITER_CHECKPOINT_PAGES}")
        db.execute(_CACHE_SIZE)
        migrate(db, path)
    except BaseException:
        db.close()
        raise
    return db


def _switch_to_wal(db: sqlite3.Connection, busy_ms: int) -> None:
    # SQLite refuses the switch at once, without its busy handler, while another
    # connection holds a write lock on a rollback-journal file (another process
    # migrating it), so wait here for up to the same timeout.
    deadline = time.monotonic() + busy_ms / 1000
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(_BUSY_RETRY)


_NOT_FILES: Final = {
    stat.S_IFDIR: "a directory",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
}


def _refuse_foreign_file(path: Path, create: bool) -> None:
    # SQLite opens a device, a pipe or a socket too, fails with "disk I/O error", and
    # may leave a journal beside it (as /dev/null-journal).
    if path.exists() and not path.is_file():
        kind = _NOT_FILES.get(stat.S_IFMT(path.stat().st_mode), "a special file")
        raise IncompatibleDatabaseError(f"{path} is {kind}, not a database file")
    if not path.parent.is_dir():
        raise FileNotFoundError(
            f"{path.parent} is not a directory; SQLiteMemoryStore creates its database file, "
            "not the directories above it"
        )
    if not create and not path.exists():
        raise FileNotFoundError(f"there is no database at {path}; nothing was created")
    if path.exists() and path.stat().st_size > 0:
        with path.open("rb") as handle:
            if handle.read(len(_HEADER)) != _HEADER:
                raise IncompatibleDatabaseError(f"{path} is not an SQLite database; left untouched")


def _refuse_foreign_schema(db: sqlite3.Connection, path: Path, create: bool) -> None:
    # One statement reads both from one snapshot: read apart, another process's
    # migration could commit between them and make a new file look foreign.
    application_id, tables = db.execute(
        "SELECT (SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_schema)"
    ).fetchone()
    if application_id != APPLICATION_ID and (application_id != 0 or tables):
        raise IncompatibleDatabaseError(
            f"{path} is an SQLite database but not a lionmem one "
            f"(application_id {application_id:#x}, {tables} schema objects); left untouched"
        )
    if application_id != APPLICATION_ID and not create:  # empty, or SQLite with no tables
        raise IncompatibleDatabaseError(
            f"{path} holds no lionmem schema; nothing was created (create=False)"
        )


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the database up to `SCHEMA_VERSION` in one transaction.

    Safe when several processes open the same new file at once: the version is read
    again after taking the write lock, so each step runs exactly once.
    """
    with _write_transaction(db):
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise IncompatibleDatabaseError(
                f"{path} has schema version {version}, newer than this lionmem's "
                f"{SCHEMA_VERSION}; upgrade lionmem to open it"
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            MIGRATIONS[step](db)
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
