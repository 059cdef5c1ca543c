"""The reference's matching rules, public in `lionmem.protocols.rules`: each rule alone,
and `InMemoryStore.search` as the slice of the items `matches` keeps, in order."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lionmem import Ge, In, InMemoryStore, MemoryItem, MemoryQuery, Missing, Ne, Present
from lionmem.protocols.rules import any_tag_held, filters_hold, matches, text_matches, with_any_tag, with_filters


def test_text_is_a_case_insensitive_substring_of_str_content_without_wildcards() -> None:
    assert text_matches("The Quick Fox", "QUICK f")
    assert text_matches({"Animal": "FOX"}, "'animal': 'fox'")
    assert text_matches(None, "none")
    assert not text_matches("100 percent", "100%")
    assert text_matches("50% off", "50%") and not text_matches("a_b", "a%b")
    assert text_matches("İ", "i̇")  # lowered on both sides, as str.lower does


def test_tags_match_any_of_case_sensitively() -> None:
    assert any_tag_held(["a", "B"], frozenset({"B", "z"}))
    assert not any_tag_held(["a", "B"], frozenset({"b"}))
    assert not any_tag_held([], frozenset({"a"}))


def test_filters_are_python_equality_with_the_stored_value_on_the_left() -> None:
    assert filters_hold({"n": 1}, [("n", 1.0)]) and filters_hold({"n": True}, [("n", 1)])
    assert filters_hold({}, [("missing", None)]) and filters_hold({"k": None}, [("k", None)])
    assert not filters_hold({"k": 0}, [("k", None)])
    assert filters_hold({"n": 4}, [("n", Ge(3)), ("m", Missing())])
    assert not filters_hold({"n": 4}, [("n", Ge(3)), ("n", Ne(4))])


def test_the_list_forms_keep_order_and_agree_with_the_rules() -> None:
    items = [MemoryItem(tags=[t], metadata={"n": n}) for n, t in enumerate("abab")]
    assert with_any_tag(items, frozenset({"b"})) == [items[1], items[3]]
    assert with_filters(items, [("n", In([0, 3]))]) == [items[0], items[3]]
    assert with_filters(items, [("n", Present()), ("n", Ne(0))]) == items[1:]
    assert with_filters(items, [("n", Present()), ("n", Ne(0)), ("n", Ne(3))]) == items[1:3]


def test_an_empty_query_field_is_no_predicate() -> None:
    item = MemoryItem(content="x", tags=[], metadata={})
    for query in (MemoryQuery(), MemoryQuery(text=""), MemoryQuery(tags=[]), MemoryQuery(filters={})):
        assert matches(item, query)


values = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([1.0, -0.0, 2.5]), st.sampled_from("ab")
)
bounds: st.SearchStrategy[int | float | str] = st.one_of(st.integers(-3, 3), st.sampled_from([1.0, -0.0, 2.5, "a"]))
conditions = st.one_of(values, bounds.map(Ge), values.map(Ne), st.lists(values, max_size=3).map(In), st.just(Missing()))
items = st.builds(
    MemoryItem,
    content=st.one_of(st.text("aAbB %_", max_size=6), st.integers(-20, 20), st.none()),
    tags=st.lists(st.sampled_from(["x", "y", "Y", "z"]), max_size=3),
    metadata=st.dictionaries(st.sampled_from(["k", "n"]), values, max_size=2),
)
queries = st.builds(
    MemoryQuery,
    text=st.one_of(st.none(), st.text("abAB%_ 1", max_size=3)),
    tags=st.one_of(st.none(), st.lists(st.sampled_from(["x", "y", "Y", "q"]), max_size=3)),
    filters=st.one_of(st.none(), st.dictionaries(st.sampled_from(["k", "n"]), conditions, max_size=2)),
    limit=st.integers(-4, 6),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(items, max_size=12), queries)
def test_the_reference_store_returns_the_slice_of_what_matches_keeps(
    stored: list[MemoryItem], query: MemoryQuery
) -> None:
    async def search() -> list[Any]:
        store = InMemoryStore()
        for item in stored:
            await store.store(item)
        return await store.search(query)

    kept = list({item.id: item for item in stored}.values())  # ids are unique here, order kept
    expected = [item for item in kept if matches(item, query)][: query.limit]
    assert asyncio.run(search()) == expected
