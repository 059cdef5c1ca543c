"""The kit passes the reference store and a correct store of the tests' own."""

from __future__ import annotations

import pytest

from lionmem import InMemoryStore
from lionmem.testing import (
    REFERENCE_PROFILE,
    FidelityProfile,
    StoreFactory,
)
from lionmem.testing.pytest_plugin import MemoryStoreContract
from tests.support.kit_doubles import DICT_PROFILE, DictStore


class TestReferenceStore(MemoryStoreContract):
    @pytest.fixture
    def memory_store_factory(self) -> StoreFactory:
        return InMemoryStore

    @pytest.fixture
    def memory_store_profile(self) -> FidelityProfile:
        return REFERENCE_PROFILE


class TestDictStore(MemoryStoreContract):
    @pytest.fixture
    def memory_store_factory(self) -> StoreFactory:
        return DictStore

    @pytest.fixture
    def memory_store_profile(self) -> FidelityProfile:
        return DICT_PROFILE
