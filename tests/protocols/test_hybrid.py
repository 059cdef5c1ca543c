"""Hybrid recall (ADR-0104) in the reference store: the definition, its ties, what it
refuses, and a ticket among look-alikes that meaning alone misses."""

from __future__ import annotations

import asyncio
import math
from typing import Any
from uuid import UUID

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.embedders import FunctionEmbedder, HashingEmbedder
from lionmem.errors import NoEmbedderError
from lionmem.protocols.hybrid import (
    BM25_K1,
    COUNTED_UP_TO,
    IDENTIFIER_WEIGHT,
    RARE_AT_MOST,
    RRF_K,
    HybridRecall,
    HybridStore,
    named_terms,
    recall_hybrid,
    terms_of,
)
from tests.support.hybrid_contract import (
    assert_hybrid_agrees_with_the_reference,
    assert_min_score_and_many_questions,
    assert_words_follow_replaces_and_deletes,
)


def run(body: Any) -> Any:
    return asyncio.run(body)


def store() -> InMemoryStore:
    return InMemoryStore(embedder=HashingEmbedder(64))


def test_the_reference_store_agrees_with_the_definition() -> None:
    run(assert_hybrid_agrees_with_the_reference(store(), same_meaning_at_least=18))


def test_words_follow_replaces_and_deletes() -> None:
    run(assert_words_follow_replaces_and_deletes(store()))


def test_min_score_and_many_questions_in_one_call() -> None:
    run(assert_min_score_and_many_questions(store()))


def test_every_lionmem_store_inherits_the_one_definition() -> None:
    from lionmem.adapters.postgres import PostgresMemoryStore
    from lionmem.adapters.sqlite import SQLiteMemoryStore

    for cls in (InMemoryStore, SQLiteMemoryStore, PostgresMemoryStore):
        assert issubclass(cls, HybridRecall)
        assert cls.recall_hybrid is HybridRecall.recall_hybrid
    assert isinstance(store(), HybridStore)


def test_terms_are_runs_of_word_characters_lowered_as_search_lowers() -> None:
    assert terms_of("ÉTÉ à Zürich, order_id=A-17") == ["été", "à", "zürich", "order_id", "a", "17"]
    assert terms_of("  ...  ") == []


# Every text gets the same vector: meaning alone cannot tell the tickets apart.
FLAT = FunctionEmbedder(lambda texts: [[1.0, 0.0] for _ in texts], dimensions=2, identity="flat:2")


def test_a_rare_identifier_brings_its_ticket_up_from_among_look_alikes() -> None:
    async def body() -> None:
        memory = InMemoryStore(embedder=FLAT)
        tickets = [MemoryItem(content=f"Ticket {30000 + n} waits on the vendor.") for n in range(120)]
        await memory.store_many(tickets)
        question = "What about ticket 30100?"
        assert tickets[100].id not in {r.item.id for r in await memory.recall(question, 2)}
        hits = await memory.recall_hybrid(question, 2)
        shape = [(h.item.id, h.meaning_rank, h.words_rank, h.identified, h.score) for h in hits]
        # A rare term with a digit counts twice: it outweighs rank 1 by meaning alone.
        assert shape == [
            (tickets[100].id, None, 1, True, IDENTIFIER_WEIGHT / (RRF_K + 1)),
            (tickets[0].id, 1, None, False, 1 / (RRF_K + 1)),
        ]
        assert hits[0].words_score is not None and hits[0].words_score > 0
        assert hits[0].meaning_score is None

    run(body())


def test_a_term_more_items_hold_than_the_bound_is_not_rare() -> None:
    async def body() -> None:
        memory = InMemoryStore(embedder=FLAT)
        await memory.store_many([MemoryItem(content=f"filler {n}") for n in range(20 * RARE_AT_MOST)])
        await memory.store_many([MemoryItem(content=f"Kiwi {n}") for n in range(RARE_AT_MOST + 1)])
        assert all(h.words_rank is None for h in await memory.recall_hybrid("about Kiwi", 3))
        await memory.delete_matching(MemoryQuery(text="kiwi 0"))
        ranks = {h.words_rank for h in await memory.recall_hybrid("about Kiwi", 21 * RARE_AT_MOST)}
        assert ranks - {None} == set(range(1, RARE_AT_MOST + 1))

    run(body())


def test_equal_word_scores_rank_the_newest_first() -> None:
    async def body() -> None:
        memory = InMemoryStore(embedder=FLAT)
        old, new = MemoryItem(content="Marisol sits on floor 7."), MemoryItem(content="Marisol sits on floor 12.")
        await memory.store_many([old, new, *(MemoryItem(content=f"filler {n}") for n in range(200))])
        hits = await memory.recall_hybrid("where is Marisol", 2)
        assert [(h.item.id, h.meaning_rank, h.words_rank) for h in hits] == [(old.id, 1, 2), (new.id, 2, 1)]
        assert hits[0].score == hits[1].score  # equal fused scores: the better meaning rank first

    run(body())


def test_a_question_without_terms_is_ranked_by_meaning_alone() -> None:
    async def body() -> None:
        memory = store()
        await memory.store_many([MemoryItem(content="?!"), MemoryItem(content="a cat")])
        hits = await memory.recall_hybrid("?! ...", 2)
        assert [(h.meaning_rank, h.words_rank) for h in hits] == [(1, None), (2, None)]
        assert [h.item.id for h in hits] == [r.item.id for r in await memory.recall("?! ...", 2)]

    run(body())


