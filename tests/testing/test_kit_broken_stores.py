"""Each broken store is caught by the check its fault concerns, by name."""

from __future__ import annotations

import dataclasses
import json
import re
import string
from typing import Any, cast
from uuid import UUID

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.testing import (
    REFERENCE_PROFILE,
    ConformanceFailure,
    ConformanceKit,
    FidelityProfile,
    FilterEquality,
    ReturnedObjects,
    StoreFactory,
    TextMatch,
)
from tests.support.kit_doubles import (
    DICT_PROFILE,
    BrokenOrder,
    CaselessKeys,
    CaseSensitiveText,
    CopiesClaimingLive,
    DeletesIdById,
    DictStore,
    DroppedFilter,
    IgnoredLimit,
    KeepsTheOldPlace,
    LosesConcurrentWrites,
    StrippedText,
    SubstringTags,
    SyncMethods,
    WrongReturnType,
)


class CasefoldText(DictStore):
    """Folds case with `str.casefold()`, where the reference uses `str.lower()`:
    "SS" then finds "Straße"."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        if query.text and query.text.casefold() not in str(item.content).casefold():
            return False
        return super().matches(item, query.model_copy(update={"text": None}))


class AsciiFoldedText(DictStore):
    """Folds only ASCII letters, as SQL's LIKE does: "éCLAIR" misses "Éclair"."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        fold = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
        if query.text and query.text.translate(fold) not in str(item.content).translate(fold):
            return False
        return super().matches(item, query.model_copy(update={"text": None}))


class JsonText(DictStore):
    """Matches the content's JSON text, not `str(content)`: '"greeting"', not "'greeting'"."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        if query.text and query.text.lower() not in json.dumps(item.content, ensure_ascii=False).lower():
            return False
        return super().matches(item, query.model_copy(update={"text": None}))


class EmptyTextFindsNothing(DictStore):
    """Takes text="" as a predicate no item meets; the reference ignores it."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        return query.text != "" and super().matches(item, query)


class DropsEmptyValues(DictStore):
    """Keeps no metadata value that is empty: "", [] or {}."""

    async def store(self, item: MemoryItem) -> UUID:
        kept = {k: v for k, v in item.metadata.items() if v not in ("", [], {})}
        return await super().store(item.model_copy(update={"metadata": kept}))


class FilterRule(DictStore):
    """Matches a filter when `same(metadata.get(key), value)`; text and tags as the
    reference does."""

    def same(self, held: Any, asked: Any) -> bool:
        raise NotImplementedError

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        wanted = (query.filters or {}).items()
        return all(self.same(item.metadata.get(k), v) for k, v in wanted) and super().matches(
            item, query.model_copy(update={"filters": None})
        )


class JsonEqualAtTheTopOnly(FilterRule):
    """Tells `true` from 1 and equates 1 with 1.0, but only at the top level: inside a
    list or object it compares JSON text, where 1 is not 1.0."""

    def same(self, held: Any, asked: Any) -> bool:
        if type(held) in (int, float) and type(asked) in (int, float):
            return bool(held == asked)
        return json.dumps(held, sort_keys=True) == json.dumps(asked, sort_keys=True)


def _contains(held: Any, asked: Any) -> bool:
    """JSONB's `@>`: objects by key, lists holding every asked element, JSON scalars."""
    if isinstance(held, dict) and isinstance(asked, dict):
        return all(k in held and _contains(held[k], v) for k, v in asked.items())
    if isinstance(held, list) and isinstance(asked, list):
        return all(any(_contains(h, a) for h in held) for a in asked)
    if isinstance(held, dict | list) or isinstance(asked, dict | list):
        return False
    if isinstance(held, bool) or isinstance(asked, bool):
        return held is asked
    return bool(held == asked)


class ContainedFilters(FilterRule):
    """Matches filters by containment, as `metadata @> filters` does in PostgreSQL:
    `[1]` finds `[1, 3]`. JSON equality everywhere else."""

    def same(self, held: Any, asked: Any) -> bool:
        return _contains(held, asked)


class KeyOrderFilters(FilterRule):
    """Compares objects key by key in order, as a document database comparing
    embedded documents does: `{"b": 3, "a": 1}` misses `{"a": 1, "b": 3}`."""

    def same(self, held: Any, asked: Any) -> bool:
        if isinstance(held, dict) and isinstance(asked, dict):
            return list(held) == list(asked) and all(self.same(held[k], asked[k]) for k in held)
        return bool(held == asked)


class UnorderedListFilters(FilterRule):
    """Compares lists as sets: `[3, 1]` finds `[1, 3]`."""

    def same(self, held: Any, asked: Any) -> bool:
        if isinstance(held, list) and isinstance(asked, list):
            return all(any(self.same(x, y) for y in asked) for x in held) and all(
                any(self.same(x, y) for x in held) for y in asked
            )
        return bool(held == asked)


