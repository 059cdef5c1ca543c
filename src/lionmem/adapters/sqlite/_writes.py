"""How the SQLite store writes one item: its row, its index rows, and the
transaction around them.

Governed by [ADR-0096][adr-0096].

Seam for tests: `_writes`, whose `index` a test replaces to fail a write midway, and
whose `_unindex` one replaces to fail a delete midway.
"""

from __future__ import annotations

import math
import sqlite3
import struct
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from typing import NamedTuple, cast

from lionmem.adapters._codec import encode_item
from lionmem.adapters.sqlite._indexes import MetaRow, index_rows, indexable, term_rows
from lionmem.adapters.sqlite._namespaces import Span, allocate, retire
from lionmem.protocols.memory import MemoryItem

_NEGATIVE_ZERO = struct.pack("<d", -0.0)


def stored_time(created_at: float) -> float | bytes:
    """`created_at` as the items table keeps it. SQLite writes a whole-number REAL as
    an integer on disk, and the integer 0 has no sign, so -0.0 alone is stored as
    its 8 bytes, which a REAL column keeps as they are."""
    return _NEGATIVE_ZERO if created_at == 0.0 and math.copysign(1.0, created_at) < 0 else created_at


class Write(NamedTuple):
    """One item as its write needs it, taken whole when `store` or `store_many` is
    called: changes to the item while the write waits for the worker thread reach
    neither its row nor its index."""

    columns: tuple[str, float | bytes, str, str]
    """`(id, created_at, body, folded)` as the items table keeps them."""
    tags: list[str]
    meta: list[MetaRow]

    @classmethod
    def of(cls, item: object) -> Write:
        row = encode_item(item)
        stored = cast(MemoryItem, item)  # encode_item refuses anything else
        columns = (row.id, stored_time(row.created_at), row.body, row.folded)
        return cls(columns, *index_rows(stored.tags, stored.metadata))


IndexEntry = tuple[int, str, list[str], list[MetaRow]]
"""What indexes one item: its sequence number, folded text, tags and metadata rows."""


def index(db: sqlite3.Connection, entries: Sequence[IndexEntry], *, terms: bool = True) -> None:
    """Write the text, tag, metadata and term index rows of items, one statement a table;
    without `terms`, as a schema older than version 7, which has no term index, holds them."""
    db.executemany(
        "INSERT INTO items_text (rowid, indexed) VALUES (?, ?)",
        [(seq, indexable(folded)) for seq, folded, _, _ in entries],
    )
    db.executemany(
        "INSERT INTO item_tags (seq, tag) VALUES (?, ?)", [(seq, t) for seq, _, tags, _ in entries for t in tags]
    )
    db.executemany(
        "INSERT INTO item_meta (seq, key, kind, value) VALUES (?, ?, ?, ?)",
        [(seq, *m) for seq, _, _, meta in entries for m in meta],
    )
    if terms:
        db.executemany(
            "INSERT INTO item_terms (seq, term, tf) VALUES (?, ?, ?)",
            term_rows((seq, folded) for seq, folded, _, _ in entries),
        )


def _unindex(db: sqlite3.Connection, seq: int, folded: str) -> None:
    # A contentless FTS5 table forgets a row only when given the text it indexed.
    db.execute(
        "INSERT INTO items_text (items_text, rowid, indexed) VALUES ('delete', ?, ?)",
        (seq, indexable(folded)),
    )
    db.execute("DELETE FROM item_tags WHERE seq = ?", (seq,))
    db.execute("DELETE FROM item_meta WHERE seq = ?", (seq,))
    db.executemany(
        "DELETE FROM item_terms WHERE term = ? AND seq = ?", [(term, seq) for _, term, _ in term_rows([(seq, folded)])]
    )


def delete_rows(db: sqlite3.Connection, span: Span, where: str, params: Sequence[object]) -> int:
    """Delete the items of `span` that `where` selects, with their index rows; return
    how many."""
    rows = db.execute(
        f"SELECT seq, folded FROM items WHERE seq BETWEEN ? AND ? AND {where}", [span.first, span.last, *params]
    ).fetchall()
    for seq, folded in rows:
        _unindex(db, seq, folded)
    db.executemany("DELETE FROM items WHERE seq = ?", [(seq,) for seq, _ in rows])
    retire(db, span, [seq for seq, _ in rows])
    return len(rows)


@contextmanager
def write_transaction(db: sqlite3.Connection) -> Generator[None, None, None]:
    """Take the write lock at once (waiting up to the busy timeout), commit when the
    block ends, roll back everything it did if it raises."""
    db.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


_IDS_A_QUERY = 500


def put_many(db: sqlite3.Connection, span: Span, writes: Sequence[Write], expires: float | None) -> None:
    """Insert or replace `writes` in `span`'s namespace as `put` would one by one, each
    expiring at `expires` (never, for `None`), in one transaction the caller holds: one
    statement a table for the items not stored yet.

    An item already stored is replaced in place by `put`. A new id takes the next
    sequence number at its first write in the batch, holding its last write, as the
    writes one by one leave it; the numbers come from `allocate`, each above every
    number the namespace has given.
    """
    ids = list(dict.fromkeys(write.columns[0] for write in writes))
    stored: set[str] = set()
    for start in range(0, len(ids), _IDS_A_QUERY):
        chunk = ids[start : start + _IDS_A_QUERY]
        marks = ", ".join("?" * len(chunk))
        stored.update(
            row[0]
            for row in db.execute(
                f"SELECT id FROM items WHERE id IN ({marks}) AND seq BETWEEN ? AND ?", [*chunk, span.first, span.last]
            )
        )
    fresh: dict[str, Write] = {}
    for write in writes:
        if write.columns[0] in stored:
            put(db, span, write, expires)
        else:
            fresh[write.columns[0]] = write  # the first write's place, the last one's values
    if not fresh:
        return
    numbered = list(enumerate(fresh.values(), start=allocate(db, span, len(fresh))))
    db.executemany(
        "INSERT INTO items (seq, id, created_at, body, folded, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
        [(seq, *write.columns, expires) for seq, write in numbered],
    )
    index(db, [(seq, write.columns[3], write.tags, write.meta) for seq, write in numbered])


def put(db: sqlite3.Connection, span: Span, write: Write, expires: float | None) -> None:
    """Insert or replace one item of `span`'s namespace in place, with its index rows,
    expiring at `expires` (never, for `None`)."""
    item_id, *values = write.columns
    found = db.execute(
        "SELECT seq, folded FROM items WHERE id = ? AND seq BETWEEN ? AND ?", (item_id, span.first, span.last)
    ).fetchone()
    if found is None:
        seq = allocate(db, span, 1)
        db.execute(
            "INSERT INTO items (seq, id, created_at, body, folded, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
            (seq, *write.columns, expires),
        )
    else:
        seq, old_folded = found
        db.execute(
            "UPDATE items SET created_at = ?, body = ?, folded = ?, expires_at = ? WHERE seq = ?",
            (*values, expires, seq),
        )
        _unindex(db, seq, old_folded)
    index(db, [(seq, write.columns[3], write.tags, write.meta)])
