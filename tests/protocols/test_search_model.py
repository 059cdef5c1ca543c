"""Property: InMemoryStore.search equals a plain model of the recorded rules."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from lionmem import InMemoryStore, MemoryItem, MemoryQuery

WORDS = st.sampled_from(["", "a", "A", "ab", "Ab", "b", "é", "É", "None", "1", "[", "'"])
TAGS = st.lists(st.sampled_from(["x", "X", "y", "z", ""]), max_size=3)
VALUES = st.sampled_from([None, 0, 1, 1.0, True, False, "1", "x", (1,), [1]])
KEYS = st.sampled_from(["k", "j", "K"])
CONTENT = st.one_of(
    st.none(),
    st.text(alphabet="aAbBéÉ1[' ", max_size=6),
    st.integers(-20, 20),
    st.floats(allow_nan=False, width=16),
    st.lists(WORDS, max_size=3),
    st.dictionaries(WORDS, WORDS, max_size=2),
    st.tuples(WORDS, st.integers(0, 3)),
)


@st.composite
def items(draw: st.DrawFn) -> MemoryItem:
    return MemoryItem(
        content=draw(CONTENT),
        tags=draw(TAGS),
        metadata=draw(st.dictionaries(KEYS, VALUES, max_size=2)),
    )


QUERIES = st.builds(
    MemoryQuery,
    text=st.one_of(st.none(), WORDS, st.text(alphabet="abAB1é", max_size=3)),
    tags=st.one_of(st.none(), TAGS),
    filters=st.one_of(st.none(), st.dictionaries(KEYS, VALUES, max_size=2)),
    limit=st.integers(-8, 12),
)


def model_search(stored: dict[Any, MemoryItem], query: MemoryQuery) -> list[MemoryItem]:
    """The rules of ADR-0092 D3, written as plainly as possible."""
    results = list(stored.values())
    if query.text:
        results = [r for r in results if query.text.lower() in str(r.content).lower()]
    if query.tags:
        results = [r for r in results if set(query.tags) & set(r.tags)]
    if query.filters:
        results = [r for r in results if all(r.metadata.get(k) == v for k, v in query.filters.items())]
    return results[: query.limit]


@settings(max_examples=300, deadline=None)
@given(
    batch=st.lists(items(), max_size=15),
    replacements=st.lists(st.tuples(st.integers(0, 14), items()), max_size=4),
    queries=st.lists(QUERIES, min_size=1, max_size=4),
)
def test_search_equals_the_model(
    batch: list[MemoryItem],
    replacements: list[tuple[int, MemoryItem]],
    queries: list[MemoryQuery],
) -> None:
    store = InMemoryStore()
    stored: dict[Any, MemoryItem] = {}

    async def scenario() -> None:
        for item in batch:
            await store.store(item)
            stored[item.id] = item
        for index, fresh in replacements:
            if batch:
                target = batch[index % len(batch)]
                replacement = MemoryItem(id=target.id, content=fresh.content, tags=fresh.tags, metadata=fresh.metadata)
                await store.store(replacement)
                stored[target.id] = replacement
        for query in queries:
            found = await store.search(query)
            expected = model_search(stored, query)
            assert [id(i) for i in found] == [id(i) for i in expected]

    asyncio.run(scenario())
