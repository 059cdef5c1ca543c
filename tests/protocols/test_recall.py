"""Semantic recall in the reference store (ADR-0102): exact cosine top k over its own
embedder, tags and filters applied first, ties in insertion order, and vectors that
follow every store, replacement and deletion."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from collections.abc import Sequence
from typing import Any
from uuid import uuid4

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.embedders import FunctionEmbedder, HashingEmbedder
from lionmem.errors import LionmemError, NoEmbedderError
from lionmem.filters import Ge
from lionmem.protocols import _vector_index as vector_index
from lionmem.protocols.recall import Embedder, Recalled, RecallStore, recall_many
from lionmem.protocols.rules import matches
from tests.support.recall_contract import TWIN, assert_equal_texts_tie_in_insertion_order, drifting


def run(body: Any) -> Any:
    return asyncio.run(body)


def texts(results: list[Recalled]) -> list[object]:
    return [r.item.content for r in results]


async def filled(contents: Sequence[str], embedder: Embedder | None = None, **fields: Any) -> InMemoryStore:
    store = InMemoryStore(embedder=embedder or HashingEmbedder(64))
    for content in contents:
        await store.store(MemoryItem(content=content, **fields))
    return store


def tag_map(store: InMemoryStore) -> dict[str, set[Any]]:
    """The index's tag map: a tag no stored item holds leaves no entry behind."""
    return store._index._tagged  # type: ignore[union-attr]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norms if norms else 0.0


def test_the_store_is_a_recall_store_with_its_embedder() -> None:
    embedder = HashingEmbedder(16)
    store = InMemoryStore(embedder=embedder)
    assert isinstance(store, RecallStore)
    assert store.embedder is embedder
    assert InMemoryStore().embedder is None


def test_recall_ranks_by_cosine_similarity_and_scores_are_the_cosines() -> None:
    contents = ["red fox jumps", "blue whale sings", "red red fox", "green fox", "blue sky"]

    async def body() -> None:
        embedder = HashingEmbedder(256)
        store = await filled(contents, embedder)
        results = await store.recall("red fox", 3)
        vectors = await embedder.embed([*contents, "red fox"])
        want = sorted(range(5), key=lambda n: (-cosine(vectors[n], vectors[5]), n))[:3]
        assert texts(results) == [contents[n] for n in want]
        for result, n in zip(results, want, strict=True):
            assert result.score == pytest.approx(cosine(vectors[n], vectors[5]), abs=1e-6)
        assert [r.score for r in results] == sorted((r.score for r in results), reverse=True)

    run(body())


def test_equal_scores_keep_insertion_order_and_a_replacement_keeps_its_place() -> None:
    async def body() -> None:
        first, second, third = (MemoryItem(content="same words") for _ in range(3))
        store = InMemoryStore(embedder=HashingEmbedder(32))
        for item in (first, second, third):
            await store.store(item)
        assert [r.item for r in await store.recall("same words", 3)] == [first, second, third]
        await store.store(MemoryItem(id=first.id, content="same words"))
        assert [r.item.id for r in await store.recall("same words", 3)] == [first.id, second.id, third.id]
        await store.delete(first.id)
        await store.store(first)  # stored again after a deletion: it comes last
        assert [r.item for r in await store.recall("same words", 3)] == [second, third, first]

    run(body())


def test_tags_and_filters_apply_before_the_top_k_so_a_selective_filter_still_gives_k() -> None:
    async def body() -> None:
        store = InMemoryStore(embedder=HashingEmbedder(64))
        rare = []
        for n in range(2000):
            item = MemoryItem(
                content=f"alpha {'beta' if n % 3 else 'gamma'}",
                tags=["rare"] if n % 200 == 0 else ["common"],
                metadata={"n": n},
            )
            await store.store(item)
            if n % 200 == 0:
                rare.append(item)
        found = await store.recall("alpha beta", 5, tags=["rare"])
        assert len(found) == 5 and all(r.item.tags == ["rare"] for r in found)
        # Every rare item scores; the best five are those with "beta", in insertion order.
        with_beta = [i for i in rare if "beta" in i.content]
        assert [r.item for r in found] == with_beta[:5]
        assert [r.item.metadata["n"] for r in await store.recall("alpha", 3, filters={"n": Ge(1997)})] == [
            1997,
            1998,
            1999,
        ]
        assert await store.recall("alpha", 3, tags=["none"]) == []
        assert len(await store.recall("alpha", 50, tags=["rare"])) == 10  # k beyond the matches

    run(body())


