"""Semantic recall in the SQLite store: each item's unit vector as a BLOB beside its row,
and an exact top k scored with numpy over a matrix cached until the file changes.

numpy loads only when a store is opened with an embedder. The database work runs on
the store's worker thread, on the writer's connection, both reached through the
store's `Connections`. Governed by
[ADR-0102][adr-0102-d4].

Seam for tests: `_recall`, whose `decode_in_slices` a test counts the rows of, and
whose `_share` a test makes misjudge a filter.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar, cast

from lionmem.adapters._codec import decode_in_slices
from lionmem.adapters._embedding import checked_settings, refuse_another_embedder
from lionmem.adapters._settling import settle_unstorable
from lionmem.adapters.sqlite._conditions import Conditions, conditions_of
from lionmem.adapters.sqlite._writes import write_transaction
from lionmem.protocols.memory import MemoryItem
from lionmem.protocols.recall import (
    Embedder,
    Keep,
    Recalled,
    TextOf,
    check_k,
    check_min_score,
    embed_items,
    recall_query,
    recalled,
    text_digest,
    text_to_embed,
)
from lionmem.protocols.rules import matches

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from lionmem._internal.vectors import Matrix, Twins
    from lionmem.adapters.sqlite._connections import Connections
    from lionmem.adapters.sqlite._namespaces import Space, Span

__all__ = ["Vectors", "recall_settings"]

P = ParamSpec("P")
T = TypeVar("T")

_Row = tuple[int, str, float | bytes, str]
"""An item's position, id, stored time and JSON body."""


@dataclass(frozen=True)
class Matching:
    """What a recall's tags and filters match."""

    candidates: Callable[[int], list[str]]
    """The ids of the items SQL's part of them selects, in insertion order, cut at the
    limit given: every match, and any that Python's rules drop (`keep`), read without
    decoding an item."""
    where: Conditions
    """They, as a condition on rows of `items` chosen some other way."""
    keep: Keep | None
    """Whether an item meets them, for rows SQL could not decide (`None`: it could)."""


_MOST_NARROWED = 2_000
"""The most matches a recall decodes to score them alone; past it, it walks."""

_SAMPLE = 128
"""The rows a recall reads to judge how many its conditions select: at a twentieth,
about six; reading 500 took a millisecond, a quarter of a recall of 100,000 items."""

_BACKFILL = 500
"""Items read, embedded and written at a time when vectors are missing."""


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
    """The vectors of a namespace as of a state of the file: `(data_version,
    total_changes, first position of the namespace)`."""

    state: tuple[int, int, int]
    seqs: npt.NDArray[np.int64]
    matrix: Matrix
    rows: dict[str, int]
    """Each id's row of `matrix`."""
    digests: list[bytes]
    """The digest of the text each row was made from."""
    twins: Twins | None
    """The rows of equal texts, which score alike."""
    missing: bool
    """Whether some item had no vector when these were read."""
    sample: list[int]
    """Up to `_SAMPLE` positions drawn at random, in order, whose rows tell how many a
    recall's conditions select: spread evenly, they can fall in step with the data (every
    second row for a flag on every other note)."""


_Found = list[tuple[MemoryItem, float, bytes]]
"""Items a recall ranked, best first: each with its score and its vector's digest."""


