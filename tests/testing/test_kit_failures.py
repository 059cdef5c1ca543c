"""Each way a check can fail, and what the failure reports: observed, declared, reproduction."""

from __future__ import annotations

import copy
import dataclasses
import json
from pathlib import Path
from typing import Any, ClassVar, cast
from uuid import UUID

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.testing import (
    CHECKS,
    REFERENCE_PROFILE,
    ConformanceKit,
    Durability,
    OnExistingId,
    ResultOrder,
    StoreFactory,
    TextMatch,
    Visibility,
)
from tests.support.kit_doubles import (
    DICT_PROFILE,
    BooleansAsIntegers,
    BrokenOrder,
    CaseSensitiveText,
    CopiesClaimingLive,
    DictStore,
    DroppedFilter,
    EmptyFiltersFindNothing,
    EmptyTagsFindNothing,
    IgnoredLimit,
    InventsUnknownIds,
    LimitOverflows,
    LosesConcurrentWrites,
    MicrosecondTimes,
    NumbersAsDoubles,
    RetrieveFindsOnlyTheNewest,
    StaleIndex,
    SubstringTags,
    SyncMethods,
    TupleResults,
    WrongReturnType,
    _with_leaves,
)
from tests.support.kit_stores import REVERSED_PROFILE, STRICT_PROFILE, ReversedStore, StrictStore


class RenamedParameter(DictStore):
    async def search(self, q: MemoryQuery) -> list[MemoryItem]:
        return await super().search(q)


class SearchNeedsANamespace(DictStore):
    async def search(self, query: MemoryQuery, namespace: str) -> list[MemoryItem]:  # type: ignore[override]
        return await super().search(query)


class RetrieveTakesSelfOnly:
    """`retrieve` reads its id from elsewhere; `store` is not a coroutine function (and
    names its parameter otherwise, which the kit leaves unsaid)."""

    def store(self, thing: MemoryItem) -> UUID:
        return thing.id

    async def retrieve(self) -> MemoryItem | None:
        return None

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return []


class WithoutRetrieve:
    async def store(self, item: MemoryItem) -> UUID:
        return item.id

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return []


class ReturnsAFreshUUID(DictStore):
    async def store(self, item: MemoryItem) -> UUID:
        await super().store(item)
        return UUID(int=item.id.int + 1)


class RetrieveUppercases(DictStore):
    """Gives back the item with its id, and its text in capitals."""

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        found = await super().retrieve(item_id)
        return None if found is None else found.model_copy(update={"content": str(found.content).upper()})


class SearchAddsADict(DictStore):
    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return [*await super().search(query), {}]  # type: ignore[list-item]