@pytest.mark.parametrize("selective", [0, 10**9], ids=["walking-the-ranking", "scoring-only-the-tagged"])
def test_both_ways_of_applying_tags_give_the_brute_force_answer(
    selective: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whichever way the index takes (forced here by its threshold), a recall by tags
    and filters is the exact top k of the matching items."""
    monkeypatch.setattr(vector_index, "_SELECTIVE", selective)
    words = ["amber", "birch", "cedar", "delta", "ember", "fjord"]

    async def body() -> None:
        embedder = HashingEmbedder(32)
        store = InMemoryStore(embedder=embedder)
        items = [
            MemoryItem(
                content=f"{words[n % 6]} {words[(n * 7) % 6]} {words[(n * 5) % 4]}",
                tags=[["a"], ["b"], ["a", "c"], []][n % 4],
                metadata={"n": n},
            )
            for n in range(240)
        ]
        for item in items:
            await store.store(item)
        await store.delete_many([i.id for i in items[::9]])
        await store.store(MemoryItem(id=items[1].id, content="amber amber", tags=["c"]))
        live = await store.search(MemoryQuery(limit=-1))
        vectors = await embedder.embed([str(i.content) for i in live])
        for query, tags, filters in [
            ("amber birch", ["c"], None),
            ("cedar", ["a", "b"], {"n": Ge(100)}),
            ("ember fjord", ["b"], {"n": Ge(230)}),
            ("delta", ["nobody"], None),
        ]:
            (target,) = await embedder.embed([query])
            matching = [n for n, i in enumerate(live) if matches(i, MemoryQuery(tags=tags, filters=filters))]
            want = sorted(matching, key=lambda n: (-cosine(vectors[n], target), n))[:7]
            found = await store.recall(query, 7, tags=tags, filters=filters)
            assert [r.item for r in found] == [live[n] for n in want], (query, tags)

    run(body())


def test_recall_reads_an_items_tags_as_they_were_stored() -> None:
    """The index keeps each item's tags from its last `store`, as its vector is of
    that store's text; a replacement or deletion moves them, a change in place does not."""

    async def body() -> None:
        store = InMemoryStore(embedder=HashingEmbedder(16))
        items = [MemoryItem(content="lantern", tags=["common"]) for _ in range(100)]
        for item in items:
            await store.store(item)
        moved, changed = items[3], items[4]
        changed.tags.append("rare")  # in place: not a write
        assert await store.recall("lantern", 5, tags=["rare"]) == []
        assert changed in [r.item for r in await store.recall("lantern", 100, tags=["common"])]
        await store.store(changed)  # stored again: now it is rare
        assert [r.item for r in await store.recall("lantern", 5, tags=["rare"])] == [changed]
        await store.store(MemoryItem(id=moved.id, content="lantern", tags=["rare"]))
        assert [r.item.id for r in await store.recall("lantern", 5, tags=["rare"])] == [moved.id, changed.id]
        assert moved.id not in {r.item.id for r in await store.recall("lantern", 100, tags=["common"])}
        await store.delete(changed.id)
        assert [r.item.id for r in await store.recall("lantern", 5, tags=["rare"])] == [moved.id]
        await store.delete_many([i.id for i in items[10:90]])  # compacts the rows
        assert [r.item.id for r in await store.recall("lantern", 5, tags=["rare"])] == [moved.id]
        assert len(await store.recall("lantern", 100, tags=["common"])) == 18
        await store.delete(moved.id)  # the last one tagged "rare"
        assert await store.recall("lantern", 5, tags=["rare"]) == []
        assert "rare" not in tag_map(store)

    run(body())


def test_a_replaced_item_is_found_by_its_new_text_only_and_a_deleted_one_never() -> None:
    async def body() -> None:
        store = await filled(["apple pie", "river stone", "cloud ember"])
        (pie,) = [r.item for r in await store.recall("apple pie", 1)]
        await store.store(MemoryItem(id=pie.id, content="frost maple"))
        assert (await store.recall("frost maple", 1))[0].item.id == pie.id
        assert pie.id not in {r.item.id for r in await store.recall("apple pie", 3) if r.score > 0}
        await store.delete(pie.id)
        assert pie.id not in {r.item.id for r in await store.recall("frost maple", 3)}
        river = (await store.recall("river stone", 1))[0].item
        assert await store.delete_matching(MemoryQuery(text="river")) == 1
        assert river.id not in {r.item.id for r in await store.recall("river stone", 3)}
        assert await store.delete_many([i.item.id for i in await store.recall("cloud", 5)]) == 1
        assert await store.recall("cloud", 5) == []
        await store.store(MemoryItem(content="old", created_at=1.0))
        assert await store.delete_created_before(2.0) == 1
        assert await store.recall("old", 5) == []

    run(body())


def test_many_deletions_compact_the_index_and_keep_the_order() -> None:
    async def body() -> None:
        store = InMemoryStore(embedder=HashingEmbedder(16))
        items = [MemoryItem(content="token") for _ in range(300)]
        for item in items:
            await store.store(item)
        await store.delete_many([i.id for i in items[:250]])
        assert [r.item for r in await store.recall("token", 100)] == items[250:]

    run(body())


def test_equal_texts_tie_in_insertion_order() -> None:
    run(assert_equal_texts_tie_in_insertion_order(InMemoryStore(embedder=drifting())))


def test_equal_texts_tie_as_items_join_and_leave_their_text_and_rows_compact() -> None:
    """A replacement into a text joins its group at the item's own place, one out of it
    leaves it, a deletion takes the group's first row, and a compaction moves every
    row: the group ties throughout."""

    async def body() -> None:
        store = InMemoryStore(embedder=HashingEmbedder(3))
        fillers = [MemoryItem(content=f"filler {n} boats harbour") for n in range(200)]
        twins = [MemoryItem(content=TWIN) for _ in range(4)]
        await store.store_many([*fillers[:100], *twins[:2], *fillers[100:], *twins[2:]])

        async def group(expected: list[MemoryItem]) -> None:
            found = [r for r in await store.recall(TWIN, 10) if r.item.content == TWIN]
            assert [r.item.id for r in found] == [i.id for i in expected]
            assert len({r.score for r in found}) == 1

        await group(twins)
        joined = fillers[50].model_copy(update={"content": TWIN})
        await store.store(joined)
        await group([joined, *twins])
        await store.store(twins[1].model_copy(update={"content": "gone elsewhere"}))
        await group([joined, twins[0], twins[2], twins[3]])
        await store.delete(joined.id)
        await group([twins[0], twins[2], twins[3]])
        await store.delete_many([i.id for i in fillers[:150]])  # over half the rows: compacted
        await group([twins[0], twins[2], twins[3]])
        assert store._index is not None and not store._index._free  # the compaction ran

    run(body())


def test_recall_by_vector_and_its_refusals() -> None:
    async def body() -> None:
        store = await filled(["north wind", "south sea"], HashingEmbedder(8))
        (vector,) = await HashingEmbedder(8).embed(["north wind"])
        assert texts(await store.recall(vector, 1)) == ["north wind"]
        with pytest.raises(ValueError, match="the query vector gave vectors of 9 dimensions, not 8"):
            await store.recall([1.0] * 9)
        with pytest.raises(ValueError, match="NaN or infinity"):
            await store.recall([math.nan] * 8)
        with pytest.raises(TypeError, match="not numbers"):
            await store.recall([True] * 8)
        with pytest.raises(TypeError, match="query must be a str or a vector of numbers, got int"):
            await store.recall(3)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="k must be at least 1, got 0"):
            await store.recall("north", 0)
        with pytest.raises(TypeError, match="k must be an int, got a bool"):
            await store.recall("north", True)
        with pytest.raises(TypeError):
            await store.recall("north", tags="north")  # type: ignore[arg-type]
        with pytest.raises(NoEmbedderError, match=r"InMemoryStore\(embedder=...\)"):
            await InMemoryStore().recall("north")
        assert issubclass(NoEmbedderError, LionmemError) and issubclass(NoEmbedderError, RuntimeError)
        assert await (await filled([])).recall("anything") == []

    run(body())


