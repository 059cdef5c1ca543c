"""The kit checks the `ForgettingStore` extension: a store declaring it must delete as
the reference does, and one that does not must say so (ADR-0100)."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from uuid import UUID

import pytest

from lionmem import ForgettingStore, InMemoryStore, MemoryItem, MemoryQuery
from lionmem.testing import REFERENCE_PROFILE, ConformanceKit, Forgetting, StoreFactory
from tests.support.kit_doubles import (
    DICT_PROFILE,
    CountsUnderTheLimit,
    DeletesAtTheCutoff,
    DeletesEveryMatch,
    DeletesIdById,
    DeletesTheFirstIdOnly,
    DictStore,
    KeepsTheOldPlace,
)


class ThreeMethods:
    """The reference with only the three methods of `MemoryStore`."""

    def __init__(self) -> None:
        self.reference = InMemoryStore()

    async def store(self, item: MemoryItem) -> UUID:
        return await self.reference.store(item)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return await self.reference.retrieve(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return await self.reference.search(query)


NOT_OFFERED = dataclasses.replace(REFERENCE_PROFILE, forgetting=Forgetting.NOT_OFFERED)

WRONG: list[tuple[StoreFactory, str]] = [
    (DeletesEveryMatch, "delete_matching returned 4, where search with the same query found 1"),
    (DeletesTheFirstIdOnly, "delete_many of an unknown id and a stored one given twice returned 0, not 1"),
    (
        DeletesIdById,
        "after delete_many raised for the id 7.5, search lists ids [2, 3, 5, 6, 8], where [2, 3, 5, 6, 7, 8] are left",
    ),
    (KeepsTheOldPlace, "after storing a deleted id again, search lists ids [1, 7, 8], where [7, 8, 1] are left"),
    (CountsUnderTheLimit, "count(MemoryQuery(limit=2)) of 8 items returned 2; a count takes no limit"),
    (DeletesAtTheCutoff, "delete_created_before(106.0) returned 3, not 2"),
]


def test_the_reference_and_a_dict_that_forgets_pass_the_check() -> None:
    for factory, profile in ((InMemoryStore, REFERENCE_PROFILE), (DictStore, DICT_PROFILE)):
        result = ConformanceKit(factory, profile).check("forgetting")
        assert (result.passed, result.declared, result.observed) == (
            True,
            Forgetting.REFERENCE.value,
            Forgetting.REFERENCE.value,
        )
        calls = result.reproduction.splitlines()
        for call in ("delete(", "delete_many(", "delete_matching(", "count(", "delete_created_before(", "scan("):
            assert any(call in line for line in calls), call


@pytest.mark.parametrize(("factory", "observed"), WRONG, ids=[w[0].__name__ for w in WRONG])
def test_a_store_deleting_wrongly_fails_the_check_naming_the_difference(factory: StoreFactory, observed: str) -> None:
    result = ConformanceKit(factory, DICT_PROFILE).check("forgetting")
    assert (result.passed, result.observed) == (False, observed)
    assert result.reproduction.startswith("isinstance(store, ForgettingStore)\nawait store.store(")


@pytest.mark.parametrize(
    ("factory", "observed"),
    [
        (DeletesEveryMatch, "delete_matching(MemoryQuery(limit=0)) returned 1, the reference 0"),
        (
            KeepsTheOldPlace,
            "search(MemoryQuery(limit=18446744073709551616)) returned ids [5, 10], the reference [10, 5] (most likely result_order)",
        ),
        (CountsUnderTheLimit, "count(MemoryQuery(limit=0)) returned 0, the reference 1"),
        (DeletesAtTheCutoff, "delete_created_before(1767225600.1234567) returned 1, the reference 0"),
    ],
    ids=lambda value: getattr(value, "__name__", "observed"),
)
def test_the_stateful_comparison_mixes_deletions_into_its_calls(factory: StoreFactory, observed: str) -> None:
    result = ConformanceKit(factory, DICT_PROFILE).check("stateful")
    assert (result.passed, result.observed) == (False, observed)
    assert "state.forget(" in result.reproduction


def test_a_store_without_the_extension_passes_when_it_says_so() -> None:
    assert not isinstance(ThreeMethods(), ForgettingStore)
    kit = ConformanceKit(ThreeMethods, NOT_OFFERED)
    assert kit.declared("forgetting") == "not a ForgettingStore"
    result = kit.check("forgetting")
    assert (result.passed, result.observed) == (True, "not a ForgettingStore")
    assert kit.check("stateful").passed


def test_a_store_without_the_extension_fails_when_it_claims_it() -> None:
    kit = ConformanceKit(ThreeMethods, REFERENCE_PROFILE)
    result = kit.check("forgetting")
    assert (result.passed, result.observed) == (False, "not a ForgettingStore")
    stateful = kit.check("stateful")
    assert (stateful.passed, stateful.observed) == (
        False,
        "declares Forgetting.REFERENCE but is not a ForgettingStore",
    )


def test_a_store_with_the_extension_that_denies_it_fails() -> None:
    result = ConformanceKit(InMemoryStore, NOT_OFFERED).check("forgetting")
    assert (result.passed, result.declared, result.observed) == (False, "not a ForgettingStore", "a ForgettingStore")


class CountIgnoresPredicates(DictStore):
    async def count(self, query: MemoryQuery) -> int:
        return len(self.items)


class DeleteReturnsNothing(DictStore):
    async def delete(self, item_id: UUID) -> bool:
        await super().delete(item_id)
        return None  # type: ignore[return-value]  # the fault under test


class DeleteAlwaysSaysTrue(DictStore):
    async def delete(self, item_id: UUID) -> bool:
        await super().delete(item_id)
        return True


class DeleteOnlyUnlists(DictStore):
    """Deletes from the listing only; `retrieve` reads a copy of everything stored."""

    def __init__(self) -> None:
        super().__init__()
        self.every: dict[UUID, MemoryItem] = {}

    async def store(self, item: MemoryItem) -> UUID:
        self.every[item.id] = item
        return await super().store(item)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return self.every.get(item_id)


class DeleteManyOnlyCounts(DictStore):
    async def delete_many(self, item_ids: Iterable[UUID]) -> int:
        return len({i for i in item_ids if i in self.items})


class DeleteManySkipsWhatIsNoId(DictStore):
    async def delete_many(self, item_ids: Iterable[object]) -> int:
        return await super().delete_many([i for i in item_ids if isinstance(i, UUID)])


class DeletesTheLastMatch(DictStore):
    """Deletes as many matches as `search` returns, but from the end."""

    async def delete_matching(self, query: MemoryQuery) -> int:
        found = await self.search(query)
        every = await self.search(query.model_copy(update={"limit": len(self.items)}))
        return self._drop([i.id for i in every[len(every) - len(found) :]])


class AgeOnlyCounted(DictStore):
    async def delete_created_before(self, cutoff: float | datetime) -> int:
        before = cutoff.timestamp() if isinstance(cutoff, datetime) else cutoff
        return sum(i.created_at < before for i in self.items.values())


class ScansInThrees(DictStore):
    def scan(self, batch_size: int = 500) -> AsyncIterator[list[MemoryItem]]:
        return super().scan(batch_size + 1)


class ScansNewestFirst(DictStore):
    async def scan(self, batch_size: int = 500) -> AsyncIterator[list[MemoryItem]]:
        batches = [batch async for batch in super().scan(batch_size)]
        for batch in reversed(batches):
            yield batch[::-1]


class CachedCounts(DictStore):
    """Counts a query's predicates once, and answers from that ever after."""

    def __init__(self) -> None:
        super().__init__()
        self.counted: dict[str, int] = {}

    async def count(self, query: MemoryQuery) -> int:
        key = query.model_dump_json(exclude={"limit"})
        if key not in self.counted:
            self.counted[key] = await super().count(query)
        return self.counted[key]


