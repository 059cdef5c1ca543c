"""The namespaces of one SQLite file: each owns a range of sequence numbers, so that
every index keyed by `seq` (the items, their tags, metadata, terms, vectors and text)
reads one namespace as one range of its keys, with no column and no index added.

Governed by [ADR-0105][adr-0105-d1].
"""

from __future__ import annotations

import sqlite3
from typing import Final, NamedTuple

__all__ = ["NOTHING", "SPAN_BITS", "Space", "Span", "allocate", "names", "retire", "span_of"]

SPAN_BITS: Final = 40
"""Namespace `n` owns the sequence numbers `n << 40` to `((n + 1) << 40) - 1`: room for
a trillion items in each of eight million namespaces in SQLite's 63 bits."""


class Span(NamedTuple):
    """The sequence numbers one namespace owns, `first` to `last` inclusive, as one call
    reads them."""

    number: int
    """The namespace's number in `lionmem_namespaces`; -1 for one not in the file."""
    first: int
    last: int
    now: float | None = None
    """The call's reading of the clock when some item of the namespace has expired by
    it, so that reads must pass over the items expiring at or before it; `None` when
    none has ([ADR-0105][adr-0105-d2])."""

    def live(self, alias: str = "items") -> tuple[str, list[object]]:
        """The SQL (from ` AND`) and values that pass over the items of `alias` expired
        at `now`: none when nothing has expired."""
        if self.now is None:
            return "", []
        return f" AND ({alias}.expires_at IS NULL OR {alias}.expires_at > ?)", [self.now]


NOTHING: Final = Span(-1, 1, 0)
"""The span of a namespace the file does not hold: no sequence number is in it."""


def span_of(number: int) -> Span:
    """The span of namespace number `number`."""
    return Span(number, number << SPAN_BITS, ((number + 1) << SPAN_BITS) - 1)


class Space:
    """One store's namespace: its name, its span once the file holds it and, for one
    call, the call's reading of the clock.

    A namespace enters the file with the first write to it, so that opening one to
    read writes nothing; its number never changes after, and is kept once read.
    """

    def __init__(self, name: str, now: float | None = None, known: list[Span] | None = None) -> None:
        self.name: str = name
        """The namespace's name."""
        self.now = now
        """The clock's one reading for the call this space is handed to, if any."""
        self._known: list[Span] = [] if known is None else known  # shared with `at`'s copies

    def at(self, now: float) -> Space:
        """This namespace for one call that read the clock at `now`."""
        return Space(self.name, now, self._known)

    def known(self, db: sqlite3.Connection) -> Span:
        """The namespace's span as `db` sees it, whatever has expired: `NOTHING` while it
        is not in the file."""
        if not self._known:
            row = db.execute("SELECT number FROM lionmem_namespaces WHERE name = ?", (self.name,)).fetchone()
            if row is None:
                return NOTHING
            self._known.append(span_of(row[0]))
        return self._known[0]

    def span(self, db: sqlite3.Connection) -> Span:
        """The namespace's span as `db` sees it, with the call's `now` when some item has
        expired by it: one probe of the expiry index ([ADR-0105][adr-0105-d2])."""
        span = self.known(db)
        if self.now is None or span is NOTHING:
            return span
        expired = db.execute(
            f"SELECT 1 FROM items WHERE seq >> {SPAN_BITS} = ? AND expires_at <= ? LIMIT 1", (span.number, self.now)
        ).fetchone()
        return span if expired is None else span._replace(now=self.now)

    def claim(self, db: sqlite3.Connection) -> Span:
        """The namespace's span, entering it in the file if it is not there yet, in the
        write transaction `db` holds. A number taken here is not kept until a later
        read finds it: the transaction may yet roll back.

        Raises:
            ValueError: the file holds as many namespaces as there is room for.
        """
        span = self.known(db)
        if span is not NOTHING:
            return span
        (number,) = db.execute("SELECT coalesce(max(number), -1) + 1 FROM lionmem_namespaces").fetchone()
        if number >> (63 - SPAN_BITS):
            raise ValueError(f"the file holds {number:,} namespaces, the most it has room for")
        db.execute(
            "INSERT INTO lionmem_namespaces (number, name, deleted_up_to) VALUES (?, ?, ?)",
            (number, self.name, number << SPAN_BITS),
        )
        return span_of(number)


def allocate(db: sqlite3.Connection, span: Span, count: int) -> int:
    """The first of `count` new sequence numbers of `span`'s namespace, each above every
    number an item of it holds or, once deleted, held (`retire`), in the write
    transaction `db` holds: one read of the end of its range, as AUTOINCREMENT reads
    its counter, and no write.

    Raises:
        ValueError: the namespace has used every number it owns.
    """
    (last,) = db.execute(
        "SELECT max(coalesce((SELECT max(seq) FROM items WHERE seq BETWEEN ? AND ?), ?),"
        " (SELECT deleted_up_to FROM lionmem_namespaces WHERE number = ?))",
        (span.first, span.last, span.first, span.number),
    ).fetchone()
    if last + count > span.last:
        raise ValueError("this namespace has used every sequence number it owns; copy it into a new one")
    return int(last) + 1


def retire(db: sqlite3.Connection, span: Span, seqs: list[int]) -> None:
    """Record that the items at `seqs` of `span`'s namespace are deleted, so that no new
    item takes the number of the last of them, in the write transaction `db` holds."""
    if seqs:
        db.execute(
            "UPDATE lionmem_namespaces SET deleted_up_to = max(deleted_up_to, ?) WHERE number = ?",
            (max(seqs), span.number),
        )


def names(db: sqlite3.Connection) -> list[str]:
    """The namespaces of the file that hold at least one item, by name: one probe of
    the items' primary key for each."""
    rows = db.execute("SELECT number, name FROM lionmem_namespaces ORDER BY name").fetchall()
    held: list[str] = []
    for number, name in rows:
        span = span_of(number)
        if db.execute("SELECT 1 FROM items WHERE seq BETWEEN ? AND ? LIMIT 1", (span.first, span.last)).fetchone():
            held.append(name)
    return held