def test_an_embedder_failure_or_a_wrong_vector_stores_nothing() -> None:
    calls: list[list[str]] = []

    def flaky(batch: list[str]) -> list[list[float]]:
        calls.append(batch)
        if "boom" in batch[0]:
            raise ConnectionError("the model server is down")
        if "short" in batch[0]:
            return [[1.0]]
        return [[1.0, 0.0]]

    async def body() -> None:
        store = InMemoryStore(embedder=FunctionEmbedder(flaky, dimensions=2, identity="flaky"))
        kept = MemoryItem(content="kept")
        await store.store(kept)
        with pytest.raises(ConnectionError):
            await store.store(MemoryItem(id=kept.id, content="boom"))
        with pytest.raises(ValueError, match="the embedder gave vectors of 1 dimensions, not 2"):
            await store.store(MemoryItem(content="short"))
        assert await store.search(MemoryQuery()) == [kept] and kept.content == "kept"
        assert [r.item for r in await store.recall([1.0, 0.0])] == [kept]

    run(body())


def test_text_of_chooses_what_is_embedded() -> None:
    async def body() -> None:
        store = InMemoryStore(embedder=HashingEmbedder(64), text_of=lambda item: " ".join(item.tags))
        await store.store(MemoryItem(content="irrelevant", tags=["harbour", "boats"]))
        await store.store(MemoryItem(content="harbour boats", tags=["desert"]))
        assert texts(await store.recall("harbour", 1)) == ["irrelevant"]
        with pytest.raises(TypeError, match="text_of must return a str, got int"):
            await InMemoryStore(embedder=HashingEmbedder(4), text_of=lambda item: 5).store(MemoryItem())  # type: ignore[arg-type, return-value]

    run(body())


