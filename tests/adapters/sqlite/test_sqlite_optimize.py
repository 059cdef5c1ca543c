"""`optimize()`: merging the text index changes no result and loses no write."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
from collections.abc import Awaitable
from pathlib import Path

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import (
    SQLiteMemoryStore,
)
from tests.support.sqlite_support import hold_write_lock, run, with_store


def _text_segments(path: Path) -> int:
    """How many segments the trigram index holds: FTS5 keeps one or more rows for each
    in its `_idx` shadow table."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        (segments,) = db.execute("SELECT count(DISTINCT segid) FROM items_text_idx").fetchone()
    return int(segments)


def _every_kind_of_search(store: SQLiteMemoryStore) -> Awaitable[list[list[MemoryItem]]]:
    queries = [
        MemoryQuery(limit=1_000),
        MemoryQuery(text="NOTE 1", limit=1_000),
        MemoryQuery(text="e 3", limit=5),
        MemoryQuery(tags=["t2"], limit=1_000),
        MemoryQuery(filters={"k": 1}, limit=1_000),
    ]
    return asyncio.gather(*(store.search(q) for q in queries))


def test_optimize_merges_the_text_index_into_one_segment_and_changes_no_result(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    batches = [
        [MemoryItem(content=f"note {b}-{n}", tags=[f"t{n % 3}"], metadata={"k": n % 4}) for n in range(40)]
        for b in range(6)
    ]

    async def load(store: SQLiteMemoryStore) -> list[list[MemoryItem]]:
        for batch in batches:
            await store.store_many(batch)
        return await _every_kind_of_search(store)

    before = with_store(path, load)
    assert _text_segments(path) > 1

    async def optimize(store: SQLiteMemoryStore) -> list[list[MemoryItem]]:
        await store.optimize()
        return await _every_kind_of_search(store)

    after = with_store(path, optimize)
    assert _text_segments(path) == 1
    assert [[i.model_dump() for i in found] for found in after] == [[i.model_dump() for i in found] for found in before]
    assert [len(found) for found in after] == [240, 40, 5, 78, 60]
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("INSERT INTO items_text (items_text) VALUES ('integrity-check')")
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_optimize_between_writes_of_two_stores_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def scenario() -> list[MemoryItem]:
        async with SQLiteMemoryStore.open(path) as one, SQLiteMemoryStore.open(path) as two:
            for n in range(5):
                await one.store_many([MemoryItem(content=f"old {n}-{m}") for m in range(50)])
            await asyncio.gather(
                *(one.store(MemoryItem(content=f"one {n}")) for n in range(100)),
                *(two.store(MemoryItem(content=f"two {n}")) for n in range(100)),
                one.optimize(),
                two.optimize(),
            )
            # Needles of three characters or more: the trigram index finds them.
            found = [await two.search(MemoryQuery(text=t, limit=1_000)) for t in ("OLD ", "ONE ", "TWO ")]
            return [item for items in found for item in items]

    found = sorted(str(i.content) for i in run(scenario()))
    assert found == sorted(
        [f"old {n}-{m}" for n in range(5) for m in range(50)]
        + [f"one {n}" for n in range(100)]
        + [f"two {n}" for n in range(100)]
    )


def test_an_optimize_that_cannot_take_the_write_lock_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def load(store: SQLiteMemoryStore) -> None:
        for n in range(4):
            await store.store_many([MemoryItem(content=f"note {n}-{m}") for m in range(20)])

    with_store(path, load)
    segments = _text_segments(path)

    async def impatient(store: SQLiteMemoryStore) -> list[MemoryItem]:
        other = hold_write_lock(path)
        try:
            with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                await store.optimize()
        finally:
            other.execute("ROLLBACK")
            other.close()
        await store.store(MemoryItem(content="note after"))  # the store goes on working
        return await store.search(MemoryQuery(text="note", limit=1_000))

    assert len(with_store(path, impatient, busy_timeout=0.05)) == 81
    assert _text_segments(path) >= segments > 1
