"""Runs LangGraph's own store tests with lionmem underneath.

Each store those tests make (`InMemoryStore(...)`, `SqliteStore.from_conn_string(...)`,
`AsyncSqliteStore.from_conn_string(...)`) is a `StoreForLangGraph` over the lionmem
store `LIONMEM_LANGGRAPH_STORE` names: `memory`, `sqlite` (a new file each) or
`postgres` (a new namespace each, of the database `LIONMEM_LANGGRAPH_DSN` names); a
connection string is set aside. The stores a test made are closed as it ends. Loaded
by tests/integrations/test_langgraph_suite.py.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import langgraph.store.memory
import langgraph.store.sqlite
import langgraph.store.sqlite.aio
import pytest

import lionmem
from lionmem.integrations.langgraph import EmbedderFromLangGraph, StoreForLangGraph

_MADE: list[StoreForLangGraph] = []


def _opening(index: Any) -> Any:
    embedder = None if index is None else EmbedderFromLangGraph(index)
    kind = os.environ.get("LIONMEM_LANGGRAPH_STORE", "memory")
    if kind == "memory":
        return lionmem.InMemoryStore(embedder=embedder)
    if kind == "sqlite":
        from lionmem.adapters.sqlite import SQLiteMemoryStore

        return SQLiteMemoryStore.open(Path(tempfile.mkdtemp()) / "store.db", embedder=embedder)
    from lionmem.adapters.postgres import PostgresMemoryStore

    namespace = f"lg-{uuid.uuid4().hex[:12]}"
    return PostgresMemoryStore.open(os.environ["LIONMEM_LANGGRAPH_DSN"], namespace=namespace, embedder=embedder)


class InMemoryStore(StoreForLangGraph):
    """LangGraph's `InMemoryStore(index=..., ttl=...)`, on lionmem."""

    def __init__(self, *, index: Any = None, ttl: Any = None) -> None:
        super().__init__(_opening(index), index=index, ttl=ttl)
        _MADE.append(self)


class SqliteStore(InMemoryStore):
    """LangGraph's `SqliteStore.from_conn_string(...)`, on lionmem."""

    @classmethod
    @contextmanager
    def from_conn_string(cls, conn_string: str, *, index: Any = None, ttl: Any = None) -> Iterator[SqliteStore]:
        yield cls(index=index, ttl=ttl)


class AsyncSqliteStore(StoreForLangGraph):
    """LangGraph's `AsyncSqliteStore.from_conn_string(...)`, on lionmem, on the test's
    loop; its async store's methods are the bridge's awaited forms."""

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None
    ) -> AsyncIterator[StoreForLangGraph]:
        async with cls.open(_opening(index), index=index, ttl=ttl) as store:
            yield store

    async def setup(self) -> None:  # type: ignore[override]
        await self.asetup()

    async def sweep_ttl(self) -> int:  # type: ignore[override]
        return await self.asweep_ttl()

    async def start_ttl_sweeper(self, sweep_interval_minutes: float | None = None) -> Future[None]:  # type: ignore[override]
        return await self.astart_ttl_sweeper(sweep_interval_minutes)

    async def stop_ttl_sweeper(self, timeout: float | None = None) -> bool:  # type: ignore[override]
        return await self.astop_ttl_sweeper(timeout)


@pytest.fixture(autouse=True)
def _close_the_stores_made() -> Iterator[None]:
    yield
    while _MADE:
        _MADE.pop().close()


def pytest_configure(config: pytest.Config) -> None:
    # LangGraph's CI reruns tests so marked (pytest-retry); here each runs once.
    config.addinivalue_line("markers", "flaky(retries): rerun by LangGraph's CI")
    langgraph.store.memory.InMemoryStore = InMemoryStore  # type: ignore[misc,assignment]
    langgraph.store.sqlite.SqliteStore = SqliteStore
    langgraph.store.sqlite.AsyncSqliteStore = AsyncSqliteStore
    langgraph.store.sqlite.aio.AsyncSqliteStore = AsyncSqliteStore