def test_a_question_that_names_nothing_does_not_count_the_store() -> None:
    """Only a name or number needs the count (`N` of the bound and the idf): an everyday
    question costs what `recall` costs, alone or in a batch."""
    counted: list[int] = []

    class Counting(InMemoryStore):
        async def count_up_to(self, most: int) -> int:
            counted.append(most)
            return await super().count_up_to(most)

    async def body() -> None:
        memory = Counting(embedder=HashingEmbedder(64))
        await memory.store_many([MemoryItem(content=f"Ticket {n} waits") for n in range(30)])
        await memory.recall_hybrid("what is waiting?", 3)
        await memory.recall_hybrid_many(["what is waiting?", "anything late"], 3)
        assert counted == []
        await memory.recall_hybrid_many(["what is waiting?", "ticket 7", "ticket 9"], 3)
        assert counted == [COUNTED_UP_TO]
        await memory.recall_hybrid("ticket 7", 3)
        assert counted == [COUNTED_UP_TO] * 2

    run(body())


def test_what_hybrid_recall_refuses() -> None:
    async def body() -> None:
        with pytest.raises(NoEmbedderError):
            await InMemoryStore().recall_hybrid("anything")
        with pytest.raises(NoEmbedderError, match="InMemoryStore has no embedder"):
            await InMemoryStore().recall_hybrid_many(["anything"])
        with pytest.raises(TypeError, match="query must be a str, got a list"):
            await store().recall_hybrid([1.0, 0.0])  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="k must be at least 1"):
            await store().recall_hybrid("x", 0)
        with pytest.raises(TypeError, match="tags must be a list of str"):
            await recall_hybrid(store(), "x", tags="ticket")  # type: ignore[arg-type]

    run(body())


def test_in_a_small_store_only_a_name_one_item_holds_is_rare() -> None:
    async def body() -> None:
        memory = InMemoryStore(embedder=FLAT)
        await memory.store_many(
            [MemoryItem(content="the Cat"), MemoryItem(content="the Cat and the Dog"), MemoryItem(content="a Cow")]
        )
        hits = await memory.recall_hybrid("the Cow or the Cat", 3)
        assert [(h.item.content, h.words_rank) for h in hits] == [
            ("a Cow", 1),
            ("the Cat", None),
            ("the Cat and the Dog", None),
        ]

    run(body())


def test_only_the_names_and_numbers_a_question_writes_count_for_words() -> None:
    """Everyday words the store holds once are not names: "often" brought a note about
    headaches above the fact asked for among the fifty labelled facts."""

    async def body() -> None:
        memory = InMemoryStore(embedder=FLAT)
        await memory.store_many([MemoryItem(content=f"filler {n}") for n in range(100)])
        often, named = MemoryItem(content="headaches often"), MemoryItem(content="Ada Lovelace")
        await memory.store_many([often, named])
        assert [h.words_rank for h in await memory.recall_hybrid("How often?", 3)] == [None] * 3
        for question in ("who is Lovelace", "Lovelace?", "Who? Ada.", "a LoveLace", "lovelace", "LOVELACE"):
            by_words = [h.item.id for h in await memory.recall_hybrid(question, 3) if h.words_rank]
            # A capital that opens a sentence names nothing: "How", "Where", and "Lovelace?" too.
            assert by_words == ([] if question in ("Lovelace?", "Who? Ada.", "lovelace") else [named.id]), question
        assert named_terms("Where is ACME's ticket 88412? Ask Marisol, or marisol. On March 3.") == [
            "acme",
            "88412",
            "marisol",
            "march",
            "3",
        ]

    run(body())


class Plain:
    """A recall store that counts, but keeps no term index of its own."""

    def __init__(self, inner: InMemoryStore) -> None:
        self.inner = inner
        self.embedder = inner.embedder

    async def store(self, item: MemoryItem) -> UUID:
        return await self.inner.store(item)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return await self.inner.retrieve(item_id)

    async def recall(
        self, query: Any, k: int = 10, *, tags: Any = None, filters: Any = None, min_score: Any = None
    ) -> Any:
        return await self.inner.recall(query, k, tags=tags, filters=filters, min_score=min_score)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return await self.inner.search(query)

    async def count(self, query: MemoryQuery) -> int:
        return await self.inner.count(query)


def test_a_store_without_a_term_index_gives_the_same_answer_through_search() -> None:
    async def body() -> None:
        from tests.support.hybrid_contract import QUESTIONS, notes, shape

        inner = store()
        await inner.store_many([*notes(), MemoryItem(content="art party at the start")])
        plain = Plain(inner)
        assert not hasattr(plain, "holding")
        for question, filters, tags in [*QUESTIONS, ("an Art party", None, None), ("Art", None, None)]:
            for k in (1, 5, 60):
                want = await inner.recall_hybrid(question, k, tags=tags, filters=filters)
                assert shape(await recall_hybrid(plain, question, k, tags=tags, filters=filters)) == shape(want)

    run(body())


def test_a_store_past_the_count_bound_weighs_terms_as_one_of_that_many() -> None:
    async def body() -> None:
        memory = InMemoryStore(embedder=FLAT)
        await memory.store_many([MemoryItem(content=f"note {n}") for n in range(COUNTED_UP_TO + 50)])
        await memory.store(MemoryItem(content="Zebra"))
        assert await memory.count_up_to(COUNTED_UP_TO) == COUNTED_UP_TO
        [hit] = [h for h in await memory.recall_hybrid("the Zebra", 2) if h.words_rank]
        idf = math.log(1 + (COUNTED_UP_TO - 1 + 0.5) / 1.5)
        assert hit.words_score == idf * (BM25_K1 + 1) / (1 + BM25_K1)
        assert await recall_hybrid(Plain(memory), "the Zebra", 2) == await memory.recall_hybrid("the Zebra", 2)

    run(body())
