"""Every row of docs/langgraph-differences.md, run side by side against LangGraph's own
`InMemoryStore` (or, where the row names it, its SQLite or PostgreSQL store), from the
releases the test extra installs."""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from typing import Any

import pytest
from langgraph.store.base import BaseStore, TTLConfig
from langgraph.store.memory import InMemoryStore as LangGraphStore
from langgraph.store.postgres import PostgresStore
from langgraph.store.sqlite import SqliteStore
from langgraph.store.sqlite.aio import AsyncSqliteStore

from lionmem import InMemoryStore
from lionmem.integrations.langgraph import EmbedderFromLangGraph, StoreForLangGraph
from tests.support.differences import Ledger
from tests.support.pg_server import fresh_database

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


@pytest.fixture
def their_sqlite() -> Iterator[Callable[..., SqliteStore]]:
    """LangGraph's SQLite store, in memory, set up."""
    with ExitStack() as opened:

        def make(ttl: TTLConfig | None = None) -> SqliteStore:
            store = opened.enter_context(SqliteStore.from_conn_string(":memory:", ttl=ttl))
            store.setup()
            return store

        yield make


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


@row("dotted-filter-key")
def test_dotted_filter_key(
    both: Callable[..., tuple[BaseStore, StoreForLangGraph]], their_sqlite: Callable[..., SqliteStore]
) -> None:
    theirs, ours = both()
    sqlite = their_sqlite()
    for store in (theirs, ours, sqlite):
        store.put(("n",), "nested", {"user": {"level": "x"}})
        store.put(("n",), "flat", {"user.level": "x"})
    assert keys(theirs.search(("n",), filter={"user.level": "x"})) == ["flat"]
    assert keys(ours.search(("n",), filter={"user.level": "x"})) == ["flat"]
    assert keys(sqlite.search(("n",), filter={"user.level": "x"})) == ["nested"]
    assert keys(theirs.search(("n",), filter={"user": {"level": "x"}})) == ["nested"]
    assert keys(ours.search(("n",), filter={"user": {"level": "x"}})) == ["nested"]
    with pytest.raises(ValueError, match="Unsupported operator: level"):
        sqlite.search(("n",), filter={"user": {"level": "x"}})


@row("any-filter-key")
def test_any_filter_key(
    both: Callable[..., tuple[BaseStore, StoreForLangGraph]], their_sqlite: Callable[..., SqliteStore]
) -> None:
    _, ours = both()
    sqlite = their_sqlite()
    key = "access') = 'public' OR '1'='1"
    for store in (ours, sqlite):
        store.put(("n",), "quoted", {key: 1})
        store.put(("n",), "other", {"access": "public"})
    with pytest.raises(ValueError, match="^Invalid filter key"):
        sqlite.search(("n",), filter={key: 1})
    assert keys(ours.search(("n",), filter={key: 1})) == ["quoted"]


@row("refresh-on-read")
def test_refresh_on_read(their_sqlite: Callable[..., SqliteStore]) -> None:
    sqlite = their_sqlite({"default_ttl": 1})

    def expiry() -> object:
        return sqlite.conn.execute("SELECT expires_at FROM store").fetchone()[0]

    sqlite.put(("n",), "k", {"v": 1})
    before = expiry()
    assert sqlite.get(("n",), "k") is not None and sqlite.get(("n",), "k", refresh_ttl=True) is not None
    assert expiry() == before  # not refreshed: its settings do not say refresh_on_read
    now = [0.0]
    with StoreForLangGraph(InMemoryStore(clock=lambda: now[0]), ttl={"default_ttl": 1}) as ours:
        ours.put(("n",), "read", {"v": 1})
        ours.put(("n",), "unread", {"v": 1})
        now[0] = 50.0
        assert ours.get(("n",), "read") is not None
        now[0] = 61.0
        assert ours.get(("n",), "read", refresh_ttl=False) is not None  # refreshed at 50
        assert ours.get(("n",), "unread") is None


@row("expired-rows")
def test_expired_rows(their_sqlite: Callable[..., SqliteStore]) -> None:
    sqlite = their_sqlite()
    with StoreForLangGraph(InMemoryStore()) as ours:
        for store in (sqlite, ours):
            store.put(("n",), "k", {"v": 1}, ttl=0.001)  # 60 ms
        time.sleep(0.15)
        assert sqlite.get(("n",), "k", refresh_ttl=False) is not None
        assert keys(sqlite.search(("n",), refresh_ttl=False)) == ["k"] and sqlite.list_namespaces() == [("n",)]
        assert ours.get(("n",), "k") is None and ours.search(("n",)) == [] and ours.list_namespaces() == []


@row("distance-type")
def test_distance_type(pgvector_server_url: str) -> None:
    index: Any = {"dims": 3, "embed": letters, "distance_type": "l2"}
    with PostgresStore.from_conn_string(fresh_database(pgvector_server_url), index=index) as theirs:
        theirs.setup()
        theirs.put(("n",), "k", {"text": "aab"})
        [their_hit] = theirs.search(("n",), query="abb")
    with StoreForLangGraph(InMemoryStore(embedder=EmbedderFromLangGraph(index)), index=index) as ours:
        ours.put(("n",), "k", {"text": "aab"})
        [our_hit] = ours.search(("n",), query="abb")
    [stored], [asked] = letters(['{"text": "aab"}']), letters(["abb"])
    assert their_hit.score == pytest.approx(-math.dist(stored, asked), abs=1e-3)
    cosine = sum(x * y for x, y in zip(stored, asked, strict=True)) / math.hypot(*stored) / math.hypot(*asked)
    assert our_hit.score == pytest.approx(cosine, abs=1e-6)


@row("its-own-tables")
def test_its_own_tables(their_sqlite: Callable[..., SqliteStore]) -> None:
    sqlite = their_sqlite()
    assert sqlite.conn.execute("SELECT name FROM sqlite_master WHERE name = 'store'").fetchone() == ("store",)
    assert SqliteStore.MIGRATIONS
    with StoreForLangGraph(InMemoryStore()) as ours:
        assert not hasattr(ours, "conn") and not hasattr(ours, "MIGRATIONS")
        assert isinstance(ours.store_of, InMemoryStore)


@row("async-store-methods")
def test_async_store_methods() -> None:
    names = ["setup", "sweep_ttl", "start_ttl_sweeper", "stop_ttl_sweeper"]
    assert all(inspect.iscoroutinefunction(getattr(AsyncSqliteStore, name)) for name in names)
    assert not any(inspect.iscoroutinefunction(getattr(StoreForLangGraph, name)) for name in names)
    assert all(inspect.iscoroutinefunction(getattr(StoreForLangGraph, f"a{name}")) for name in names)


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
