"""The kit's recall check (ADR-0102): a truthful store passes, and each broken one is
named with what it did against a brute-force ranking."""

from __future__ import annotations

import copy
import dataclasses
import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from lionmem import HybridRecalled, InMemoryStore, MemoryItem, MemoryQuery, Recalled
from lionmem.embedders import HashingEmbedder
from lionmem.protocols.hybrid import RRF_K, HybridRecall
from lionmem.testing import REFERENCE_PROFILE, ConformanceKit, FidelityProfile, Forgetting, Recall, ReturnedObjects
from tests.support.kit_doubles import DICT_PROFILE, DictStore

EXACT = dataclasses.replace(DICT_PROFILE, recall=Recall.EXACT)


class RecallingDict(DictStore):
    """A dict store that recalls by brute force over vectors kept beside the items."""

    post_filters = False
    updates_vectors = True
    forgets_vectors = True
    sorts = True

    def __init__(self) -> None:
        super().__init__()
        self.embedder = HashingEmbedder(64)
        self.vectors: dict[UUID, tuple[MemoryItem, list[float]]] = {}

    async def store(self, item: MemoryItem) -> UUID:
        (vector,) = await self.embedder.embed([str(item.content)])
        if self.updates_vectors or item.id not in self.vectors:
            self.vectors[item.id] = (copy.deepcopy(item), vector)
        return await super().store(item)

    def saved(self) -> None:
        if self.forgets_vectors:
            self.vectors = {i: v for i, v in self.vectors.items() if i in self.items}

    async def recall(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Recalled]:
        if type(k) is not int:
            raise TypeError("k must be an int")
        if k < 1:
            raise ValueError("k must be at least 1")
        if min_score is not None and not isinstance(min_score, float | int):
            raise TypeError("min_score must be a number")
        if min_score is not None and not -1 <= min_score <= 1:
            raise ValueError("min_score must be from -1 to 1")
        vector = (await self.embedder.embed([query]))[0] if isinstance(query, str) else list(query)
        if len(vector) != self.embedder.dimensions:
            raise ValueError("wrong dimensions")
        wanted = MemoryQuery(tags=tags, filters=filters)
        scored = [
            (n, item, cosine(vector, stored))
            for n, (item, stored) in enumerate(self.vectors.values())
            if self.post_filters or self.matches(item, wanted)
        ]
        scored.sort(key=lambda entry: (-entry[2], entry[0]))
        results = [Recalled(item, score) for _, item, score in scored[:k] if min_score is None or score >= min_score]
        if self.post_filters:
            results = [r for r in results if self.matches(r.item, wanted)]
        return results if self.sorts else results[::-1]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return sum(x * y for x, y in zip(a, b, strict=True)) / norms if norms else 0.0


class PostFilters(RecallingDict):
    post_filters = True


class KeepsStaleVectors(RecallingDict):
    updates_vectors = False


class RecallsDeleted(RecallingDict):
    forgets_vectors = False


class UnsortedScores(RecallingDict):
    sorts = False


class IgnoresTheFilter(RecallingDict):
    async def recall(self, query: str | Sequence[float], k: int = 10, **options: Any) -> list[Recalled]:
        return await super().recall(query, k, min_score=options.get("min_score"))


def test_stores_that_recall_exactly_pass() -> None:
    assert ConformanceKit(RecallingDict, EXACT).check("recall").passed
    embedded = dataclasses.replace(REFERENCE_PROFILE, recall=Recall.EXACT)
    result = ConformanceKit(lambda: InMemoryStore(embedder=HashingEmbedder(32)), embedded).check("recall")
    assert (result.passed, result.observed) == (True, "exact")


