"""Every row of docs/langgraph-differences.md, run side by side against LangGraph's own
`InMemoryStore`, from the langgraph-checkpoint the `langgraph` extra installs."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest
from langgraph.store.base import BaseStore
from langgraph.store.memory import InMemoryStore as LangGraphStore

from lionmem import InMemoryStore
from lionmem.integrations.langgraph import EmbedderFromLangGraph, StoreForLangGraph
from tests.support.differences import Ledger

LEDGER = Ledger("langgraph-differences.md")
row = LEDGER.row


def letters(texts: Sequence[str]) -> list[list[float]]:
    return [[float(text.count(c)) + 0.01 for c in "abc"] for text in texts]


@pytest.fixture
def both() -> Iterator[Callable[..., tuple[BaseStore, StoreForLangGraph]]]:
    """LangGraph's in-memory store and the bridge over lionmem's, made alike."""
    made: list[StoreForLangGraph] = []

    def make(index: Any = None) -> tuple[BaseStore, StoreForLangGraph]:
        embedder = None if index is None else EmbedderFromLangGraph(index)
        made.append(StoreForLangGraph(InMemoryStore(embedder=embedder), index=index))
        return LangGraphStore(index=index), made[-1]

    yield make
    for store in made:
        store.close()


def keys(found: list[Any]) -> list[str]:
    return [item.key for item in found]


@row("one-vector-per-item")
def test_one_vector_per_item(both: Callable[..., tuple[BaseStore, StoreForLangGraph]]) -> None:
    index = {"dims": 3, "embed": letters, "fields": ["p", "q"]}
    theirs, ours = both(index)
    for store in (theirs, ours):
        store.put(("n",), "k", {"p": "aaa", "q": "bbb"})
    [their_best], [our_best] = theirs.search(("n",), query="aaa"), ours.search(("n",), query="aaa")
    assert their_best.score == pytest.approx(1.0)
    assert our_best.score is not None and our_best.score < 0.9


@row("order-by-type")
def test_order_by_type(both: Callable[..., tuple[BaseStore, StoreForLangGraph]]) -> None:
    theirs, ours = both()
    for store in (theirs, ours):
        store.put(("n",), "number", {"score": 5})
        store.put(("n",), "text", {"score": "9"})
    assert keys(theirs.search(("n",), filter={"score": {"$gt": 4}})) == ["number", "text"]
    assert keys(ours.search(("n",), filter={"score": {"$gt": 4}})) == ["number"]
    for store in (theirs, ours):
        store.put(("n",), "word", {"score": "abc"})
    with pytest.raises(ValueError, match="could not convert string to float"):
        theirs.search(("n",), filter={"score": {"$gt": 4}})
    assert keys(ours.search(("n",), filter={"score": {"$gt": 4}})) == ["number"]


@row("top-level-operator")
def test_top_level_operator(both: Callable[..., tuple[BaseStore, StoreForLangGraph]]) -> None:
    theirs, ours = both()
    for store in (theirs, ours):
        store.put(("n",), "k", {"score": 5})
    assert theirs.search(("n",), filter={"$or": [{"score": 5}]}) == []
    with pytest.raises(ValueError, match=r"^filter operator '\$or' at the top of a filter"):
        ours.search(("n",), filter={"$or": [{"score": 5}]})


@row("unknown-operator")
def test_unknown_operator(both: Callable[..., tuple[BaseStore, StoreForLangGraph]]) -> None:
    theirs, ours = both()
    typo = {"score": {"$gtt": 1}}
    assert theirs.search(("n",), filter=typo) == []
    with pytest.raises(ValueError, match=r"^unknown filter operator\(s\) \$gtt"):
        ours.search(("n",), filter=typo)
    theirs.put(("n",), "k", {"score": 5})
    with pytest.raises(ValueError, match=r"Unsupported operator: \$gtt"):
        theirs.search(("n",), filter=typo)


@row("empty-object-filter")
def test_empty_object_filter(both: Callable[..., tuple[BaseStore, StoreForLangGraph]]) -> None:
    theirs, ours = both()
    for store in (theirs, ours):
        store.put(("n",), "object", {"profile": {"city": "Oslo"}})
        store.put(("n",), "text", {"profile": "none"})
    assert keys(theirs.search(("n",), filter={"profile": {}})) == ["object"]
    with pytest.raises(ValueError, match="^an empty object as the filter of"):
        ours.search(("n",), filter={"profile": {}})


@row("negative-limit")
def test_negative_limit(both: Callable[..., tuple[BaseStore, StoreForLangGraph]]) -> None:
    theirs, ours = both()
    for store in (theirs, ours):
        for key in "abc":
            store.put(("n",), key, {"v": 1})
    assert keys(theirs.search(("n",), limit=-1)) == ["a", "b"]
    with pytest.raises(ValueError, match="^a search's limit and offset are at least 0; got limit=-1"):
        ours.search(("n",), limit=-1)


@row("ttl-in-memory")
def test_ttl_in_memory(both: Callable[..., tuple[BaseStore, StoreForLangGraph]]) -> None:
    theirs, ours = both()
    assert not theirs.supports_ttl and ours.supports_ttl
    with pytest.raises(NotImplementedError, match="TTL is not supported by InMemoryStore"):
        theirs.put(("n",), "k", {"v": 1}, ttl=1)
    ours.put(("n",), "k", {"v": 1}, ttl=1)
    assert ours.get(("n",), "k") is not None


@row("value-not-json")
def test_value_not_json(both: Callable[..., tuple[BaseStore, StoreForLangGraph]]) -> None:
    theirs, ours = both()
    theirs.put(("n",), "k", {"tags": {"a", "b"}})
    found = theirs.get(("n",), "k")
    assert found is not None and found.value == {"tags": {"a", "b"}}
    with pytest.raises(TypeError, match="not JSON serializable"):
        ours.put(("n",), "k", {"tags": {"a", "b"}})
    assert ours.get(("n",), "k") is None


@row("query-without-index")
def test_query_without_index(both: Callable[..., tuple[BaseStore, StoreForLangGraph]]) -> None:
    theirs, ours = both()
    for store in (theirs, ours):
        store.put(("n",), "a", {"text": "red fox"})
        store.put(("n",), "b", {"text": "blue sky"})
    answers = [[(item.key, item.score) for item in store.search(("n",), query="sky")] for store in (theirs, ours)]
    assert answers[0] == answers[1] == [("a", None), ("b", None)]


# -- the page ------------------------------------------------------------------------


def test_the_page_and_the_tests_hold_the_same_rows() -> None:
    LEDGER.check_page()


def test_each_row_names_itself_when_it_no_longer_holds() -> None:
    @row("a-row-for-this-test")
    def broken() -> None:
        raise AssertionError("the behaviour changed")

    del LEDGER.rows["a-row-for-this-test"]
    with pytest.raises(AssertionError, match="^row 'a-row-for-this-test' of docs/langgraph-differences.md"):
        broken()
