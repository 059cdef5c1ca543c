"""Recall measured on everyday notes (`lionmem.testing.everyday_notes`): the notes as
items, the filters asked with them, the exact answers numpy gives over the same
vectors, and recall@10 with its worst question and its median time.

Random vectors and a dozen-word vocabulary are easy for an approximate index; an
agent's notes, one template with one name changed again and again, are not
(ADR-0103 D3).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

import numpy as np

from lionmem import MemoryItem
from lionmem.filters import Ge
from lionmem.testing.notes import everyday_notes, everyday_questions

K = 10
QUESTIONS = 60
FILTERS = ("none", "newest 5%", "half")
"""No filter; `n >= 0.95 N` (an operator filter keeping the newest twentieth); and
`half == True` (an equality keeping every other note)."""

Recaller = Callable[[str, str], Awaitable[list[str]]]
"""Recall the top `K` for a question under one of `FILTERS`: the items' ids as text."""


def items_of(count: int) -> list[MemoryItem]:
    """`count` everyday notes as items, with the metadata the filters read."""
    return [
        MemoryItem(content=text, metadata={"n": n, "half": n % 2 == 0}) for n, text in enumerate(everyday_notes(count))
    ]


def questions() -> list[str]:
    """The questions every side is asked."""
    return everyday_questions(QUESTIONS, seed=1)


def lionmem_filter(name: str, count: int) -> dict[str, Any] | None:
    """The filter `name` as lionmem's `recall` takes it, over `count` notes."""
    return {"none": None, "newest 5%": {"n": Ge(count - count // 20)}, "half": {"half": True}}[name]


def langgraph_filter(name: str, count: int) -> dict[str, Any] | None:
    """The filter `name` in LangGraph's dialect, over `count` notes."""
    return {"none": None, "newest 5%": {"n": {"$gte": count - count // 20}}, "half": {"half": True}}[name]


class Truth:
    """The exact answers: every note's unit vector and each question's, scored by numpy."""

    def __init__(self, items: list[MemoryItem], vectors: Any, asked: Any) -> None:
        self.ids = {str(item.id): n for n, item in enumerate(items)}
        matrix = np.asarray(vectors, dtype=np.float64)
        self.matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        questions_matrix = np.asarray(asked, dtype=np.float64)
        self.asked = questions_matrix / np.linalg.norm(questions_matrix, axis=1, keepdims=True)
        count = len(items)
        self.masks = {
            "none": np.ones(count, dtype=bool),
            "newest 5%": np.arange(count) >= count - count // 20,
            "half": np.arange(count) % 2 == 0,
        }

    def share(self, question: int, found: list[str], within: str) -> float:
        """The share of the exact top `K` that `found` holds; an item scoring as high
        as the exact `K`-th (within float32's rounding) counts as one of them."""
        scores = np.where(self.masks[within], self.matrix @ self.asked[question], -np.inf)
        kth = np.sort(scores)[-K]
        return sum(1 for key in found[:K] if scores[self.ids[key]] >= kth - 1e-5) / K


async def measured(recall: Recaller, truth: Truth, asked: list[str], within: str) -> dict[str, float]:
    """recall@10 over the questions (mean and worst) and the median time of a recall."""
    await recall(asked[0], within)  # caches and plans
    times, shares = [], []
    for n, question in enumerate(asked):
        start = time.perf_counter()
        found = await recall(question, within)
        times.append(time.perf_counter() - start)
        shares.append(truth.share(n, found, within))
    return {"recall@10": statistics.fmean(shares), "worst": min(shares), "median ms": statistics.median(times) * 1e3}
