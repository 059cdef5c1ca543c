"""The kit checks the filter operators a profile declares, and that a store refuses
the ones it does not (ADR-0099)."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.filters import OPERATORS, Condition, Ge, Gt, In, Missing, Present
from lionmem.testing import REFERENCE_PROFILE, ConformanceKit, FidelityProfile, StoreFactory
from tests.support.kit_doubles import DICT_PROFILE, DictStore


class GeAsGt(DictStore):
    """Applies `Ge` as `Gt`: the bound itself is left out."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        changed = {k: Gt(v.bound) if isinstance(v, Ge) else v for k, v in (query.filters or {}).items()}
        return super().matches(item, query.model_copy(update={"filters": changed or None}))


class InAsSubstring(DictStore):
    """Applies `In` to a string as a substring test: `In(["a"])` finds "cat"."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        rest: dict[str, Any] = {}
        for key, value in (query.filters or {}).items():
            held = item.metadata.get(key)
            if isinstance(value, In) and isinstance(held, str):
                if not any(str(member) in held for member in value.values):
                    return False
            else:
                rest[key] = value
        return super().matches(item, query.model_copy(update={"filters": rest or None}))


class PresentMatchesNull(DictStore):
    """Takes `Present` for "the key is there", `null` or not."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        present = [k for k, v in (query.filters or {}).items() if isinstance(v, Present)]
        rest = {k: v for k, v in (query.filters or {}).items() if k not in present}
        return all(k in item.metadata for k in present) and super().matches(
            item, query.model_copy(update={"filters": rest or None})
        )


class ComparesConditionsAsText(DictStore):
    """Knows no operator, and compares its text with the value's: it neither applies
    one nor refuses it."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        filters = query.filters or {}
        if any(isinstance(v, Condition) for v in filters.values()):
            return all(str(item.metadata.get(k)) == str(v) for k, v in filters.items())
        return super().matches(item, query)


class RefusesOperators(DictStore):
    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        if any(isinstance(v, Condition) for v in (query.filters or {}).values()):
            raise NotImplementedError("no filter operators")
        return super().matches(item, query)


WRONG: list[tuple[StoreFactory, str]] = [
    (GeAsGt, "Ge(1) found [5, 6], where the reference rule finds [4, 5, 6]"),
    (InAsSubstring, "In(['a', 3]) found [6, 7, 8], where the reference rule finds [6, 7]"),
    (
        PresentMatchesNull,
        "Present() found [2, 3, 4, 5, 6, 7, 8, 9, 10, 11], where the reference rule finds [3, 4, 5, 6, 7, 8, 9, 10, 11]",
    ),
    (ComparesConditionsAsText, "Ne(1) found [], where the reference rule finds [1, 2, 3, 5, 6, 7, 8, 9, 10, 11]"),
]


@pytest.mark.parametrize(("factory", "observed"), WRONG, ids=[w[0].__name__ for w in WRONG])
def test_an_operator_applied_wrongly_fails_the_check_naming_it(factory: StoreFactory, observed: str) -> None:
    result = ConformanceKit(factory, DICT_PROFILE).check("filter_operators")
    assert (result.passed, result.observed) == (False, observed)


@pytest.mark.parametrize(
    ("factory", "observed"),
    [
        (
            GeAsGt,
            "search(MemoryQuery(filters={'k': Ge(0)}, limit=18446744073709551616)) returned ids [], the reference [5] (most likely filter_operators)",
        ),
        (
            PresentMatchesNull,
            "search(MemoryQuery(filters={'k': Present()}, limit=18446744073709551616)) returned ids [5], the reference [] (most likely filter_operators)",
        ),
    ],
    ids=["GeAsGt", "PresentMatchesNull"],
)
def test_the_stateful_comparison_searches_with_operators_at_each_values_edge(
    factory: StoreFactory, observed: str
) -> None:
    result = ConformanceKit(factory, DICT_PROFILE).check("stateful")
    assert (result.passed, result.observed) == (False, observed)


def test_a_store_refusing_what_it_does_not_declare_passes_and_one_answering_fails() -> None:
    none = dataclasses.replace(DICT_PROFILE, filter_operators=frozenset())
    kit = ConformanceKit(RefusesOperators, none)
    assert kit.declared("filter_operators") == "none"
    assert kit.check("filter_operators").passed and kit.check("stateful").passed
    answering = ConformanceKit(
        InMemoryStore, dataclasses.replace(REFERENCE_PROFILE, filter_operators=frozenset({Missing}))
    )
    result = answering.check("filter_operators")
    assert (result.passed, result.observed) == (
        False,
        "Ne(1), not declared, was not refused: it found [1, 2, 3, 5, 6, 7, 8, 9, 10, 11]",
    )
    refused = ConformanceKit(RefusesOperators, DICT_PROFILE).check("filter_operators")
    assert (refused.passed, refused.observed) == (False, "raised NotImplementedError: no filter operators")


def test_the_reference_declares_every_operator() -> None:
    assert REFERENCE_PROFILE.filter_operators == OPERATORS
    result = ConformanceKit(InMemoryStore, REFERENCE_PROFILE).check("filter_operators")
    assert (
        result.passed
        and result.declared == result.observed == "AllOf, AnyOf, Ge, Gt, In, Le, Lt, Missing, Ne, NotIn, Present"
    )


@pytest.mark.parametrize("value", [{Ge}, frozenset({int}), frozenset({Condition}), "Ge"])
def test_a_profile_names_operators_as_a_frozenset_of_them(value: Any) -> None:
    with pytest.raises(TypeError, match="filter_operators must be a frozenset of operators among AllOf, AnyOf"):
        FidelityProfile(filter_operators=value)