@pytest.mark.parametrize(
    ("store", "observed", "difference"),
    [
        (PostFilters, "fewer than k of the items the filter matches", "tags=['rare']) gave 2 items where 8 match"),
        (KeepsStaleVectors, "a stale vector after a replacement", "after replacing item 3, recall("),
        (RecallsDeleted, "a deleted item recalled", "still gave it"),
        (UnsortedScores, "scores out of order", "not highest first"),
        (
            IgnoresTheFilter,
            "more items than the tags and filters match: recall did not apply them",
            "tags=['rare']) gave 10 items where 8 match",
        ),
    ],
    ids=lambda value: getattr(value, "__name__", "")[:20],
)
def test_each_broken_store_is_named(store: type[RecallingDict], observed: str, difference: str) -> None:
    result = ConformanceKit(store, EXACT).check("recall")
    assert (result.passed, result.observed) == (False, observed)
    assert difference in result.difference
    assert "store.recall(" in result.reproduction
    assert result.ways_out.startswith("change the store to do what Recall.EXACT says")


def test_a_store_that_recalls_must_declare_it_and_one_that_cannot_must_not() -> None:
    undeclared = ConformanceKit(RecallingDict, DICT_PROFILE).check("recall")
    assert (undeclared.passed, undeclared.observed) == (False, "offered")
    assert undeclared.ways_out.endswith("or declare recall=Recall.EXACT (or APPROXIMATE, with its minimum_recall)")
    claimed = ConformanceKit(DictStore, EXACT).check("recall")
    assert (claimed.passed, claimed.observed) == (False, "not offered")
    assert ConformanceKit(InMemoryStore, REFERENCE_PROFILE).check("recall").passed


def test_an_approximate_store_passes_at_or_above_its_declared_recall() -> None:
    class MissesOne(RecallingDict):
        async def recall(self, query: str | Sequence[float], k: int = 10, **options: Any) -> list[Recalled]:
            found = await super().recall(query, k, **options)
            return found[:-1] if len(found) > 1 else found

    loose = dataclasses.replace(DICT_PROFILE, recall=Recall.APPROXIMATE, minimum_recall=0.7)
    assert ConformanceKit(MissesOne, loose).check("recall").passed
    strict = dataclasses.replace(loose, minimum_recall=0.95)
    result = ConformanceKit(MissesOne, strict).check("recall")
    assert not result.passed and result.observed == "recall@10 0.86"
    assert ConformanceKit(MissesOne, EXACT).check("recall").observed == "fewer than k of the items the filter matches"


def test_bad_arguments_must_be_refused() -> None:
    class TakesAnyK(RecallingDict):
        async def recall(self, query: str | Sequence[float], k: int = 10, **options: Any) -> list[Recalled]:
            return await super().recall(query, max(1, int(k)), **options)

    result = ConformanceKit(TakesAnyK, EXACT).check("recall")
    assert (result.passed, result.observed) == (False, "a bad argument not refused")
    assert result.difference == "recall('apple', 0) returned, where it must raise ValueError"


class AboveTheFloor(RecallingDict):
    """Keeps only results scoring above `min_score`, dropping those at it."""

    async def recall(self, query: str | Sequence[float], k: int = 10, **options: Any) -> list[Recalled]:
        floor = options.get("min_score")
        return [r for r in await super().recall(query, k, **options) if floor is None or r.score > floor]


class IgnoresFloor(RecallingDict):
    """Takes `min_score` and ignores it, refusing nothing."""

    async def recall(self, query: str | Sequence[float], k: int = 10, **options: Any) -> list[Recalled]:
        options.pop("min_score", None)
        return await super().recall(query, k, **options)


def test_min_score_must_cut_the_top_k_and_be_checked() -> None:
    result = ConformanceKit(AboveTheFloor, EXACT).check("recall")
    assert (result.passed, result.observed) == (False, "min_score not the cut of the top k")
    assert result.difference.startswith("recall('apple river', 10, min_score=")
    assert "await store.recall('apple river', 10, min_score=" in result.reproduction
    ignored = ConformanceKit(IgnoresFloor, EXACT).check("recall")
    assert (ignored.passed, ignored.observed) == (False, "min_score not the cut of the top k")
    # An approximate store may answer each call its own way, but not below the floor.
    approximate = dataclasses.replace(DICT_PROFILE, recall=Recall.APPROXIMATE, minimum_recall=0.7)
    assert ConformanceKit(IgnoresFloor, approximate).check("recall").observed == "min_score not the cut of the top k"
    assert ConformanceKit(AboveTheFloor, approximate).check("recall").passed
    assert ConformanceKit(RecallingDict, EXACT).check("recall").passed


