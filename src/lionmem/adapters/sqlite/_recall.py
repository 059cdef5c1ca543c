"""Semantic recall in the SQLite store: each item's unit vector as a BLOB beside its row,
and an exact top k scored with numpy over a matrix cached until the file changes.

numpy loads only when a store is opened with an embedder. The database work runs on
the store's worker thread, on the writer's connection. Governed by
[ADR-0102][adr-0102-d4].
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, Protocol, TypeVar, cast

from lionmem.adapters._codec import decode_in_slices
from lionmem.adapters._embedding import checked_settings, refuse_another_embedder
from lionmem.adapters.sqlite._writes import write_transaction
from lionmem.protocols.memory import MemoryItem, MemoryQuery, recall_query
from lionmem.protocols.recall import Embedder, Keep, Recalled, TextOf, check_k, unit_vectors
from lionmem.protocols.rules import matches

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from lionmem._internal.vectors import Matrix

__all__ = ["OnWorker", "Vectors", "recall_settings"]

P = ParamSpec("P")
T = TypeVar("T")

_Row = tuple[int, str, float | bytes, str]
"""An item's position, id, stored time and JSON body."""

Matching = Callable[[int], "Sequence[MemoryItem | str]"]
"""What a recall's tags and filters match, in insertion order, cut at the limit
given: the items, or their ids."""

_MOST_NARROWED = 2_000
"""The most matches a recall decodes to score them alone; past it, it walks."""

_BACKFILL = 500
"""Items read, embedded and written at a time when vectors are missing."""


