"""Hybrid recall checked the same way in every store (ADR-0104): against a brute-force
reference of its definition, and against `InMemoryStore` given the same items."""

from __future__ import annotations

import math
from typing import Any

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.embedders import HashingEmbedder
from lionmem.protocols.hybrid import (
    BM25_K1,
    COUNTED_UP_TO,
    IDENTIFIER_WEIGHT,
    RARE_AT_MOST,
    RRF_K,
    HybridRecalled,
    HybridStore,
    terms_of,
)
from lionmem.protocols.rules import matches

STATES = ["waits on the vendor", "is blocked by the migration", "needs a legal review", "was reopened"]


def notes() -> list[MemoryItem]:
    """400 tickets that look alike, so that a term four items hold is rare, a few
    everyday notes, twins, tags and metadata."""
    items = [
        MemoryItem(content=f"Ticket {40100 + n} {STATES[n % 4]}.", tags=["ticket"], metadata={"n": n})
        for n in range(400)
    ]
    items += [
        MemoryItem(content="Marisol moved to Valparaiso last spring.", metadata={"n": 1000}),
        MemoryItem(content="Marisol's desk is on floor 7.", metadata={"n": 1001}),
        MemoryItem(content="Marisol moved desks to floor 12.", metadata={"n": 1002}),
        MemoryItem(content="Ticket 40107 was closed as a duplicate of 40107.", metadata={"n": 1003}),
        MemoryItem(content="Lunch with the design team on Friday.", metadata={"n": 1004}),
        MemoryItem(content="Lunch with the design team on Friday.", metadata={"n": 1005}),
    ]
    return items


QUESTIONS: list[tuple[str, dict[str, Any] | None, list[str] | None]] = [
    ("What is the status of ticket 40107?", None, None),
    ("ticket 40107", {"n": 7}, None),
    ("Which floor does Marisol sit on?", None, None),
    ("Where does Marisol live?", None, ["ticket"]),
    ("lunch with the design team", None, None),
    ("nothing here is rare at all", None, None),
]


def reference(
    items: list[MemoryItem], meaning: list[tuple[MemoryItem, float]], question: str, query: MemoryQuery, k: int
) -> list[tuple[Any, ...]]:
    """ADR-0104's definition, by brute force over `items` in insertion order."""
    holders = {
        term: [i for i in items if term in terms_of(str(i.content))] for term in dict.fromkeys(terms_of(question))
    }
    total = min(len(items), COUNTED_UP_TO)
    bound = min(RARE_AT_MOST, max(1, total // 100))
    rare = {t: held for t, held in holders.items() if 0 < len(held) <= bound}
    scores: dict[Any, float] = {}
    met: list[MemoryItem] = []
    named: set[Any] = set()
    for term, held in rare.items():
        idf = math.log(1 + (total - len(held) + 0.5) / (len(held) + 0.5))
        for item in reversed(held):
            tf = terms_of(str(item.content)).count(term)
            if tf and matches(item, query):
                if item.id not in scores:
                    met.append(item)
                if any(c.isdigit() for c in term):
                    named.add(item.id)
                scores[item.id] = scores.get(item.id, 0.0) + idf * tf * (BM25_K1 + 1) / (tf + BM25_K1)
    words = sorted(met, key=lambda i: -scores[i.id])[:k]
    w_rank = {item.id: r for r, item in enumerate(words, 1)}
    m_rank = {item.id: r for r, (item, _) in enumerate(meaning, 1)}
    every = list(dict.fromkeys([*(i.id for i, _ in meaning), *(i.id for i in words)]))
    fused = {
        i: (1 / (RRF_K + m_rank[i]) if i in m_rank else 0.0)
        + ((IDENTIFIER_WEIGHT if i in named else 1) / (RRF_K + w_rank[i]) if i in w_rank else 0.0)
        for i in every
    }
    every.sort(key=lambda i: (-fused[i], m_rank.get(i, math.inf), w_rank.get(i, math.inf)))
    return [
        (i, fused[i], m_rank.get(i), w_rank.get(i), scores.get(i) if i in w_rank else None, i in w_rank and i in named)
        for i in every[:k]
    ]


def shape(hits: list[HybridRecalled]) -> list[tuple[Any, ...]]:
    return [(h.item.id, h.score, h.meaning_rank, h.words_rank, h.words_score, h.identified) for h in hits]


async def assert_hybrid_agrees_with_the_reference(store: HybridStore, *, same_meaning_at_least: int) -> None:
    """Fill `store` with `notes()`; every question, filtered or not, gives the
    reference's fused top k, and the same as an `InMemoryStore` of the same items
    wherever the two rank by meaning alike, which must be at least
    `same_meaning_at_least` of the 18 calls."""
    assert isinstance(store, HybridStore)
    items = notes()
    await store.store_many(items)  # type: ignore[attr-defined]
    memory = InMemoryStore(embedder=HashingEmbedder(64))
    await memory.store_many(items)
    compared = 0
    for question, filters, tags in QUESTIONS:
        for k in (1, 5, 60):
            got = await store.recall_hybrid(question, k, tags=tags, filters=filters)
            meaning = await store.recall(question, k, tags=tags, filters=filters)
            query = MemoryQuery(tags=tags, filters=filters)
            want = reference(items, [(r.item, r.score) for r in meaning], question, query, k)
            assert shape(got) == want, (question, k)
            assert all(matches(h.item, query) for h in got)
            assert [h.meaning_score for h in got] == pytest.approx(
                [None if h.meaning_rank is None else meaning[h.meaning_rank - 1].score for h in got]
            )
            # A durable store's cosine may differ from numpy's in the last bits (ADR-0103),
            # which can swap two near-equal items by meaning; given the same meaning
            # ranking, every store gives the same fused answer.
            alike = await memory.recall_hybrid(question, k, tags=tags, filters=filters)
            ranked_alike = await memory.recall(question, k, tags=tags, filters=filters)
            if [r.item.id for r in meaning] == [r.item.id for r in ranked_alike]:
                compared += 1
                assert shape(got) == shape(alike), (question, k)
    assert compared >= same_meaning_at_least, compared


async def assert_words_follow_replaces_and_deletes(store: HybridStore) -> None:
    """A replaced text is found by its new rare term and not its old one; a deleted
    item is found by neither."""
    old = MemoryItem(content="Order 77123 shipped on Monday.")
    other = MemoryItem(content="Order 55001 shipped on Tuesday.")
    await store.store_many([old, other])  # type: ignore[attr-defined]
    assert (await store.recall_hybrid("77123", 1))[0].words_rank == 1
    await store.store(MemoryItem(id=old.id, content="Parcel 99876 was cancelled."))
    first = await store.recall_hybrid("99876", 2)
    assert (first[0].item.id, first[0].words_rank) == (old.id, 1)
    assert [h.words_rank for h in await store.recall_hybrid("77123", 2)] == [None, None]
    await store.delete(old.id)  # type: ignore[attr-defined]
    assert [(h.item.id, h.words_rank) for h in await store.recall_hybrid("99876", 2)] == [(other.id, None)]