def test_a_min_score_out_of_range_or_of_another_type_must_be_refused() -> None:
    class TakesAnyFloor(RecallingDict):
        async def recall(self, query: str | Sequence[float], k: int = 10, **options: Any) -> list[Recalled]:
            floor = options.pop("min_score", None)
            found = await super().recall(query, k, **options)
            return (
                found if floor is None or not isinstance(floor, float | int) else [r for r in found if r.score >= floor]
            )

    result = ConformanceKit(TakesAnyFloor, EXACT).check("recall")
    assert (result.passed, result.observed) == (False, "a bad argument not refused")
    assert result.difference == "recall('apple', 10, min_score=1.5) returned, where it must raise ValueError"


def test_the_profile_checks_minimum_recall() -> None:
    with pytest.raises(ValueError, match="minimum_recall must be from 0 to 1, got 1.5"):
        FidelityProfile(minimum_recall=1.5)
    with pytest.raises(TypeError, match="minimum_recall must be a float"):
        FidelityProfile(minimum_recall=1)


class OtherVectors(RecallingDict):
    """Ranks with another embedder than the one it declares."""

    def __init__(self) -> None:
        super().__init__()
        self.embedder = HashingEmbedder(64)
        self.ranking = HashingEmbedder(16)

    async def store(self, item: MemoryItem) -> UUID:
        (vector,) = await self.ranking.embed([str(item.content)])
        self.vectors[item.id] = (copy.deepcopy(item), vector)
        return await DictStore.store(self, item)

    async def recall(self, query: str | Sequence[float], k: int = 10, **options: Any) -> list[Recalled]:
        (vector,) = await self.ranking.embed([query]) if isinstance(query, str) else ([0.0] * 16,)
        if type(k) is not int or k < 1 or len(query) == 65:
            raise ValueError("bad")
        scored = [(n, item, cosine(vector, v)) for n, (item, v) in enumerate(self.vectors.values())]
        wanted = MemoryQuery(tags=options.get("tags"), filters=options.get("filters"))
        scored = [entry for entry in scored if self.matches(entry[1], wanted)]
        scored.sort(key=lambda entry: (-entry[2], entry[0]))
        floor = options.get("min_score")
        return [Recalled(item, score) for _, item, score in scored[:k] if floor is None or score >= floor]


def test_a_ranking_by_another_embedder_is_not_the_exact_top_k() -> None:
    result = ConformanceKit(OtherVectors, EXACT).check("recall")
    assert (result.passed, result.observed) == (False, "not the exact top k")
    assert "where brute force gives" in result.difference


