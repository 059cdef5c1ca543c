"""The filter operators: each condition's meaning, with Python's where it has one,
across every type a metadata value takes (ADR-0099)."""

from __future__ import annotations

import asyncio
import json
import math
import operator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import lionmem
from lionmem import InMemoryStore, MemoryItem, MemoryQuery, filters
from lionmem.filters import AllOf, AnyOf, Condition, Ge, Gt, In, Le, Lt, Missing, Ne, NotIn, Present

BIG = 2**53 + 1
HELD: list[Any] = [
    None,
    True,
    False,
    0,
    1,
    1.0,
    -0.0,
    2.5,
    BIG,
    float(2**53),
    2**70,
    "",
    "a",
    "b",
    "B",
    "10",
    [],
    [1],
    {},
    {"a": 1},
]


def _matches(condition: Condition) -> list[Any]:
    return [held for held in HELD if held == condition]


def test_each_name_is_importable_from_lionmem_and_lionmem_filters_as_one_object() -> None:
    operators = ["AllOf", "AnyOf", "Condition", "Ge", "Gt", "In", "Le", "Lt", "Missing", "Ne", "NotIn", "Present"]
    assert sorted(filters.__all__) == sorted([*operators, "OPERATORS"])
    for name in operators:
        assert getattr(lionmem, name) is getattr(filters, name)
    # The set of them is for profiles, which `lionmem.filters` and the kit name.
    assert "OPERATORS" not in lionmem.__all__
    assert filters.OPERATORS == {getattr(filters, name) for name in operators} - {Condition}


def test_order_compares_numbers_exactly_and_strings_by_code_point_and_nothing_else() -> None:
    assert _matches(Ge(1)) == [True, 1, 1.0, 2.5, BIG, float(2**53), 2**70]
    assert _matches(Gt(1)) == [2.5, BIG, float(2**53), 2**70]
    assert _matches(Lt(0.5)) == [False, 0, -0.0]
    assert _matches(Le(0)) == [False, 0, -0.0]
    # Past 2**53 a float cannot tell the integers apart; the comparison still does.
    assert _matches(Gt(float(2**53))) == [BIG, 2**70]
    assert _matches(Le(2**53)) == [True, False, 0, 1, 1.0, -0.0, 2.5, float(2**53)]
    assert _matches(Ge("a")) == ["a", "b"]
    assert _matches(Lt("a")) == ["", "B", "10"]
    assert _matches(Gt(True)) == [2.5, BIG, float(2**53), 2**70]


@pytest.mark.parametrize("held", [None, [1], [2], {"a": 1}, "5"])
def test_order_never_matches_across_types_and_never_raises(held: Any) -> None:
    for condition in (Gt(1), Ge(1), Lt(9), Le(9)):
        assert (held == condition) is False
        assert (condition == held) is False
        assert (held != condition) is True


def test_membership_uses_equality_as_python_does() -> None:
    assert _matches(In([1])) == [True, 1, 1.0]
    assert _matches(In(("a", None))) == [None, "a"]
    assert _matches(In({2.5})) == [2.5]
    assert _matches(In([[1], {"a": 1}])) == [[1], {"a": 1}]
    assert _matches(In([])) == []
    assert _matches(NotIn([1, "a", None])) == [held for held in HELD if held not in (None, True, 1, 1.0, "a")]
    assert None == NotIn([1])  # a missing key is not among them


def test_presence_tells_a_value_from_none_and_a_missing_key() -> None:
    assert _matches(Present()) == HELD[1:]
    assert _matches(Missing()) == [None]
    assert {"k": None}.get("k") != Present()
    empty: dict[str, Any] = {}
    assert empty.get("k") == Missing()


def test_not_equal_and_combinations() -> None:
    assert _matches(Ne(1)) == [held for held in HELD if held not in (True, 1, 1.0)]
    assert None == Ne("x")  # an item without the key differs from "x"
    assert _matches(Ne(None)) == HELD[1:]
    assert _matches(AllOf(Ge(1), Lt(3))) == [True, 1, 1.0, 2.5]
    assert _matches(AnyOf(Lt(0.5), "a", Missing())) == [None, False, 0, -0.0, "a"]
    assert _matches(AnyOf(AllOf(Gt(0), Lt(2)), Ne(Present()))) == [None, True, 1, 1.0]


