"""The kit's `namespaces` check (ADR-0105 D1): it passes the three stores, fails a
store that declares namespaces and lets one leak into another in any of the ways
below, and leaves a store that declares nothing unchecked."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.protocols.rules import matches
from lionmem.testing import ConformanceKit, Namespaces
from tests.support.kit_doubles import DICT_PROFILE, DictStore, assert_the_three_stores_pass

DECLARED = dataclasses.replace(DICT_PROFILE, namespaces=Namespaces.REFERENCE)


class NamespacedDict(DictStore):
    """A dict store per namespace, the namespaces in one shared dict: the reference's
    rule, which each subclass below breaks in one place."""

    def __init__(self, namespace: str = "home", shelf: dict[str, NamespacedDict] | None = None) -> None:
        super().__init__()
        self._namespace = namespace
        self.shelf: dict[str, NamespacedDict] = {} if shelf is None else shelf
        self.shelf.setdefault(namespace, self)
        self.items = self.shelf[namespace].items

    @property
    def namespace(self) -> str:
        return self._namespace

    def in_namespace(self, namespace: str) -> Any:
        return self.shelf.get(namespace) or type(self)(namespace, self.shelf)

    async def namespaces(self) -> list[str]:
        return sorted(name for name, store in self.shelf.items() if store.items)


class SharedItems(NamespacedDict):
    """Every namespace writes one dict: the same id in two is one item."""

    def in_namespace(self, namespace: str) -> Any:
        other = type(self)(namespace, {})
        other.items = self.items
        return other


class RetrievesFirst(NamespacedDict):
    """Finds an id in the first namespace that holds it."""

    async def retrieve(self, item_id: Any) -> MemoryItem | None:
        return next((store.items[item_id] for store in self.shelf.values() if item_id in store.items), None)


class SearchesEverything(NamespacedDict):
    """Reads by id apart, but searches every namespace."""

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        found = [i for store in self.shelf.values() for i in store.items.values() if self.matches(i, query)]
        return found[: query.limit]


class ListsEmpty(NamespacedDict):
    """Lists every namespace it was asked for, empty or not."""

    async def namespaces(self) -> list[str]:
        return sorted(self.shelf)


class ListsUnordered(NamespacedDict):
    async def namespaces(self) -> list[str]:
        return sorted((name for name, store in self.shelf.items() if store.items), reverse=True)


class CountsEverything(NamespacedDict):
    async def count(self, query: MemoryQuery) -> int:
        return sum(1 for store in self.shelf.values() for i in store.items.values() if self.matches(i, query))


class DeletesEverywhere(NamespacedDict):
    async def delete_matching(self, query: MemoryQuery) -> int:
        deleted = 0
        for store in self.shelf.values():
            doomed = [i.id for i in store.items.values() if self.matches(i, query)]
            for item_id in doomed:
                del store.items[item_id]
            deleted += len(doomed)
        return deleted


class OthersSeeHome(NamespacedDict):
    """Every namespace but the first searches the first one's items too."""

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        first = next(iter(self.shelf.values()))
        found = await super().search(query)
        extra = [] if first is self else [i for i in first.items.values() if self.matches(i, query)]
        return (found + extra)[: query.limit]


class DeletesHomeToo(NamespacedDict):
    """Says it deleted its own items, and deletes the first namespace's as well."""

    async def delete_matching(self, query: MemoryQuery) -> int:
        for store in self.shelf.values():
            if store is not self:
                store.items.clear()
        return await super().delete_matching(query)


class ListsOnceWritten(NamespacedDict):
    """Lists every namespace that ever held an item."""

    def __init__(self, namespace: str = "home", shelf: dict[str, NamespacedDict] | None = None) -> None:
        super().__init__(namespace, shelf)
        home = next(iter(self.shelf.values()))
        # One record for the database, kept by its first store.
        self.written: set[str] = home.written if isinstance(home, ListsOnceWritten) and home is not self else set()

    async def store(self, item: MemoryItem) -> Any:
        self.written.add(self.namespace)
        return await super().store(item)

    async def namespaces(self) -> list[str]:
        return sorted(self.written)


class WithoutForgetting:
    """Namespaces on the three methods alone: no delete to check."""

    def __init__(self, namespace: str = "home", shelf: dict[str, dict[Any, MemoryItem]] | None = None) -> None:
        self.namespace = namespace
        self.shelf: dict[str, dict[Any, MemoryItem]] = {} if shelf is None else shelf
        self.items = self.shelf.setdefault(namespace, {})

    async def store(self, item: MemoryItem) -> Any:
        self.items[item.id] = item.model_copy(deep=True)
        return item.id

    async def retrieve(self, item_id: Any) -> MemoryItem | None:
        return self.items.get(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return [i for i in self.items.values() if matches(i, query)][: query.limit]

    def in_namespace(self, namespace: str) -> WithoutForgetting:
        return WithoutForgetting(namespace, self.shelf)

    async def namespaces(self) -> list[str]:
        return sorted(name for name, items in self.shelf.items() if items)


class NamedWrongly(NamespacedDict):
    def in_namespace(self, namespace: str) -> Any:
        return type(self)(namespace.upper(), self.shelf)


def test_the_three_stores_pass() -> None:
    assert_the_three_stores_pass(
        "namespaces", "a NamespacedStore that keeps its namespaces apart", namespaces=Namespaces.REFERENCE
    )


@pytest.mark.parametrize("store", [NamespacedDict, WithoutForgetting])
def test_a_faithful_double_passes(store: Callable[[], Any]) -> None:
    result = ConformanceKit(store, DECLARED).check("namespaces")
    assert result.passed, str(result)


@pytest.mark.parametrize(
    ("store", "observed"),
    [
        (SharedItems, "store.retrieve(UUID(int=1)) returned"),
        (RetrievesFirst, "other.retrieve(UUID(int=1)) returned"),
        (SearchesEverything, "a search for everything at home found [1, 1, 2]"),
        (ListsEmpty, "store.namespaces() listed an empty namespace"),
        (ListsUnordered, "store.namespaces() returned"),
        (CountsEverything, "other.count(MemoryQuery()) returned 3, where 2"),
        (DeletesEverywhere, "other.delete_matching(...) deleted 3, where its own 2"),
        (NamedWrongly, ".namespace is 'KIT-"),
        (OthersSeeHome, "in 'kit-"),
        (DeletesHomeToo, "the home namespace held [], where [1]"),
        (ListsOnceWritten, "was emptied"),
        (DictStore, "not a NamespacedStore"),
    ],
)
def test_a_store_declaring_namespaces_fails_where_one_leaks(store: Callable[[], Any], observed: str) -> None:
    result = ConformanceKit(store, DECLARED).check("namespaces")
    assert not result.passed
    assert observed in result.observed, result.observed
    assert "leave namespaces undeclared (Namespaces.UNDECLARED)" in str(result)
    if store is not DictStore:
        assert "other = store.in_namespace('kit-" in result.reproduction


def test_a_store_that_declares_nothing_is_not_checked() -> None:
    kit = ConformanceKit(SearchesEverything, DICT_PROFILE)
    assert kit.declared("namespaces") == "not declared"
    result = kit.check("namespaces")
    assert result.passed and result.observed == "not declared" and result.reproduction == ""
