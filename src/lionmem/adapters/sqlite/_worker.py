"""What the SQLite store does on its worker thread: every write, search, count,
delete and page, on the one writer connection, which no other thread touches.

Governed by [ADR-0096][adr-0096] and, for deletes, [ADR-0100][adr-0100].
"""

from __future__ import annotations

import sqlite3
from collections.abc import Generator, Sequence
from contextlib import contextmanager
from pathlib import Path
from uuid import UUID

from lionmem.adapters._codec import decode_in_slices
from lionmem.adapters._plan import unlimited
from lionmem.adapters._settling import aged_matches, settled
from lionmem.adapters.sqlite._checkpoint import Checkpoints
from lionmem.adapters.sqlite._files import damage, log_files
from lionmem.adapters.sqlite._namespaces import SPAN_BITS, Space, Span, names
from lionmem.adapters.sqlite._planner import COLUMNS, plan_search
from lionmem.adapters.sqlite._verify import missing_schema, problems
from lionmem.adapters.sqlite._writes import Write, delete_rows, put, put_many, write_transaction
from lionmem.errors import DatabaseCorruptError
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.recall import TextOf
from lionmem.protocols.stats import StoreStats

__all__ = ["CREATED_AT", "Worker", "item_row"]

_IDS_AT_ONCE = 500
"""Ids a delete names in one statement, well under SQLite's limit on parameters."""

CREATED_AT = "(CASE WHEN typeof(created_at) = 'blob' THEN -0.0 ELSE created_at END)"
"""`created_at` as a number SQL orders: -0.0 is kept as its 8 bytes (see `stored_time`),
which SQL would sort after every number, and is read here as the zero it is."""


