"""Vectors as numpy arrays: checking what an embedder gave, and the exact top k.

Imported only by a store that was given an embedder: `import lionmem` loads no numpy.
Governed by [ADR-0102][adr-0102].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, cast

import numpy as np
import numpy.typing as npt

from lionmem._internal.arguments import kind_of

__all__ = ["Matrix", "Twins", "as_matrix", "best", "digest_keys", "query_vector", "twins_of", "unit_rows"]

Matrix = npt.NDArray[np.float32]
"""Vectors as the rows of a float32 matrix."""


def as_matrix(vectors: object, count: int, dimensions: int, source: str) -> Matrix:
    """`vectors` as a `count` x `dimensions` matrix of finite numbers.

    Raises:
        TypeError: `vectors` is not a sequence of vectors of numbers (a bool or a
            string is not a number).
        ValueError: the count, a length or a value (NaN, infinity) is wrong;
            `source` names who gave them.
    """
    if isinstance(vectors, str | bytes) or not isinstance(vectors, Sequence | np.ndarray):
        raise TypeError(f"{source} must give a sequence of vectors, got {kind_of(vectors)}")
    if count == 0 and len(cast("Sequence[object]", vectors)) == 0:
        return np.zeros((0, dimensions), dtype=np.float32)  # an empty batch
    try:
        matrix: npt.NDArray[Any] = np.asarray(cast(Any, vectors))
    except ValueError:
        raise ValueError(f"{source} gave vectors of different lengths; each must have {dimensions}") from None
    if matrix.size and matrix.dtype.kind not in "iuf":
        raise TypeError(f"{source} gave {matrix.dtype.name} values in its vectors, not numbers")
    if matrix.ndim != 2 or matrix.shape[0] != count:
        given = matrix.shape[0] if matrix.ndim else 0
        if matrix.ndim == 2 or given != count:
            raise ValueError(f"{source} gave {given} vectors for {count} texts")
        raise ValueError(f"{source} gave vectors that are not each a sequence of {dimensions} numbers")
    if matrix.shape[1] != dimensions:
        raise ValueError(f"{source} gave vectors of {matrix.shape[1]} dimensions, not {dimensions}")
    with np.errstate(over="ignore"):  # beyond float32 becomes infinity, refused below
        as_floats = matrix.astype(np.float32)
    if not np.isfinite(as_floats).all():
        raise ValueError(f"{source} gave a vector with NaN or infinity in it, or beyond float32")
    return as_floats


def unit_rows(matrix: Matrix) -> Matrix:
    """Each row scaled to length 1, so that a dot product is the cosine similarity;
    a zero row stays zero and so scores 0 against everything."""
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit: Matrix = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    return unit


def best(scores: npt.NDArray[np.float32], k: int) -> list[int]:
    """The indices of the `k` highest scores, highest first; equal scores keep the
    order of their indices. Selects before it sorts, so the cost is of `k`, not of
    every score."""
    if k <= 0:
        return []
    if k >= len(scores):
        chosen = np.arange(len(scores))
    else:
        # Every index scoring at least the k-th best, so that ties at the edge are all
        # there to be ordered by index.
        edge = np.partition(scores, len(scores) - k)[len(scores) - k]
        chosen = np.flatnonzero(scores >= edge)
    order = np.lexsort((chosen, -scores[chosen]))
    return [int(i) for i in chosen[order][:k]]


def digest_keys(digests: Sequence[bytes]) -> npt.NDArray[np.uint64]:
    """Text digests, 8 bytes each, as one integer each, to group rows of equal texts."""
    return np.frombuffer(b"".join(digests), dtype=np.uint64).copy()


class Twins:
    """The rows that hold the same text as another row, grouped: every row of a group
    scores the highest score of its group, so that equal texts tie exactly whatever
    rows they sit in ([ADR-0102][adr-0102-d3]). A matrix product rounds a row's dot
    product differently by its place in the matrix, by a unit in the last place."""

    __slots__ = ("rows", "sizes", "starts")

    def __init__(self, rows: npt.NDArray[np.intp], starts: npt.NDArray[np.intp]) -> None:
        self.rows = rows
        """The twinned rows, group by group."""
        self.starts = starts
        """Where each group begins in `rows`."""
        self.sizes = np.diff(np.append(starts, len(rows)))

    def tie(self, scores: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """`scores`, a score for each row, with every group's rows given its highest."""
        highest = np.maximum.reduceat(scores[self.rows], self.starts)
        scores[self.rows] = np.repeat(highest, self.sizes)
        return scores


def twins_of(keys: npt.NDArray[np.uint64]) -> Twins | None:
    """The groups of rows whose `keys` (digests) are equal, or `None` when every key is
    unique."""
    if len(keys) < 2:
        return None
    _, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    twinned = np.flatnonzero(counts[inverse] > 1)
    if not len(twinned):
        return None
    rows = twinned[np.argsort(inverse[twinned], kind="stable")]
    groups = inverse[rows]
    starts = np.flatnonzero(np.concatenate(([True], groups[1:] != groups[:-1])))
    return Twins(rows, starts)


async def query_vector(embedder: EmbedderLike, query: object) -> Matrix:
    """`query` as one unit row: a text embedded by `embedder`, or a vector checked.

    Raises:
        TypeError: `query` is neither a str nor a sequence of numbers.
        ValueError: a vector of the wrong length, or with NaN or infinity.
    """
    if isinstance(query, str):
        given: object = await embedder.embed([query])
        return unit_rows(as_matrix(given, 1, embedder.dimensions, "the embedder"))
    if isinstance(query, bytes) or not isinstance(query, Sequence | np.ndarray):
        raise TypeError(f"query must be a str or a vector of numbers, got {type(query).__name__}")
    one: list[object] = [query]
    return unit_rows(as_matrix(one, 1, embedder.dimensions, "the query vector"))


class EmbedderLike(Protocol):
    """What `query_vector` uses of an embedder."""

    @property
    def dimensions(self) -> int: ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...