class StaleIndexAfterDelete(DictStore):
    """Searches with a predicate in everything ever stored, deleted items included."""

    def __init__(self) -> None:
        super().__init__()
        self.ever: dict[UUID, MemoryItem] = {}

    async def store(self, item: MemoryItem) -> UUID:
        self.ever[item.id] = item
        return await super().store(item)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        if not (query.text or query.tags or query.filters):
            return await super().search(query)
        found = [i for i in self.ever.values() if self.matches(i, query)]
        return found[: query.limit]


EACH_STEP: list[tuple[StoreFactory, str]] = [
    (CountIgnoresPredicates, "count by text 'drop' returned 8, where search finds 4"),
    (DeleteReturnsNothing, "delete of a stored id returned None, not True"),
    (DeleteAlwaysSaysTrue, "delete of an id already deleted returned True, not False"),
    (
        DeleteOnlyUnlists,
        "retrieve of a deleted id returned "
        + repr(MemoryItem(id=UUID(int=1), content="keep 1", tags=["keep"], metadata={"kind": "keep"}, created_at=101.0))
        + ", not None",
    ),
    (
        DeleteManyOnlyCounts,
        "after delete_many, search lists ids [2, 3, 4, 5, 6, 7, 8], where [2, 3, 5, 6, 7, 8] are left",
    ),
    (DeleteManySkipsWhatIsNoId, "delete_many of a stored id and 7.5, which is no id, returned 1 instead of raising"),
    (DeletesTheLastMatch, "after delete_matching, search lists ids [2, 3, 5, 7, 8], where [3, 5, 6, 7, 8] are left"),
    (AgeOnlyCounted, "after delete_created_before(106.0), search lists ids [3, 5, 6, 7, 8], where [6, 7, 8] are left"),
    (ScansInThrees, "scan(2) gave batches of [3] items"),
    (ScansNewestFirst, "scan(2) gave ids [1, 8, 7], where [7, 8, 1] are stored"),
    (CachedCounts, "count(MemoryQuery()) returned 8 where 3 items are left"),
    (StaleIndexAfterDelete, "search by text 'drop' still finds the deleted items [2, 3, 5, 6]"),
]


@pytest.mark.parametrize(("factory", "observed"), EACH_STEP, ids=[w[0].__name__ for w in EACH_STEP])
def test_each_step_of_the_check_names_its_own_difference(factory: StoreFactory, observed: str) -> None:
    result = ConformanceKit(factory, DICT_PROFILE).check("forgetting")
    assert (result.passed, result.observed) == (False, observed)
