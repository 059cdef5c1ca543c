"""Hybrid recall in the SQLite store (ADR-0104): the reference's answer, and words that
follow every write, including one made through a store without an embedder."""

from __future__ import annotations

import asyncio
from pathlib import Path

from lionmem import MemoryItem
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.embedders import HashingEmbedder
from tests.support.hybrid_contract import (
    assert_hybrid_agrees_with_the_reference,
    assert_min_score_and_many_questions,
    assert_words_follow_replaces_and_deletes,
)


def test_hybrid_recall_agrees_with_the_definition_and_the_reference_store(tmp_path: Path) -> None:
    async def body() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
            await assert_hybrid_agrees_with_the_reference(store, same_meaning_at_least=18)

    asyncio.run(body())


def test_words_follow_replaces_and_deletes(tmp_path: Path) -> None:
    async def body() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
            await assert_words_follow_replaces_and_deletes(store)

    asyncio.run(body())


def test_a_text_replaced_by_another_writer_is_found_by_its_new_words(tmp_path: Path) -> None:
    async def body() -> None:
        path = tmp_path / "m.db"
        item = MemoryItem(content="Invoice 61200 is overdue.")
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(64)) as store:
            await store.store(item)
            async with SQLiteMemoryStore.open(path) as plain:
                await plain.store(MemoryItem(id=item.id, content="Invoice 61299 was paid."))
            assert [h.words_rank for h in await store.recall_hybrid("61200", 1)] == [None]
            [hit] = await store.recall_hybrid("61299", 1)
            assert (hit.item.content, hit.words_rank) == ("Invoice 61299 was paid.", 1)

    asyncio.run(body())


def test_min_score_and_many_questions_in_one_call(tmp_path: Path) -> None:
    async def body() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
            await assert_min_score_and_many_questions(store)

    asyncio.run(body())
