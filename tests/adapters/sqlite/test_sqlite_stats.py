"""`stats` on SQLite: what it counts, while the store is open and its log is beside
the file (ADR-0100)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from lionmem import MemoryItem
from lionmem.adapters.errors import StoreClosedError
from lionmem.adapters.sqlite import SCHEMA_VERSION, SQLiteMemoryStore
from lionmem.protocols.stats import StoreStats
from tests.support.sqlite_support import with_store


def test_stats_count_the_items_and_every_file_and_span_created_at(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    times = [5.5, -0.0, 3.0, 1e12]

    async def body(store: SQLiteMemoryStore) -> tuple[StoreStats, StoreStats, int]:
        empty = await store.stats()
        for t in times:
            await store.store(MemoryItem(content="x" * 5000, created_at=t))
        stats = await store.stats()
        # The log's index (-shm) is a map shared in memory, not data: it is not counted.
        assert path.with_name("m.db-shm").exists()
        files = [path, path.with_name("m.db-wal")]
        return empty, stats, sum(f.stat().st_size for f in files if f.exists())

    empty, stats, size = with_store(path, body)
    covers = "the database file and its write-ahead log"
    assert (empty.items, empty.oldest, empty.newest, empty.schema_version) == (0, None, None, SCHEMA_VERSION)
    assert stats == StoreStats(
        items=4, bytes_on_disk=size, size_covers=covers, schema_version=SCHEMA_VERSION, oldest=-0.0, newest=1e12
    )
    assert str(stats.oldest) == "-0.0"  # kept apart from 0.0 on disk, and read back so
    assert stats.bytes_on_disk > empty.bytes_on_disk + 4 * 5000


def test_stats_of_a_closed_store_raise(tmp_path: Path) -> None:
    async def body(store: SQLiteMemoryStore) -> SQLiteMemoryStore:
        return store

    store = with_store(tmp_path / "m.db", body)
    with pytest.raises(StoreClosedError):
        asyncio.run(store.stats())
