"""Runs LangGraph's own store tests with lionmem underneath.

Each store those tests make (`InMemoryStore(...)`, and `from_conn_string(...)` of the
SQLite and PostgreSQL stores, sync and async) is a `StoreForLangGraph` over the lionmem
store `LIONMEM_LANGGRAPH_STORE` names: `memory`, `sqlite` (a new file each) or
`postgres` (a new namespace each, of the database `LIONMEM_LANGGRAPH_DSN` names). The
stores a test made are closed as it ends. Loaded by
tests/integrations/test_langgraph_suite.py.

A connection string names a database the items are not kept in: the PostgreSQL
store's tests make one for each store on the server `LIONMEM_LANGGRAPH_SERVER` names
(their `DEFAULT_URI`, pointed there), and SQL they run through the store's `_cursor()`
runs in it, where their store's tables are not.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import Future
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import langgraph.store.memory
import langgraph.store.postgres
import langgraph.store.postgres.aio
import langgraph.store.sqlite
import langgraph.store.sqlite.aio
import psycopg
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


class PostgresStore(InMemoryStore):
    """LangGraph's `PostgresStore.from_conn_string(...)`, on lionmem; its connection
    settings (`pipeline`, `pool_config`) are set aside."""

    MIGRATIONS: list[Any] = []  # noqa: RUF012 - their fixtures rewrite their store's schema steps: none here

    @classmethod
    @contextmanager
    def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None, **connection: Any
    ) -> Iterator[PostgresStore]:
        made = cls(index=index, ttl=ttl)
        made.conn_string = conn_string
        yield made

    conn_string = ""

    @contextmanager
    def _cursor(self) -> Iterator[psycopg.Cursor[Any]]:
        with psycopg.connect(self.conn_string, autocommit=True) as conn, conn.cursor() as cursor:
            yield cursor


class AsyncPostgresStore(AsyncSqliteStore):
    """LangGraph's `AsyncPostgresStore.from_conn_string(...)`, on lionmem."""

    MIGRATIONS: list[Any] = []  # noqa: RUF012 - as PostgresStore's

    @classmethod
    @asynccontextmanager
    async def from_conn_string(
        cls, conn_string: str, *, index: Any = None, ttl: Any = None, **connection: Any
    ) -> AsyncIterator[StoreForLangGraph]:
        async with cls.open(_opening(index), index=index, ttl=ttl) as store:
            store.conn_string = conn_string
            yield store

    conn_string = ""

    @asynccontextmanager
    async def _cursor(self) -> AsyncIterator[psycopg.AsyncCursor[Any]]:
        async with (
            await psycopg.AsyncConnection.connect(self.conn_string, autocommit=True) as conn,
            conn.cursor() as cursor,
        ):
            yield cursor


@pytest.fixture(autouse=True)
def _close_the_stores_made() -> Iterator[None]:
    yield
    while _MADE:
        _MADE.pop().close()


def pytest_configure(config: pytest.Config) -> None:
    # LangGraph's CI reruns tests so marked (pytest-retry); here each runs once.
    config.addinivalue_line("markers", "flaky(retries): rerun by LangGraph's CI")
    for module, replaced in [
        (langgraph.store.memory, InMemoryStore),
        (langgraph.store.sqlite, SqliteStore),
        (langgraph.store.sqlite, AsyncSqliteStore),
        (langgraph.store.sqlite.aio, AsyncSqliteStore),
        (langgraph.store.postgres, PostgresStore),
        (langgraph.store.postgres, AsyncPostgresStore),
        (langgraph.store.postgres.aio, AsyncPostgresStore),
    ]:
        setattr(module, replaced.__name__, replaced)
    server = os.environ.get("LIONMEM_LANGGRAPH_SERVER")
    their_conftest: Any = sys.modules.get("tests.conftest")
    if server and hasattr(their_conftest, "DEFAULT_URI"):  # the PostgreSQL store's tests
        their_conftest.DEFAULT_URI = server