class RecallOnly:
    """The three methods and recall over an InMemoryStore, without forgetting."""

    def __init__(self) -> None:
        self.inner = InMemoryStore(embedder=HashingEmbedder(64))
        self.embedder = self.inner.embedder

    async def store(self, item: MemoryItem) -> UUID:
        return await self.inner.store(item)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return await self.inner.retrieve(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return await self.inner.search(query)

    async def recall(self, query: str | Sequence[float], k: int = 10, **options: Any) -> list[Recalled]:
        if k == 0:
            raise RuntimeError("k is zero")
        return await self.inner.recall(query, k, **options)


def test_a_store_without_forgetting_is_checked_without_a_deletion_and_a_wrong_error_is_named() -> None:
    without = dataclasses.replace(EXACT, forgetting=Forgetting.NOT_OFFERED, returned_objects=ReturnedObjects.LIVE)
    result = ConformanceKit(RecallOnly, without).check("recall")
    assert (result.passed, result.observed) == (False, "a bad argument not refused")
    assert result.difference == "recall('apple', 0) raised RuntimeError, not ValueError"
    assert "store.delete(" not in result.reproduction


class WritesBeforeEmbedding(RecallingDict):
    """Keeps the item even when its embedding fails."""

    async def store(self, item: MemoryItem) -> UUID:
        await DictStore.store(self, item)
        return await super().store(item)


def test_a_store_that_writes_before_it_embeds_is_named() -> None:
    result = ConformanceKit(WritesBeforeEmbedding, EXACT).check("recall")
    assert (result.passed, result.observed) == (False, "a write whose embedding failed")
    assert result.difference == "a new item was stored although its embedding failed"
    assert "embedder.embed raises from here on" in result.reproduction


class SlottedEmbedder:
    """An embedder whose `embed` the kit cannot shadow."""

    __slots__ = ()
    identity = "slotted"
    dimensions = 64

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return await HashingEmbedder(64).embed(texts)


def test_an_embedder_the_kit_cannot_make_fail_is_not_checked_for_it() -> None:
    class WithSlotted(WritesBeforeEmbedding):
        def __init__(self) -> None:
            super().__init__()
            self.embedder = SlottedEmbedder()  # type: ignore[assignment]

    assert ConformanceKit(WithSlotted, EXACT).check("recall").passed


class SwallowsEmbedderErrors(RecallingDict):
    """Stores an item without its vector when the embedder fails, and says nothing."""

    async def store(self, item: MemoryItem) -> UUID:
        try:
            return await super().store(item)
        except Exception:
            return await DictStore.store(self, item)


class ReplacesBeforeEmbedding(RecallingDict):
    """Writes a replacement before embedding it; a new item only after."""

    async def store(self, item: MemoryItem) -> UUID:
        if item.id in self.items:
            await DictStore.store(self, item)
        return await super().store(item)


@pytest.mark.parametrize(
    ("store", "difference"),
    [
        (SwallowsEmbedderErrors, "store of item 5 returned although the embedder raised"),
        (ReplacesBeforeEmbedding, "item 5 became MemoryItem(id=UUID("),
    ],
    ids=["swallows", "replaces first"],
)
def test_each_write_an_embedder_failure_should_have_stopped_is_named(
    store: type[RecallingDict], difference: str
) -> None:
    result = ConformanceKit(store, EXACT).check("recall")
    assert (result.passed, result.observed) == (False, "a write whose embedding failed")
    assert result.difference.startswith(difference)


class NewestTwinFirst(RecallingDict):
    """Breaks ties among equal scores newest first: what the kit's 1e-4 tolerance once hid."""

    async def recall(self, query: str | Sequence[float], k: int = 10, **options: Any) -> list[Recalled]:
        found = await super().recall(query, len(self.vectors) or 1, **options)
        order = {item_id: n for n, item_id in enumerate(self.vectors)}
        found.sort(key=lambda r: (-round(r.score, 9), -order[r.item.id]))
        return found[:k]


def test_a_store_that_breaks_ties_newest_first_is_named() -> None:
    result = ConformanceKit(NewestTwinFirst, EXACT).check("recall")
    assert (result.passed, result.observed) == (False, "equal texts out of insertion order")
    assert result.difference.startswith("store.recall('lantern ember quartz', 10) gave the items of that text as")
    assert "come in the order stored: [201, 202, 203, 204, 205, 206]" in result.difference
    assert "'206: " in result.difference.split("where")[0]


_SHARED: dict[Path, Shared] = {}


class Shared(RecallingDict):
    """One store's data that many handles on a workspace open; a handle without an
    embedder writes items and, as the SQLite store once did, leaves their vectors."""

    def __init__(self, workspace: Path, embedded: bool) -> None:
        super().__init__()
        data = _SHARED.setdefault(workspace, self)
        self.items, self.vectors, self.embedded = data.items, data.vectors, embedded

    async def store(self, item: MemoryItem) -> UUID:
        if self.embedded:
            return await super().store(item)
        return await DictStore.store(self, item)


def test_a_replacement_by_a_writer_without_an_embedder_must_not_leave_a_stale_vector() -> None:
    _SHARED.clear()
    kit = ConformanceKit(
        lambda workspace: Shared(workspace, True),
        EXACT,
        without_embedder=lambda workspace: Shared(workspace, False),
    )
    result = kit.check("recall")
    assert (result.passed, result.observed) == (False, "another writer's items not recalled by their text")
    assert result.difference.startswith(
        "after a second store without an embedder replaced item 6 and added item 90, "
        "store.recall('orbit harbour lantern', 10) gave ["
    )
    assert "# a second store on the same data, without an embedder:" in result.reproduction
    assert "await second.store(MemoryItem(id=UUID(int=90)" in result.reproduction


class FirstThousand(RecallingDict):
    """Approximate as an index that stopped taking new vectors: it ranks only the
    first thousand items it stored, exactly."""

    async def store(self, item: MemoryItem) -> UUID:
        if len(self.vectors) < 1000 or item.id in self.vectors:
            return await super().store(item)
        return await DictStore.store(self, item)


def test_an_approximate_store_is_measured_on_everyday_notes() -> None:
    approximate = dataclasses.replace(DICT_PROFILE, recall=Recall.APPROXIMATE, minimum_recall=0.9)
    assert ConformanceKit(RecallingDict, approximate, recall_notes=2_000).check("recall").passed
    result = ConformanceKit(FirstThousand, approximate, recall_notes=2_000).check("recall")
    assert not result.passed and result.observed.endswith("on everyday notes"), result
    assert re.fullmatch(
        r"recall@10 averaged 0\.\d{3} over 60 recalls among 2,000 everyday notes \(the worst 0\.\d\), "
        r"where the profile declares minimum_recall=0\.9",
        result.difference,
    )
    assert "lionmem.testing.everyday_notes(2000) stored as items 10000 and on" in result.reproduction


def test_the_kit_refuses_a_bad_count_of_notes_or_second_factory() -> None:
    with pytest.raises(ValueError, match="recall_notes must be at least 100, got 99"):
        ConformanceKit(RecallingDict, EXACT, recall_notes=99)
    with pytest.raises(TypeError, match="recall_notes must be an int"):
        ConformanceKit(RecallingDict, EXACT, recall_notes=1e4)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="without_embedder must be callable or None, got str"):
        ConformanceKit(RecallingDict, EXACT, without_embedder="plain")  # type: ignore[call-overload]
    with pytest.raises(ValueError, match="without_embedder serves the recall check, which a store of lionagi's"):
        ConformanceKit(RecallingDict, EXACT, lionagi=True, without_embedder=RecallingDict)  # type: ignore[call-overload]


