"""Runs LangGraph's own store tests with lionmem underneath.

Each `InMemoryStore` those tests make is a `StoreForLangGraph` over the lionmem store
`LIONMEM_LANGGRAPH_STORE` names: `memory`, `sqlite` (a new file each) or `postgres`
(a new namespace each, of the database `LIONMEM_LANGGRAPH_DSN` names). The stores a
test made are closed as it ends. Loaded by tests/integrations/test_langgraph_suite.py.
"""

from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import langgraph.store.memory
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


@pytest.fixture(autouse=True)
def _close_the_stores_made() -> Iterator[None]:
    yield
    while _MADE:
        _MADE.pop().close()


def pytest_configure() -> None:
    langgraph.store.memory.InMemoryStore = InMemoryStore  # type: ignore[misc,assignment]
