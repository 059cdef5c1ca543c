"""The kit as an adapter author meets it: the three stores of a first adapter (a
faithful dict store, a ranked one, one that matches tags all-of) and what the kit
tells their author."""

from __future__ import annotations

import asyncio
import dataclasses
import random
from uuid import UUID

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.testing import (
    ConformanceFailure,
    ConformanceKit,
    Forgetting,
    LimitPolicy,
    OnExistingId,
    ResultOrder,
    ReturnedObjects,
    TagMatch,
    raise_for_failures,
)
from lionmem.testing.stateful import compare_with_reference
from tests.support.kit_doubles import DICT_PROFILE, DictStore
from tests.support.kit_stores import BareStore


class RankedStore(DictStore):
    """Scores text matches by how often the needle occurs, most first; refuses a
    negative limit."""

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        if query.limit < 0:
            raise ValueError("limit must not be negative")
        found = await super().search(MemoryQuery(text=query.text, tags=query.tags, filters=query.filters, limit=10**9))
        if query.text:
            needle = query.text.lower()
            found.sort(key=lambda i: -str(i.content).lower().count(needle))  # stable: ties keep insertion
        return found[: query.limit]


THREE_METHODS = dataclasses.replace(
    DICT_PROFILE, returned_objects=ReturnedObjects.LIVE, forgetting=Forgetting.NOT_OFFERED
)

RANKED_PROFILE = dataclasses.replace(
    DICT_PROFILE, result_order=ResultOrder.RANKED, limit_policy=LimitPolicy.REJECT_NEGATIVE
)


class ShuffledStore(DictStore):
    """Returns its matches in a new random order each time."""

    def order(self, found: list[MemoryItem]) -> list[MemoryItem]:
        random.shuffle(found)
        return found


class AllOfTags(DictStore):
    """Matches tags all-of where the reference matches any-of."""

    def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
        if query.tags and not set(query.tags) <= set(item.tags):
            return False
        return super().matches(item, query.model_copy(update={"tags": None}))


def test_a_ranked_store_passes_as_ranked_and_fails_a_false_insertion_claim_by_name() -> None:
    assert ConformanceKit(RankedStore, RANKED_PROFILE).check("result_order").passed
    claimed = dataclasses.replace(RANKED_PROFILE, result_order=ResultOrder.INSERTION)
    result = ConformanceKit(RankedStore, claimed).check("result_order")
    assert (result.passed, result.declared, result.observed) == (False, "insertion", "ranked")
    assert result.difference == (
        "a search with text 'x' found [95, 96, 97, 98, 99, 100], where insertion order is [100, 99, 98, 97, 96, 95]"
    )
    assert result.ways_out.endswith("or declare result_order=ResultOrder.RANKED")


def test_a_store_that_shuffles_is_unordered_not_ranked() -> None:
    unordered = dataclasses.replace(DICT_PROFILE, result_order=ResultOrder.UNORDERED)
    assert ConformanceKit(ShuffledStore, unordered).check("result_order").passed
    result = ConformanceKit(ShuffledStore, dataclasses.replace(unordered, result_order=ResultOrder.RANKED)).check(
        "result_order"
    )
    assert (result.passed, result.observed) == (False, "unordered")
    assert "when run again" in result.difference
    assert result.ways_out.endswith("or declare result_order=ResultOrder.UNORDERED")


def test_a_ranked_claim_by_a_store_in_insertion_order_fails() -> None:
    claimed = dataclasses.replace(DICT_PROFILE, result_order=ResultOrder.RANKED)
    result = ConformanceKit(DictStore, claimed).check("result_order")
    assert (result.passed, result.observed) == (False, "insertion")
    assert result.difference.startswith("every search, the listing and text 'x' and 'y' among them, kept insertion")
    assert result.ways_out.endswith("or declare result_order=ResultOrder.INSERTION")


def test_without_order_a_replacement_is_declared_and_observed_in_the_same_words() -> None:
    result = ConformanceKit(RankedStore, RANKED_PROFILE).check("on_existing_id")
    assert result.passed and result.declared == result.observed == "replaced (its place unchecked: ranked results)"
    rejecting = dataclasses.replace(RANKED_PROFILE, on_existing_id=OnExistingId.REJECT)
    refused = ConformanceKit(RankedStore, rejecting).check("on_existing_id")
    assert (refused.passed, refused.declared) == (False, "reject")
    assert refused.ways_out.endswith("or declare on_existing_id=OnExistingId.REPLACE_IN_PLACE")


def test_the_all_of_tag_store_shows_its_ids_against_the_reference_and_the_way_out() -> None:
    result = ConformanceKit(AllOfTags, DICT_PROFILE).check("tag_match")
    assert (result.passed, result.observed) == (False, "all-of, case-sensitive")
    assert result.difference == "a search with tags ['b', 'c'] found [], where any-of, case-sensitive finds [1, 2, 5]"
    assert result.ways_out == ("change the store to do what TagMatch.ANY_OF says, or declare tag_match=TagMatch.ALL_OF")
    assert (
        ConformanceKit(AllOfTags, dataclasses.replace(DICT_PROFILE, tag_match=TagMatch.ALL_OF))
        .check("tag_match")
        .passed
    )