class SortsPredicateResults(DictStore):
    """Lists in insertion order, but sorts by id the results of a search with a
    predicate, as a SQL store reading an index without ORDER BY might."""

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        found = await super().search(query)
        if query.text or query.tags or query.filters:
            return sorted(found, key=lambda i: i.id)
        return found


class IgnoresUnsupportedText(DictStore):
    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        return super().matches(item, query.model_copy(update={"text": None}))


BROKEN: list[tuple[StoreFactory, FidelityProfile, str]] = [
    (cast("StoreFactory", SyncMethods), REFERENCE_PROFILE, "protocol"),
    (WrongReturnType, DICT_PROFILE, "protocol"),
    (CaseSensitiveText, DICT_PROFILE, "text_match"),
    (CasefoldText, DICT_PROFILE, "text_match"),
    (AsciiFoldedText, DICT_PROFILE, "text_match"),
    (StrippedText, DICT_PROFILE, "text_match"),
    (JsonText, DICT_PROFILE, "text_match"),
    (EmptyTextFindsNothing, DICT_PROFILE, "text_match"),
    (SubstringTags, DICT_PROFILE, "tag_match"),
    (CaselessKeys, DICT_PROFILE, "filter_equality"),
    (DropsEmptyValues, DICT_PROFILE, "metadata"),
    (DroppedFilter, DICT_PROFILE, "filter_equality"),
    (JsonEqualAtTheTopOnly, dataclasses.replace(DICT_PROFILE, filter_equality=FilterEquality.JSON), "filter_equality"),
    (ContainedFilters, dataclasses.replace(DICT_PROFILE, filter_equality=FilterEquality.JSON), "filter_equality"),
    (KeyOrderFilters, DICT_PROFILE, "filter_equality"),
    (UnorderedListFilters, DICT_PROFILE, "filter_equality"),
    (IgnoredLimit, DICT_PROFILE, "limit_policy"),
    (BrokenOrder, DICT_PROFILE, "result_order"),
    (CopiesClaimingLive, REFERENCE_PROFILE, "returned_objects"),
    (LosesConcurrentWrites, DICT_PROFILE, "concurrent_writes"),
    (
        IgnoresUnsupportedText,
        FidelityProfile(returned_objects=ReturnedObjects.COPIES, text_match=TextMatch.UNSUPPORTED),
        "text_match",
    ),
    (DeletesIdById, DICT_PROFILE, "forgetting"),
    (KeepsTheOldPlace, DICT_PROFILE, "forgetting"),
]


SEARCHED = {"text_match", "tag_match", "filter_equality", "none_filter_matches_missing", "result_order"}
"""The checks whose failures show a search's ids against the declared rule's."""


@pytest.mark.parametrize(("factory", "profile", "dimension"), BROKEN, ids=[b[0].__name__ for b in BROKEN])
def test_a_broken_store_is_caught_with_the_right_dimension(
    factory: StoreFactory, profile: FidelityProfile, dimension: str
) -> None:
    kit = ConformanceKit(factory, profile)
    result = kit.check(dimension)
    assert not result.passed
    with pytest.raises(ConformanceFailure) as failure:
        kit.assert_check(dimension)
    failed = failure.value.result
    assert (failed.dimension, failed.declared, failed.passed) == (dimension, result.declared, False)
    message = str(failure.value)
    assert message == str(failed)
    assert message.startswith(f"{dimension}: declared {result.declared}, observed {result.observed}\n")
    assert failed.ways_out.startswith("change the store") and f"\n  to pass: {failed.ways_out}\n" in message
    if dimension in SEARCHED:
        assert re.fullmatch(r"a search with .+ found \[[\d, ]*\], where .+", failed.difference), failed.difference
        assert f"\n  {failed.difference}\n" in message
    steps = "\n".join(f"      {line}" for line in failed.reproduction.splitlines())
    assert message.endswith(f"\n  minimal reproduction, on a fresh store:\n{steps}")
    if dimension != "protocol" or factory is WrongReturnType:
        assert "await store." in message


def test_a_misordered_search_with_a_predicate_fails_result_order_not_the_match_checks() -> None:
    kit = ConformanceKit(SortsPredicateResults, DICT_PROFILE)
    order = kit.check("result_order")
    assert (order.passed, order.observed) == (False, "ranked")
    assert (
        order.difference
        == "a search with text 'o' found [95, 96, 97, 98, 99, 100], where insertion order is [100, 99, 98, 97, 96, 95]"
    )
    assert order.ways_out == (
        "change the store to do what ResultOrder.INSERTION says, or declare result_order=ResultOrder.RANKED"
    )
    assert [kit.check(name).passed for name in ("text_match", "tag_match", "filter_equality")] == [True] * 3