@dataclass
class Vectors:
    """A store's embedder, what it embeds of an item, and its cached matrix."""

    embedder: Embedder
    text_of: TextOf | None
    _cached: _Cached | None = field(default=None, repr=False)

    async def embedded(self, items: Sequence[MemoryItem]) -> list[tuple[bytes, bytes, str]]:
        """Each item's unit vector as float32 bytes, with its text's digest and its id,
        for `write`.

        Raises:
            TypeError: `text_of` gave something other than a str.
            ValueError: the embedder gave vectors of another count, length, or with
                NaN or infinity.
        """
        vectors, digests = await embed_items(self.embedder, self.text_of, items)
        return [
            (row.tobytes(), digest, str(item.id)) for row, digest, item in zip(vectors, digests, items, strict=True)
        ]

    async def adopt_all(self, io: Connections, reembed: bool) -> None:
        """Take this embedder for the file, and embed every item it has no vector for."""
        await self.fill_all(io, await io.on_writer(self.adopt, io.worker.db, reembed))

    async def fill_all(self, io: Connections, rows: list[_Row]) -> None:
        """Embed the items of `rows`, read by `missing`, and every one after them that
        has no vector."""
        run, db = io.on_writer, io.worker.db
        while rows:
            await run(self.fill, db, rows, await self.embedded(self.decoded(rows)))
            rows = await run(self.missing, db, rows[-1][0])

    async def recall(
        self,
        io: Connections,
        space: Space,
        query: object,
        k: object,
        tags: object,
        filters: object,
        min_score: object,
    ) -> list[Recalled]:
        """`recall` as [ADR-0102][adr-0102-d3] has it, its database work on the worker
        thread. Items that another writer left without a vector are embedded first; a
        vector found made from another text than its item's is made again, and the
        ranking redone."""
        from lionmem._internal.vectors import query_vector

        run, db, selected = io.on_writer, io.worker.db, io.worker.selected
        count = check_k(k)
        asked = recall_query(tags, filters)
        floor = check_min_score(min_score)
        vector = await query_vector(self.embedder, query)
        matching: Matching | None = None
        if asked.tags or asked.filters:
            # A tag or value no stored string can hold matches nothing, and SQLite
            # could not even take it as a parameter.
            settled = settle_unstorable(asked, allow_nul=True)
            if settled is None:
                return []
            asked, where = settled, conditions_of(settled)

            def candidates(limit: int) -> list[str]:
                if not asked.filters:  # tags alone: from the tag index
                    return _tagged_ids(db, space.span(db), cast("list[str]", asked.tags), limit)
                return selected(space, asked.model_copy(update={"limit": limit}))

            def keep(item: MemoryItem) -> bool:
                return matches(item, asked)

            matching = Matching(candidates, where, keep if where.recheck or where.any_tag else None)
        while True:
            if await run(self.unembedded, db, space):
                await self.fill_all(io, await run(self.missing, db, 0))
            found = await run(self.ranked, db, space, vector, count, matching)
            stale = [str(item.id) for item, _, made in found if text_digest(text_to_embed(item, self.text_of)) != made]
            if not stale:
                return recalled(((item, score) for item, score, _ in found), floor)
            rows = await run(_rows_of, db, space, stale)
            await run(self.fill, db, rows, await self.embedded(self.decoded(rows)))

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
        """Up to `_BACKFILL` rows after position `after` that have no vector, or one
        whose text no one can tell (written before vectors kept a digest)."""
        rows: list[_Row] = db.execute(
            "SELECT i.seq, i.id, i.created_at, i.body FROM items i LEFT JOIN item_vectors v ON v.seq = i.seq "
            "WHERE (v.seq IS NULL OR v.digest IS NULL) AND i.seq > ? ORDER BY i.seq LIMIT ?",
            (after, _BACKFILL),
        ).fetchall()
        return rows

    @staticmethod
    def fill(db: sqlite3.Connection, rows: list[_Row], vectors: list[tuple[bytes, bytes, str]]) -> None:
        """Write the vectors of rows read by `missing`, each only if its row has not
        changed since: another process may have replaced the item meanwhile."""
        with write_transaction(db):
            db.executemany(
                "INSERT OR REPLACE INTO item_vectors (seq, vector, digest)"
                " SELECT seq, ?, ? FROM items WHERE seq = ? AND body = ?",
                [
                    (vector, digest, seq, body)
                    for (seq, _, _, body), (vector, digest, _) in zip(rows, vectors, strict=True)
                ],
            )

    def unembedded(self, db: sqlite3.Connection, space: Space) -> bool:
        """Whether some item of `space` has no vector, as of the file now."""
        return self._current(db, space.span(db)).missing

    @staticmethod
    def decoded(rows: list[_Row]) -> list[MemoryItem]:
        """The items of rows read by `missing`."""
        return decode_in_slices([row[1:] for row in rows])

    def ranked(
        self, db: sqlite3.Connection, space: Space, query: Matrix, k: int, matching: Matching | None = None
    ) -> _Found:
        """The `k` items of `space` most like `query` that `matching` matches (all, for
        `None`), best first, equal scores in insertion order.

        When few items match, only their vectors are scored: the store's own search
        names them exactly ([ADR-0102][adr-0102-d3]). Otherwise the ranking is read
        best first, a growing prefix at a time, keeping the rows the conditions select
        in SQL (and Python's rules, where SQL cannot decide), so that only those are
        decoded."""
        from lionmem._internal.vectors import best

        span = space.span(db)
        cached = self._current(db, span)
        if not len(cached.seqs):
            return []
        prefix = k
        if matching is not None:
            share = _share(db, cached.sample, matching.where, span)
            if share * len(cached.seqs) <= _most(len(cached.seqs), k):
                narrowed = self._narrowed(db, cached, query, matching, k, span)
                if narrowed is not None:
                    return narrowed
            # Enough rows that the share the sample saw likely holds k matches.
            prefix = max(2 * k, math.ceil(1.5 * k / share)) if share else max(8 * k, 256)
        scores = cached.matrix @ query[0]
        if cached.twins is not None:
            scores = cached.twins.tie(scores)
        prefix = min(len(scores), prefix)
        where, keep = (None, None) if matching is None else (matching.where, matching.keep)
        found: _Found = []
        asked = 0
        while True:
            # A longer prefix begins with the shorter one: only its new rows are read.
            rows = best(scores, prefix)[asked:]
            if where is not None:  # the unexpired rows the conditions select, decoding none
                chosen = _selected(db, [int(cached.seqs[row]) for row in rows], where, span)
                rows = [row for row in rows if int(cached.seqs[row]) in chosen]
                if keep is None:  # every row selected matches: read only those needed
                    rows = rows[: k - len(found)]
            seqs = [int(cached.seqs[row]) for row in rows]
            items = _items(db, seqs, span)  # an item deleted since the matrix was read, or expired, is gone
            found += [
                (items[seq], float(scores[row]), cached.digests[row])
                for seq, row in zip(seqs, rows, strict=True)
                if seq in items and (keep is None or keep(items[seq]))
            ]
            if len(found) >= k or prefix >= len(scores):
                return found[:k]
            asked, prefix = prefix, min(len(scores), prefix * 8)

    def _narrowed(
        self, db: sqlite3.Connection, cached: _Cached, query: Matrix, matching: Matching, k: int, span: Span
    ) -> _Found | None:
        """The top `k` among the items `matching` selects, scoring only their vectors,
        then reading them best first until `k` meet Python's rules too; `None` when
        more than a twentieth of the items match, or more than `_MOST_NARROWED`, for
        which the walk of the whole ranking reads less. No candidate is decoded that
        the top `k` does not need: decoding a filter's 1,000 matches before scoring
        them took 5 ms of a 7.5 ms recall, seven times an unfiltered one."""
        from lionmem._internal.vectors import best, digest_keys, twins_of

        most = _most(len(cached.seqs), k)
        ids = matching.candidates(most + 1)  # in insertion order
        if len(ids) > most:
            return None
        held = [cached.rows[item_id] for item_id in ids if item_id in cached.rows]
        scores = cached.matrix[held] @ query[0]
        if cached.twins is not None:
            twins = twins_of(digest_keys([cached.digests[row] for row in held]))
            scores = scores if twins is None else twins.tie(scores)
        order = best(scores, len(held))
        step = k if matching.keep is None else max(4 * k, 64)
        found: _Found = []
        for start in range(0, len(order), step):
            chosen = order[start : start + step]
            read = _items(db, [int(cached.seqs[held[n]]) for n in chosen], span)
            found += [
                (item, float(scores[n]), cached.digests[held[n]])
                for n in chosen
                if (item := read.get(int(cached.seqs[held[n]]))) is not None
                and (matching.keep is None or matching.keep(item))
            ]
            if len(found) >= k:
                break
        return found[:k]

    def _current(self, db: sqlite3.Connection, span: Span) -> _Cached:
        """The cached matrix of `span`, read again if this or another connection wrote
        since."""
        import numpy as np

        from lionmem._internal.vectors import digest_keys, twins_of

        (version,) = db.execute("PRAGMA data_version").fetchone()
        state = (int(version), db.total_changes, span.first)
        if self._cached is None or self._cached.state != state:
            read: list[tuple[int, str, bytes | None, bytes | None]] = db.execute(
                "SELECT i.seq, i.id, v.vector, v.digest FROM items i LEFT JOIN item_vectors v ON v.seq = i.seq"
                " WHERE i.seq BETWEEN ? AND ? ORDER BY i.seq",
                (span.first, span.last),
            ).fetchall()
            rows = [(seq, item_id, vector, digest) for seq, item_id, vector, digest in read if vector and digest]
            dimensions = self.embedder.dimensions
            matrix = np.frombuffer(b"".join(row[2] for row in rows), dtype=np.float32)
            digests = [row[3] for row in rows]
            seqs = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            drawn = np.random.default_rng(0).choice(seqs, size=min(_SAMPLE, len(seqs)), replace=False)
            self._cached = _Cached(
                state,
                seqs,
                matrix.reshape(len(rows), dimensions),
                {row[1]: n for n, row in enumerate(rows)},
                digests,
                twins_of(digest_keys(digests)),
                len(rows) < len(read),
                sorted(int(seq) for seq in drawn),
            )
        return self._cached


