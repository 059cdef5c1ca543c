"""Helpers for the PostgreSQL store's tests: a fresh namespace, and a store opened for one scenario."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, LiteralString
from uuid import uuid4

from lionmem.adapters.postgres import (
    PostgresMemoryStore,
)

SRC = str(Path(__file__).resolve().parents[2] / "src")


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def fresh_namespace() -> str:
    return f"t-{uuid4().hex[:20]}"


def with_store(url: str, body: Callable[[PostgresMemoryStore], Awaitable[Any]], **kwargs: Any) -> Any:
    kwargs.setdefault("namespace", fresh_namespace())

    async def scenario() -> Any:
        async with PostgresMemoryStore.open(url, **kwargs) as store:
            return await body(store)

    return run(scenario())


async def open_only(url: str, **kwargs: Any) -> None:
    """Open a store and close it again: for opens that are meant to fail."""
    store = await PostgresMemoryStore.open(url, **kwargs)
    await store.close()


async def execute(
    store: PostgresMemoryStore, statement: LiteralString, params: Sequence[object] = ()
) -> list[tuple[Any, ...]]:
    """The rows of a statement of the test's own, run on the store's pool as its calls are."""
    return await store._connections.execute(statement, params)


def unused_port() -> int:
    """A local port no server listens on (bound and released just now)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port
