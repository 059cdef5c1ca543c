"""`verify` of a PostgreSQL namespace (ADR-0096): the schema and its indexes, the rows
of metadata values against their items, every vector against its item's text; damage
found makes the store refuse writes."""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
import pytest

from lionmem import MemoryItem
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.embedders import HashingEmbedder
from lionmem.errors import DatabaseCorruptError
from lionmem.protocols.verifying import Verification, VerifyingStore
from tests.support.pg_server import fresh_database


def run(body: Any) -> Any:
    return asyncio.run(body)


def test_a_whole_namespace_verifies_and_altered_rows_are_named(pg_url: str) -> None:
    url = fresh_database(pg_url)
    items = [MemoryItem(content=f"note {n}", metadata={"n": n}) for n in range(50)]

    async def body() -> None:
        async with PostgresMemoryStore.open(url, namespace="v") as store:
            assert isinstance(store, VerifyingStore)
            await store.store_many(items)
            assert await store.verify() == Verification((), ())
            with psycopg.connect(url, autocommit=True) as conn:
                conn.execute("UPDATE lionmem_meta SET num = num + 1000 WHERE key = 'n' AND num IN (7, 30)")
            found = await store.verify()
            assert found.damage == tuple(
                f"item {items[n].id}: its rows of metadata values are not its metadata"
                for n in sorted((7, 30), key=lambda n: str(items[n].id))
            )
            with pytest.raises(DatabaseCorruptError, match="refusing to write: verify found item .* \\(and 1 more\\)"):
                await store.store(MemoryItem(content="after"))
            with pytest.raises(DatabaseCorruptError):
                await store.delete(items[0].id)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP TRIGGER lionmem_items_meta_changed ON lionmem_items")
        async with PostgresMemoryStore.open(url, namespace="v") as store:
            assert (await store.verify()).damage == ("the trigger lionmem_items_meta_changed is missing",)

    run(body())


def test_vectors_lost_or_made_from_another_text_are_named(pgvector_server_url: str) -> None:
    url = fresh_database(pgvector_server_url)
    item = MemoryItem(content="zebra stripes", metadata={"summary": "bananas"})
    other = MemoryItem(content="penguins")

    async def body() -> None:
        async with PostgresMemoryStore.open(url, namespace="v", embedder=HashingEmbedder(8)) as store:
            await store.store_many([item, other])
            assert await store.verify() == Verification((), ())
        summary = PostgresMemoryStore.open(
            url, namespace="v", embedder=HashingEmbedder(8), text_of=lambda i: str(i.metadata.get("summary", i.content))
        )
        async with summary as store:
            found = await store.verify()
            assert found.whole
            assert found.stale == (f"item {item.id}: its vector was made from another text than its item's",)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DELETE FROM lionmem_vectors WHERE id = %s", [other.id])
        async with PostgresMemoryStore.open(url, namespace="v") as store:
            assert (await store.verify()).damage == (f"item {other.id}: it has no vector, and waits for none",)

    run(body())


def test_an_index_the_server_marks_invalid_and_rows_of_no_item_are_named(pg_url: str) -> None:
    url = fresh_database(pg_url)

    async def body() -> None:
        async with PostgresMemoryStore.open(url, namespace="v") as store:
            await store.store(MemoryItem(content="kept", metadata={"n": 1}))
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("INSERT INTO lionmem_meta (namespace, seq, key, num) VALUES ('v', 999999, 'n', 5)")
        async with PostgresMemoryStore.open(url, namespace="v") as store:
            assert (await store.verify()).damage == ("rows of metadata values belong to no item",)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("UPDATE pg_index SET indisvalid = false WHERE indexrelid = 'lionmem_items_order'::regclass")
        async with PostgresMemoryStore.open(url, namespace="v") as store:
            assert (await store.verify()).damage == (
                "the index lionmem_items_order is not valid (a failed CREATE INDEX CONCURRENTLY?)",
            )

    run(body())
