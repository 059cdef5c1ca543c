"""Vectors as numpy arrays (ADR-0102): what an embedder gave, checked and named, and
the exact top k with ties in index order."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lionmem._internal.vectors import as_matrix, best, unit_rows


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        ("vectors", TypeError, "the model must give a sequence of vectors, got a str"),
        (5, TypeError, "the model must give a sequence of vectors, got an int"),
        ([[1.0, 2.0], [1.0]], ValueError, "the model gave vectors of different lengths; each must have 2"),
        ([["a", "b"]], TypeError, "the model gave str.* values in its vectors, not numbers"),
        ([[True, False]], TypeError, "the model gave bool values in its vectors, not numbers"),
        ([[1.0, 2.0]] * 2, ValueError, "the model gave 2 vectors for 1 texts"),
        ([[[1.0, 2.0]]], ValueError, "the model gave 1 vectors for 1 texts|not each"),
        ([1.0, 2.0], ValueError, "the model gave vectors that are not each a sequence of 2 numbers"),
        ([[1.0, 2.0, 3.0]], ValueError, "the model gave vectors of 3 dimensions, not 2"),
        ([[math.inf, 0.0]], ValueError, "NaN or infinity"),
        ([[1e39, 0.0]], ValueError, "beyond float32"),
    ],
)
def test_what_an_embedder_gave_is_checked_and_named(given: object, error: type, message: str) -> None:
    with pytest.raises(error, match=message):
        as_matrix(given, 2 if given == [1.0, 2.0] else 1, 2, "the model")


def test_integers_and_arrays_are_taken_as_float32() -> None:
    assert as_matrix([[1, 2]], 1, 2, "x").dtype == np.float32
    assert as_matrix(np.ones((2, 3)), 2, 3, "x").shape == (2, 3)
    assert as_matrix([], 0, 3, "x").shape == (0, 3)  # an empty batch


def test_unit_rows_keep_a_zero_row_zero() -> None:
    rows = unit_rows(np.array([[3.0, 4.0], [0.0, 0.0]], dtype=np.float32))
    assert rows.tolist() == [[pytest.approx(0.6), pytest.approx(0.8)], [0.0, 0.0]]


def test_best_takes_the_top_k_with_ties_in_index_order() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.1, 0.9, 0.5], dtype=np.float32)
    assert best(scores, 3) == [1, 4, 0]
    assert best(scores, 4) == [1, 4, 0, 2]
    assert best(scores, 10) == [1, 4, 0, 2, 5, 3]
    assert best(scores, 0) == []