class HybridDict(HybridRecall, RecallingDict):
    """A recalling dict store with lionmem's hybrid recall, counting its own items."""

    async def count(self, query: MemoryQuery) -> int:
        return len([item for item in self.items.values() if self.matches(item, query)])


class MeaningOnly(HybridDict):
    """Claims hybrid recall, but ranks by meaning alone."""

    async def recall_hybrid(self, query: str, k: int = 10, **options: Any) -> list[HybridRecalled]:
        found = await self.recall(query, k, **options)
        return [HybridRecalled(r.item, 1 / (RRF_K + n), n, r.score, None, None, False) for n, r in enumerate(found, 1)]


class StaleWords(HybridDict):
    """Finds words in each item's first text: a replacement keeps its old words."""

    def __init__(self) -> None:
        super().__init__()
        self.first: dict[UUID, MemoryItem] = {}

    async def store(self, item: MemoryItem) -> UUID:
        self.first.setdefault(item.id, copy.deepcopy(item))
        return await super().store(item)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        if query.text is None:
            return await super().search(query)
        found = [i for i in self.first.values() if i.id in self.items and query.text in str(i.content).lower()]
        return found[: query.limit]


def test_a_hybrid_store_passes_and_its_words_must_follow_its_items() -> None:
    assert ConformanceKit(HybridDict, EXACT).check("recall").passed
    for store, asked in ((MeaningOnly, "'Order, 7001?'"), (StaleWords, "'where is order 7003'")):
        result = ConformanceKit(store, EXACT).check("recall")
        assert (result.passed, result.observed) == (False, "hybrid recall not the fusion of its two rankings")
        assert f"store.recall_hybrid({asked}, 10" in result.difference
        assert "store.recall_hybrid(" in result.reproduction
