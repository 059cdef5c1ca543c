"""Opening, closing and scoping a PostgreSQL store, and the arguments `open` takes."""

from __future__ import annotations

import asyncio
import functools
import math
import threading
from typing import Any
from uuid import uuid4

import psycopg
import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.errors import StoreClosedError
from lionmem.adapters.lifecycle import milliseconds
from lionmem.adapters.postgres import (
    PostgresMemoryStore,
)
from tests.support.postgres_support import execute, fresh_namespace, run, with_store
from tests.support.store_contract import (
    assert_freed_once_dropped,
)


def test_open_close_and_repr_hide_the_password(pg_url: str) -> None:
    password = psycopg.conninfo.conninfo_to_dict(pg_url)["password"]

    async def scenario() -> None:
        store = await PostgresMemoryStore.open(pg_url, namespace="lifecycle")
        assert "open" in repr(store) and str(password) not in repr(store) and "***" in repr(store)
        await store.close()
        await store.close()
        assert store.closed and "closed" in repr(store)
        for call in (store.store(MemoryItem()), store.retrieve(uuid4()), store.search(MemoryQuery())):
            with pytest.raises(StoreClosedError, match="is closed"):
                await call
        with pytest.raises(StoreClosedError):
            await store.store_many([])

    run(scenario())


def test_a_closed_store_the_caller_drops_is_freed(pg_url: str) -> None:
    opener = functools.partial(PostgresMemoryStore.open, pg_url, namespace=fresh_namespace())
    run(assert_freed_once_dropped(opener, 1))


@pytest.mark.parametrize("namespace", ["", "a b", "-lead", ".dot", "x" * 64, "semi;colon", "quote'"])
def test_invalid_namespaces_are_refused(pg_url: str, namespace: str) -> None:
    with pytest.raises(ValueError, match="namespace"):
        PostgresMemoryStore.open(pg_url, namespace=namespace)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"min_size": 0}, "min_size"),
        ({"min_size": 5, "max_size": 2}, "min_size"),
        ({"timeout": 0}, r"^timeout must be more than 0 and at most 2147483\.647 seconds, got 0$"),
        ({"statement_timeout": -1}, r"^statement_timeout must be more than 0 and at most 2147483\.647 seconds"),
        ({"timeout": math.inf}, "^timeout must be"),
        ({"timeout": math.nan}, "^timeout must be"),
        ({"statement_timeout": math.inf}, "^statement_timeout must be"),
        # PostgreSQL's statement_timeout holds at most 2**31 - 1 milliseconds; beyond
        # it the connection failed, reported as the server being unavailable.
        ({"statement_timeout": 2147483.648}, "^statement_timeout must be"),
        ({"statement_timeout": 1e308}, "^statement_timeout must be"),
        ({"timeout": 1e308}, "^timeout must be"),
    ],
)
def test_invalid_pool_settings_are_refused(pg_url: str, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        PostgresMemoryStore.open(pg_url, namespace="ok", **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"dsn": 5}, "^dsn must be a str, got int$"),
        ({"namespace": 5}, "^namespace must be a str, got int$"),
        ({"min_size": "1"}, "^min_size must be an int, got str$"),
        ({"min_size": 1.5}, "^min_size must be an int, got float$"),
        ({"max_size": True}, "^max_size must be an int, got bool$"),
        ({"timeout": "3"}, "^timeout must be a number of seconds, got str$"),
        ({"statement_timeout": None}, "^statement_timeout must be a number of seconds, got NoneType$"),
    ],
)
def test_open_arguments_of_the_wrong_type_are_named_before_connecting(kwargs: dict[str, Any], message: str) -> None:
    given: dict[str, Any] = {"dsn": "postgresql://db.invalid/x", "namespace": "n", **kwargs}
    with pytest.raises(TypeError, match=message):
        PostgresMemoryStore.open(given.pop("dsn"), **given)


