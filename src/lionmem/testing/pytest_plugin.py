"""The conformance kit as pytest tests.

Subclass `MemoryStoreContract` in an adapter's test suite and provide two fixtures:
`memory_store_factory` (a `StoreFactory`) and `memory_store_profile` (a
`FidelityProfile`). Every check becomes one test, named after its dimension.
See [ADR-0093][adr-0093].
"""

from __future__ import annotations

import pytest

from lionmem.testing._harness import StoreFactory
from lionmem.testing.kit import CHECKS, ConformanceKit
from lionmem.testing.profile import FidelityProfile

__all__ = ["MemoryStoreContract"]


class MemoryStoreContract:
    """The whole contract, one test per check; supply the two fixtures in a subclass.

    Examples:
        ```python
        import pytest

        from lionmem import InMemoryStore
        from lionmem.testing import REFERENCE_PROFILE, FidelityProfile, StoreFactory
        from lionmem.testing.pytest_plugin import MemoryStoreContract


        class TestInMemoryStore(MemoryStoreContract):
            @pytest.fixture
            def memory_store_factory(self) -> StoreFactory:
                return InMemoryStore

            @pytest.fixture
            def memory_store_profile(self) -> FidelityProfile:
                return REFERENCE_PROFILE
        ```
    """

    @pytest.fixture
    def memory_store_kit(
        self, memory_store_factory: StoreFactory, memory_store_profile: FidelityProfile
    ) -> ConformanceKit:
        """The kit bound to the adapter's factory and profile."""
        return ConformanceKit(memory_store_factory, memory_store_profile)

    @pytest.mark.parametrize("check", CHECKS)
    def test_conformance(self, memory_store_kit: ConformanceKit, check: str) -> None:
        """One check of the contract; a failure names the dimension and a reproduction."""
        memory_store_kit.assert_check(check)