class NoneFindsFalsy(DictStore):
    """Takes a `None` filter as "no true value", as `not metadata.get(key)` would:
    `{"k": 0}` matches too."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        wanted = (query.filters or {}).items()
        if any(v is None and item.metadata.get(k) for k, v in wanted):
            return False
        rest = {k: v for k, v in wanted if v is not None}
        return super().matches(item, query.model_copy(update={"filters": rest}))


class SortsByCreatedAt(DictStore):
    """Orders results by `created_at`, which follows insertion order only as long as
    callers store items in the order they were made."""

    def order(self, found: list[MemoryItem]) -> list[MemoryItem]:
        return sorted(found, key=lambda i: i.created_at)


class ListsAllButTheFirst(DictStore):
    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return (await super().search(query))[1:]


class ReplacesThenRaises(DictStore):
    """Raises ValueError for an id it holds, after replacing the item all the same."""

    async def store(self, item: MemoryItem) -> UUID:
        held = item.id in self.items
        await super().store(item)
        if held:
            raise ValueError("already stored")
        return item.id


class InventsTextMatches(DictStore):
    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        found = await super().search(query)
        return [*found, MemoryItem(content="invented")] if query.text else found


class ListsEveryVersion(DictStore):
    """Retrieve gives the newest version; search lists every version ever stored."""

    def __init__(self) -> None:
        super().__init__()
        self.versions: list[MemoryItem] = []

    async def store(self, item: MemoryItem) -> UUID:
        self.versions.append(copy.deepcopy(item))
        return await super().store(item)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return [copy.deepcopy(i) for i in self.versions if self.matches(i, query)][: query.limit]


class LiveRetrieveCopiedSearch(DictStore):
    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return self.items.get(item_id)


class LimitIgnoredWithTags(DictStore):
    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        if query.tags:
            query = query.model_copy(update={"limit": 10_000})
        return await super().search(query)


class NegativeLimitFindsNothing(DictStore):
    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return [] if query.limit < 0 else await super().search(query)


class ChangesOnReopen(DictStore):
    """Keeps its items per workspace, and rewrites their content when reopened."""

    backings: ClassVar[dict[Path, dict[UUID, MemoryItem]]] = {}

    def __init__(self, workspace: Path) -> None:
        super().__init__()
        self.items = self.backings.setdefault(workspace, {})
        for key, item in self.items.items():
            self.items[key] = item.model_copy(update={"content": "changed"})


class WritesBeforeRefusing(DictStore):
    async def store(self, item: MemoryItem) -> UUID:
        await super().store(item)
        json.dumps(item.content)  # raises TypeError for a set, after the write
        return item.id


class TuplesComeBackAsLists(DictStore):
    async def store(self, item: MemoryItem) -> UUID:
        if isinstance(item.content, tuple):
            item = item.model_copy(update={"content": list(item.content)})
        return await super().store(item)


class RefusesOnlySets(DictStore):
    async def store(self, item: MemoryItem) -> UUID:
        if isinstance(item.content, set):
            raise TypeError("no sets")
        return await super().store(item)


class WholeTimesAsIntegers(DictStore):
    """Keeps a whole-number timestamp as an integer, as SQLite writes a REAL on disk."""

    async def store(self, item: MemoryItem) -> UUID:
        if item.created_at.is_integer():
            item = item.model_copy(update={"created_at": float(int(item.created_at))})
        return await super().store(item)


class Int64Numbers(DictStore):
    """Reads integers beyond 64 bits back as floats, as a BIGINT column would make it."""

    async def store(self, item: MemoryItem) -> UUID:
        def narrowed(value: Any) -> Any:
            return float(value) if type(value) is int and not -(2**63) <= value < 2**63 else value

        return await super().store(item.model_copy(update={"content": _with_leaves(item.content, narrowed)}))


class UnsignedZero(DictStore):
    """Reads -0.0 back as 0.0, as a column of SQL numerics would."""

    async def store(self, item: MemoryItem) -> UUID:
        def unsigned(value: Any) -> Any:
            return 0.0 if type(value) is float and value == 0 else value

        return await super().store(item.model_copy(update={"content": _with_leaves(item.content, unsigned)}))


_CONTENT_START = "{'a': [1, 2.5, None, True, 'ü✓'], 'b': {'c': ''}, 'big': 1152921504606846976, "

REPORTED: list[tuple[StoreFactory, str, str]] = [
    (WholeTimesAsIntegers, "created_at", "lost (-0.0 came back as 0.0)"),
    (RenamedParameter, "protocol", "search(q: 'MemoryQuery') -> 'list[MemoryItem]' does not take (query)"),
    (WrongReturnType, "protocol", "store returned '00000000-0000-0000-0000-000000000001', not the item's own UUID"),
    (ReturnsAFreshUUID, "protocol", "store returned UUID('00000000-0000-0000-0000-000000000002'), not the item's own"),
    (
        RetrieveUppercases,
        "protocol",
        "retrieve after store returned MemoryItem(id=UUID('00000000-0000-0000-0000-000000000001')",
    ),
    (SearchAddsADict, "protocol", "search returned list, not a list of MemoryItem"),
    (ListsAllButTheFirst, "result_order", "returned [99, 98, 97, 96, 95], not the stored set"),
    (SortsByCreatedAt, "result_order", "ranked"),
    (NoneFindsFalsy, "none_filter_matches_missing", "matched ids [1, 2, 3]"),
    (ReplacesThenRaises, "on_existing_id", "raised, but changed the item"),
    (
        cast("StoreFactory", SearchNeedsANamespace),
        "protocol",
        "search(query: 'MemoryQuery', namespace: 'str') -> 'list[MemoryItem]' does not take (query)",
    ),
    (
        cast("StoreFactory", RetrieveTakesSelfOnly),
        "protocol",
        "store is not a coroutine function; retrieve() -> 'MemoryItem | None' does not take (item_id)",
    ),
    (InventsUnknownIds, "protocol", "retrieve of an unknown id returned MemoryItem("),
    (TupleResults, "protocol", "search returned tuple, not a list of MemoryItem"),
    (InventsTextMatches, "text_match", "text 'hello' returned items that were never stored"),
    (SubstringTags, "tag_match", "another rule"),
    (EmptyTagsFindNothing, "tag_match", "another rule"),
    (EmptyFiltersFindNothing, "filter_equality", "another rule"),
    (ListsEveryVersion, "on_existing_id", "search lists ids [1, 2, 3, 1] after a replacement"),
    (StaleIndex, "on_existing_id", "replaced, but text 'a1', tags ['old'], filters {'v': 'old'} still found it"),
    (LiveRetrieveCopiedSearch, "returned_objects", "mixed: some changes were seen"),
    (LimitIgnoredWithTags, "limit_policy", "limit 0 gave [] and [1, 2, 3, 4, 5]"),
    (NegativeLimitFindsNothing, "limit_policy", "negative limits gave [] and []"),
    (LimitOverflows, "limit_policy", "raised OverflowError: Python int too large"),
    (ChangesOnReopen, "durability", "reopened store returned MemoryItem("),
    (WritesBeforeRefusing, "content", "store raised TypeError for {1, 2} but wrote the item"),
    (TuplesComeBackAsLists, "content", "accepted (1, 2) but returned [1, 2]"),
    (RefusesOnlySets, "content", "refused some non-JSON contents only (items [2])"),
    (NumbersAsDoubles, "content", "JSON content came back as {'a': [1.0, 2.5, None, True, 'ü✓'], 'b'"),
    (BooleansAsIntegers, "content", "JSON content came back as {'a': [1, 2.5, None, 1, 'ü✓'], 'b'"),
    (BooleansAsIntegers, "metadata", "lost ({'nested': {'list': [1, 2.5, None, 1, 'ü✓']}"),
    (Int64Numbers, "content", f"JSON content came back as {_CONTENT_START}'huge': -1.2676506002282294e+30, "),
    (UnsignedZero, "content", f"JSON content came back as {_CONTENT_START}'huge': {-(2**100)}, 'zero': 0.0}}"),
]


@pytest.mark.parametrize(
    ("factory", "dimension", "observed"), REPORTED, ids=[f"{r[0].__name__}-{r[1]}" for r in REPORTED]
)
def test_each_failure_says_what_was_observed(factory: StoreFactory, dimension: str, observed: str) -> None:
    result = ConformanceKit(factory, DICT_PROFILE).check(dimension)
    assert not result.passed
    assert result.observed.startswith(observed), result.observed


class RetrieveKeepsFirstVersion(DictStore):
    """Search sees a replacement; retrieve keeps giving the first version."""

    def __init__(self) -> None:
        super().__init__()
        self.first: dict[UUID, MemoryItem] = {}

    async def store(self, item: MemoryItem) -> UUID:
        self.first.setdefault(item.id, copy.deepcopy(item))
        return await super().store(item)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return copy.deepcopy(self.first.get(item_id))


@pytest.mark.parametrize(
    ("check", "opening", "inside"),
    [
        (
            "stateful",
            "retrieve(UUID(int=5)) returned MemoryItem(id=UUID(int=5)",
            ", the reference MemoryItem(id=UUID(int=5)",
        ),
        ("on_existing_id", "store returned, but retrieve gives MemoryItem(id=UUID('00000000-", "content='a1'"),
    ],
)
def test_a_retrieve_that_missed_a_replacement_is_named(check: str, opening: str, inside: str) -> None:
    result = ConformanceKit(RetrieveKeepsFirstVersion, DICT_PROFILE).check(check)
    assert not result.passed
    assert result.observed.startswith(opening), result.observed
    assert inside in result.observed


def test_concurrent_writes_must_all_be_retrievable_not_only_listed() -> None:
    result = ConformanceKit(RetrieveFindsOnlyTheNewest, DICT_PROFILE).check("concurrent_writes")
    assert (result.passed, result.observed) == (False, "199 of 200 not retrievable, 200 listed by search")


def test_a_rejecting_store_is_observed_to_reject() -> None:
    result = ConformanceKit(StrictStore, STRICT_PROFILE).check("on_existing_id")
    assert (result.passed, result.observed) == (True, OnExistingId.REJECT.value)


class SearchLags(DictStore):
    """Retrieve finds a write at once; search lists it from the second search on."""

    def __init__(self) -> None:
        super().__init__()
        self.searches_since: dict[UUID, int] = {}

    async def store(self, item: MemoryItem) -> UUID:
        self.searches_since[item.id] = 0
        return await super().store(item)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        for item_id in self.searches_since:
            self.searches_since[item_id] += 1
        return [i for i in await super().search(query) if self.searches_since[i.id] > 1]


def test_visibility_needs_search_as_well_as_retrieve_to_see_a_write() -> None:
    immediate = ConformanceKit(SearchLags, DICT_PROFILE).check("visibility")
    assert not immediate.passed
    assert immediate.observed.startswith("not yet visible: retrieve gave MemoryItem(id=UUID("), immediate.observed
    assert immediate.observed.endswith(", search []")
    eventual = dataclasses.replace(DICT_PROFILE, visibility=Visibility.EVENTUAL)
    later = ConformanceKit(SearchLags, eventual).check("visibility")
    assert (later.passed, later.observed) == (True, Visibility.EVENTUAL.value)


class RetrieveNeverFinds(DictStore):
    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return None


def test_an_eventual_store_must_become_visible_to_retrieve_as_well_as_search() -> None:
    eventual = dataclasses.replace(DICT_PROFILE, visibility=Visibility.EVENTUAL)
    result = ConformanceKit(RetrieveNeverFinds, eventual).check("visibility")
    assert (result.passed, result.observed) == (False, "never visible")


class SlicesOnlyFromMinusFive(DictStore):
    """Rejects a limit below -5; slices the other negative limits."""

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        if query.limit < -5:
            raise ValueError("limit below -5")
        return await super().search(query)


class LimitsBeforeFiltering(DictStore):
    """Cuts the stored items at the limit, then applies the predicates, as a store
    reading `LIMIT n` rows and checking them in Python would."""

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        listed = list(self.items.values())[: query.limit]
        return [copy.deepcopy(i) for i in listed if self.matches(i, query)]


def test_the_limit_policy_names_what_each_limit_gave() -> None:
    ignored = ConformanceKit(IgnoredLimit, DICT_PROFILE).check("limit_policy")
    every = [11, 1, 12, 2, 13, 3, 14, 4, 15, 5]
    assert (ignored.passed, ignored.observed) == (False, f"limits 0, 2, 5, 50, 18446744073709551616 gave {[every] * 5}")
    mixed = ConformanceKit(SlicesOnlyFromMinusFive, DICT_PROFILE).check("limit_policy")
    assert (mixed.passed, mixed.observed) == (False, f"negative limits gave {every[:-2]} and None")
    early = ConformanceKit(LimitsBeforeFiltering, DICT_PROFILE).check("limit_policy")
    assert (early.passed, early.observed) == (False, "limit 2 gave [11, 1] and [1]")
    unordered = dataclasses.replace(DICT_PROFILE, result_order=ResultOrder.UNORDERED)
    assert not ConformanceKit(LimitsBeforeFiltering, unordered).check("limit_policy").passed


def test_created_at_is_probed_below_the_microsecond_and_shown_in_the_reproduction() -> None:
    result = ConformanceKit(MicrosecondTimes, DICT_PROFILE).check("created_at")
    assert (result.passed, result.observed) == (
        False,
        "lost (1767225600.1234567 came back as 1767225600.123457; 5e-324 came back as 0.0)",
    )
    assert result.reproduction.splitlines()[:3] == [
        "await store.store(MemoryItem(id=UUID(int=1), content='rt', created_at=1767225600.1234567))",
        "await store.store(MemoryItem(id=UUID(int=2), content='rt', created_at=-0.0))",
        "await store.store(MemoryItem(id=UUID(int=3), content='rt', created_at=5e-324))",
    ]


def test_a_reproduction_names_the_items_the_check_stored() -> None:
    live = ConformanceKit(CopiesClaimingLive, REFERENCE_PROFILE).check("returned_objects")
    assert live.reproduction.splitlines() == [
        "await store.store(MemoryItem(id=UUID(int=1), content=['original']))",
        "await store.search(MemoryQuery(limit=10000))",
        "await store.retrieve(UUID(int=1))",
        "(await store.retrieve(UUID(int=1))).content.append('retrieved')",
        "await store.search(MemoryQuery(limit=10000))",
        "(await store.search(MemoryQuery()))[0].content.append('searched')",
        "await store.retrieve(UUID(int=1))",
    ]
    durable = dataclasses.replace(DICT_PROFILE, durability=Durability.RESTART)
    forgot = ConformanceKit(DictStore, durable).check("durability")
    assert (forgot.passed, forgot.observed) == (False, Durability.PROCESS.value)
    assert forgot.reproduction.splitlines() == [
        "await store.store(MemoryItem(id=UUID(int=1), metadata={'k': 'v'}, content='durable', tags=['d']))",
        "await store.search(MemoryQuery(limit=10000))",
        "# close the store and open it again on the same backing",
        "await store.retrieve(UUID(int=1))",
    ]


def test_failures_say_what_was_declared_and_observed() -> None:
    result = ConformanceKit(CaseSensitiveText, DICT_PROFILE).check("text_match")
    assert result.declared == "case-insensitive substring of str(content)"
    assert result.observed == "case-sensitive substring of str(content)"
    assert "await store.search(MemoryQuery(text='hello', limit=10000))" in result.reproduction
    dropped = ConformanceKit(DroppedFilter, DICT_PROFILE).check("filter_equality")
    assert dropped.observed == "another rule"
    lost = ConformanceKit(LosesConcurrentWrites, DICT_PROFILE).check("concurrent_writes")
    assert lost.observed.endswith("not retrievable, 1 listed by search")
    # The 200 writes and the reads counting them are one line, not 400.
    assert lost.reproduction.splitlines() == [
        "await asyncio.gather(*(store.store(i) for i in items))  # 200 items",
        "await store.search(MemoryQuery(limit=10000))",
    ]
    fence = ConformanceKit(cast("StoreFactory", SyncMethods), REFERENCE_PROFILE).check("protocol")
    assert fence.reproduction == "# inspect the three methods"


class WholeWordText(DictStore):
    """Matches whole words, case-insensitively: a rule of its own, declared as one."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        words = str(item.content).lower().split()
        if query.text and query.text.lower() not in words:
            return False
        return super().matches(item, query.model_copy(update={"text": None}))


