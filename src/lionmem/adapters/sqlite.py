"""`SQLiteMemoryStore`: a durable store in one SQLite file.

Governed by [ADR-0096][adr-0096]. Uses only the standard library; `import lionmem`
never imports this module.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Generator, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal
from uuid import UUID

from lionmem.adapters._encoding import _loads, decode_item, encode_item
from lionmem.adapters.errors import IncompatibleDatabaseError, StoreClosedError
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.testing.profile import (
    ContentKind,
    Durability,
    FidelityProfile,
    ReturnedObjects,
)

__all__ = ["APPLICATION_ID", "SCHEMA_VERSION", "SQLITE_PROFILE", "SQLiteMemoryStore"]

APPLICATION_ID: Final = 0x4C4D454D
"""`PRAGMA application_id` of a lionmem database ("LMEM")."""

SCHEMA_VERSION: Final = 2
"""The schema this code writes; `PRAGMA user_version` of a current database."""

SQLITE_PROFILE: Final = FidelityProfile(
    returned_objects=ReturnedObjects.COPIES,
    durability=Durability.RESTART,
    content=ContentKind.JSON_VALUES,
)
"""What `SQLiteMemoryStore` promises: the reference's rules, except that results are
copies, items survive a restart and content must be a JSON value."""

_HEADER = b"SQLite format 3\x00"

# Each entry moves a database from the previous version to this one, in the same
# transaction that records the new user_version.
MIGRATIONS: Final[dict[int, str]] = {
    1: """
        CREATE TABLE items (
            seq INTEGER PRIMARY KEY AUTOINCREMENT,
            id TEXT NOT NULL UNIQUE,
            created_at REAL NOT NULL,
            content TEXT NOT NULL,
            folded TEXT NOT NULL,
            tags TEXT NOT NULL,
            metadata TEXT NOT NULL
        );
    """,
    2: """
        CREATE TABLE item_tags (
            seq INTEGER NOT NULL, tag TEXT NOT NULL, PRIMARY KEY (seq, tag)
        ) WITHOUT ROWID;
        CREATE INDEX item_tags_by_tag ON item_tags (tag, seq);
        CREATE TABLE item_meta (
            seq INTEGER NOT NULL, key TEXT NOT NULL, kind TEXT NOT NULL, value,
            PRIMARY KEY (seq, key)
        ) WITHOUT ROWID;
        CREATE INDEX item_meta_by_value ON item_meta (key, value, kind, seq);
        CREATE VIRTUAL TABLE items_text USING fts5(
            folded, content='items', content_rowid='seq', tokenize='trigram case_sensitive 1'
        );
        CREATE TRIGGER items_inserted AFTER INSERT ON items BEGIN
            INSERT INTO items_text (rowid, folded) VALUES (new.seq, new.folded);
            INSERT INTO item_tags (seq, tag)
                SELECT DISTINCT new.seq, value FROM json_each(new.tags);
            INSERT INTO item_meta (seq, key, kind, value)
                SELECT new.seq, key, type,
                       CASE WHEN type IN ('object', 'array') THEN NULL ELSE value END
                FROM json_each(new.metadata);
        END;
        CREATE TRIGGER items_updated AFTER UPDATE ON items BEGIN
            INSERT INTO items_text (items_text, rowid, folded)
                VALUES ('delete', old.seq, old.folded);
            INSERT INTO items_text (rowid, folded) VALUES (new.seq, new.folded);
            DELETE FROM item_tags WHERE seq = old.seq;
            INSERT INTO item_tags (seq, tag)
                SELECT DISTINCT new.seq, value FROM json_each(new.tags);
            DELETE FROM item_meta WHERE seq = old.seq;
            INSERT INTO item_meta (seq, key, kind, value)
                SELECT new.seq, key, type,
                       CASE WHEN type IN ('object', 'array') THEN NULL ELSE value END
                FROM json_each(new.metadata);
        END;
        INSERT INTO item_tags (seq, tag)
            SELECT DISTINCT items.seq, j.value FROM items, json_each(items.tags) AS j;
        INSERT INTO item_meta (seq, key, kind, value)
            SELECT items.seq, j.key, j.type,
                   CASE WHEN j.type IN ('object', 'array') THEN NULL ELSE j.value END
            FROM items, json_each(items.metadata) AS j;
        INSERT INTO items_text (items_text) VALUES ('rebuild');
    """,
}

_UPSERT = """
    INSERT INTO items (id, created_at, content, folded, tags, metadata)
    VALUES (?, ?, ?, ?, ?, ?)
    ON CONFLICT (id) DO UPDATE SET
        created_at = excluded.created_at, content = excluded.content,
        folded = excluded.folded, tags = excluded.tags, metadata = excluded.metadata
