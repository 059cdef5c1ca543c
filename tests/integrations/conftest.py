"""The stores the integrations' tests run on."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lionmem import InMemoryStore
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from tests.support.pg_server import fresh_database

Opening = Callable[..., Any]
"""Makes a fresh lionmem store, or its opening, given store keywords."""


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opening(request: pytest.FixtureRequest, tmp_path: Path) -> Opening:
    """Makes a fresh lionmem store (or its opening) of each kind, given store keywords."""

    def make(**given: Any) -> Any:
        if request.param == "memory":
            return InMemoryStore(**given)
        if request.param == "sqlite":
            return SQLiteMemoryStore.open(tmp_path / f"{len(list(tmp_path.iterdir()))}.db", **given)
        url = request.getfixturevalue("pgvector_server_url" if "embedder" in given else "pg_url")
        return PostgresMemoryStore.open(fresh_database(url), namespace="langgraph", **given)

    return make
