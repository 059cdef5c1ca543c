"""Recall as the reference store does it, asked of a durable store (ADR-0102, ADR-0103)."""

from __future__ import annotations

import itertools
from typing import Any, Protocol

import pytest

from lionmem import BatchingStore, InMemoryStore, MemoryItem, MemoryStore, RecallStore
from lionmem.embedders import FunctionEmbedder, HashingEmbedder
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


TWIN = "the warehouse stores frozen fish"


def drifting() -> FunctionEmbedder:
    """`HashingEmbedder(3)`, but each call's vectors a little off the last call's, as a
    hosted model's may be: one text embedded twice gets two vectors. With three
    dimensions, a matrix product also rounds a row's score by its place."""
    base, calls = HashingEmbedder(3), itertools.count(1)

    def embed(texts: list[str]) -> list[list[float]]:
        drift = next(calls) * 1e-6
        return [[value + drift * (n == 0) for n, value in enumerate(base.vector(text))] for text in texts]

    return FunctionEmbedder(embed, dimensions=3, identity="drifting:3")


async def assert_equal_texts_tie_in_insertion_order(store: BatchingRecallStore) -> None:
    """Six items of one text, three stored in a batch between fillers and three one at
    a time, all score exactly alike and come back in the order they were stored, in
    every path a recall takes: the whole ranking, a selective tag, a filter. The store
    is empty and embeds with `drifting()`."""
    fillers = [
        MemoryItem(content=f"note {n} about the harbour and {n % 7} boats", tags=["filler"], metadata={"n": n})
        for n in range(300)
    ]
    twins = [MemoryItem(content=TWIN, tags=["twin"], metadata={"n": -1}) for _ in range(6)]
    await store.store_many(fillers[:150])
    await store.store_many(twins[:3])
    await store.store_many(fillers[150:])
    for twin in twins[3:]:
        await store.store(twin)
    expected = [twin.id for twin in twins]
    for options in ({}, {"tags": ["twin"]}, {"filters": {"n": Ge(-1)}}, {"filters": {"n": -1}}):
        found = await store.recall(TWIN, 6, **options)
        assert [r.item.id for r in found] == expected, options
        assert len({r.score for r in found}) == 1, (options, [r.score for r in found])


async def assert_a_replacement_without_an_embedder_leaves_no_stale_vector(
    store: RecallStore, plain: MemoryStore
) -> None:
    """`plain`, a second handle on `store`'s data opened without an embedder (as the
    command line's `put` and `import` open one), replaces an item and adds another:
    `store`'s next recall finds the replaced item by its new text and never by the
    old one, and finds the new item, with no reopening."""
    old = MemoryItem(content="How should we contact the client by email")
    others = [MemoryItem(content=text) for text in ("the budget meeting is on Monday", "penguins on ice")]
    for item in (old, *others):
        await store.store(item)
    assert (await store.recall("contact the client by email", 1))[0].item.id == old.id  # vectors cached
    new = MemoryItem(id=old.id, content="The warehouse stores frozen fish")
    await plain.store(new)
    added = MemoryItem(content="frozen fish arrives on Friday")
    await plain.store(added)
    by_old = await store.recall("contact the client by email", 4)
    assert all(r.score < 0.5 for r in by_old if r.item.id == old.id), [(r.item.content, r.score) for r in by_old]
    by_new = await store.recall("The warehouse stores frozen fish", 4)
    assert by_new[0].item == new and by_new[0].score == pytest.approx(1.0, abs=1e-5), by_new
    assert added.id in {r.item.id for r in by_new}
