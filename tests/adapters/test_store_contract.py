"""Every durable store passes the shared store contract, `store_contract.STORE_CHECKS`:
each check runs once against each store, on a fresh file or namespace."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.support.postgres_support import with_store as with_postgres_store
from tests.support.sqlite_support import with_store as with_sqlite_store
from tests.support.store_contract import STORE_CHECKS, StoreCheck

StoreRunner = Callable[[StoreCheck], object]
"""Runs a check against a fresh store of one kind."""


@pytest.fixture(params=["sqlite", "postgres"])
def on_a_fresh_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StoreRunner]:
    if request.param == "sqlite":
        yield lambda check: with_sqlite_store(tmp_path / "m.db", check)
    else:
        pg_url: str = request.getfixturevalue("pg_url")
        yield lambda check: with_postgres_store(pg_url, check)


@pytest.mark.parametrize("check", STORE_CHECKS, ids=[c.__name__.removeprefix("assert_") for c in STORE_CHECKS])
def test_each_durable_store_passes_the_shared_contract(on_a_fresh_store: StoreRunner, check: StoreCheck) -> None:
    on_a_fresh_store(check)
