"""Forgetting on SQLite: deleted text leaves every file once the store is closed, a
failed delete leaves everything, and deletes last across reopening (ADR-0100)."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.sqlite import _writes as sqlite_writes
from lionmem.adapters.sqlite._worker import Worker
from tests.support.sqlite_support import with_store

# Letters no other item, and nothing of SQLite's own, holds: any three of them in a
# row in the files could only come from the deleted item or its text index.
MARKER = "qzqzxjxjwvwv"
TRIGRAMS = sorted({MARKER[n : n + 3] for n in range(len(MARKER) - 2)})


def _leftovers(directory: Path) -> list[str]:
    """What of the marker any file in `directory` still holds, whole or as trigrams."""
    data = b"".join(path.read_bytes() for path in sorted(directory.iterdir()))
    return [piece for piece in [MARKER, *TRIGRAMS] if piece.encode() in data]


@pytest.fixture
def secure_delete_off_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """Connections as SQLite makes them when built without SQLITE_SECURE_DELETE, as
    many builds are (Debian's has it on): deleted bytes stay in the file unless the
    store asks for them to be overwritten."""
    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        db: sqlite3.Connection = real_connect(*args, **kwargs)
        db.execute("PRAGMA secure_delete = 0")
        return db

    monkeypatch.setattr(sqlite3, "connect", connect)


@pytest.mark.usefixtures("secure_delete_off_by_default")
@pytest.mark.parametrize("how", ["delete", "delete_many", "delete_matching", "delete_created_before"])
def test_deleted_text_leaves_the_file_once_the_store_is_closed(tmp_path: Path, how: str) -> None:
    path = tmp_path / "m.db"
    others = [MemoryItem(content=f"item {n}", tags=["kept"], metadata={"n": n}, created_at=10 + n) for n in range(300)]
    secret = MemoryItem(
        content=f"contact {MARKER}", tags=[f"{MARKER}-tag"], metadata={MARKER: f"{MARKER}@example.org"}, created_at=1.0
    )

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many(others[:150])
        await store.store(secret)
        await store.store_many(others[150:])
        await store.search(MemoryQuery(text=MARKER))  # read through the index first
        if how == "delete":
            assert await store.delete(secret.id) is True
        elif how == "delete_many":
            assert await store.delete_many([secret.id]) == 1
        elif how == "delete_matching":
            assert await store.delete_matching(MemoryQuery(text=MARKER.upper())) == 1
        else:
            assert await store.delete_created_before(5.0) == 1
        assert _leftovers(tmp_path) != []  # still in the files until the store closes

    with_store(path, body)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.db"]  # the log was removed
    assert _leftovers(tmp_path) == []
    found = with_store(path, lambda store: store.search(MemoryQuery(tags=["kept"], limit=1000)))
    assert [i.id for i in found] == [i.id for i in others]


def test_a_store_that_deleted_nothing_does_not_rewrite_the_text_index_on_closing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    merges: list[str] = []
    optimize: Callable[[Worker], None] = Worker.optimize

    def traced(worker: Worker) -> None:
        merges.append("optimize")
        optimize(worker)

    monkeypatch.setattr(Worker, "optimize", traced)

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store(MemoryItem(content="x"))
        assert await store.delete_many([MemoryItem().id]) == 0

    with_store(tmp_path / "m.db", body)
    assert merges == []


def test_a_delete_that_fails_midway_deletes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    items = [MemoryItem(content=f"doomed {n}", tags=["t"], metadata={"n": n}) for n in range(3)]
    unindex = sqlite_writes._unindex
    calls: list[int] = []

    def fails_on_the_second(db: sqlite3.Connection, seq: int, folded: str) -> None:
        calls.append(seq)
        if len(calls) == 2:
            raise sqlite3.OperationalError("disk I/O error")
        unindex(db, seq, folded)

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many(items)
        monkeypatch.setattr(sqlite_writes, "_unindex", fails_on_the_second)
        with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
            await store.delete_many([i.id for i in items])
        monkeypatch.undo()
        for query in (MemoryQuery(text="doomed"), MemoryQuery(tags=["t"]), MemoryQuery(filters={"n": 1})):
            assert [i.id for i in await store.search(query)] == [
                i.id for i in items if query.filters is None or i.metadata["n"] == 1
            ]
        assert await store.count(MemoryQuery()) == 3

    with_store(tmp_path / "m.db", body)


def test_a_delete_lasts_and_an_id_stored_again_comes_last_after_reopening(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    first, second = MemoryItem(content="first"), MemoryItem(content="second")
    with_store(path, lambda store: store.store_many([first, second]))
    assert with_store(path, lambda store: store.delete(first.id)) is True
    assert with_store(path, lambda store: store.retrieve(first.id)) is None
    with_store(path, lambda store: store.store(first))
    found = with_store(path, lambda store: store.search(MemoryQuery()))
    assert [i.content for i in found] == ["second", "first"]