def test_bad_construction_is_refused_by_name() -> None:
    with pytest.raises(TypeError, match="embedder must be an Embedder .*, got str"):
        InMemoryStore(embedder="wordllama")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="embedder must be an Embedder"):
        InMemoryStore(text_of=str)
    with pytest.raises(TypeError, match="text_of must be callable, got int"):
        InMemoryStore(embedder=HashingEmbedder(), text_of=5)  # type: ignore[arg-type]


def test_storing_a_non_item_with_an_embedder_is_refused() -> None:
    with pytest.raises(TypeError, match="item must be a MemoryItem"):
        run(InMemoryStore(embedder=HashingEmbedder()).store({"content": "x"}))  # type: ignore[arg-type]


def test_a_store_without_numpy_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from lionmem import InMemoryStore\nfrom lionmem.embedders import HashingEmbedder\n"
        "try:\n    InMemoryStore(embedder=HashingEmbedder())\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("recall needs numpy: pip install 'lionmem[recall]'")


def test_recall_is_concurrency_safe_with_writes() -> None:
    async def body() -> None:
        store = InMemoryStore(embedder=HashingEmbedder(32))
        ids = [uuid4() for _ in range(200)]

        async def write(n: int) -> None:
            await store.store(MemoryItem(id=ids[n], content=f"word{n % 5}"))

        async def read() -> int:
            return len(await store.recall("word1", 10))

        writes = asyncio.gather(*(write(n) for n in range(200)))
        reads = await asyncio.gather(*(read() for _ in range(50)))
        await writes
        assert all(0 <= count <= 10 for count in reads)
        # Every write kept its vector: the 40 items with "word1" come first, in insertion order.
        found = await store.recall("word1", 100)
        assert len(found) == 100
        assert [r.item.id for r in found[:40]] == [ids[n] for n in range(200) if n % 5 == 1]

    run(body())


def test_store_many_embeds_the_batch_in_one_call_and_recalls_as_single_stores_do() -> None:
    calls: list[list[str]] = []
    hashing = HashingEmbedder(64)

    def counted(batch: list[str]) -> list[list[float]]:
        calls.append(batch)
        return [hashing.vector(text) for text in batch]

    async def body() -> None:
        embedder = FunctionEmbedder(counted, dimensions=64, identity="counted")
        batch = [MemoryItem(content=f"harbour boats {n}", tags=["even" if n % 2 else "odd"]) for n in range(30)]
        batch.append(MemoryItem(id=batch[3].id, content="desert camels"))
        together = InMemoryStore(embedder=embedder)
        assert await together.store_many(batch) == [i.id for i in batch]
        assert calls == [[str(i.content) for i in batch]]
        one_at_a_time = InMemoryStore(embedder=embedder)
        for item in batch:
            await one_at_a_time.store(item)
        for query, tags in (("harbour boats 7", None), ("desert camels", None), ("harbour", ["even"])):
            assert await together.recall(query, 5, tags=tags) == await one_at_a_time.recall(query, 5, tags=tags)
        assert texts(await together.recall("desert camels", 1)) == ["desert camels"]

    run(body())


def test_store_many_stores_nothing_when_the_embedder_fails() -> None:
    def failing(batch: list[str]) -> list[list[float]]:
        if any("boom" in text for text in batch):
            raise ConnectionError("the model server is down")
        return [[1.0, 0.0] for _ in batch]

    async def body() -> None:
        store = InMemoryStore(embedder=FunctionEmbedder(failing, dimensions=2, identity="failing"))
        kept = MemoryItem(content="kept")
        await store.store(kept)
        with pytest.raises(ConnectionError):
            await store.store_many([MemoryItem(content="fine"), MemoryItem(id=kept.id, content="boom")])
        assert await store.search(MemoryQuery()) == [kept]
        assert [r.item for r in await store.recall([1.0, 0.0], 5)] == [kept]

    run(body())