def test_a_text_rule_of_its_own_passes_when_declared_as_another_rule() -> None:
    profile = dataclasses.replace(DICT_PROFILE, text_match=TextMatch.OTHER)
    result = ConformanceKit(WholeWordText, profile).check("text_match")
    assert (result.passed, result.observed) == (True, "another rule")
    claimed = ConformanceKit(WholeWordText, DICT_PROFILE).check("text_match")
    assert (claimed.passed, claimed.observed) == (False, "another rule")


class EveryItemForText(DictStore):
    """Answers any text with every item, as a store ranking all items by similarity
    would: a rule of its own, under which a replaced item may still be found by its
    old text."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        return super().matches(item, query.model_copy(update={"text": None}))


def test_a_replaced_item_found_by_its_old_text_passes_under_a_text_rule_of_its_own() -> None:
    profile = dataclasses.replace(DICT_PROFILE, text_match=TextMatch.OTHER)
    kit = ConformanceKit(EveryItemForText, profile)
    assert [kit.check(name).passed for name in ("text_match", "on_existing_id")] == [True, True]
    claimed = ConformanceKit(EveryItemForText, DICT_PROFILE).check("on_existing_id")
    assert (claimed.passed, claimed.observed) == (False, "replaced, but text 'a1' still found it")


def test_declared_is_what_each_result_states_before_any_check_runs() -> None:
    built: list[object] = []

    def factory() -> DictStore:
        built.append(None)
        return DictStore()

    kit = ConformanceKit(factory, DICT_PROFILE, stateful_examples=1)
    promised = {name: kit.declared(name) for name in CHECKS}
    assert built == []
    assert promised["text_match"] == "case-insensitive substring of str(content)"
    assert promised["returned_objects"] == DICT_PROFILE.returned_objects.value
    assert {result.dimension: result.declared for result in kit.run_all()} == promised
    with pytest.raises(ValueError, match="unknown check 'text'"):
        kit.declared("text")


class SearchWithAnOptionalNamespace(DictStore):
    async def search(self, query: MemoryQuery, namespace: str = "main") -> list[MemoryItem]:
        return await super().search(query)


def test_a_missing_method_is_named() -> None:
    result = ConformanceKit(cast("StoreFactory", WithoutRetrieve), DICT_PROFILE).check("protocol")
    assert (result.passed, result.observed) == (False, "retrieve is missing")


def test_a_method_may_take_further_parameters_that_have_defaults() -> None:
    assert ConformanceKit(SearchWithAnOptionalNamespace, DICT_PROFILE).check("protocol").passed


def test_broken_stores_pass_the_dimensions_they_do_not_break() -> None:
    assert ConformanceKit(CaseSensitiveText, DICT_PROFILE).check("tag_match").passed
    assert ConformanceKit(BrokenOrder, DICT_PROFILE).check("text_match").passed


def test_an_unordered_store_passes_whatever_order_it_gives() -> None:
    result = ConformanceKit(ReversedStore, REVERSED_PROFILE).check("result_order")
    assert (result.passed, result.declared, result.observed) == (True, "unordered", "unordered")
