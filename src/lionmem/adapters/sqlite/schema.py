"""The SQLite store's schema: its version, the steps that migrate an older file, and
the mark that tells a lionmem database from any other.

Governed by [ADR-0096][adr-0096].
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Final

from lionmem._internal.json_values import loads
from lionmem.adapters.sqlite._indexes import index_rows, term_rows
from lionmem.adapters.sqlite._namespaces import SPAN_BITS
from lionmem.adapters.sqlite._writes import IndexEntry, index, write_transaction
from lionmem.errors import IncompatibleDatabaseError
from lionmem.protocols.namespaces import DEFAULT_NAMESPACE

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION"]

APPLICATION_ID: Final = 0x4C4D454D
"""`PRAGMA application_id` of a lionmem database ("LMEM")."""

SCHEMA_VERSION: Final = 9
"""The schema this code writes; `PRAGMA user_version` of a current database."""

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
    entries: list[IndexEntry] = []
    for seq, folded, body in db.execute("SELECT seq, folded, body FROM items").fetchall():
        _content, tags, metadata = loads(body)
        entries.append((seq, folded, *index_rows(tags, metadata)))
    index(db, entries, terms=False)  # version 7 adds the term index, and fills it


def _version_3(db: sqlite3.Connection) -> None:
    # Version 2 indexed integers beyond 64 bits as 'integer' rows holding a rounded
    # float, which SQL cannot compare exactly; they become 'bigint' rows without a
    # value. The value index gains `kind`, so a filter never reads the table.
    db.execute("UPDATE item_meta SET kind = 'bigint', value = NULL WHERE kind = 'integer' AND typeof(value) = 'real'")
    db.execute("DROP INDEX item_meta_by_value")
    db.execute(_META_BY_VALUE)


def _version_4(db: sqlite3.Connection) -> None:
    """No table changes: from version 4, `created_at` may hold the 8 bytes of -0.0
    (see `stored_time`), which version 3 code would misread, so it must refuse
    the file. Version 3 stored -0.0 as 0.0; that sign is lost."""


_VECTORS_FOLLOW_ITEMS = "CREATE TRIGGER item_vectors_follow_items AFTER DELETE ON items BEGIN DELETE FROM item_vectors WHERE seq = OLD.seq; END"
_VECTORS_GO_STALE = (
    "CREATE TRIGGER item_vectors_stale AFTER UPDATE OF body ON items WHEN OLD.body IS NOT NEW.body "
    "BEGIN DELETE FROM item_vectors WHERE seq = OLD.seq; END"
)


def _version_5(db: sqlite3.Connection) -> None:
    """Semantic recall ([ADR-0102][adr-0102-d4]): a unit vector per item, deleted
    with its row by a trigger on every path, and the embedder that made them."""
    db.execute("CREATE TABLE item_vectors (seq INTEGER PRIMARY KEY, vector BLOB NOT NULL)")
    db.execute("CREATE TABLE lionmem_recall (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID")
    db.execute(_VECTORS_FOLLOW_ITEMS)


def _version_6(db: sqlite3.Connection) -> None:
    """No stale vector ([ADR-0102][adr-0102-d4]): each vector keeps the digest of the
    text it was made from, and a trigger drops an item's vector whenever any writer,
    with an embedder or without, changes its row; a writer with one then writes the
    new vector in the same transaction. A vector of version 5 has no digest, so no
    one can tell which text made it: the next store opened with the embedder makes
    it again."""
    db.execute("ALTER TABLE item_vectors ADD COLUMN digest BLOB")
    db.execute(_VECTORS_GO_STALE)


def _version_7(db: sqlite3.Connection) -> None:
    """Hybrid recall's term index ([ADR-0104][adr-0104]): a row for each distinct term
    of each item's text, with how often the item holds it, written from Python with
    the other index rows, since its terms are Python's `\\w` runs."""
    # One B-tree, by term: an item's rows are deleted by its old text's terms.
    db.execute(
        "CREATE TABLE item_terms (term TEXT NOT NULL, seq INTEGER NOT NULL, tf INTEGER NOT NULL,"
        " PRIMARY KEY (term, seq)) WITHOUT ROWID"
    )
    after = 0
    while rows := db.execute(
        "SELECT seq, folded FROM items WHERE seq > ? ORDER BY seq LIMIT 2000", (after,)
    ).fetchall():
        after = rows[-1][0]
        db.executemany("INSERT INTO item_terms (seq, term, tf) VALUES (?, ?, ?)", term_rows(rows))


