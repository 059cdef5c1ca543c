"""lionmem's pytest plugin, as an adapter's own test suite meets it: loaded by its
entry point, in a pytest run of its own."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from lionmem import InMemoryStore
from lionmem.testing import CHECKS, REFERENCE_PROFILE, FidelityProfile, ReturnedObjects
from lionmem.testing.pytest_plugin import MemoryStoreContract, memory_store_contract

GUIDE = Path(__file__).resolve().parents[2] / "docs" / "adapters.md"


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.MULTILINE | re.DOTALL)


def test_the_guides_one_line_runs_every_check_on_the_guides_store(pytester: pytest.Pytester) -> None:
    blocks = _python_blocks(GUIDE.read_text(encoding="utf-8"))
    (store,) = [b for b in blocks if "class DictStore:" in b]
    (declared,) = [b for b in blocks if "PROFILE = " in b]
    (one_line,) = [b for b in blocks if "= memory_store_contract(" in b]
    assert len([line for line in one_line.splitlines() if "memory_store_contract(" in line]) == 1
    pytester.makepyfile(test_adapter="\n".join((store, declared, one_line)))
    # A run of its own, as an adapter's suite: the plugin comes from the entry point.
    result = pytester.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(CHECKS))


def test_a_false_declaration_fails_the_check_it_touches_naming_it(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_adapter="""
from lionmem import InMemoryStore
from lionmem.testing import FidelityProfile, ReturnedObjects
from lionmem.testing.pytest_plugin import memory_store_contract

CLAIMED = FidelityProfile(returned_objects=ReturnedObjects.COPIES)
TestClaimingCopies = memory_store_contract(InMemoryStore, CLAIMED, stateful_examples=5)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rf")
    result.assert_outcomes(passed=len(CHECKS) - 1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "E *.ConformanceFailure: returned_objects: declared copies, observed live",
            "FAILED *::TestClaimingCopies::test_conformance?returned_objects?*",
        ]
    )


def test_the_marker_names_the_store_of_a_contract_subclass(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_adapter="""
import pytest

from lionmem import InMemoryStore
from lionmem.testing import REFERENCE_PROFILE
from lionmem.testing.pytest_plugin import MemoryStoreContract


@pytest.mark.memory_store(InMemoryStore, REFERENCE_PROFILE, stateful_examples=5)
class TestMarked(MemoryStoreContract):
    pass
"""
    )
    result = pytester.runpytest_subprocess("--strict-markers", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(CHECKS))


def test_the_marker_is_registered_with_its_signature(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")
    result.stdout.fnmatch_lines(["@pytest.mark.memory_store(factory, profile, *, stateful_examples=60*"])


def test_the_contract_class_carries_the_kits_options() -> None:
    made = memory_store_contract(InMemoryStore, REFERENCE_PROFILE, timeout=7.5, stateful_examples=3)
    assert issubclass(made, MemoryStoreContract)
    (marker,) = made.pytestmark  # type: ignore[attr-defined]
    assert (marker.name, marker.args) == ("memory_store", (InMemoryStore, REFERENCE_PROFILE))
    assert marker.kwargs == {"timeout": 7.5, "stateful_examples": 3, "lionagi": False}


@pytest.mark.parametrize(
    ("arguments", "options", "message"),
    [
        ((None, REFERENCE_PROFILE), {}, "factory must be callable"),
        ((InMemoryStore, "reference"), {}, "profile must be a FidelityProfile"),
        ((InMemoryStore, REFERENCE_PROFILE), {"examples": 5}, "unexpected keyword argument 'examples'"),
    ],
)
def test_bad_arguments_are_refused_when_the_class_is_made(
    arguments: tuple[object, object], options: dict[str, object], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        memory_store_contract(*arguments, **options)  # type: ignore[call-overload]


class TestByMarker(MemoryStoreContract):
    """The suite's own run of a marked class, in this process, where coverage sees it."""

    pytestmark = pytest.mark.memory_store(
        InMemoryStore, FidelityProfile(returned_objects=ReturnedObjects.LIVE), stateful_examples=5
    )