"""
_COLUMNS = "id, created_at, content, tags, metadata"
_INT64 = range(-(2**63), 2**63)
_MIN_TRIGRAM = 3


def _filter_clause(value: object) -> tuple[str, list[object]] | None:
    """SQL that narrows the rows for one filter, never dropping a match; `None` when the
    value has no SQL form and Python alone must decide."""
    if value is None:
        return "seq NOT IN (SELECT seq FROM item_meta WHERE key = ? AND kind != 'null')", []
    if type(value) is str:
        return "seq IN (SELECT seq FROM item_meta WHERE key = ? AND value = ? AND kind = 'text')", [value]
    if type(value) in (bool, int, float) and (type(value) is float or value in _INT64):  # type: ignore[operator]
        # Python equality: True == 1 == 1.0. JSON true and false are stored as 1 and 0.
        return (
            "seq IN (SELECT seq FROM item_meta WHERE key = ? AND value = ? "
            "AND kind IN ('integer', 'real', 'true', 'false'))",
            [value],
        )
    if type(value) is list:
        return "seq IN (SELECT seq FROM item_meta WHERE key = ? AND kind = 'array')", []
    if type(value) is dict:
        return "seq IN (SELECT seq FROM item_meta WHERE key = ? AND kind = 'object')", []
    return None


class SQLiteMemoryStore:
    """A `MemoryStore` in one SQLite file, opened explicitly on a path you choose.

    Follows the reference's rules (insertion order with replace in place, the
    case-insensitive substring of `str(content)`, any-of tags, Python-equality filters
    where `None` matches a missing key, slice limits) and declares where it differs in
    [`SQLITE_PROFILE`][lionmem.adapters.sqlite.SQLITE_PROFILE]: results are copies and
    content must be a JSON value. Writes and searches run on one worker thread, so
    they never block the event loop; `retrieve` is a primary-key read on a read-only
    WAL connection, which never waits for a lock. See [ADR-0096][adr-0096].

    Examples:
        ```python
        async with SQLiteMemoryStore.open("memory.db") as store:
            await store.store(MemoryItem(content="kept"))
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

    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        busy_timeout: float = 10.0,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
    ) -> _Opening:
        """Open (creating or migrating) the database at `path`.

        Use as `async with SQLiteMemoryStore.open(path) as store:` or
        `store = await SQLiteMemoryStore.open(path)` followed by `await store.close()`.
        `synchronous="FULL"` also survives power loss, at the cost of an fsync a write.

        Raises:
            IncompatibleDatabaseError: the file is not a lionmem database, or is newer.
        """
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', got {synchronous!r}")
        if busy_timeout < 0:
            raise ValueError(f"busy_timeout must not be negative, got {busy_timeout!r}")
        return _Opening(Path(path), busy_timeout, synchronous)

    # -- lifecycle --------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether `close()` has been called."""
        return self._reader is None

    async def close(self) -> None:
        """Close the database; later calls raise `StoreClosedError`. Idempotent."""
        reader, self._reader = self._reader, None
        if reader is None:
            return
        reader.close()
        await asyncio.get_running_loop().run_in_executor(self._executor, self._writer.close)
        self._executor.shutdown(wait=True)

    async def __aenter__(self) -> SQLiteMemoryStore:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    def _live_reader(self) -> sqlite3.Connection:
        if self._reader is None:
            raise StoreClosedError(f"the SQLiteMemoryStore on {self.path} is closed")
        return self._reader

    async def _on_writer(self, function: Any, *args: Any) -> Any:
        self._live_reader()
        return await asyncio.get_running_loop().run_in_executor(self._executor, function, *args)

    # -- the protocol -------------------------------------------------------------

    async def store(self, item: MemoryItem) -> UUID:
        """Write `item` (replacing, in place, an item with its id) and return its id.

        Raises:
            TypeError: not a `MemoryItem`, or content, tags or metadata that are not
                JSON values; nothing is written.
            StoreClosedError: the store is closed.
        """
        row = encode_item(item)
        await self._on_writer(self._write, [row])
        return item.id

    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]:
        """Write several items in one transaction: all of them or, on error, none."""
        batch = list(items)
        rows = [encode_item(item) for item in batch]
        await self._on_writer(self._write, rows)
        return [item.id for item in batch]

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        """Return a copy of the item with `item_id`, or `None`."""
        if not isinstance(item_id, UUID):
            raise TypeError(f"item_id must be a UUID, got {type(item_id).__name__}")
        row = self._live_reader().execute(
            f"SELECT {_COLUMNS} FROM items WHERE id = ?", (str(item_id),)
        ).fetchone()
        return None if row is None else decode_item(*row)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """Return copies of the items matching `query`, in insertion order."""
        if not isinstance(query, MemoryQuery):
            raise TypeError(f"query must be a MemoryQuery, got {type(query).__name__}")
        found: list[MemoryItem] = await self._on_writer(self._search, query)
        return found

    # -- on the worker thread -------------------------------------------------------

    def _write(self, rows: Sequence[tuple[object, ...]]) -> None:
        db = self._writer
        db.execute("BEGIN IMMEDIATE")
        try:
            db.executemany(_UPSERT, rows)
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    def _search(self, query: MemoryQuery) -> list[MemoryItem]:
        clauses: list[str] = []
        params: list[object] = []
        if query.text:
            needle = query.text.lower()
            if len(needle) >= _MIN_TRIGRAM:
                # The trigram index narrows; instr() then decides exactly, wildcards and all.
                clauses.append("seq IN (SELECT rowid FROM items_text WHERE items_text MATCH ?)")
                params.append('"' + needle.replace('"', '""') + '"')
            clauses.append("instr(folded, ?) > 0")
            params.append(needle)
        if query.tags:
            marks = ", ".join("?" * len(query.tags))
            clauses.append(f"seq IN (SELECT seq FROM item_tags WHERE tag IN ({marks}))")
            params.extend(query.tags)
        recheck: list[tuple[str, Any]] = []
        for key, value in (query.filters or {}).items():
            narrowing = _filter_clause(value)
            if narrowing is not None:
                clauses.append(narrowing[0])
                params.extend([key, *narrowing[1]])
            if type(value) is not str and value is not None:
                recheck.append((key, value))
        sql = f"SELECT {_COLUMNS} FROM items"
        if clauses:
            sql += " WHERE " + " AND ".join(clauses)
        sql += " ORDER BY seq"
        limit = query.limit
        if not recheck and limit >= 0:
            rows = self._writer.execute(sql + " LIMIT ?", (*params, limit)).fetchall()
            return [decode_item(*row) for row in rows]
        matches = list(_rechecked(self._writer.execute(sql, params), recheck, limit))
        return matches[:limit]


def _rechecked(
    rows: Iterable[tuple[str, float, str, str, str]], recheck: list[tuple[str, Any]], limit: int
) -> Generator[MemoryItem, None, None]:
    """Decode rows whose metadata satisfies Python equality, stopping at `limit`."""
    wanted = limit if limit >= 0 else -1
    for item_id, created_at, content, tags, metadata in rows:
        if wanted == 0:
            return
        decoded = _loads(metadata)
        if all(decoded.get(key) == value for key, value in recheck):
            item = decode_item(item_id, created_at, content, tags, metadata)
            yield item
            wanted -= 1


class _Opening:
    """The pending open: await it, or use it as an async context manager."""

    def __init__(self, path: Path, busy_timeout: float, synchronous: str) -> None:
        self._path = path
        self._busy_timeout = busy_timeout
        self._synchronous = synchronous
        self._store: SQLiteMemoryStore | None = None

    def __await__(self) -> Generator[Any, None, SQLiteMemoryStore]:
        return self._open().__await__()

    async def __aenter__(self) -> SQLiteMemoryStore:
        self._store = await self._open()
        return self._store

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        if self._store is not None:
            await self._store.close()

    async def _open(self) -> SQLiteMemoryStore:
        path = self._path
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lionmem-sqlite")
        loop = asyncio.get_running_loop()
        try:
            writer = await loop.run_in_executor(executor, self._connect_and_migrate)
        except BaseException:
            executor.shutdown(wait=False)
            raise
        reader = sqlite3.connect(path, isolation_level=None)
        reader.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
        reader.execute("PRAGMA query_only = 1")
        return SQLiteMemoryStore(path, executor, writer, reader)

    def _connect_and_migrate(self) -> sqlite3.Connection:
        path = self._path
        _refuse_foreign_file(path)
        db = sqlite3.connect(path, isolation_level=None, timeout=self._busy_timeout)
        try:
            db.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
            _refuse_foreign_schema(db, path)
            db.execute("PRAGMA journal_mode = WAL")
            db.execute(f"PRAGMA synchronous = {self._synchronous}")
            migrate(db, path)
        except BaseException:
            db.close()
            raise
        return db


def _refuse_foreign_file(path: Path) -> None:
    if path.is_dir():
        raise IncompatibleDatabaseError(f"{path} is a directory, not a database file")
    if path.exists() and path.stat().st_size > 0:
        with path.open("rb") as handle:
            if handle.read(len(_HEADER)) != _HEADER:
                raise IncompatibleDatabaseError(f"{path} is not an SQLite database; left untouched")


def _refuse_foreign_schema(db: sqlite3.Connection, path: Path) -> None:
    (application_id,) = db.execute("PRAGMA application_id").fetchone()
    if application_id == APPLICATION_ID:
        return
    (tables,) = db.execute("SELECT count(*) FROM sqlite_schema").fetchone()
    if application_id != 0 or tables:
        raise IncompatibleDatabaseError(
            f"{path} is an SQLite database but not a lionmem one "
            f"(application_id {application_id:#x}, {tables} schema objects); left untouched"
        )


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the database up to `SCHEMA_VERSION` in one transaction.

    Safe when several processes open the same new file at once: the version is read
    again after taking the write lock, so each step runs exactly once.
    """
    db.execute("BEGIN IMMEDIATE")
    try:
        (version,) = db.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise IncompatibleDatabaseError(
                f"{path} has schema version {version}, newer than this lionmem's "
                f"{SCHEMA_VERSION}; upgrade lionmem to open it"
            )
        for step in range(version + 1, SCHEMA_VERSION + 1):
            for statement in _statements(MIGRATIONS[step]):
                db.execute(statement)
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _statements(script: str) -> list[str]:
    """Split a migration script into statements (executescript would commit)."""
    statements: list[str] = []
    current = ""
    for line in script.splitlines(keepends=True):
        current += line
        if sqlite3.complete_statement(current):
            statements.append(current.strip())
            current = ""
    return [s for s in statements if s]
