"""The conformance kit as pytest tests, and lionmem's pytest plugin.

Installing lionmem registers this module with pytest (a `pytest11` entry point), so
an adapter's test suite runs the whole contract against its store in one line, here
for the reference store:

```python
from lionmem import InMemoryStore
from lionmem.testing import REFERENCE_PROFILE
from lionmem.testing.pytest_plugin import memory_store_contract

TestInMemoryStore = memory_store_contract(InMemoryStore, REFERENCE_PROFILE)
```

Every check becomes one test of that class, named after its dimension. The plugin
also registers the `memory_store(factory, profile)` marker, which names the store
for a `MemoryStoreContract` subclass; a subclass may instead give the fixtures
`memory_store_factory` and `memory_store_profile`. See [ADR-0093][adr-0093].
"""

from __future__ import annotations

from typing import Any, Literal, overload

import pytest

from lionmem.protocols.profile import FidelityProfile
from lionmem.testing._harness import LionagiStoreFactory, StoreFactory
from lionmem.testing.kit import CHECKS, ConformanceKit

__all__ = ["MemoryStoreContract", "memory_store_contract"]

MARKER = "memory_store"


def pytest_configure(config: pytest.Config) -> None:
    """Register the `memory_store` marker, so that `--strict-markers` accepts it."""
    config.addinivalue_line(
        "markers",
        f"{MARKER}(factory, profile, *, stateful_examples=60, timeout=30.0, lionagi=False): the store a "
        "MemoryStoreContract class checks, and the options of its ConformanceKit",
    )


class MemoryStoreContract:
    """The whole contract, one test per check.

    Name the store with the `memory_store` marker (as
    [`memory_store_contract`][lionmem.testing.pytest_plugin.memory_store_contract]
    does), or give the fixtures `memory_store_factory` (a `StoreFactory`) and
    `memory_store_profile` (a `FidelityProfile`) in a subclass.

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
    def memory_store_kit(self, request: pytest.FixtureRequest) -> ConformanceKit:
        """The kit bound to the store the marker names, or to the two fixtures."""
        marker = request.node.get_closest_marker(MARKER)
        if marker is None:
            factory: StoreFactory = request.getfixturevalue("memory_store_factory")
            profile: FidelityProfile = request.getfixturevalue("memory_store_profile")
            return ConformanceKit(factory, profile)
        return ConformanceKit(*marker.args, **marker.kwargs)

    @pytest.mark.parametrize("check", CHECKS)
    def test_conformance(self, memory_store_kit: ConformanceKit, check: str) -> None:
        """One check of the contract; a failure names the dimension and a reproduction."""
        memory_store_kit.assert_check(check)


@overload
def memory_store_contract(
    factory: StoreFactory,
    profile: FidelityProfile,
    *,
    stateful_examples: int = 60,
    timeout: float | None = 30.0,
    lionagi: Literal[False] = False,
) -> type[MemoryStoreContract]: ...


@overload
def memory_store_contract(
    factory: LionagiStoreFactory,
    profile: FidelityProfile,
    *,
    stateful_examples: int = 60,
    timeout: float | None = 30.0,
    lionagi: Literal[True],
) -> type[MemoryStoreContract]: ...


def memory_store_contract(
    factory: StoreFactory | LionagiStoreFactory,
    profile: FidelityProfile,
    *,
    stateful_examples: int = 60,
    timeout: float | None = 30.0,
    lionagi: bool = False,
) -> type[MemoryStoreContract]:
    """A `MemoryStoreContract` class for `factory`'s stores, to bind to a name that
    pytest collects (one starting with `Test`).

    The options are [`ConformanceKit`][lionmem.testing.kit.ConformanceKit]'s, and
    typed as its are: a factory of lionmem stores goes without `lionagi`, one of
    stores written against lionagi's types with `lionagi=True`.

    Raises:
        TypeError: as `ConformanceKit` does, for a factory that is not callable, a
            profile that is not a `FidelityProfile`, or an option of the wrong type;
            at once, not when the tests run.
    """
    options: dict[str, Any] = {"stateful_examples": stateful_examples, "timeout": timeout, "lionagi": lionagi}
    ConformanceKit(factory, profile, **options)  # refuse bad arguments here
    marked = pytest.mark.memory_store(factory, profile, **options)
    return marked(type("MemoryStoreContractFor", (MemoryStoreContract,), {}))
