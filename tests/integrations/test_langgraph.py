"""LangGraph's `BaseStore` on lionmem's three stores (ADR-0106): the mapping, the filter
dialect, TTL, `query=`, and the two ways of running it."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC
from pathlib import Path
from typing import Any

import pytest
from langchain_core.embeddings import Embeddings
from langgraph.store.base import GetOp, InvalidNamespaceError, Item, ListNamespacesOp, PutOp, SearchOp

import lionmem
import lionmem.integrations._langgraph_ops as operations
from lionmem import InMemoryStore, MemoryQuery
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.integrations.langgraph import EmbedderFromLangGraph, StoreForLangGraph
from tests.integrations.conftest import Opening


class Clock:
    """A clock the test sets; the stores read it instead of time.time."""

    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def letters(texts: Sequence[str]) -> list[list[float]]:
    """A tiny embedder: how often each of a, b and c occurs."""
    return [[float(text.count(c)) + 0.01 for c in "abc"] for text in texts]


INDEX: Any = {"dims": 3, "embed": letters}


@pytest.fixture
def store(opening: Opening) -> Iterator[StoreForLangGraph]:
    with StoreForLangGraph(opening()) as made:
        yield made


# -- items -----------------------------------------------------------------------


def test_an_item_comes_back_as_put_and_keeps_its_creation_when_put_again(store: StoreForLangGraph) -> None:
    value = {"channel": "email", "score": 7, "nested": {"a": [1, {"b": None}], "c": {}}, "[x]": "y", "ü": True}
    store.put(("users", "ana"), "prefs", value)
    first = store.get(("users", "ana"), "prefs")
    assert first is not None
    assert (first.namespace, first.key, first.value) == (("users", "ana"), "prefs", value)
    assert first.created_at == first.updated_at and first.created_at.tzinfo is UTC
    store.put(("users", "ana"), "prefs", {"channel": "sms"})
    second = store.get(("users", "ana"), "prefs")
    assert second is not None and second.value == {"channel": "sms"}
    assert second.created_at == first.created_at and second.updated_at > first.updated_at
    assert store.get(("users", "bob"), "prefs") is None and store.get(("users",), "prefs") is None
    store.delete(("users", "ana"), "prefs")
    assert store.get(("users", "ana"), "prefs") is None


def test_a_batch_runs_in_order_each_op_seeing_those_before(store: StoreForLangGraph) -> None:
    where = ("docs",)
    results = store.batch(
        [
            PutOp(where, "k", {"v": 1}),
            GetOp(where, "k"),
            PutOp(where, "k", {"v": 2}),
            PutOp(where, "other", {"v": 3}),
            SearchOp(where, filter={"v": {"$gte": 2}}),
            PutOp(where, "k", None),
            GetOp(where, "k"),
            ListNamespacesOp(),
        ]
    )
    assert results[0] is None and results[2] is None and results[5] is None
    assert isinstance(results[1], Item) and results[1].value == {"v": 1}
    assert [found.key for found in results[4]] == ["k", "other"]  # type: ignore[union-attr]
    assert results[6] is None
    assert results[7] == [("docs",)]


def test_a_put_the_store_refuses_changes_nothing_of_its_batch(store: StoreForLangGraph) -> None:
    store.put(("a",), "kept", {"v": 1})
    with pytest.raises((TypeError, ValueError)):
        store.batch([PutOp(("a",), "kept", None), PutOp(("a",), "bad", {"v": {1, 2}})])
    assert store.get(("a",), "kept") is not None and store.get(("a",), "bad") is None


def test_ops_and_values_lionmem_cannot_keep_are_refused_by_name(store: StoreForLangGraph) -> None:
    with pytest.raises(
        TypeError, match="^a LangGraph store runs GetOp, SearchOp, PutOp and ListNamespacesOp; got a str"
    ):
        store.batch(["get"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=r"^a put's value is a dict or None \(a delete\); got a list"):
        store.batch([PutOp(("a",), "k", [1])])  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"^a LangGraph value's keys are strings; 1 at \[\"n\"\] is not"):
        store.put(("a",), "k", {"n": {1: "x"}})
    with pytest.raises(InvalidNamespaceError):
        store.batch([GetOp(("a.b",), "k")])
    assert store.list_namespaces() == []


def test_a_namespace_given_as_a_list_is_the_tuple_as_langgraphs_stores_take_it(store: StoreForLangGraph) -> None:
    store.put(["a", "b"], "k", {"v": 1})  # type: ignore[arg-type]
    found = store.get(("a", "b"), "k")
    assert found is not None and found.namespace == ("a", "b")
    assert [item.key for item in store.search(["a"])] == ["k"]  # type: ignore[arg-type]
    store.delete(["a", "b"], "k")  # type: ignore[arg-type]
    assert store.get(("a", "b"), "k") is None


# -- search and filters ----------------------------------------------------------


def stocked(store: StoreForLangGraph) -> None:
    store.put(("users", "ana"), "a", {"score": 7, "tier": "gold", "profile": {"city": "Oslo", "age": 41}})
    store.put(("users", "bob"), "b", {"score": 3, "tier": "free", "tags": ["x", "y"]})
    store.put(("users", "cy"), "c", {"score": "9", "tier": None})
    store.put(("docs",), "d", {"score": 5.5, "profile": {"city": "Rome"}})


@pytest.mark.parametrize(
    ("prefix", "given", "keys"),
    [
        ((), None, ["a", "b", "c", "d"]),
        (("users",), None, ["a", "b", "c"]),
        (("users", "ana"), None, ["a"]),
        (("user",), None, []),
        ((), {"score": {"$gte": 5}}, ["a", "d"]),  # "9" is a string: compared by type
        ((), {"score": {"$gt": "8"}}, ["c"]),
        ((), {"score": {"$gt": 3, "$lt": 7}}, ["d"]),
        ((), {"score": {"$lte": 3}}, ["b"]),
        ((), {"tier": {"$ne": "gold"}}, ["b", "c", "d"]),
        ((), {"tier": None}, ["c", "d"]),  # null or missing
        ((), {"tier": {"$eq": "free"}}, ["b"]),
        ((), {"profile": {"city": "Oslo"}}, ["a"]),  # a nested field
        ((), {"profile": {"age": {"$gt": 40}}}, ["a"]),
        ((), {"tags": ["x", "y"]}, ["b"]),
        ((), {"tags": ("x", "y")}, ["b"]),
        ((), {"tags": ["y", "x"]}, []),
        (("users",), {"score": 7, "tier": "gold"}, ["a"]),
    ],
)
def test_filters_answer_alike_in_every_store(
    store: StoreForLangGraph, prefix: tuple[str, ...], given: dict[str, Any] | None, keys: list[str]
) -> None:
    stocked(store)
    found = store.search(prefix, filter=given)
    assert [item.key for item in found] == keys
    assert all(item.score is None for item in found)


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        ({"$or": [{"a": 1}]}, ValueError, "^filter operator '\\$or' at the top of a filter"),
        ({"score": {"$gtt": 1}}, ValueError, '^unknown filter operator\\(s\\) \\$gtt on \\["score"\\]'),
        ({"score": {"$gt": 1, "$in": [1]}}, ValueError, "^unknown filter operator\\(s\\) \\$in"),
        ({"profile": {}}, ValueError, '^an empty object as the filter of \\["profile"\\]'),
        ({1: 2}, TypeError, "^a filter's field names are strings; got 1$"),
    ],
)
def test_a_filter_lionmem_cannot_answer_exactly_is_refused(
    store: StoreForLangGraph, given: dict[Any, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        store.search((), filter=given)


def test_pages_by_offset_come_in_the_order_stored_and_never_overlap(
    store: StoreForLangGraph, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(operations, "_PAGE", 3)  # several reads to reach an offset
    for n in range(11):
        store.put(("log",), f"k{n:02}", {"n": n})
    pages = [[item.value["n"] for item in store.search(("log",), limit=4, offset=offset)] for offset in (0, 4, 8, 12)]
    assert pages == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10], []]
    assert [item.value["n"] for item in store.search(("log",), filter={"n": {"$gte": 5}}, limit=2, offset=7)] == []
    assert store.search(("log",), limit=0) == []
    with pytest.raises(ValueError, match="^a search's limit and offset are at least 0; got limit=-1, offset=0$"):
        store.search(("log",), limit=-1)


def test_namespaces_list_by_prefix_suffix_wildcard_and_depth(store: StoreForLangGraph) -> None:
    for namespace in [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("z",), ("q", "b", "c")]:
        store.put(namespace, "k", {"v": 1})
    assert store.list_namespaces() == [("a", "b", "c"), ("a", "b", "d"), ("a", "x"), ("q", "b", "c"), ("z",)]
    assert store.list_namespaces(prefix=("a",)) == [("a", "b", "c"), ("a", "b", "d"), ("a", "x")]
    assert store.list_namespaces(suffix=("b", "c")) == [("a", "b", "c"), ("q", "b", "c")]
    assert store.list_namespaces(prefix=("*", "b")) == [("a", "b", "c"), ("a", "b", "d"), ("q", "b", "c")]
    assert store.list_namespaces(prefix=("a",), suffix=("*",), max_depth=2) == [("a", "b"), ("a", "x")]
    assert store.list_namespaces(prefix=("a", "b", "c", "d")) == []
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d"), ("a", "x")]
    with pytest.raises(ValueError, match="^list_namespaces' limit, offset and max_depth are at least 0"):
        store.list_namespaces(max_depth=-1)


def test_an_unknown_match_type_is_refused() -> None:
    from langgraph.store.base import MatchCondition

    with StoreForLangGraph(InMemoryStore()) as store:
        store.put(("a",), "k", {"v": 1})
        with pytest.raises(ValueError, match="^a namespace condition matches by 'prefix' or 'suffix', not 'middle'$"):
            store.batch([ListNamespacesOp((MatchCondition("middle", ("a",)),))])  # type: ignore[arg-type]


# -- query= ------------------------------------------------------------------------


def test_query_recalls_by_meaning_with_the_stores_scores(opening: Opening) -> None:
    async def body() -> None:
        async with StoreForLangGraph.open(opening(embedder=EmbedderFromLangGraph(INDEX)), index=INDEX) as store:
            await store.aput(("n",), "as", {"text": "aaaa"})
            await store.aput(("n",), "bs", {"text": "bbbb"})
            await store.aput(("n",), "mixed", {"text": "abab"})
            await store.aput(("m",), "elsewhere", {"text": "aaaa"})
            found = await store.asearch(("n",), query="aaa", limit=3)
            assert [item.key for item in found] == ["as", "mixed", "bs"]
            recalled = await store.store_of.recall("aaa", 3, filters={"langgraph:ns:0": "n"})  # type: ignore[attr-defined]
            assert [item.score for item in found] == pytest.approx([each.score for each in recalled])
            # An item put with index=False has no text to be found by; as in LangGraph's
            # stores, it makes up the number when fewer items are indexed.
            await store.aput(("n",), "hidden", {"text": "aaaa"}, index=False)
            padded = await store.asearch(("n",), query="aaa", limit=5)
            assert [(item.key, item.score is None) for item in padded][-2:] == [("bs", False), ("hidden", True)]
            assert [item.key for item in await store.asearch(("n",), query="aaa", limit=2, offset=1)] == ["mixed", "bs"]
            assert await store.asearch(("n",), query="aaa", limit=0) == []

    asyncio.run(body())


def test_index_fields_choose_the_text_an_item_is_found_by(opening: Opening) -> None:
    index: Any = {**INDEX, "fields": ["title"]}

    async def body() -> None:
        async with StoreForLangGraph.open(opening(embedder=EmbedderFromLangGraph(index)), index=index) as store:
            await store.aput(("n",), "one", {"title": "cccc", "body": "aaaa"})
            await store.aput(("n",), "two", {"title": "aaaa", "body": "cccc"})
            await store.aput(("n",), "three", {"title": "bbbb", "body": "aaaa"}, index=["body"])
            assert [item.key for item in await store.asearch(("n",), query="aaaa", limit=2)] == ["two", "three"]
            kept = await store.store_of.search(MemoryQuery())
            assert sorted(item.content for item in kept) == ["aaaa", "aaaa", "cccc"]

    asyncio.run(body())


def test_query_without_an_embedder_passes_over_the_query_as_langgraphs_stores_do(store: StoreForLangGraph) -> None:
    stocked(store)
    found = store.search(("users",), query="gold", limit=2)
    assert [(item.key, item.score) for item in found] == [("a", None), ("b", None)]


def test_hybrid_answers_query_by_meaning_and_words(opening: Opening) -> None:
    async def body() -> None:
        lion = opening(embedder=EmbedderFromLangGraph(INDEX))
        async with StoreForLangGraph.open(lion, index=INDEX, hybrid=True) as store:
            await store.aput(("n",), "fox", {"text": "the red fox"})
            await store.aput(("n",), "sky", {"text": "aaaa the blue sky"})
            found = await store.asearch(("n",), query="fox")
            assert found[0].key == "fox"
            fused = await store.store_of.recall_hybrid("fox", 10, filters={"langgraph:ns:0": "n"})  # type: ignore[attr-defined]
            assert [item.score for item in found] == pytest.approx([each.score for each in fused])

    asyncio.run(body())


def test_hybrid_needs_a_store_that_fuses() -> None:
    class OnlyMeaning(InMemoryStore):
        recall_hybrid = None  # type: ignore[assignment]

    with pytest.raises(TypeError, match="^StoreForLangGraph needs a store that implements HybridStore, got "):
        StoreForLangGraph(OnlyMeaning(embedder=EmbedderFromLangGraph(INDEX)), hybrid=True)


def test_a_langgraph_index_becomes_a_lionmem_embedder() -> None:
    class Characters(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return letters(texts)

        def embed_query(self, text: str) -> list[float]:
            return letters([text])[0]

    async def in_a_coroutine(texts: Sequence[str]) -> list[list[float]]:
        return letters(texts)

    embeds: list[tuple[Any, str]] = [(letters, "letters"), (in_a_coroutine, "in_a_coroutine")]
    for embed, name in embeds:
        embedder = EmbedderFromLangGraph({"dims": 3, "embed": embed})
        assert (embedder.identity, embedder.dimensions) == (f"langgraph:{name}:3", 3)
        assert asyncio.run(embedder.embed(["ab", "c"])) == letters(["ab", "c"])
    assert isinstance(EmbedderFromLangGraph({"dims": 3, "embed": Characters()}), lionmem.Embedder)
    assert EmbedderFromLangGraph({"dims": 3, "embed": Characters()}).identity == "langgraph:Characters:3"
    for bad in [{"dims": 3}, {"embed": letters}, {"dims": 0, "embed": letters}, {"dims": True, "embed": letters}]:
        with pytest.raises(ValueError, match="^a LangGraph index needs its 'embed' and a positive int 'dims'"):
            EmbedderFromLangGraph(bad)  # type: ignore[arg-type]


def test_a_url_is_opened_with_the_indexs_embedder(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'notes.db'}"
    with StoreForLangGraph(url, index=INDEX) as store:
        made: Any = store.store_of
        assert store.embeddings is made.embedder.embeddings  # the index's embedding, made once
        store.put(("n",), "as", {"text": "aaaa"})
        store.put(("n",), "bs", {"text": "bbbb"})
        assert [item.key for item in store.search(("n",), query="bbb", limit=1)] == ["bs"]

    async def reopened() -> list[str]:
        async with StoreForLangGraph.open(url, index=INDEX) as again:
            return [item.key for item in await again.asearch(("n",), query="aaa", limit=1)]

    assert asyncio.run(reopened()) == ["as"]


# -- TTL -------------------------------------------------------------------------


def test_a_ttl_in_minutes_is_the_items_expiry_and_a_read_moves_it() -> None:
    clock = Clock()
    with StoreForLangGraph(InMemoryStore(clock=clock), ttl={"refresh_on_read": True}) as store:
        store.put(("t",), "short", {"v": 1}, ttl=1)
        store.put(("t",), "kept", {"v": 2})
        clock.now += 50
        assert store.get(("t",), "short") is not None  # and it lasts a minute from now
        clock.now += 50
        assert [item.key for item in store.search(("t",))] == ["short", "kept"]
        clock.now += 50
        assert store.get(("t",), "short", refresh_ttl=False) is not None
        assert [item.key for item in store.search(("t",), refresh_ttl=False)] == ["short", "kept"]
        clock.now += 20
        assert store.get(("t",), "short") is None and store.search(("t",)) != []
        assert store.list_namespaces() == [("t",)]
        store.put(("t",), "short", {"v": 3}, ttl=1)
        store.put(("t",), "short", {"v": 3})  # put again without a TTL: it never expires
        clock.now += 10_000
        assert store.get(("t",), "short") is not None


def test_the_ttl_settings_default_and_refresh_as_langgraph_declares() -> None:
    clock = Clock()
    with StoreForLangGraph(InMemoryStore(clock=clock), ttl={"default_ttl": 2, "refresh_on_read": False}) as store:
        assert store.supports_ttl and store.ttl_config == {"default_ttl": 2, "refresh_on_read": False}
        store.put(("t",), "k", {"v": 1})
        clock.now += 100
        assert store.get(("t",), "k") is not None
        clock.now += 20
        assert store.get(("t",), "k") is None


def test_a_store_with_a_ttl_of_its_own_keeps_a_put_without_one_for_ever() -> None:
    clock = Clock()
    with StoreForLangGraph(InMemoryStore(clock=clock, ttl=60)) as store:
        store.put(("t",), "k", {"v": 1}, ttl=None)
        clock.now += 120
        assert store.get(("t",), "k") is not None


class Sweeping(InMemoryStore):
    """Counts its sweeps."""

    sweeps = 0

    async def sweep(self) -> int:
        self.sweeps += 1
        return await super().sweep()


def test_sweep_ttl_deletes_what_expired_now_in_both_forms() -> None:
    clock = Clock()
    lion = Sweeping(clock=clock)
    with StoreForLangGraph(lion, index=INDEX) as store:
        assert store.embeddings is not None and store.embeddings.embed_documents(["ab"]) == letters(["ab"])
        store.put(("t",), "a", {"v": 1}, ttl=1)
        store.put(("t",), "b", {"v": 2}, ttl=1)
        store.put(("t",), "c", {"v": 3})
        clock.now += 61
        assert store.sweep_ttl() == 2 and lion.sweeps == 1
        store.put(("t",), "d", {"v": 4}, ttl=1)
        clock.now += 61
        assert asyncio.run(store.asweep_ttl()) == 1
        assert [item.key for item in store.search(("t",))] == ["c"]
    with StoreForLangGraph(InMemoryStore()) as unindexed:
        assert unindexed.embeddings is None


def test_a_sweep_interval_runs_a_sweeper_while_the_store_is_open() -> None:
    lion = Sweeping()
    with StoreForLangGraph(lion, ttl={"sweep_interval_minutes": 60}) as store:
        assert store.store_of is lion
        assert _eventually(lambda: lion.sweeps == 1)
    assert lion.sweeps == 1  # one sweep as it starts; the next in an hour

    async def opened() -> int:
        again = Sweeping()
        async with StoreForLangGraph.open(again, ttl={"sweep_interval_minutes": 60}):
            for _ in range(200):
                if again.sweeps:
                    break
                await asyncio.sleep(0.01)
        return again.sweeps

    assert asyncio.run(opened()) == 1
    with StoreForLangGraph(lion) as unswept:
        unswept.put(("a",), "k", {"v": 1})
    assert lion.sweeps == 1


class Stuck(InMemoryStore):
    """A store whose sweeps fail, or hold on until released, as a long delete would."""

    def __init__(self, *, fails: bool = False) -> None:
        super().__init__()
        self.fails, self.release, self.started = fails, threading.Event(), threading.Event()

    async def sweep(self) -> int:
        if self.fails:
            raise RuntimeError("the sweep failed")
        self.started.set()
        cancelled = False
        while not self.release.is_set():
            try:
                await asyncio.sleep(0.005)
            except asyncio.CancelledError:  # the delete under way ends before the stop
                cancelled = True
        if cancelled:
            raise asyncio.CancelledError
        return 0


def test_start_ttl_sweeper_runs_one_sweeper_until_stopped_as_langgraphs_durable_stores_do() -> None:
    lion = Sweeping()
    with StoreForLangGraph(lion) as store:
        assert store.stop_ttl_sweeper() is True  # none ran
        running = store.start_ttl_sweeper()
        assert store.start_ttl_sweeper(1) is running and not running.done()
        assert _eventually(lambda: lion.sweeps == 1)
        assert store.stop_ttl_sweeper() is True and running.result(timeout=1) is None
        assert store.stop_ttl_sweeper() is True
        again = store.start_ttl_sweeper(sweep_interval_minutes=60)
        assert again is not running and _eventually(lambda: lion.sweeps == 2)
    assert again.result(timeout=1) is None  # closing stopped it
    assert lion.sweeps == 2

    async def opened() -> None:
        async with StoreForLangGraph.open(Sweeping()) as store:
            running = await store.astart_ttl_sweeper(60)
            assert await store.astart_ttl_sweeper() is running
            assert await store.astop_ttl_sweeper() is True and running.result() is None

    asyncio.run(opened())


def test_a_sweepers_failure_is_its_futures_and_a_stop_may_time_out() -> None:
    with StoreForLangGraph(Stuck(fails=True)) as store:
        failing = store.start_ttl_sweeper()
        assert store.stop_ttl_sweeper() is True
        with pytest.raises(RuntimeError, match="^the sweep failed$"):
            failing.result(timeout=1)
    stuck = Stuck()
    with StoreForLangGraph(stuck) as store:
        running = store.start_ttl_sweeper()
        assert stuck.started.wait(1)
        assert store.stop_ttl_sweeper(timeout=0.05) is False and not running.done()
        stuck.release.set()
        assert running.result(timeout=1) is None


@pytest.mark.parametrize(
    ("minutes", "error", "message"),
    [
        ("5", TypeError, "^sweep_interval_minutes must be a number of minutes, got a str$"),
        (True, TypeError, "^sweep_interval_minutes must be a number of minutes, got a bool$"),
        (0, ValueError, "^sweep_interval_minutes must be a finite number of minutes above 0, got 0$"),
        (math.inf, ValueError, "^sweep_interval_minutes must be a finite number of minutes above 0, got inf$"),
    ],
)
def test_a_sweep_interval_that_is_no_number_of_minutes_is_refused(
    minutes: Any, error: type[Exception], message: str
) -> None:
    lion = Sweeping()
    with StoreForLangGraph(lion) as store:
        with pytest.raises(error, match=message):
            store.start_ttl_sweeper(minutes)
        assert store.stop_ttl_sweeper() is True
    with pytest.raises(error, match=message):
        StoreForLangGraph(lion, ttl={"sweep_interval_minutes": minutes})
    assert lion.sweeps == 0


def test_code_written_for_langgraphs_durable_stores_runs_unchanged() -> None:
    with_text_fields: Any = {**INDEX, "text_fields": "title"}  # as LangGraph's SQLite store names them
    with StoreForLangGraph(InMemoryStore(), index=with_text_fields) as store:
        store.setup()
        store.put(("n",), "one", {"title": "aaaa", "body": "cccc"})
        store.put(("n",), "two", {"title": "cccc", "body": "aaaa"})
        assert [item.key for item in store.search(("n",), query="aaaa", limit=1)] == ["one"]
        asyncio.run(store.asetup())
    both: Any = {**INDEX, "fields": ["title"], "text_fields": ["body"]}
    with pytest.raises(
        ValueError,
        match=r"^an index names its fields once, as 'fields' or 'text_fields'; got \['title'\] and \['body'\]$",
    ):
        StoreForLangGraph(InMemoryStore(), index=both)


def _eventually(holds: Callable[[], bool]) -> bool:
    for _ in range(200):
        if holds():
            return True
        threading.Event().wait(0.01)
    return False


# -- running it --------------------------------------------------------------------


def test_made_with_the_class_it_answers_sync_and_async_calls_from_anywhere() -> None:
    with StoreForLangGraph(InMemoryStore()) as store:

        async def inside_a_loop() -> Item | None:
            store.put(("a",), "sync", {"v": 1})  # blocks this loop, not the store's
            await store.aput(("a",), "async", {"v": 2})
            return await store.aget(("a",), "sync")

        found = asyncio.run(inside_a_loop())
        assert found is not None and found.value == {"v": 1}
        assert store.get(("a",), "async") is not None


def test_opened_on_a_loop_it_awaits_there_and_serves_other_threads_and_loops(tmp_path: Path) -> None:
    async def body() -> None:
        async with StoreForLangGraph.open(SQLiteMemoryStore.open(tmp_path / "s.db")) as store:
            await store.aput(("a",), "k", {"v": 1})
            with pytest.raises(
                asyncio.InvalidStateError, match="^a sync method of StoreForLangGraph was called on the event loop"
            ):
                store.get(("a",), "k")
            from_a_thread = await asyncio.to_thread(store.get, ("a",), "k")
            assert from_a_thread is not None and from_a_thread.value == {"v": 1}
            from_another_loop = await asyncio.to_thread(asyncio.run, store.aget(("a",), "k"))
            assert from_another_loop is not None and from_another_loop.key == "k"

    asyncio.run(body())


def test_what_is_not_a_store_or_lacks_an_extension_is_refused(tmp_path: Path) -> None:
    with pytest.raises(
        TypeError, match="^StoreForLangGraph takes a store URL, a store's opening or a store, got an int$"
    ):
        StoreForLangGraph(3)  # type: ignore[arg-type]

    class Plain:  # a ForgettingStore that cannot store many at once
        def __getattr__(self, name: str) -> Any:
            if name in {"store", "retrieve", "search", "delete", "delete_many", "delete_matching", "count"}:
                return getattr(InMemoryStore(), name)
            if name in {"delete_created_before", "scan"}:
                return getattr(InMemoryStore(), name)
            raise AttributeError(name)

    with pytest.raises(TypeError, match="^StoreForLangGraph needs a store that implements BatchingStore, got "):
        StoreForLangGraph(Plain())

    async def body() -> None:
        with pytest.raises(
            TypeError, match="^StoreForLangGraph takes a store URL, a store's opening or a store, got an int$"
        ):
            async with StoreForLangGraph.open(3):  # type: ignore[arg-type]
                pass
        async with SQLiteMemoryStore.open(tmp_path / "s.db") as opened:
            with pytest.raises(
                TypeError, match="^an open SQLiteMemoryStore belongs to the event loop it was opened on; "
            ):
                StoreForLangGraph(opened)

    asyncio.run(body())


def test_close_closes_what_it_opened_once() -> None:
    store = StoreForLangGraph(InMemoryStore(), ttl={"sweep_interval_minutes": 1})
    store.close()
    store.close()
    with pytest.raises(RuntimeError, match="^the SyncStore is closed$"):
        store.get(("a",), "k")
