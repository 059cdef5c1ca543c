"""Hybrid recall checked the same way in every store (ADR-0104): against a brute-force
reference of its definition, and against `InMemoryStore` given the same items."""

from __future__ import annotations

import math
import re
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any, Protocol
from uuid import UUID

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.embedders import HashingEmbedder
from lionmem.filters import Lt
from lionmem.protocols.hybrid import (
    BM25_K1,
    COUNTED_UP_TO,
    IDENTIFIER_WEIGHT,
    RARE_AT_MOST,
    RRF_K,
    HybridRecalled,
    HybridStore,
    named_terms,
    terms_of,
)
from lionmem.protocols.recall import Recalled
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
    holders = {term: [i for i in items if term in terms_of(str(i.content))] for term in named_terms(question)}
    total = min(len(items), COUNTED_UP_TO)
    bound = min(RARE_AT_MOST, max(1, total // 20))
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


class ManyQuestions(HybridStore, Protocol):
    """A hybrid store with lionmem's calls for many questions at once."""

    async def recall_many(
        self,
        queries: Sequence[str | Sequence[float]],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[list[Recalled]]: ...

    async def recall_hybrid_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[list[HybridRecalled]]: ...

    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]: ...


async def assert_min_score_and_many_questions(store: ManyQuestions) -> None:
    """`min_score` cuts plain recall's top k where the scores fall below it, and in
    hybrid recall leaves the items below it to words alone; many questions in one call
    give what a call each gives, in order; bad arguments are refused before anything
    is embedded."""
    items = notes()
    await store.store_many(items)
    cut = 0
    for question, filters, tags in QUESTIONS:
        every = await store.recall(question, 10, tags=tags, filters=filters)
        # Between the best and the worst score, and exactly one of the scores given.
        for floor in ((every[0].score + every[-1].score) / 2, every[len(every) // 2].score):
            kept = await store.recall(question, 10, tags=tags, filters=filters, min_score=floor)
            assert [(r.item.id, r.score) for r in kept] == [(r.item.id, r.score) for r in every if r.score >= floor]
            cut += len(kept) < len(every)
            meaning = [(r.item, r.score) for r in every if r.score >= floor]
            query = MemoryQuery(tags=tags, filters=filters)
            hybrid = await store.recall_hybrid(question, 10, tags=tags, filters=filters, min_score=floor)
            assert shape(hybrid) == reference(items, meaning, question, query, 10), question
            assert all(h.meaning_score is None or h.meaning_score >= floor for h in hybrid)
    assert cut >= 6, "the floors must leave some results out"
    assert await store.recall("Marisol", 5, min_score=1.0) == []

    questions = [question for question, _, _ in QUESTIONS]
    many = await store.recall_many(questions, 5, filters={"n": Lt(1002)})
    one_each = [await store.recall(q, 5, filters={"n": Lt(1002)}) for q in questions]
    assert [[(r.item.id, r.score) for r in found] for found in many] == [
        [(r.item.id, r.score) for r in found] for found in one_each
    ]
    vector = (await store.embedder.embed(["Marisol"]))[0]  # type: ignore[union-attr]
    mixed = await store.recall_many(["floor 7", vector], 3, min_score=0.1)
    assert [[r.item.id for r in found] for found in mixed] == [
        [r.item.id for r in await store.recall(q, 3, min_score=0.1)] for q in ("floor 7", "Marisol")
    ]
    fused = await store.recall_hybrid_many(questions, 5, tags=["ticket"])
    assert [shape(found) for found in fused] == [
        shape(await store.recall_hybrid(q, 5, tags=["ticket"])) for q in questions
    ]
    assert await store.recall_many([]) == [] and await store.recall_hybrid_many([]) == []

    loose: Any = store  # to call it as an untyped caller may
    cases: list[tuple[Callable[[], Awaitable[object]], type[Exception], str]] = [
        (lambda: store.recall("x", min_score=1.5), ValueError, "min_score must be from -1 to 1, got 1.5"),
        (lambda: store.recall("x", min_score=math.nan), ValueError, "min_score must be from -1 to 1, got nan"),
        (lambda: loose.recall("x", min_score="0.5"), TypeError, "min_score must be a number from -1 to 1, got a str"),
        (lambda: store.recall("x", min_score=True), TypeError, "min_score must be a number from -1 to 1, got a bool"),
        (lambda: store.recall_hybrid("x", min_score=-2), ValueError, "min_score must be from -1 to 1, got -2"),
        (lambda: store.recall_many("x"), TypeError, "queries must be a list or tuple of questions, got a str"),
        (lambda: store.recall_many(["x"], 0), ValueError, "k must be at least 1, got 0"),
        (lambda: loose.recall_hybrid_many(["x", 7]), TypeError, "each query must be a str, got an int"),
        (lambda: store.recall_hybrid_many(["x"], min_score=2.0), ValueError, "min_score must be from -1 to 1"),
    ]
    for call, error, message in cases:
        with pytest.raises(error, match=re.escape(message)):
            await call()
