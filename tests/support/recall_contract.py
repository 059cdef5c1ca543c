"""Recall as the reference store does it, asked of a durable store (ADR-0102, ADR-0103)."""

from __future__ import annotations

from typing import Any, Protocol

import pytest

from lionmem import BatchingStore, InMemoryStore, MemoryItem, RecallStore
from lionmem.embedders import HashingEmbedder
from lionmem.filters import Ge

CONTENTS = ["red fox jumps", "blue whale sings", "red red fox", "green fox", "blue sky", "fox"]

SEARCHES: list[tuple[str, dict[str, Any]]] = [
    ("red fox", {}),
    ("blue", {"tags": ["odd"]}),
    ("fox", {"filters": {"n": Ge(2)}}),
    ("whale", {"tags": ["even"], "filters": {"n": Ge(1)}}),
    ("fox", {"filters": {"n": [1]}}),  # a value SQL cannot decide: Python checks the rows
    ("", {}),  # an empty text: every score 0, insertion order
]


class BatchingRecallStore(RecallStore, BatchingStore, Protocol):
    """A store that recalls and writes batches, as both durable stores do."""


async def assert_recall_agrees_with_the_reference(store: BatchingRecallStore, *, tolerance: float) -> None:
    """`store`, opened with `HashingEmbedder(64)` and empty, recalls what an
    `InMemoryStore` given the same items recalls: the same ids in the same order,
    scores within `tolerance`, and items equal to those stored. The first three are
    stored as one batch, the rest one at a time."""
    assert store.embedder is not None
    reference = InMemoryStore(embedder=HashingEmbedder(64))
    items = [
        MemoryItem(content=c, tags=["even" if n % 2 == 0 else "odd"], metadata={"n": n}) for n, c in enumerate(CONTENTS)
    ]
    await store.store_many(items[:3])
    for item in items[3:]:
        await store.store(item)
    await reference.store_many(items)
    for text, options in SEARCHES:
        ours = await store.recall(text, 3, **options)
        theirs = await reference.recall(text, 3, **options)
        assert [r.item.id for r in ours] == [r.item.id for r in theirs], (text, options)
        assert [r.score for r in ours] == pytest.approx([r.score for r in theirs], abs=tolerance)
        assert all(r.item == next(i for i in items if i.id == r.item.id) for r in ours)
    assert await store.recall("fox", 3, tags=["none"]) == []
