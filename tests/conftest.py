"""Shared fixtures: a real PostgreSQL server for the adapter tests."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pg_server import postgres_url


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """`LIONMEM_TEST_POSTGRES_URL`, or a throwaway local server started for the run."""
    with postgres_url() as url:
        yield url