class OnWorker(Protocol):
    """Runs a function on the store's worker thread."""

    def __call__(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> Awaitable[T]: ...


def recall_settings(embedder: Embedder | None, text_of: TextOf | None, reembed: bool) -> Vectors | None:
    """The recall of a store opened with these, or `None` without an embedder.

    Raises:
        TypeError: `embedder` is not an `Embedder`, `text_of` not callable, or
            `reembed` not a bool.
        ImportError: numpy is not installed; the message names the extra.
    """
    checked = checked_settings(embedder, text_of, reembed)
    return None if checked is None else Vectors(checked, text_of)


@dataclass
class _Cached:
    """The vectors as of a state of the file: `(data_version, total_changes)`."""

    state: tuple[int, int]
    seqs: npt.NDArray[np.int64]
    matrix: Matrix
    rows: dict[str, int]
    """Each id's row of `matrix`."""


@dataclass
class Vectors:
    """A store's embedder, what it embeds of an item, and its cached matrix."""

    embedder: Embedder
    text_of: TextOf | None
    _cached: _Cached | None = field(default=None, repr=False)

    async def embedded(self, items: Sequence[MemoryItem]) -> list[tuple[bytes, str]]:
        """Each item's unit vector as float32 bytes, with its id, for `write`.

        Raises:
            TypeError: `text_of` gave something other than a str.
            ValueError: the embedder gave vectors of another count, length, or with
                NaN or infinity.
        """
        matrix = await unit_vectors(self.embedder, self.text_of, items)
        return [(row.tobytes(), str(item.id)) for row, item in zip(matrix, items, strict=True)]

    async def adopt_all(self, run: OnWorker, db: sqlite3.Connection, reembed: bool) -> None:
        """Take this embedder for the file, and embed every item it has no vector for."""
        rows = await run(self.adopt, db, reembed)
        while rows:
            await run(self.fill, db, rows, await self.embedded(self.decoded(rows)))
            rows = await run(self.missing, db, rows[-1][0])

    async def recall(
        self,
        run: OnWorker,
        db: sqlite3.Connection,
        query: object,
        k: object,
        tags: object,
        filters: object,
        search: Callable[[MemoryQuery], Sequence[MemoryItem | str]],
    ) -> list[Recalled]:
        """`recall` as [ADR-0102][adr-0102-d3] has it, on the worker thread."""
        from lionmem._internal.vectors import query_vector

        count = check_k(k)
        asked = recall_query(tags, filters)
        vector = await query_vector(self.embedder, query)
        if not (asked.tags or asked.filters):
            found = await run(self.ranked, db, vector, None, count)
            return [Recalled(item, score) for item, score in found]

        def searched(limit: int) -> Sequence[MemoryItem | str]:
            if not asked.filters:  # tags alone: the ids, from the tag index, decoding nothing
                return _tagged_ids(db, cast("list[str]", asked.tags), limit)
            return search(asked.model_copy(update={"limit": limit}))

        found = await run(self.ranked, db, vector, lambda item: matches(item, asked), count, searched)
        return [Recalled(item, score) for item, score in found]

    # -- on the worker thread ---------------------------------------------------------

    def adopt(self, db: sqlite3.Connection, reembed: bool) -> list[_Row]:
        """Record this embedder in the file, or check that it is the one recorded, and
        return the first rows that have no vector yet (`reembed`: every row).

        Raises:
            EmbedderMismatchError: the file's vectors are another embedder's.
        """
        identity, dimensions = self.embedder.identity, self.embedder.dimensions
        recorded = dict(db.execute("SELECT key, value FROM lionmem_recall").fetchall())
        if recorded and not reembed:
            refuse_another_embedder((recorded["identity"], int(recorded["dimensions"])), self.embedder, "this file")
        if reembed or not recorded:
            with write_transaction(db):
                if reembed:
                    db.execute("DELETE FROM item_vectors")
                db.executemany(
                    "INSERT OR REPLACE INTO lionmem_recall (key, value) VALUES (?, ?)",
                    [("identity", identity), ("dimensions", str(dimensions))],
                )
        return self.missing(db, 0)

    @staticmethod
    def missing(db: sqlite3.Connection, after: int) -> list[_Row]:
        """Up to `_BACKFILL` rows after position `after` that have no vector."""
        rows: list[_Row] = db.execute(
            "SELECT i.seq, i.id, i.created_at, i.body FROM items i "
            "LEFT JOIN item_vectors v ON v.seq = i.seq WHERE v.seq IS NULL AND i.seq > ? ORDER BY i.seq LIMIT ?",
            (after, _BACKFILL),
        ).fetchall()
        return rows

    @staticmethod
    def fill(db: sqlite3.Connection, rows: list[_Row], vectors: list[tuple[bytes, str]]) -> None:
        """Write the vectors of rows read by `missing`, each only if its row has not
        changed since: another process may have replaced the item meanwhile."""
        with write_transaction(db):
            db.executemany(
                "INSERT OR REPLACE INTO item_vectors (seq, vector) SELECT seq, ? FROM items WHERE seq = ? AND body = ?",
                [(vector, seq, body) for (seq, _, _, body), (vector, _) in zip(rows, vectors, strict=True)],
            )

    @staticmethod
    def decoded(rows: list[_Row]) -> list[MemoryItem]:
        """The items of rows read by `missing`."""
        return decode_in_slices([row[1:] for row in rows])

    def ranked(
        self, db: sqlite3.Connection, query: Matrix, keep: Keep | None, k: int, matching: Matching | None = None
    ) -> list[tuple[MemoryItem, float]]:
        """The `k` items most like `query` that `keep` keeps, best first, equal scores
        in insertion order; `keep` sees a growing prefix of the ranking at a time.

        Given `matching`, the store's own search for the tags and filters, and few
        items matching, only those items' vectors are scored: the search's indexes
        name them exactly ([ADR-0102][adr-0102-d3])."""
        from lionmem._internal.vectors import best

        cached = self._current(db)
        if not len(cached.seqs):
            return []
        if matching is not None:
            narrowed = self._narrowed(db, cached, query, matching, k)
            if narrowed is not None:
                return narrowed
        scores = cached.matrix @ query[0]
        prefix = min(len(scores), k if keep is None else max(8 * k, 256))
        found: list[tuple[MemoryItem, float]] = []
        asked = 0
        while True:
            # A longer prefix begins with the shorter one: only its new rows are read.
            rows = best(scores, prefix)[asked:]
            seqs = [int(cached.seqs[row]) for row in rows]
            items = _items(db, seqs)  # an item deleted since the matrix was read is gone
            found += [
                (items[seq], float(scores[row]))
                for seq, row in zip(seqs, rows, strict=True)
                if seq in items and (keep is None or keep(items[seq]))
            ]
            if len(found) >= k or prefix >= len(scores):
                return found[:k]
            asked, prefix = prefix, min(len(scores), prefix * 8)

    def _narrowed(
        self, db: sqlite3.Connection, cached: _Cached, query: Matrix, matching: Matching, k: int
    ) -> list[tuple[MemoryItem, float]] | None:
        """The top `k` among the items `matching` finds (as items, or as ids to read
        afterwards), scoring only their vectors; `None` when more than a twentieth
        of the items match, or more than `_MOST_NARROWED`, for which the walk of the
        whole ranking reads less."""
        from lionmem._internal.vectors import best

        most = min(len(cached.seqs) // 20, _MOST_NARROWED) + k
        found = matching(most + 1)  # in insertion order
        if len(found) > most:
            return None
        known = {str(f.id): f for f in found if isinstance(f, MemoryItem)}
        ids = [f if isinstance(f, str) else str(f.id) for f in found]
        held = [cached.rows[item_id] for item_id in ids if item_id in cached.rows]
        scores = cached.matrix[held] @ query[0]
        chosen = [(held[i], float(scores[i])) for i in best(scores, k)]
        if not known:  # ids alone: read the chosen few
            read = _items(db, [int(cached.seqs[row]) for row, _ in chosen])
            return [(read[int(cached.seqs[row])], score) for row, score in chosen if int(cached.seqs[row]) in read]
        by_row = {cached.rows[item_id]: item for item_id, item in known.items() if item_id in cached.rows}
        return [(by_row[row], score) for row, score in chosen]

    def _current(self, db: sqlite3.Connection) -> _Cached:
        """The cached matrix, read again if this or another connection wrote since."""
        import numpy as np

        (version,) = db.execute("PRAGMA data_version").fetchone()
        state = (int(version), db.total_changes)
        if self._cached is None or self._cached.state != state:
            rows: list[tuple[int, str, bytes]] = db.execute(
                "SELECT v.seq, i.id, v.vector FROM item_vectors v JOIN items i ON i.seq = v.seq ORDER BY v.seq"
            ).fetchall()
            dimensions = self.embedder.dimensions
            matrix = np.frombuffer(b"".join(vector for _, _, vector in rows), dtype=np.float32)
            self._cached = _Cached(
                state,
                np.fromiter((seq for seq, _, _ in rows), dtype=np.int64, count=len(rows)),
                matrix.reshape(len(rows), dimensions),
                {item_id: row for row, (_, item_id, _) in enumerate(rows)},
            )
        return self._cached


def _items(db: sqlite3.Connection, seqs: list[int]) -> dict[int, MemoryItem]:
    """The items at `seqs` that still exist, by position."""
    found: dict[int, MemoryItem] = {}
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows: list[Any] = db.execute(
            f"SELECT seq, id, created_at, body FROM items WHERE seq IN ({marks})", chunk
        ).fetchall()
        found.update(zip((row[0] for row in rows), decode_in_slices([row[1:] for row in rows]), strict=True))
    return found


def _tagged_ids(db: sqlite3.Connection, tags: list[str], limit: int) -> list[str]:
    """The ids of the first `limit` items holding one of `tags`, in insertion order."""
    wanted = sorted(set(tags))
    marks = ", ".join("?" * len(wanted))
    rows = db.execute(
        f"SELECT i.id FROM items i WHERE i.seq IN (SELECT seq FROM item_tags WHERE tag IN ({marks})) "
        "ORDER BY i.seq LIMIT ?",
        [*wanted, limit],
    ).fetchall()
    return [row[0] for row in rows]