class Worker:
    """The writer connection of one store and what is done with it, each method on
    the store's worker thread; the checkpoint thread follows its writes."""

    def __init__(self, path: Path, db: sqlite3.Connection) -> None:
        self.path = path
        self.db = db
        """The writer connection."""
        self.checkpoints: Checkpoints = Checkpoints(path)
        """The checkpoint thread the writes ask for checkpoints."""
        self._forgot = False  # whether a delete ran, so closing must merge the text index
        self.damaged: DatabaseCorruptError | None = None
        """The damage a call met, after which every write is refused."""

    @contextmanager
    def noting_damage(self) -> Generator[None, None, None]:
        """Raise the damage an SQLite error in the block shows as `DatabaseCorruptError`,
        noted so that every write is refused from now on; any other error as it is.
        For any connection of the store, on any thread."""
        try:
            yield
        except sqlite3.DatabaseError as exc:
            damaged = damage(self.path, exc)
            if damaged is None:
                raise
            self.damaged = damaged
            raise damaged from None

    def _writable(self) -> None:
        if self.damaged is not None:
            raise DatabaseCorruptError(f"refusing to write: {self.damaged}")

    def write(
        self,
        space: Space,
        writes: Sequence[Write],
        vectors: Sequence[tuple[bytes, bytes, str]] = (),
        expires: float | None = None,
    ) -> None:
        """Store `writes` in `space`, each expiring at `expires` (never, for `None`), and
        the `(vector, digest, id)` rows of a store that recalls, in one transaction, then
        ask for a checkpoint if it is due."""
        self._writable()
        with write_transaction(self.db):
            span = space.claim(self.db)
            if len(writes) == 1:
                put(self.db, span, writes[0], expires)
            else:
                put_many(self.db, span, writes, expires)
            if vectors:
                self.db.executemany(
                    "INSERT OR REPLACE INTO item_vectors (seq, vector, digest)"
                    " SELECT seq, ?, ? FROM items WHERE id = ? AND seq BETWEEN ? AND ?",
                    [(*row, span.first, span.last) for row in vectors],
                )
        self.checkpoints.wrote(len(writes), self.db)

    def search(self, space: Space, query: MemoryQuery, *, newest_first: bool = False) -> list[MemoryItem]:
        """The items of `space` matching `query`: its plan run on the writer's connection."""
        plan = plan_search(query, self._count_entries, space.span(self.db), newest_first=newest_first)
        if plan is None:
            return []
        return settled(self.db.execute(plan.statement, plan.params), plan, query.limit)

    def search_page(self, space: Space, query: MemoryQuery, after: int) -> tuple[list[MemoryItem], int | None]:
        """The first `query.limit` items of `space` after position `after` matching
        `query`, and the position of the last of them when more match after it: both
        read in one snapshot, so that the position is the returned item's."""
        span = space.span(self.db)
        window = span._replace(first=max(span.first, after + 1))
        size = query.limit
        self.db.execute("BEGIN")
        try:
            plan = plan_search(query.model_copy(update={"limit": size + 1}), self._count_entries, window)
            found = [] if plan is None else settled(self.db.execute(plan.statement, plan.params), plan, size + 1)
            if len(found) <= size:
                return found, None
            (last,) = self.db.execute(
                "SELECT seq FROM items WHERE id = ? AND seq BETWEEN ? AND ?",
                (str(found[size - 1].id), window.first, window.last),
            ).fetchone()
            return found[:size], int(last)
        finally:
            self.db.execute("COMMIT")

    def selected(self, space: Space, query: MemoryQuery) -> list[str]:
        """The ids of the rows of `space` the SQL of `query`, a query some stored item
        could match, selects, in insertion order, up to its limit (at least 0): every
        match, and any that Python's rules would drop. No item is decoded."""
        plan = plan_search(query, self._count_entries, space.span(self.db))
        # A recall asks only for a query some stored item could match (`conditions_of`).
        assert plan is not None
        rows = self.db.execute(f"SELECT id FROM ({plan.statement}) LIMIT ?", [*plan.params, max(0, query.limit)])
        return [row[0] for row in rows]

    def check_schema(self) -> None:
        """The check on open: a schema object missing (a trigger dropped by hand, say)
        is damage, so that no write leaves the indexes or vectors wrong."""
        missing = missing_schema(self.db)
        if missing:
            self.damaged = DatabaseCorruptError(f"{self.path}: {'; '.join(missing)}; run `lionmem verify`")

    def verify(self, text_of: TextOf | None) -> tuple[list[str], list[str]]:
        """The damage and the stale vectors `problems` finds in the file; damage found
        is noted, so that every write is refused from now on."""
        recorded = self.db.execute("SELECT value FROM lionmem_recall WHERE key = 'dimensions'").fetchone()
        try:
            with self.noting_damage():
                damaged, stale = problems(self.db, text_of, None if recorded is None else int(recorded[0]))
        except DatabaseCorruptError as exc:  # too broken for SQLite's own check to finish
            damaged, stale = [str(exc)], []
        if damaged:
            more = f" (and {len(damaged) - 1} more)" if len(damaged) > 1 else ""
            self.damaged = DatabaseCorruptError(f"{self.path}: {damaged[0]}{more}; run `lionmem verify`")
        return damaged, stale

    def _count_entries(self, statement: str, params: list[object]) -> int:
        (counted,) = self.db.execute(statement, params).fetchone()
        return int(counted)

    def count(self, space: Space, query: MemoryQuery) -> int:
        """How many items of `space` `query`'s predicates match, its limit left out."""
        if not (query.text or query.tags or query.filters):
            span = space.span(self.db)
            live, now = span.live()
            (counted,) = self.db.execute(
                f"SELECT count(*) FROM items WHERE seq BETWEEN ? AND ?{live}", (span.first, span.last, *now)
            ).fetchone()
            return int(counted)
        return len(self.search(space, unlimited(query)))

    def holding(self, space: Space, terms: list[str], limit: int) -> list[list[tuple[MemoryItem, int]]]:
        """For each term, the first `limit` items of `space` holding it, in insertion
        order, each with how often: one probe of the term index a term
        ([ADR-0104][adr-0104])."""
        span = space.span(self.db)
        live, now = span.live("i")
        found: list[list[tuple[MemoryItem, int]]] = []
        for term in terms:
            rows = self.db.execute(
                "SELECT t.tf, i.id, i.created_at, i.body FROM item_terms t JOIN items i ON i.seq = t.seq"
                f" WHERE t.term = ? AND t.seq BETWEEN ? AND ?{live} ORDER BY t.seq LIMIT ?",
                (term, span.first, span.last, *now, limit),
            ).fetchall()
            found.append(list(zip(decode_in_slices([row[1:] for row in rows]), [row[0] for row in rows], strict=True)))
        return found

    def count_up_to(self, space: Space, most: int) -> int:
        """How many items `space` holds, counted up to `most`."""
        span = space.span(self.db)
        live, now = span.live()
        (counted,) = self.db.execute(
            f"SELECT count(*) FROM (SELECT 1 FROM items WHERE seq BETWEEN ? AND ?{live} LIMIT ?)",
            (span.first, span.last, *now, most),
        ).fetchone()
        return int(counted)

    def page(self, space: Space, after: int, size: int) -> tuple[int, list[MemoryItem]]:
        """The next `size` items of `space` after position `after`, and the position
        they end at."""
        span = space.span(self.db)
        live, now = span.live()
        rows = self.db.execute(
            f"SELECT seq, id, created_at, body FROM items WHERE seq > ? AND seq <= ?{live} ORDER BY seq LIMIT ?",
            (max(after, span.first - 1), span.last, *now, size),
        ).fetchall()
        return (rows[-1][0] if rows else after), decode_in_slices([row[1:] for row in rows])

    def namespaces(self) -> list[str]:
        """The namespaces of the file that hold an item, by name."""
        return names(self.db)

    def stats(self, space: Space) -> StoreStats:
        """The count, span and version in one statement each, and the files' size."""
        span = space.span(self.db)
        live, now = span.live()
        # One statement, so one snapshot of the count and the span.
        items, oldest, newest = self.db.execute(
            f"SELECT count(*), min({CREATED_AT}), max({CREATED_AT}) FROM items WHERE seq BETWEEN ? AND ?{live}",
            (span.first, span.last, *now),
        ).fetchone()
        (version,) = self.db.execute("PRAGMA user_version").fetchone()
        # Not the log's index (-shm): a fixed-size map of the log shared in memory,
        # which holds no item and goes with the last connection.
        files = [self.path, log_files(self.path)[0]]
        size = sum(path.stat().st_size for path in files if path.exists())
        return StoreStats(
            items=items,
            bytes_on_disk=size,
            size_covers="the database file and its write-ahead log",
            schema_version=version,
            oldest=oldest,
            newest=newest,
        )

    def delete_ids(self, space: Space, keys: list[UUID]) -> int:
        """Delete the items of `space` with these ids in one transaction; return how many."""
        self._writable()
        with write_transaction(self.db):
            return self._deleted(self._delete_keys(space.span(self.db), keys))

    def delete_matching(self, space: Space, query: MemoryQuery, before: float | None = None) -> int:
        """Delete what `search(query)` finds in `space`, in one transaction, of the items
        created before `before` when given; return how many."""
        self._writable()
        with write_transaction(self.db):
            # Read inside the transaction, so the items deleted are those it found:
            # one replaced by another process since is found as it is now.
            if before is None:
                found = self.search(space, query)
            else:
                found = aged_matches(self.search(space, unlimited(query)), before, query.limit)
            return self._deleted(self._delete_keys(space.span(self.db), [item.id for item in found]))

    def delete_where(self, space: Space, where: str, params: list[object]) -> int:
        """Delete the items of `space` `where` selects, in one transaction; return how
        many."""
        self._writable()
        with write_transaction(self.db):
            return self._deleted(delete_rows(self.db, space.span(self.db), where, params))

    def expire(self, space: Space, keys: Sequence[str], at: float | None, *, refresh: bool = False) -> int:
        """Make the unexpired items of `space` with these ids expire `at` (never, for
        `None`), in one transaction; `refresh`: only those that have an expiry. Return
        how many there were ([ADR-0105][adr-0105-d2])."""
        self._writable()
        changed = 0
        with write_transaction(self.db):
            span = space.known(self.db)
            unexpired = "expires_at > ?" if refresh else "(expires_at IS NULL OR expires_at > ?)"
            for start in range(0, len(keys), _IDS_AT_ONCE):
                chunk = list(keys[start : start + _IDS_AT_ONCE])
                changed += self.db.execute(
                    f"UPDATE items SET expires_at = ? WHERE id IN ({', '.join('?' * len(chunk))})"
                    f" AND seq BETWEEN ? AND ? AND {unexpired}",
                    [at, *chunk, span.first, span.last, space.now],
                ).rowcount
        self.checkpoints.wrote(changed, self.db)
        return changed

    def sweep(self, space: Space) -> int:
        """Delete the items of `space` expired at the call's reading of the clock, in one
        transaction; return how many ([ADR-0105][adr-0105-d2])."""
        self._writable()
        with write_transaction(self.db):
            span = space.known(self.db)
            expired = f"seq IN (SELECT seq FROM items WHERE seq >> {SPAN_BITS} = ? AND expires_at <= ?)"
            return self._deleted(delete_rows(self.db, span, expired, [span.number, space.now]))

    def _delete_keys(self, span: Span, keys: list[UUID]) -> int:
        deleted = 0
        for start in range(0, len(keys), _IDS_AT_ONCE):
            chunk = [str(key) for key in keys[start : start + _IDS_AT_ONCE]]
            deleted += delete_rows(self.db, span, f"id IN ({', '.join('?' * len(chunk))})", chunk)
        return deleted

    def _deleted(self, deleted: int) -> int:
        """Note that closing must merge the text index, if anything was deleted."""
        self._forgot = self._forgot or deleted > 0
        return deleted

    def optimize(self) -> None:
        """Merge the text index into one segment, in one transaction."""
        self._writable()
        with write_transaction(self.db):
            self.db.execute("INSERT INTO items_text (items_text) VALUES ('optimize')")

    def close(self) -> str | None:
        """Close the writer, first merging the text index and emptying the log if
        anything was deleted, then the checkpoint thread; return why erasure is not
        proven, if what was deleted may still be in the write-ahead log."""
        if self._forgot and self.damaged is None:
            # The text index drops a deleted row's words only when its segments are
            # merged; merged into one, none of them is left (ADR-0100). The log is
            # emptied where it stands, even where its directory forbids removing it.
            self.optimize()
            # Without waiting: a reader elsewhere would hold it up for the busy
            # timeout, and leave the log as it is all the same.
            self.db.execute("PRAGMA busy_timeout = 0")
            self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        self.db.close()
        # No write is left to ask for a checkpoint; the last one empties the log.
        self.checkpoints.close()
        log = log_files(self.path)[0]
        if not self._forgot or not log.exists() or (size := log.stat().st_size) == 0:
            return None
        return (
            f"erasure of what was deleted is not proven: the write-ahead log {log} still holds "
            f"{size:,} bytes, which may hold it, since another connection has {self.path} open or "
            "its directory forbids removing the log; once no connection has it open, open and "
            "close it with lionmem again to finish the erasure (ADR-0100 D3)"
        )


def item_row(space: Space, key: str, db: sqlite3.Connection) -> tuple[str, float | bytes, str] | None:
    """The columns `decode_item` takes of the item `key` of `space`, or `None`: a read
    on any connection, `retrieve`'s on the read-only one."""
    span = space.known(db)
    live, now = span._replace(now=space.now).live()  # one row: its expiry is checked without a probe
    row: tuple[str, float | bytes, str] | None = db.execute(
        f"SELECT {COLUMNS} FROM items WHERE id = ? AND seq BETWEEN ? AND ?{live}", (key, span.first, span.last, *now)
    ).fetchone()
    return row