def test_the_stateful_comparison_catches_the_all_of_tag_store_alone_and_names_tag_match() -> None:
    """Through search alone: without forgetting, no `count` call reveals it first."""
    three_methods = dataclasses.replace(THREE_METHODS, returned_objects=ReturnedObjects.COPIES)
    with pytest.raises(AssertionError, match=r"^search\(MemoryQuery\(tags=\[.*\(most likely tag_match\)\n"):
        compare_with_reference(AllOfTags, three_methods, max_examples=60)
    result = ConformanceKit(AllOfTags, three_methods).check("stateful")
    assert not result.passed and result.observed.endswith("(most likely tag_match)")
    assert result.ways_out.startswith("change the store where it parts from the reference")


def test_a_none_filter_failure_shows_its_ids() -> None:
    class NoneIsNotMissing(DictStore):
        def matches(self, item: MemoryItem, query: MemoryQuery) -> bool:
            filters = query.filters or {}
            if any(v is None and k not in item.metadata for k, v in filters.items()):
                return False
            return super().matches(item, query)

    result = ConformanceKit(NoneIsNotMissing, DICT_PROFILE).check("none_filter_matches_missing")
    assert (result.passed, result.observed) == (False, "False")
    assert result.difference == (
        "a search with filters {'k': None} found [2], where none_filter_matches_missing=True finds [1, 2]"
    )
    assert result.ways_out.endswith("or declare none_filter_matches_missing=False")


def test_results_read_as_a_report_and_one_call_raises_for_every_failure() -> None:
    kit = ConformanceKit(AllOfTags, DICT_PROFILE)
    results = kit.run_all(["protocol", "tag_match", "result_order", "stateful"])
    assert str(results[0]) == f"protocol: ok, {results[0].observed}"
    with pytest.raises(ConformanceFailure) as failure:
        raise_for_failures(results)
    assert [r.dimension for r in failure.value.results] == ["tag_match", "stateful"]
    assert failure.value.result is failure.value.results[0]
    report = str(failure.value)
    assert report == f"{results[1]}\n\n{results[3]}"
    assert report.startswith(
        "tag_match: declared any-of, case-sensitive, observed all-of, case-sensitive\n"
        "  a search with tags ['b', 'c'] found [], where any-of, case-sensitive finds [1, 2, 5]\n"
        "  to pass: change the store to do what TagMatch.ANY_OF says, or declare tag_match=TagMatch.ALL_OF\n"
        "  minimal reproduction, on a fresh store:\n"
        "      await store.store(MemoryItem(id=UUID(int=1), tags=['a', 'b']))\n"
    )
    assert "\\n" not in report
    raise_for_failures(kit.run_all(["protocol", "result_order"]))  # nothing failed: nothing raised
    with pytest.raises(TypeError, match="each result must be a CheckResult"):
        raise_for_failures(["tag_match"])  # type: ignore[list-item]


def test_the_faithful_store_passes_everything() -> None:
    raise_for_failures(ConformanceKit(DictStore, DICT_PROFILE, stateful_examples=20).run_all())
    raise_for_failures(ConformanceKit(RankedStore, RANKED_PROFILE, stateful_examples=20).run_all())


class TakesAnything(BareStore):
    """Checks no argument's type and refuses no content: what the kit does not require."""

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        found = list(self.items.values())
        if query.text:
            found = [i for i in found if query.text.lower() in str(i.content).lower()]
        if query.tags:
            found = [i for i in found if set(query.tags) & set(i.tags)]
        if query.filters:
            found = [i for i in found if all(i.metadata.get(k) == v for k, v in query.filters.items())]
        return found[: query.limit]


def test_type_checks_and_refusing_unprintable_content_are_not_required() -> None:
    """lionmem's own strictness (adapters.md): a store without it passes every check."""

    async def lenient() -> tuple[object, UUID]:
        store = TakesAnything()
        huge = MemoryItem(content=10**5000)
        await store.store(huge)
        return await store.retrieve("not-an-id"), await store.store(huge)  # type: ignore[arg-type]

    assert asyncio.run(lenient())[0] is None
    raise_for_failures(ConformanceKit(TakesAnything, THREE_METHODS, stateful_examples=20).run_all())


def test_a_listing_out_of_order_names_the_search_without_a_predicate() -> None:
    class NewestFirst(DictStore):
        def order(self, found: list[MemoryItem]) -> list[MemoryItem]:
            return found[::-1]

    result = ConformanceKit(NewestFirst, DICT_PROFILE).check("result_order")
    assert result.difference.startswith("a search with no predicate found [95, 96")


def test_a_failure_without_calls_reads_without_a_reproduction() -> None:
    from lionmem.testing import CheckResult

    result = CheckResult("stateful", "agrees", "needs hypothesis", False, "", ways_out="pip install it")
    assert str(result) == "stateful: declared agrees, observed needs hypothesis\n  to pass: pip install it"