def _most(count: int, k: int) -> int:
    """The most matches of a recall's conditions, among `count` items, that it scores
    alone rather than walking the whole ranking."""
    return min(count // 20, _MOST_NARROWED) + k


def _share(db: sqlite3.Connection, sample: list[int], where: Conditions, span: Span) -> float:
    """The share of the rows at `sample` that `where` selects: an estimate of the
    share of the file, since asking SQL for the first 2,000 matches of a filter that
    keeps the newest twentieth of 100,000 rows read 95,000 of them, and doubled the
    recall's time."""
    return len(_selected(db, sample, where, span)) / len(sample)


def _rows_of(db: sqlite3.Connection, space: Space, ids: list[str]) -> list[_Row]:
    """The rows of the items of `space` with `ids` that still exist, as `missing` reads
    them."""
    span = space.span(db)
    marks = ", ".join("?" * len(ids))
    rows: list[_Row] = db.execute(
        f"SELECT seq, id, created_at, body FROM items WHERE id IN ({marks}) AND seq BETWEEN ? AND ? ORDER BY seq",
        [*ids, span.first, span.last],
    ).fetchall()
    return rows


def _items(db: sqlite3.Connection, seqs: list[int], span: Span) -> dict[int, MemoryItem]:
    """The items at `seqs` that still exist, unexpired as `span` reads, by position."""
    live, now = span.live()
    found: dict[int, MemoryItem] = {}
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows: list[Any] = db.execute(
            f"SELECT seq, id, created_at, body FROM items WHERE seq IN ({marks}){live}", [*chunk, *now]
        ).fetchall()
        found.update(zip((row[0] for row in rows), decode_in_slices([row[1:] for row in rows]), strict=True))
    return found


def _selected(db: sqlite3.Connection, seqs: list[int], where: Conditions, span: Span) -> set[int]:
    """Those of `seqs` whose rows `where` selects, unexpired as `span` reads: each an
    item the ranking may take, so that it cuts at `k` without passing over one."""
    live, now = span.live()
    chosen: set[int] = set()
    for start in range(0, len(seqs), 500):
        chunk = seqs[start : start + 500]
        marks = ", ".join("?" * len(chunk))
        rows = db.execute(
            f"SELECT seq FROM items WHERE seq IN ({marks}){where.sql}{live}", [*chunk, *where.params, *now]
        )
        chosen.update(row[0] for row in rows)
    return chosen


def _tagged_ids(db: sqlite3.Connection, span: Span, tags: list[str], limit: int) -> list[str]:
    """The ids of the first `limit` items of `span` holding one of `tags`, in insertion
    order."""
    wanted = sorted(set(tags))
    marks = ", ".join("?" * len(wanted))
    live, now = span.live("i")
    rows = db.execute(
        f"SELECT i.id FROM items i WHERE i.seq IN (SELECT seq FROM item_tags WHERE tag IN ({marks})"
        f" AND seq BETWEEN ? AND ?){live} ORDER BY i.seq LIMIT ?",
        [*wanted, span.first, span.last, *now, limit],
    ).fetchall()
    return [row[0] for row in rows]