def test_statement_timeouts_reach_the_server_rounded_up_to_milliseconds(pg_url: str) -> None:
    # PostgreSQL reads 0 as no timeout at all; 0.4 ms used to become 0.
    async def setting(store: PostgresMemoryStore) -> list[tuple[Any, ...]]:
        return await execute(store, "SELECT current_setting('statement_timeout')")

    assert with_store(pg_url, setting, statement_timeout=2147483.647) == [("2147483647ms",)]
    assert with_store(pg_url, setting, statement_timeout=1.0001) == [("1001ms",)]
    assert milliseconds("statement_timeout", 0.0004, zero=False) == 1


def test_searches_are_planned_for_their_values_every_time(pg_url: str) -> None:
    # psycopg prepares a statement after its fifth run; the server may then run a
    # search with a plan made for no values in particular. In a benchmark, a repeated
    # limited search went from 1.3 ms to 15 ms from about its tenth run.
    async def body(store: PostgresMemoryStore) -> None:
        first, second = (MemoryItem(content="x", tags=["t"], metadata={"k": [1]}) for _ in "12")
        await store.store_many([first, second])
        searches = [
            (MemoryQuery(text="x"), [first, second]),  # the limit goes to the server
            (MemoryQuery(tags=["t"], limit=-1), [first]),  # every row is read
            (MemoryQuery(filters={"k": [1]}, limit=5), [first, second]),  # re-checked prefixes
        ]
        for _ in range(8):
            assert await store.retrieve(first.id) == first
            for query, found in searches:
                assert await store.search(query) == found
            assert "lionmem_items" in await store.explain(MemoryQuery(text="x"))
        # White-box: the pool's only connection lists what psycopg prepared on it.
        async with store._connections.live().connection() as conn:
            cursor = await conn.execute("SELECT statement FROM pg_prepared_statements")
            prepared = [statement for (statement,) in await cursor.fetchall()]
        assert any("AND id = $2" in statement for statement in prepared)  # retrieve's
        assert not [statement for statement in prepared if "ORDER BY seq" in statement]

    with_store(pg_url, body, min_size=1, max_size=1)


def test_a_store_refuses_calls_from_another_event_loop(pg_url: str) -> None:
    # The connection pool's waiters and tasks live on the loop that opened it.
    home = asyncio.new_event_loop()
    running = threading.Thread(target=home.run_forever)
    running.start()
    try:
        opening = PostgresMemoryStore.open(pg_url, namespace=fresh_namespace())

        async def opened() -> PostgresMemoryStore:
            return await opening

        store = asyncio.run_coroutine_threadsafe(opened(), home).result()
        item = MemoryItem(content="at home")
        asyncio.run_coroutine_threadsafe(store.store(item), home).result()
        refused = "belongs to the event loop that opened it; open a store in each loop"
        for call in (lambda: store.search(MemoryQuery()), lambda: store.retrieve(item.id), store.close):
            with pytest.raises(RuntimeError, match=refused):
                asyncio.run(call())
        assert not store.closed
        found = asyncio.run_coroutine_threadsafe(store.retrieve(item.id), home).result()
        assert found is not None and found.content == "at home"
        asyncio.run_coroutine_threadsafe(store.close(), home).result()
        assert store.closed
    finally:
        home.call_soon_threadsafe(home.stop)
        running.join()
        home.close()


def test_namespaces_never_see_each_other(pg_url: str) -> None:
    shared = uuid4()

    async def scenario() -> None:
        async with (
            PostgresMemoryStore.open(pg_url, namespace=fresh_namespace()) as a,
            PostgresMemoryStore.open(pg_url, namespace=fresh_namespace()) as b,
        ):
            await a.store(MemoryItem(id=shared, content="in a", tags=["t"]))
            await b.store(MemoryItem(id=shared, content="in b", tags=["t"]))
            got_a, got_b = await a.retrieve(shared), await b.retrieve(shared)
            assert got_a is not None and got_a.content == "in a"
            assert got_b is not None and got_b.content == "in b"
            assert [i.content for i in await a.search(MemoryQuery(tags=["t"]))] == ["in a"]
            assert [i.content for i in await b.search(MemoryQuery(text="in"))] == ["in b"]

    run(scenario())