def _version_8(db: sqlite3.Connection) -> None:
    """Namespaces ([ADR-0105][adr-0105-d1]): each owns a range of sequence numbers, listed
    in `lionmem_namespaces` with the largest a deleted item of it held, so that no
    number is given twice, as AUTOINCREMENT kept it; the items of older versions are the
    namespace `default`, number 0. An id is unique within a namespace, not the file, so
    the items table is rebuilt without its `UNIQUE (id)`, and its numbers are given
    explicitly from then on."""
    db.execute(
        "CREATE TABLE lionmem_namespaces (number INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE,"
        " deleted_up_to INTEGER NOT NULL)"
    )
    db.execute(
        "INSERT INTO lionmem_namespaces (number, name, deleted_up_to) SELECT 0, ?, max("
        "coalesce((SELECT seq FROM sqlite_sequence WHERE name = 'items'), 0), coalesce((SELECT max(seq) FROM items), 0))",
        (DEFAULT_NAMESPACE,),
    )
    db.execute(
        "CREATE TABLE items_v8 (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, created_at REAL NOT NULL,"
        " body TEXT NOT NULL, folded TEXT NOT NULL)"
    )
    db.execute(
        "INSERT INTO items_v8 (seq, id, created_at, body, folded) SELECT seq, id, created_at, body, folded FROM items"
    )
    db.execute("DROP TABLE items")  # and its two triggers, made again below
    db.execute("ALTER TABLE items_v8 RENAME TO items")
    db.execute(f"CREATE UNIQUE INDEX items_by_id ON items (id, seq >> {SPAN_BITS})")
    db.execute(_VECTORS_FOLLOW_ITEMS)
    db.execute(_VECTORS_GO_STALE)


def _version_9(db: sqlite3.Connection) -> None:
    """Expiry ([ADR-0105][adr-0105-d2]): an item's expiry, UTC seconds or NULL for none,
    and an index of the items that have one by namespace, so that a read asks at once
    whether anything of its namespace has expired, and a sweep finds what has. Adding
    a column rewrites no row."""
    db.execute("ALTER TABLE items ADD COLUMN expires_at REAL")
    db.execute(f"CREATE INDEX items_expiring ON items (seq >> {SPAN_BITS}, expires_at) WHERE expires_at IS NOT NULL")


MIGRATIONS: Final[dict[int, Callable[[sqlite3.Connection], None]]] = {
    1: _version_1,
    2: _version_2,
    3: _version_3,
    4: _version_4,
    5: _version_5,
    6: _version_6,
    7: _version_7,
    8: _version_8,
    9: _version_9,
}
"""Each step moves a database from the previous version to this one, inside the
transaction that records the new `user_version`."""

_META_BY_VALUE = "CREATE INDEX item_meta_by_value ON item_meta (key, value, seq, kind)"


def migrate(db: sqlite3.Connection, path: Path) -> None:
    """Bring the database up to `SCHEMA_VERSION` in one transaction.

    A database already current is only read: opening it takes no write lock, so a
    store opens, and reads, while another process is in a long write, as WAL allows.
    Otherwise the write lock is taken and the version read again under it, so that
    when several processes open the same new file at once each step runs exactly once.
    """
    if _current(db, path):
        return
    with write_transaction(db):
        if _current(db, path):
            return  # another process migrated it while this one waited for the lock
        (version,) = db.execute("PRAGMA user_version").fetchone()
        try:
            for step in range(version + 1, SCHEMA_VERSION + 1):
                MIGRATIONS[step](db)
        except sqlite3.OperationalError as exc:
            if getattr(exc, "sqlite_errorcode", None) != sqlite3.SQLITE_ERROR:
                raise  # the disk, a lock: nothing about the schema itself
            raise IncompatibleDatabaseError(
                f"{path} says it holds schema version {version}, but its tables are not "
                f"that version's (SQLite: {exc}); nothing was changed. Its user_version was "
                "probably changed by hand: restore the file from a backup"
            ) from None
        db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
        db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")


def refuse_older(db: sqlite3.Connection, path: Path) -> None:
    """Refuse a database of an older schema to an opener that only reads
    (`create=False`), before anything is written to it, the journal mode included:
    migrating it would rewrite a file the caller asked only to read."""
    if not _current(db, path):
        (version,) = db.execute("PRAGMA user_version").fetchone()
        raise IncompatibleDatabaseError(
            f"{path} holds schema version {version}, older than this lionmem's {SCHEMA_VERSION}; "
            "opened to read (create=False), it was left as it was. Open it once to write (the "
            "command line's put or import) to migrate it"
        )


def _current(db: sqlite3.Connection, path: Path) -> bool:
    """Whether the database holds this lionmem's schema, read in one snapshot.

    Raises:
        IncompatibleDatabaseError: its schema is newer than this lionmem's.
    """
    version, application_id = db.execute(
        "SELECT (SELECT user_version FROM pragma_user_version), (SELECT application_id FROM pragma_application_id)"
    ).fetchone()
    if version > SCHEMA_VERSION:
        raise IncompatibleDatabaseError(
            f"{path} has schema version {version}, newer than this lionmem's "
            f"{SCHEMA_VERSION}; upgrade lionmem to open it"
        )
    return bool(version == SCHEMA_VERSION and application_id == APPLICATION_ID)
