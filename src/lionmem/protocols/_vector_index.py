"""An in-process index of unit vectors by item id, rows in the order items were first
stored, for exact cosine top k.

Imported only by a store given an embedder: `import lionmem` loads no numpy.
Governed by [ADR-0102][adr-0102].
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import cast
from uuid import UUID

import numpy as np

from lionmem._internal.vectors import Matrix, as_matrix, best, query_vector, unit_rows
from lionmem.protocols.recall import Embedder

__all__ = ["VectorIndex"]

_FIRST_ROWS = 64


class VectorIndex:
    """Unit vectors, one row per stored id. A replaced id keeps its row; a deleted
    one frees it, and rows are compacted once half are free, keeping their order."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._matrix: Matrix = np.zeros((_FIRST_ROWS, embedder.dimensions), dtype=np.float32)
        self._rows: dict[UUID, int] = {}
        self._ids: list[UUID | None] = []

    async def vectors(self, texts: Sequence[str]) -> Matrix:
        """The embedder's unit vectors for `texts`, checked."""
        given = await self.embedder.embed(list(texts))
        return unit_rows(as_matrix(given, len(texts), self.embedder.dimensions, "the embedder"))

    async def query_vector(self, query: str | Sequence[float]) -> Matrix:
        """`query` as one unit row: a text embedded, or a vector checked."""
        return await query_vector(self.embedder, query)

    def put(self, item_id: UUID, vector: Matrix) -> None:
        """Set the row of `item_id`, adding one at the end for a new id."""
        row = self._rows.get(item_id)
        if row is None:
            row = len(self._ids)
            if row == len(self._matrix):
                grown = np.zeros((2 * len(self._matrix), self._matrix.shape[1]), dtype=np.float32)
                grown[:row] = self._matrix
                self._matrix = grown
            self._rows[item_id] = row
            self._ids.append(item_id)
        self._matrix[row] = vector

    def remove(self, item_ids: Iterable[UUID]) -> None:
        """Free the rows of `item_ids`, items the store held, each with a row."""
        for item_id in item_ids:
            row = self._rows.pop(item_id)
            self._ids[row] = None
            self._matrix[row] = 0.0
        if len(self._rows) * 2 < len(self._ids) and len(self._ids) > _FIRST_ROWS:
            self._compact()

    def _compact(self) -> None:
        kept = [row for row, item_id in enumerate(self._ids) if item_id is not None]
        matrix = np.zeros((max(_FIRST_ROWS, 2 * len(kept)), self._matrix.shape[1]), dtype=np.float32)
        matrix[: len(kept)] = self._matrix[kept]
        self._ids = [self._ids[row] for row in kept]
        self._rows = {item_id: row for row, item_id in enumerate(self._ids) if item_id is not None}
        self._matrix = matrix

    def ranked(
        self, query: Matrix, keep: Callable[[list[UUID]], list[UUID]] | None, k: int
    ) -> list[tuple[UUID, float]]:
        """The `k` best ids by cosine similarity to `query` that `keep` keeps (all, for
        `None`), highest first, equal scores in row order.

        `keep` is asked about ids in score order, a growing prefix at a time, so a
        selective filter reads a few hundred rows, not every one.
        """
        used = len(self._ids)
        scores = self._matrix[:used] @ query[0]
        scores[[row for row, item_id in enumerate(self._ids) if item_id is None]] = -np.inf
        alive = len(self._rows)
        prefix = min(alive, k if keep is None else max(8 * k, 256))
        while True:
            # Free rows score -inf and the prefix holds no more rows than are used,
            # so every row chosen holds an id.
            rows = best(scores, prefix)
            ids = [cast(UUID, self._ids[row]) for row in rows]
            kept = ids if keep is None else keep(ids)
            if len(kept) >= k or prefix >= alive:
                score_of = {item_id: float(scores[row]) for item_id, row in zip(ids, rows, strict=True)}
                return [(item_id, score_of[item_id]) for item_id in kept[:k]]
            prefix = min(alive, prefix * 8)
