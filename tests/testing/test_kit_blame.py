"""Which dimension the stateful comparison names for a search that differs."""

from __future__ import annotations

import asyncio

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.filters import Ge
from lionmem.testing._blame import likely_dimension

ITEMS = [
    MemoryItem(content="alpha", tags=["a"], metadata={"n": 1}),
    MemoryItem(content="beta", tags=["b"], metadata={"n": 2}),
    MemoryItem(content="alpha beta", tags=["a", "b"], metadata={}),
]
NUMBERS = {item.id.int: n for n, item in enumerate(ITEMS)}


def reference_ids(query: MemoryQuery) -> list[int]:
    async def body() -> list[int]:
        store = InMemoryStore()
        for item in ITEMS:
            await store.store(item)
        return [i.id.int for i in await store.search(query)]

    return asyncio.run(body())


def blamed(query: MemoryQuery, found: list[int]) -> str:
    return likely_dimension(query, [ITEMS[n].id.int for n in found], reference_ids(query), reference_ids)


def test_the_same_items_in_another_order_break_result_order() -> None:
    assert blamed(MemoryQuery(text="alpha"), [2, 0]) == "result_order"


def test_a_wrong_cut_within_the_matches_breaks_limit_policy() -> None:
    assert blamed(MemoryQuery(tags=["a", "b"], limit=1), [1]) == "limit_policy"


def test_an_item_found_that_one_predicate_excludes_blames_that_predicate() -> None:
    assert blamed(MemoryQuery(text="alpha", tags=["b"]), [1, 2]) == "text_match"
    assert blamed(MemoryQuery(text="alpha", tags=["a"]), [0, 1, 2]) == "text_match or tag_match"
    assert blamed(MemoryQuery(text="beta", filters={"n": 2}), [1, 2]) == "filter_equality"
    assert blamed(MemoryQuery(filters={"n": Ge(2)}), [0, 1]) == "filter_operators"
    assert blamed(MemoryQuery(filters={"n": None}), [0, 2]) == "none_filter_matches_missing"


def test_an_item_missed_blames_every_predicate_the_query_has() -> None:
    assert blamed(MemoryQuery(tags=["a", "b"]), [0]) == "tag_match"
    assert blamed(MemoryQuery(text="a", tags=["b"]), [1]) == "text_match or tag_match"
    assert blamed(MemoryQuery(), [0, 1]) == "protocol"
