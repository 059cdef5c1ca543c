"""An in-process index of unit vectors by item id, rows in the order items were first
stored, for exact cosine top k, and of the tags each item was stored with, so that a
selective tag scores only its items.

Imported only by a store given an embedder: `import lionmem` loads no numpy.
Governed by [ADR-0102][adr-0102].

Seam for tests: `_vector_index`, whose `_SELECTIVE` a test sets to force each way of
applying tags, `_tagged`, read to show that no tag outlives its last item, and
`_free`, read to show that the rows were compacted.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from itertools import islice
from typing import TYPE_CHECKING, cast
from uuid import UUID

import numpy as np
import numpy.typing as npt

from lionmem._internal.vectors import Matrix, Twins, best, digest_keys, query_vector, twins_of
from lionmem.protocols.hybrid import term_counts
from lionmem.protocols.recall import Embedder

if TYPE_CHECKING:
    from lionmem.protocols._expiries import Expired
    from lionmem.protocols.memory import MemoryItem

__all__ = ["VectorIndex"]

_FIRST_ROWS = 64

# A recall by tags scores only the tagged items when they are at most one in this many.
# Past that, walking the ranking from the top finds k of them sooner.
_SELECTIVE = 20


class VectorIndex:
    """Unit vectors, one row per stored id. A replaced id keeps its row; a deleted
    one frees it, and rows are compacted once half are free, keeping their order.

    An item's tags are read when it is stored: a recall by tags sees the tags of an
    item's last `store`, as its vector is of that store's text. Each row keeps the
    digest of that text, so that rows of equal texts tie exactly (`Twins`).
    """

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._matrix: Matrix = np.zeros((_FIRST_ROWS, embedder.dimensions), dtype=np.float32)
        self._rows: dict[UUID, int] = {}
        self._items: list[MemoryItem | None] = []  # the object stored at each row
        self._free: list[int] = []  # rows freed since the last compaction
        self._tags: dict[UUID, frozenset[str]] = {}  # the tags each item was stored with
        self._tagged: dict[str, set[UUID]] = {}  # the ids stored with each tag
        self._terms: dict[UUID, dict[str, int]] = {}  # each item's terms, and how often it holds each
        self._holders: dict[str, set[UUID]] = {}  # the ids that hold each term
        self._keys = np.zeros(_FIRST_ROWS, dtype=np.uint64)  # each row's text digest
        self._texts: dict[int, int] = {}  # how many live rows hold each digest
        self._repeated = 0  # how many digests more than one live row holds
        self._twins: Twins | None = None
        self._twins_known = True  # whether `_twins` holds for the rows as they are

    async def query_vector(self, query: str | Sequence[float]) -> Matrix:
        """`query` as one unit row: a text embedded, or a vector checked."""
        return await query_vector(self.embedder, query)

    def put(self, item: MemoryItem, vector: Matrix, digest: bytes) -> None:
        """Set the row of `item`'s id, adding one at the end for a new id; `digest` is
        that of the text `vector` was made from."""
        row = self._rows.get(item.id)
        if row is None:
            row = len(self._items)
            if row == len(self._matrix):
                grown = np.zeros((2 * len(self._matrix), self._matrix.shape[1]), dtype=np.float32)
                grown[:row] = self._matrix
                self._matrix = grown
                self._keys = np.concatenate((self._keys, np.zeros(row, dtype=np.uint64)))
            self._rows[item.id] = row
            self._items.append(item)
        else:
            self._untag(item.id)
            self._count(int(self._keys[row]), -1)
        self._items[row] = item
        self._matrix[row] = vector
        self._keys[row] = key = digest_keys([digest])[0]
        self._count(int(key), 1)
        tags = self._tags[item.id] = frozenset(item.tags)
        for tag in tags:
            self._tagged.setdefault(tag, set()).add(item.id)
        terms = self._terms[item.id] = term_counts(str(item.content))
        for term in terms:
            self._holders.setdefault(term, set()).add(item.id)

    def remove(self, item_ids: Iterable[UUID]) -> None:
        """Free the rows of `item_ids`, items the store held, each with a row."""
        for item_id in item_ids:
            row = self._rows.pop(item_id)
            self._untag(item_id)
            self._count(int(self._keys[row]), -1)
            self._items[row] = None
            self._matrix[row] = 0.0
            self._keys[row] = row  # no text: a key of its own, scoring -inf
            self._free.append(row)
        if len(self._rows) * 2 < len(self._items) and len(self._items) > _FIRST_ROWS:
            self._compact()

    def _count(self, key: int, change: int) -> None:
        """Count one live row more or less for the digest `key`."""
        before = self._texts.get(key, 0)
        after = before + change
        if after:
            self._texts[key] = after
        else:
            del self._texts[key]
        if max(before, after) > 1:
            self._twins_known = False
            self._repeated += (after > 1) - (before > 1)

    def _tied(self, scores: npt.NDArray[np.float32], rows: list[int] | None = None) -> npt.NDArray[np.float32]:
        """`scores` of every row (or of `rows`), rows of equal texts given the highest."""
        if not self._repeated:
            return scores
        if rows is not None:
            twins = twins_of(self._keys[rows])
            return scores if twins is None else twins.tie(scores)
        if not self._twins_known:
            self._twins, self._twins_known = twins_of(self._keys[: len(self._items)]), True
        return scores if self._twins is None else self._twins.tie(scores)

    def _untag(self, item_id: UUID) -> None:
        """Forget the tags and terms `item_id` was stored with."""
        for tag in self._tags.pop(item_id):
            ids = self._tagged[tag]
            ids.discard(item_id)
            if not ids:
                del self._tagged[tag]
        for term in self._terms.pop(item_id):
            ids = self._holders[term]
            ids.discard(item_id)
            if not ids:
                del self._holders[term]

    def holding(self, term: str, limit: int, expired: Expired | None = None) -> list[tuple[MemoryItem, int]]:
        """The items that hold `term` among the terms they were stored with, each with
        how often: all of them in insertion order when at most `limit` do, or else
        `limit` of them ([ADR-0104][adr-0104]); none of the `expired` ones."""
        ids = self._holders.get(term, set())
        if expired:
            ids = {item_id for item_id in ids if item_id.int not in expired}
        chosen = islice(ids, limit) if len(ids) > limit else ids
        found: list[tuple[MemoryItem, int]] = []
        for row in sorted(self._rows[item_id] for item_id in chosen):
            item = cast("MemoryItem", self._items[row])
            found.append((item, self._terms[item.id][term]))
        return found

    def _compact(self) -> None:
        kept = [row for row, item in enumerate(self._items) if item is not None]
        matrix = np.zeros((max(_FIRST_ROWS, 2 * len(kept)), self._matrix.shape[1]), dtype=np.float32)
        matrix[: len(kept)] = self._matrix[kept]
        keys = np.zeros(len(matrix), dtype=np.uint64)
        keys[: len(kept)] = self._keys[kept]
        self._keys, self._twins_known = keys, False
        self._items = [self._items[row] for row in kept]
        self._rows = {cast("MemoryItem", item).id: row for row, item in enumerate(self._items)}
        self._matrix = matrix
        self._free = []

    def ranked(
        self,
        query: Matrix,
        k: int,
        *,
        tags: frozenset[str] | None = None,
        keep: Callable[[list[MemoryItem]], list[MemoryItem]] | None = None,
    ) -> list[tuple[MemoryItem, float]]:
        """The `k` items most like `query` by cosine similarity, among those stored
        with any of `tags` and that `keep` keeps (all, for `None`), highest first,
        equal scores in row order; rows of equal texts score alike.

        When few items hold the tags, only they are scored. Otherwise `keep` is asked
        about items in score order, a growing prefix at a time, so a selective filter
        reads a few hundred rows, not every one.
        """
        if tags:
            ids = set[UUID]().union(*(self._tagged.get(tag, ()) for tag in tags))
            if len(ids) * _SELECTIVE <= len(self._rows):
                return self._ranked_among(query, ids, keep, k)
            keep = self._held(tags, keep)
        scores = self._matrix[: len(self._items)] @ query[0]
        scores[self._free] = -np.inf
        scores = self._tied(scores)
        alive = len(self._rows)
        prefix = min(alive, k if keep is None else max(8 * k, 256))
        kept: list[tuple[MemoryItem, float]] = []
        asked = 0
        while True:
            # Free rows score -inf and the prefix holds no more rows than are used,
            # so every row chosen holds an item. A longer prefix begins with the
            # shorter one, in the same order, so only its new rows are asked about.
            rows = best(scores, prefix)[asked:]
            items = [cast("MemoryItem", self._items[row]) for row in rows]
            chosen = {id(item) for item in (items if keep is None else keep(items))}
            kept += [(item, float(scores[row])) for item, row in zip(items, rows, strict=True) if id(item) in chosen]
            if len(kept) >= k or prefix >= alive:
                return kept[:k]
            asked, prefix = prefix, min(alive, prefix * 8)

    def _ranked_among(
        self, query: Matrix, ids: set[UUID], keep: Callable[[list[MemoryItem]], list[MemoryItem]] | None, k: int
    ) -> list[tuple[MemoryItem, float]]:
        """The top `k` of the items `ids` names that `keep` keeps, scoring only them."""
        rows = sorted(self._rows[item_id] for item_id in ids)
        items = [cast("MemoryItem", self._items[row]) for row in rows]
        if keep is not None:
            items = keep(items)
            rows = [self._rows[item.id] for item in items]
        scores = self._tied(self._matrix[rows] @ query[0], rows)
        return [(items[n], float(scores[n])) for n in best(scores, k)]

    def _held(
        self, tags: frozenset[str], keep: Callable[[list[MemoryItem]], list[MemoryItem]] | None
    ) -> Callable[[list[MemoryItem]], list[MemoryItem]]:
        """`keep`, after the rule that an item was stored with one of `tags`."""

        def held(items: list[MemoryItem]) -> list[MemoryItem]:
            tagged = [item for item in items if not tags.isdisjoint(self._tags[item.id])]
            return tagged if keep is None else keep(tagged)

        return held