def test_two_conditions_are_equal_when_they_ask_the_same() -> None:
    assert Ge(3) == Ge(3) and Ge(3) == Ge(3.0) and In([1, 2]) == In((1, 2))
    assert Ge(3) != Gt(3) and Ge(3) != Ge(4) and Present() != Missing()
    assert AnyOf(Ge(1), "a") == AnyOf(Ge(1), "a") and AnyOf(Ge(1)) != AllOf(Ge(1))
    assert MemoryQuery(filters={"k": Ge(3)}) == MemoryQuery(filters={"k": Ge(3)})
    assert MemoryQuery(filters={"k": Ge(3)}) != MemoryQuery(filters={"k": Gt(3)})


def test_a_condition_is_neither_hashable_nor_a_json_value() -> None:
    # A store that would key, index or serialise the value raises instead of
    # answering something else (ADR-0099, D4).
    for condition in (Ge(1), In([1]), Present(), AnyOf(1)):
        with pytest.raises(TypeError, match="unhashable"):
            hash(condition)
        with pytest.raises(TypeError, match="not JSON serializable"):
            json.dumps(condition)


def test_repr_shows_how_to_build_it_again() -> None:
    shown = [Ne("x"), Ge(2.5), Lt("m"), In([1, "a"]), NotIn((None,)), Present(), Missing(), AllOf(Ge(1), Lt(3))]
    assert [repr(c) for c in shown] == [
        "Ne('x')",
        "Ge(2.5)",
        "Lt('m')",
        "In([1, 'a'])",
        "NotIn([None])",
        "Present()",
        "Missing()",
        "AllOf(Ge(1), Lt(3))",
    ]
    namespace = {name: getattr(filters, name) for name in filters.__all__}
    assert [eval(repr(c), namespace) for c in shown] == shown


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: Ge(math.nan), ValueError, "Ge of NaN would match nothing"),
        (lambda: Lt(None), TypeError, "Lt takes a number or a string, got NoneType"),  # type: ignore[arg-type]
        (lambda: Gt([1]), TypeError, "Gt takes a number or a string, got list"),  # type: ignore[arg-type]
        (lambda: In("abc"), TypeError, "In takes a list, tuple or set of values, got str"),  # type: ignore[arg-type]
        (lambda: NotIn({"a": 1}), TypeError, "NotIn takes a list, tuple or set of values, got dict"),  # type: ignore[arg-type]
        (lambda: In([Ge(1)]), TypeError, r"In takes values, not the condition Ge\(1\); use AnyOf"),
        (lambda: AnyOf(), ValueError, "AnyOf needs at least one condition"),
        (lambda: AllOf(), ValueError, "AllOf needs at least one condition"),
    ],
)
def test_a_condition_that_could_not_mean_what_it_says_is_refused(
    build: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        build()


def _python_order(held: Any, bound: Any, compare: Any) -> bool:
    """The rule written another way: Python's comparison where both are numbers or
    both strings (bool counting as a number), else no match."""
    numbers = (int, float)
    if type(held) in (*numbers, bool) and type(bound) in (*numbers, bool):
        return bool(compare(held, bound))
    if type(held) is str and type(bound) is str:
        return bool(compare(held, bound))
    return False


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=2), inner, max_size=2),
    max_leaves=4,
)
bounds = st.integers() | st.floats(allow_nan=False) | st.text(max_size=3) | st.booleans()


@given(held=values, bound=bounds)
def test_orders_agree_with_python_where_both_are_numbers_or_strings(held: Any, bound: Any) -> None:
    for condition, compare in (
        (Gt(bound), operator.gt),
        (Ge(bound), operator.ge),
        (Lt(bound), operator.lt),
        (Le(bound), operator.le),
    ):
        assert (held == condition) is _python_order(held, bound, compare)


@given(held=values, members=st.lists(values, max_size=4))
def test_membership_agrees_with_equality(held: Any, members: list[Any]) -> None:
    assert (held == In(members)) is any(held == m for m in members)
    assert (held == NotIn(members)) is not any(held == m for m in members)


def test_the_reference_store_applies_them_with_its_own_rule() -> None:
    async def search() -> list[MemoryItem]:
        store = InMemoryStore()
        for n in range(6):
            await store.store(MemoryItem(content=str(n), metadata={"n": n} if n else {}))
        return await store.search(MemoryQuery(filters={"n": AnyOf(Missing(), AllOf(Gt(1), Le(3)))}))

    assert [i.content for i in asyncio.run(search())] == ["0", "2", "3"]


def test_holds_and_arguments_answer_without_an_equality() -> None:
    assert Ge(3).holds(5) is True and Ge(3).holds("5") is False
    assert Missing().holds(None) is True and Present().holds(None) is False
    assert AllOf(Ge(1), "x").arguments == (Ge(1), "x") and In({3}).arguments == ([3],)
