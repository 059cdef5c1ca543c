"""The PostgreSQL store passes the conformance kit against its declared profile."""

from __future__ import annotations

import pytest

from lionmem.adapters.postgres import (
    POSTGRES_PROFILE,
    PostgresMemoryStore,
)
from lionmem.testing import FidelityProfile, StoreFactory
from lionmem.testing.pytest_plugin import MemoryStoreContract


class TestPostgresContract(MemoryStoreContract):
    @pytest.fixture
    def memory_store_factory(self, pg_url: str) -> StoreFactory:
        return lambda workspace: PostgresMemoryStore.open(pg_url, namespace=workspace.name)

    @pytest.fixture
    def memory_store_profile(self) -> FidelityProfile:
        return POSTGRES_PROFILE
