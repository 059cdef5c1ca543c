"""The SQLite store passes the conformance kit against its declared profile."""

from __future__ import annotations

import pytest

from lionmem.adapters.sqlite import (
    SQLITE_PROFILE,
    SQLiteMemoryStore,
)
from lionmem.testing import FidelityProfile, StoreFactory
from lionmem.testing.pytest_plugin import MemoryStoreContract


class TestSQLiteContract(MemoryStoreContract):
    @pytest.fixture
    def memory_store_factory(self) -> StoreFactory:
        return lambda workspace: SQLiteMemoryStore.open(workspace / "memory.db")

    @pytest.fixture
    def memory_store_profile(self) -> FidelityProfile:
        return SQLITE_PROFILE