class RecallOnly:
    """A store of another library that recalls (through an `InMemoryStore`), with
    none of lionmem's calls for many questions."""

    def __init__(self, inner: InMemoryStore) -> None:
        self.inner = inner
        self.embedder = inner.embedder

    async def store(self, item: MemoryItem) -> Any:
        return await self.inner.store(item)

    async def retrieve(self, item_id: Any) -> MemoryItem | None:
        return await self.inner.retrieve(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return await self.inner.search(query)

    async def recall(self, query: Any, k: int = 10, **options: Any) -> list[Recalled]:
        return await self.inner.recall(query, k, **options)


def test_many_questions_are_embedded_in_one_call_and_answered_as_one_call_each() -> None:
    calls: list[list[str]] = []
    hashing = HashingEmbedder(64)

    def counted(batch: list[str]) -> list[list[float]]:
        calls.append(list(batch))
        return [hashing.vector(text) for text in batch]

    async def body() -> None:
        store = InMemoryStore(embedder=FunctionEmbedder(counted, dimensions=64, identity="counted"))
        await store.store_many([MemoryItem(content=f"harbour boats {n}", metadata={"n": n}) for n in range(40)])
        calls.clear()
        questions: list[str | Sequence[float]] = ["harbour 7", hashing.vector("boats 12"), "boats 30"]
        many = await store.recall_many(questions, 3, filters={"n": Ge(10)}, min_score=0.2)
        assert calls == [["harbour 7", "boats 30"]]
        each = [await store.recall(q, 3, filters={"n": Ge(10)}, min_score=0.2) for q in questions]
        assert many == each and all(len(found) == 3 for found in many)
        assert await recall_many(RecallOnly(store), questions, 3, filters={"n": Ge(10)}, min_score=0.2) == each
        calls.clear()
        assert await store.recall_many([hashing.vector("boats 1")], 2) == [
            await store.recall(hashing.vector("boats 1"), 2)
        ]
        assert calls == []  # no text, no call

    run(body())


def test_many_questions_check_every_argument_before_anything_is_embedded() -> None:
    calls: list[list[str]] = []

    def counted(batch: list[str]) -> list[list[float]]:
        calls.append(list(batch))
        return [[1.0, 0.0] for _ in batch[:-1]]  # one vector short

    async def body() -> None:
        store = InMemoryStore(embedder=FunctionEmbedder(counted, dimensions=2, identity="short"))
        cases: list[tuple[tuple[Any, ...], dict[str, Any], type[Exception], str]] = [
            ((("a", "b"), 0), {}, ValueError, "k must be at least 1, got 0"),
            ((["a"],), {"tags": "t"}, TypeError, "tags must be a list of str"),
            ((["a"],), {"min_score": "high"}, TypeError, "min_score must be a number from -1 to 1, got a str"),
            ((iter(["a"]),), {}, TypeError, "queries must be a list or tuple of questions, got a list_iterator"),
        ]
        for arguments, options, error, message in cases:
            with pytest.raises(error, match=message):
                await store.recall_many(*arguments, **options)
        assert calls == []
        with pytest.raises(ValueError, match="the embedder gave 1 vectors for 2 texts"):
            await store.recall_many(["a", "b"])
        with pytest.raises(NoEmbedderError, match="InMemoryStore has no embedder"):
            await recall_many(InMemoryStore(), ["a"])

    run(body())


def test_min_score_cuts_the_ranking_where_the_scores_fall_below_it() -> None:
    async def body() -> None:
        store = await filled(["harbour boats", "harbour", "boats at sea", "desert camels"])
        every = await store.recall("harbour boats", 4)
        assert [r.score for r in every] == sorted((r.score for r in every), reverse=True)
        for floor in (every[1].score, every[1].score + 1e-9, -1, 1):
            kept = await store.recall("harbour boats", 4, min_score=floor)
            assert kept == [r for r in every if r.score >= floor]
        assert texts(await store.recall("harbour boats", 4, min_score=every[1].score)) == texts(every[:2])
        assert await store.recall("harbour boats", 1, min_score=0) == every[:1]

    run(body())
