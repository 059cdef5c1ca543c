"""`stats` on PostgreSQL: the namespace's items and span, the shared table's size
(ADR-0100)."""

from __future__ import annotations

from uuid import uuid4

import psycopg

from lionmem import MemoryItem
from lionmem.adapters.postgres import SCHEMA_VERSION, PostgresMemoryStore
from lionmem.protocols.stats import StoreStats
from tests.support.pg_server import fresh_database
from tests.support.postgres_support import with_store


def test_stats_count_the_namespace_and_measure_the_table(pg_url: str) -> None:
    url = fresh_database(pg_url)

    async def fill(store: PostgresMemoryStore) -> StoreStats:
        empty = await store.stats()
        await store.store_many(
            [MemoryItem(content="x" * 3000, created_at=t, metadata={"t": t}) for t in (2.5, -0.0, 1e12)]
        )
        return empty

    async def other(store: PostgresMemoryStore) -> StoreStats:
        await store.store(MemoryItem(content="elsewhere", created_at=-5.0))
        return await store.stats()

    async def stats(store: PostgresMemoryStore) -> StoreStats:
        return await store.stats()

    empty = with_store(url, fill, namespace="mine")
    theirs = with_store(url, other, namespace=f"other-{uuid4().hex[:8]}")
    mine = with_store(url, stats, namespace="mine")
    with psycopg.connect(url) as conn:
        ((items_size,), (values_size,)) = conn.execute(
            "SELECT pg_total_relation_size(name) FROM unnest(ARRAY['lionmem_items', 'lionmem_meta']) AS name"
        ).fetchall()
        assert conn.execute("SELECT count(*) FROM lionmem_meta").fetchall() == [(3,)]
    size = items_size + values_size
    covers = "the items, metadata values and vectors tables with their indexes, shared by every namespace"
    assert (empty.items, empty.oldest, empty.newest, empty.schema_version) == (0, None, None, SCHEMA_VERSION)
    assert mine == StoreStats(
        items=3, bytes_on_disk=size, size_covers=covers, schema_version=SCHEMA_VERSION, oldest=-0.0, newest=1e12
    )
    assert str(mine.oldest) == "-0.0"
    assert (theirs.items, theirs.oldest, theirs.bytes_on_disk) == (1, -5.0, size)
