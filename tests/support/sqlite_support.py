"""Helpers for the SQLite store's tests: connections of their own, closed after each
test, and a store opened for one scenario."""

from __future__ import annotations

import asyncio
import hashlib
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Literal, TypeVar

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters._codec import encode_item
from lionmem.adapters.sqlite import APPLICATION_ID, MIGRATIONS, SQLiteMemoryStore
from lionmem.adapters.sqlite._checkpoint import CHECKPOINT_AFTER as CHECKPOINT_AFTER

T = TypeVar("T")

SRC = str(Path(__file__).resolve().parents[2] / "src")


_opened: list[sqlite3.Connection] = []


def connect(
    path: str | Path, *, isolation_level: Literal["DEFERRED"] | None = "DEFERRED", check_same_thread: bool = True
) -> sqlite3.Connection:
    """A connection of the test's own, closed when the test ends if not before."""
    db = sqlite3.connect(path, isolation_level=isolation_level, check_same_thread=check_same_thread)
    _opened.append(db)
    return db


def close_opened() -> None:
    """Close what `connect` opened and the test left open; the suite's conftest calls
    it after every test."""
    while _opened:
        _opened.pop().close()


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def with_store(path: Path, body: Callable[[SQLiteMemoryStore], Awaitable[Any]], **kwargs: Any) -> Any:
    async def scenario() -> Any:
        async with SQLiteMemoryStore.open(path, **kwargs) as store:
            return await body(store)

    return run(scenario())


async def traced_search(
    store: SQLiteMemoryStore, query: MemoryQuery, *, newest_first: bool = False
) -> tuple[list[MemoryItem], list[str]]:
    """`query`'s results and the statements that read them (not FTS5's own or the index
    counts), run on the store's own thread; newest first, as `search_newest` reads."""

    def traced() -> tuple[list[MemoryItem], list[str]]:
        captured: list[str] = []
        store._connections.worker.db.set_trace_callback(captured.append)
        try:
            found = store._connections.worker.search(store._space, query, newest_first=newest_first)
        finally:
            store._connections.worker.db.set_trace_callback(None)
        return found, [sql for sql in captured if sql.startswith("SELECT items.")]

    result: tuple[list[MemoryItem], list[str]] = await store._connections.on_writer(traced)
    return result


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def version_one_file(path: Path, items: list[MemoryItem]) -> None:
    """Write `items` to a new file at `path` in schema version 1, as lionmem once did."""
    db = connect(path, isolation_level=None)
    MIGRATIONS[1](db)
    db.executemany(
        "INSERT INTO items (id, created_at, body, folded) VALUES (?, ?, ?, ?)",
        [encode_item(i) for i in items],
    )
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 1")
    db.close()


def hold_write_lock(path: Path) -> sqlite3.Connection:
    """Another connection in the middle of a write, as a process migrating the file
    in rollback-journal mode would be."""
    other = connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE items SET body = body")
    return other


async def on_worker(store: SQLiteMemoryStore, function: Callable[..., T], *args: Any) -> T:
    """`function(*args)` on the store's worker thread, after the calls queued before it."""
    result: T = await store._connections.on_writer(function, *args)
    return result


async def on_writer(store: SQLiteMemoryStore, function: Callable[[sqlite3.Connection], T]) -> T:
    """`function(writer)` on the store's worker thread, with its writer's connection."""
    return await on_worker(store, function, store._connections.worker.db)
