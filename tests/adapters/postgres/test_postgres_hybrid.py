"""Hybrid recall in the PostgreSQL store (ADR-0104): the reference's answer and the
in-memory store's, and words that follow replaces and deletes."""

from __future__ import annotations

import asyncio

import pytest

from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.embedders import HashingEmbedder
from tests.support.hybrid_contract import (
    assert_hybrid_agrees_with_the_reference,
    assert_min_score_and_many_questions,
    assert_words_follow_replaces_and_deletes,
)
from tests.support.pg_server import fresh_database


@pytest.fixture
def url(pgvector_server_url: str) -> str:
    return fresh_database(pgvector_server_url)


def test_hybrid_recall_agrees_with_the_definition_and_the_reference_store(url: str) -> None:
    async def body() -> None:
        async with PostgresMemoryStore.open(url, namespace="h", embedder=HashingEmbedder(64)) as store:
            await assert_hybrid_agrees_with_the_reference(store, same_meaning_at_least=3)

    asyncio.run(body())


def test_words_follow_replaces_and_deletes(url: str) -> None:
    async def body() -> None:
        async with PostgresMemoryStore.open(url, namespace="h", embedder=HashingEmbedder(64)) as store:
            await assert_words_follow_replaces_and_deletes(store)

    asyncio.run(body())


def test_min_score_and_many_questions_in_one_call(url: str) -> None:
    async def body() -> None:
        async with PostgresMemoryStore.open(url, namespace="h", embedder=HashingEmbedder(64)) as store:
            await assert_min_score_and_many_questions(store)

    asyncio.run(body())
