"""The kit's `paging` check (ADR-0105 D3): it passes the three stores, fails a store
that declares paging and pages by offset, repeats, loses its place or takes what it
should refuse, and leaves a store that declares nothing unchecked."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.protocols.paging import Page, check_page, cursor_of
from lionmem.protocols.rules import matches
from lionmem.testing import ConformanceKit, Paging
from tests.support.kit_doubles import DICT_PROFILE, DictStore, assert_the_three_stores_pass

DECLARED = dataclasses.replace(DICT_PROFILE, paging=Paging.REFERENCE)


class PagingDict(DictStore):
    """Pages by each item's position, as the reference does; each subclass below
    breaks it in one place."""

    def __init__(self) -> None:
        super().__init__()
        self.positions: dict[Any, int] = {}
        self.last = 0

    async def store(self, item: MemoryItem) -> Any:
        if item.id not in self.positions:
            self.last += 1
            self.positions[item.id] = self.last
        return await super().store(item)

    async def delete(self, item_id: Any) -> bool:
        deleted = await super().delete(item_id)
        self.positions.pop(item_id, None)
        return deleted

    def following(self, query: MemoryQuery, start: int) -> list[MemoryItem]:
        return [i for i in self.items.values() if self.positions[i.id] > start and matches(i, query)]

    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        size, start = check_page(query, after)
        found = self.following(query, start)
        if len(found) <= size:
            return Page(found, None)
        return Page(found[:size], cursor_of(self.positions[found[size - 1].id]))


class ByOffset(PagingDict):
    """Counts matches to skip: one deleted before the cursor shifts the rest."""

    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        size, start = check_page(query, after)
        found = [i for i in self.items.values() if matches(i, query)][start:]
        return Page(found[:size], cursor_of(start + size) if len(found) > size else None)


class RepeatsTheLast(PagingDict):
    def following(self, query: MemoryQuery, start: int) -> list[MemoryItem]:
        return [i for i in self.items.values() if self.positions[i.id] >= start and matches(i, query)]


class StopsEarly(PagingDict):
    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        return Page((await super().search_page(query, after)).items, None)


class NeverEnds(PagingDict):
    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        return Page((await super().search_page(query, after)).items, "1")


class TakesAnyLimit(PagingDict):
    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        if query.limit < 1:
            return Page([], None)
        return await super().search_page(query, after)


class TakesAnyCursor(PagingDict):
    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        return await super().search_page(query, None if after == "not a cursor" else after)


class MovesReplacements(PagingDict):
    """A replacement comes last, as a delete and an insert would make it."""

    async def store(self, item: MemoryItem) -> Any:
        self.positions.pop(item.id, None)
        self.items.pop(item.id, None)
        return await super().store(item)


class WithoutForgetting:
    """Paging on the three methods alone: nothing to delete."""

    def __init__(self) -> None:
        self.items: dict[Any, MemoryItem] = {}

    async def store(self, item: MemoryItem) -> Any:
        self.items[item.id] = item.model_copy(deep=True)
        return item.id

    async def retrieve(self, item_id: Any) -> MemoryItem | None:
        return self.items.get(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return [i for i in self.items.values() if matches(i, query)][: query.limit]

    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        size, start = check_page(query, after)
        found = [i for n, i in enumerate(self.items.values(), start=1) if n > start and matches(i, query)]
        if len(found) <= size:
            return Page(found, None)
        return Page(found[:size], cursor_of(list(self.items).index(found[size - 1].id) + 1))


def test_the_three_stores_pass() -> None:
    assert_the_three_stores_pass("paging", "a PagingStore whose cursors are positions", paging=Paging.REFERENCE)


@pytest.mark.parametrize("store", [PagingDict, WithoutForgetting])
def test_a_faithful_double_passes(store: Callable[[], Any]) -> None:
    result = ConformanceKit(store, DECLARED).check("paging")
    assert result.passed, str(result)


@pytest.mark.parametrize(
    ("store", "observed"),
    [
        (ByOffset, "after the first page's cursor, its item deleted and another stored, the pages held [5, 6, 7"),
        (RepeatsTheLast, "the pages of MemoryQuery(limit=3) held [[1, 2, 3], [3, 4, 5]"),
        (StopsEarly, "the pages of MemoryQuery(limit=3) held [[1, 2, 3]]"),
        (NeverEnds, "the pages of MemoryQuery(limit=3) held [[1, 2, 3], [2, 3, 4]"),
        (TakesAnyLimit, "store.search_page(MemoryQuery(limit=0), None) returned a page, where ValueError"),
        (TakesAnyCursor, "store.search_page(MemoryQuery(limit=3), 'not a cursor') returned a page"),
        (MovesReplacements, "the pages held [5, 6, 7, 8, 4, 9]"),
        (DictStore, "not a PagingStore"),
    ],
)
def test_a_store_declaring_paging_fails_where_it_pages_otherwise(store: Callable[[], Any], observed: str) -> None:
    result = ConformanceKit(store, DECLARED).check("paging")
    assert not result.passed
    assert observed in result.observed, result.observed
    assert "leave paging undeclared (Paging.UNDECLARED)" in str(result)


def test_a_store_that_declares_nothing_is_not_checked() -> None:
    kit = ConformanceKit(ByOffset, DICT_PROFILE)
    assert kit.declared("paging") == "not declared"
    result = kit.check("paging")
    assert result.passed and result.observed == "not declared" and result.reproduction == ""
