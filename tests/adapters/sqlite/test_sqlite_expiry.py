"""Expiry in an SQLite file (ADR-0105 D2): a version 8 file gains the column and its
index, a read asks the index once whether anything has expired, and a change of
expiry leaves each vector as it was."""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, SQLiteMemoryStore
from lionmem.adapters.sqlite._namespaces import SPAN_BITS
from lionmem.adapters.sqlite._writes import Write, index
from lionmem.embedders import HashingEmbedder
from tests.support.sqlite_support import connect, with_store


def test_a_version_8_file_gains_expiry_and_keeps_every_item(tmp_path: Path) -> None:
    path = tmp_path / "v8.db"
    items = [MemoryItem(content=f"note {n}", tags=["t"], metadata={"n": n}) for n in range(5)]
    db = connect(path, isolation_level=None)
    for step in range(1, 9):
        MIGRATIONS[step](db)
    for seq, item in enumerate(items, start=1):
        write = Write.of(item)
        db.execute(
            "INSERT INTO items (seq, id, created_at, body, folded) VALUES (?, ?, ?, ?, ?)", (seq, *write.columns)
        )
        index(db, [(seq, write.columns[3], write.tags, write.meta)])
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 8")
    db.close()

    async def body(store: SQLiteMemoryStore) -> None:
        assert await store.search(MemoryQuery(tags=["t"])) == items
        assert await store.expire([items[1].id], at=time.time() - 1) == 1
        assert await store.search(MemoryQuery(filters={"n": 1})) == []
        assert await store.sweep() == 1
        assert (await store.verify()).whole

    with_store(path, body)
    db = connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (9,)
    assert db.execute("SELECT count(*), count(expires_at) FROM items").fetchone() == (4, 0)
    plan = db.execute(
        f"EXPLAIN QUERY PLAN SELECT 1 FROM items WHERE seq >> {SPAN_BITS} = ? AND expires_at <= ? LIMIT 1", (0, 1.0)
    ).fetchall()
    assert "USING COVERING INDEX items_expiring" in plan[0][3]  # the probe each read makes


class Counting(HashingEmbedder):
    """Counts the texts it embeds."""

    def __init__(self) -> None:
        super().__init__(16)
        self.texts = 0

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts += len(texts)
        return await super().embed(texts)


def test_a_change_of_expiry_keeps_the_vectors(tmp_path: Path) -> None:
    embedder = Counting()
    items = [MemoryItem(content=f"note {n}") for n in range(4)]

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many(items)
        assert embedder.texts == 4
        await store.expire([i.id for i in items], ttl=3_600)
        await store.persist([items[0].id])
        found = await store.recall("note 2", k=4)
        assert embedder.texts == 5  # the question alone: no item embedded again
        assert {hit.item.id for hit in found} == {i.id for i in items}
        assert (await store.verify()).whole

    with_store(tmp_path / "m.db", body, embedder=embedder)
