"""PostgresMemoryStore against a real server: contract, scope, consistency and faults."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import logging
import math
import re
import socket
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import _writes as postgres_writes
from lionmem.adapters.postgres import schema as postgres_schema
from lionmem.adapters.errors import IncompatibleDatabaseError, StoreClosedError
from lionmem.adapters.lifecycle import milliseconds
from lionmem.adapters.postgres import (
    POSTGRES_PROFILE,
    SCHEMA_VERSION,
    PostgresMemoryStore,
    StoreUnavailableError,
)
from lionmem.testing import FidelityProfile, StoreFactory
from lionmem.testing.pytest_plugin import MemoryStoreContract
from pg_server import fresh_database, lionmem_tables, running_server
from store_checks import (
    STORE_CHECKS,
    StoreCheck,
    assert_freed_once_dropped,
    assert_searches_agree,
    assert_writes_keep_the_item_as_called,
    ticking,
)
from together import start_together

SRC = str(Path(__file__).resolve().parent.parent / "src")


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def fresh_namespace() -> str:
    return f"t-{uuid4().hex[:20]}"


def with_store(url: str, body: Callable[[PostgresMemoryStore], Awaitable[Any]], **kwargs: Any) -> Any:
    kwargs.setdefault("namespace", fresh_namespace())

    async def scenario() -> Any:
        async with PostgresMemoryStore.open(url, **kwargs) as store:
            return await body(store)

    return run(scenario())


async def open_only(url: str, **kwargs: Any) -> None:
    """Open a store and close it again: for opens that are meant to fail."""
    store = await PostgresMemoryStore.open(url, **kwargs)
    await store.close()


class TestPostgresContract(MemoryStoreContract):
    @pytest.fixture
    def memory_store_factory(self, pg_url: str) -> StoreFactory:
        return lambda workspace: PostgresMemoryStore.open(pg_url, namespace=workspace.name)

    @pytest.fixture
    def memory_store_profile(self) -> FidelityProfile:
        return POSTGRES_PROFILE


# -- lifecycle and scope ----------------------------------------------------------


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
def test_open_arguments_of_the_wrong_type_are_named_before_connecting(
    kwargs: dict[str, Any], message: str
) -> None:
    given: dict[str, Any] = {"dsn": "postgresql://db.invalid/x", "namespace": "n", **kwargs}
    with pytest.raises(TypeError, match=message):
        PostgresMemoryStore.open(given.pop("dsn"), **given)


def test_statement_timeouts_reach_the_server_rounded_up_to_milliseconds(pg_url: str) -> None:
    # PostgreSQL reads 0 as no timeout at all; 0.4 ms used to become 0.
    async def setting(store: PostgresMemoryStore) -> list[tuple[Any, ...]]:
        return await store._execute("SELECT current_setting('statement_timeout')")

    assert with_store(pg_url, setting, statement_timeout=2147483.647) == [("2147483647ms",)]
    assert with_store(pg_url, setting, statement_timeout=1.0001) == [("1001ms",)]
    assert milliseconds("statement_timeout", 0.0004, zero=False) == 1


def test_a_malformed_dsn_is_refused_before_connecting() -> None:
    with pytest.raises(ValueError, match='invalid URI query parameter: "colour"') as refused:
        PostgresMemoryStore.open("postgresql://me:s3cret@db.invalid/x?colour=red", namespace="n")
    assert "s3cret" not in str(refused.value)
    with pytest.raises(ValueError, match="not a libpq connection string"):
        PostgresMemoryStore.open("host=h password=s3cret dangling", namespace="n")


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://me:Qx7@Zp4@db.invalid/x",  # libpq: password "Qx7", host "Zp4@db.invalid"
        "postgresql://me:Qx7/Zp4@db.invalid/x",  # libpq: host "me", port "Qx7", database "Zp4@..."
        "postgresql://me@db.invalid:Qx7@db.invalid/x",  # libpq: port "Qx7@db.invalid"
    ],
)
def test_a_url_password_with_a_bare_at_or_slash_is_refused_without_showing_it(dsn: str) -> None:
    # libpq would read the rest of such a password as the host, port or database,
    # which the connection's error message then shows.
    with pytest.raises(ValueError, match="%40") as refused:
        PostgresMemoryStore.open(dsn, namespace="n")
    assert "Qx7" not in str(refused.value) and "Zp4" not in str(refused.value)


def test_an_at_after_the_host_is_refused_but_not_in_the_query() -> None:
    with pytest.raises(ValueError, match="%40"):
        PostgresMemoryStore.open("postgresql://me@db.invalid/my@db", namespace="n")
    PostgresMemoryStore.open("postgresql://me@db.invalid/my%40db?application_name=a@b", namespace="n")


@pytest.mark.parametrize(
    ("dsn", "complaint"),
    [
        ("host=db.invalid password=Qx7 Zp4!", 'missing "=" after "***"'),
        ("postgresql://me:Qx7Zp4@[::1/db", 'matching "]" in IPv6 host address in URI: "postgresql://me:***@[::1/db"'),
        ("postgresql://me:Qx7Zp4@[::1]x/db", 'unexpected character "x"'),
        # A short password is masked where it stands apart, not inside other words.
        ("postgresql://me:e@[::1/db", 'matching "]" in IPv6 host address in URI: "postgresql://me:***@[::1/db"'),
        ("postgresql://me:e@db.invalid/db%ZZ", 'invalid percent-encoded token: "db%ZZ"'),
        # With no password, nothing is masked.
        ("host=db.invalid port", 'missing "=" after "port"'),
        ("postgresql://db.invalid/x?colour=red", 'invalid URI query parameter: "colour"'),
    ],
)
def test_a_dsn_libpq_cannot_read_is_refused_without_its_password(dsn: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=re.escape(complaint)) as refused:
        PostgresMemoryStore.open(dsn, namespace="n")
    assert "Qx7" not in str(refused.value) and "Zp4" not in str(refused.value)


def test_a_short_password_is_masked_only_where_it_stands_apart(pg_url: str) -> None:
    """Not inside the words and addresses of the server's answer."""
    for password, intact in [("pass", "password authentication failed"), ("1", '"127.0.0.1"')]:
        dsn = psycopg.conninfo.make_conninfo(pg_url, password=password, host="127.0.0.1")
        with pytest.raises(StoreUnavailableError) as failure:
            run(open_only(dsn, namespace="n", timeout=5))
        assert intact in str(failure.value) and "password=***" in str(failure.value)


def test_a_server_message_quoting_the_password_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the reason a connection fails, its message never shows the password,
    even where the driver's message quotes it."""

    async def quoting(*args: object, **kwargs: object) -> None:
        raise psycopg.OperationalError('connection failed: bad option "Qx7Zp4" for "me"')

    monkeypatch.setattr(psycopg.AsyncConnection, "connect", quoting)
    with pytest.raises(StoreUnavailableError) as failure:
        run(open_only("postgresql://me:Qx7Zp4@db.invalid/x", namespace="n"))
    assert str(failure.value).endswith('is unavailable: connection failed: bad option "***" for "me"')


def test_a_key_value_dsn_error_still_names_an_unknown_key() -> None:
    # A key libpq does not know is still named: it is no secret.
    with pytest.raises(ValueError, match='invalid connection option "colour"'):
        PostgresMemoryStore.open("host=db.invalid password=Qx7 colour=red", namespace="n")


def _unused_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def test_opening_says_why_the_server_cannot_be_used(pg_url: str) -> None:
    parts = psycopg.conninfo.conninfo_to_dict(pg_url)
    nobody = f"postgresql://me:s3cret@127.0.0.1:{_unused_port()}/db"
    wrong_password = psycopg.conninfo.make_conninfo(pg_url, password="not-the-s3cret")
    no_database = psycopg.conninfo.make_conninfo(pg_url, dbname=f"missing_{uuid4().hex[:8]}")
    for dsn, reason, secret in [
        (nobody, "refused", "s3cret"),
        (wrong_password, "password authentication failed", "not-the-s3cret"),
        (no_database, "does not exist", str(parts["password"])),
    ]:
        started = time.monotonic()
        with pytest.raises(StoreUnavailableError, match="is unavailable") as failure:
            run(open_only(dsn, namespace="n", timeout=5))
        message = str(failure.value)
        assert reason in message and secret not in message and "***" in message
        assert time.monotonic() - started < 5  # a refusal is reported at once, not at the timeout
    without_password = f"postgresql://me@127.0.0.1:{_unused_port()}/db"
    with pytest.raises(StoreUnavailableError, match="refused") as failure:
        run(open_only(without_password, namespace="n", timeout=5))
    assert "user=me" in str(failure.value) and "***" not in str(failure.value)


@pytest.mark.parametrize(
    ("raised", "expected"),
    [(PoolTimeout("no connection in time"), StoreUnavailableError), (asyncio.CancelledError(), asyncio.CancelledError)],
)
def test_a_pool_that_fails_to_start_is_closed(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, raised: BaseException, expected: type[BaseException]
) -> None:
    """The schema check can succeed and the pool still fail (the server goes away, or
    the caller cancels): the pool's connections are closed either way."""
    closed: list[AsyncConnectionPool[Any]] = []
    close = AsyncConnectionPool.close

    async def failing_open(pool: AsyncConnectionPool[Any], *args: Any, **kwargs: Any) -> None:
        raise raised

    async def recording_close(pool: AsyncConnectionPool[Any], *args: Any, **kwargs: Any) -> None:
        closed.append(pool)
        await close(pool, *args, **kwargs)

    monkeypatch.setattr(AsyncConnectionPool, "open", failing_open)
    monkeypatch.setattr(AsyncConnectionPool, "close", recording_close)
    with pytest.raises(expected) as failure:
        run(open_only(pg_url, namespace=fresh_namespace()))
    assert len(closed) == 1 and closed[0].closed
    if expected is StoreUnavailableError:
        assert "no connection in time" in str(failure.value)


def test_without_pg_trgm_text_search_scans_with_the_same_results(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server without the pg_trgm extension (or without the right to create it)
    still opens; text search reads every row of the namespace instead."""
    url = fresh_database(pg_url)
    missing = "CREATE INDEX lionmem_items_text ON lionmem_items USING gin (folded no_such_ops)"
    monkeypatch.setattr(postgres_schema, "_TRIGRAM_INDEX", missing)

    async def body(store: PostgresMemoryStore) -> None:
        assert not store.trigram
        assert "lionmem_items_text" not in await store.explain(MemoryQuery(text="red"))
        await assert_searches_agree(store, seed=5, rounds=200)

    with_store(url, body)
    with psycopg.connect(url, autocommit=True) as conn:
        extensions = conn.execute("SELECT extname FROM pg_extension").fetchall()
    assert ("pg_trgm",) not in extensions  # the failed attempt left nothing behind


def test_options_in_the_dsn_are_kept_beside_the_statement_timeout(pg_url: str) -> None:
    dsn = psycopg.conninfo.make_conninfo(pg_url, options="-c application_name=kept-by-lionmem")

    async def settings(store: PostgresMemoryStore) -> list[tuple[Any, ...]]:
        return await store._execute(
            "SELECT current_setting('application_name'), current_setting('statement_timeout')"
        )

    assert with_store(dsn, settings, statement_timeout=7) == [("kept-by-lionmem", "7s")]


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("postgresql://db.invalid/x?connect_timeout=3", "the dsn sets connect_timeout"),
        ("host=db.invalid connect_timeout=3", "the dsn sets connect_timeout"),
        ("host=db.invalid options='-c statement_timeout=5s'", "the dsn's options set statement_timeout"),
        ("host=db.invalid options='-cstatement_timeout=5s'", "the dsn's options set statement_timeout"),
        ("host=db.invalid options='--statement-timeout=5s'", "the dsn's options set statement_timeout"),
        ("host=db.invalid options='-c lock_timeout=1s -c Statement_Timeout=5s'", "options set statement_timeout"),
        ("postgresql://db.invalid/x?options=-c%20statement_timeout%3D5s", "options set statement_timeout"),
    ],
)
def test_a_dsn_setting_a_timeout_that_open_sets_is_refused(dsn: str, message: str) -> None:
    """`open` would replace the dsn's value with its own argument's, unseen."""
    with pytest.raises(ValueError, match=re.escape(message)):
        PostgresMemoryStore.open(dsn, namespace="n")
    PostgresMemoryStore.open("host=db.invalid options='-c lock_timeout=5s'", namespace="n")
    # Only a switch sets it, not the words inside another setting's value.
    words = "host=db.invalid options='-c application_name=a--statement-timeout=1'"
    PostgresMemoryStore.open(words, namespace="n")


def test_options_from_the_environment_or_a_service_file_are_kept(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """libpq reads PGOPTIONS, or a service file's `options`, only when the connection
    string has none of its own; the statement timeout is still `open`'s."""

    async def settings(store: PostgresMemoryStore) -> list[tuple[Any, ...]]:
        return await store._execute(
            "SELECT current_setting('application_name'), current_setting('statement_timeout')"
        )

    monkeypatch.setenv("PGOPTIONS", "-c application_name=from-pgoptions -c statement_timeout=1s")
    assert with_store(pg_url, settings, statement_timeout=7) == [("from-pgoptions", "7s")]
    services = tmp_path / "pg_service.conf"
    services.write_text("[lionmem]\noptions=-c application_name=from-service -c statement_timeout=1s\n")
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    dsn = psycopg.conninfo.make_conninfo(pg_url, service="lionmem")
    assert with_store(dsn, settings, statement_timeout=7) == [("from-service", "7s")]


def test_opening_behind_another_process_schema_work_ends_at_the_statement_timeout(pg_url: str) -> None:
    """The schema is checked under a lock every opening process takes; the wait for
    it is a statement like any other, so it ends with `statement_timeout`."""
    with psycopg.connect(pg_url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [postgres_schema.LOCK_KEY])
        started = time.perf_counter()
        with pytest.raises(StoreUnavailableError, match="canceling statement due to statement timeout"):
            run(asyncio.wait_for(open_only(pg_url, namespace="n", statement_timeout=0.3), 20))
        assert time.perf_counter() - started < 10


@pytest.mark.parametrize("check", STORE_CHECKS, ids=[c.__name__.removeprefix("assert_") for c in STORE_CHECKS])
def test_the_shared_store_checks(pg_url: str, check: StoreCheck) -> None:
    with_store(pg_url, check)


def test_an_item_changed_during_its_write_is_stored_as_called(pg_url: str) -> None:
    async def body(store: PostgresMemoryStore) -> None:
        @contextlib.asynccontextmanager
        async def paused() -> AsyncIterator[None]:
            # White-box: hold the pool's only connection until the block ends.
            async with store._live_pool().connection():
                yield

        await assert_writes_keep_the_item_as_called(store, paused)

    with_store(pg_url, body, min_size=1, max_size=1)


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
        async with store._live_pool().connection() as conn:
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


# -- schema ---------------------------------------------------------------------------


def test_many_processes_creating_the_schema_at_once(pg_url: str, tmp_path: Path) -> None:
    url = fresh_database(pg_url)
    script = textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem
        from lionmem.adapters.postgres import PostgresMemoryStore
        async def main():
            async with PostgresMemoryStore.open({url!r}, namespace="race") as store:
                await store.store(MemoryItem(content=sys.argv[1]))
        wait_for_go()
        asyncio.run(main())
    """)
    procs = start_together(script, [str(n) for n in range(6)], tmp_path / "barrier")
    assert [p.wait(timeout=120) for p in procs] == [0] * 6
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM lionmem_schema").fetchall() == [(SCHEMA_VERSION,)]
        assert conn.execute("SELECT count(*) FROM lionmem_items").fetchone() == (6,)


def test_without_create_a_database_without_the_schema_is_refused_and_left_alone(pg_url: str) -> None:
    url = fresh_database(pg_url)
    with pytest.raises(IncompatibleDatabaseError, match="no lionmem schema; nothing was created"):
        with_store(url, lambda store: store.search(MemoryQuery()), create=False)
    assert lionmem_tables(url) == []
    item = MemoryItem(content="kept")
    namespace = fresh_namespace()
    with_store(url, lambda store: store.store(item), namespace=namespace)
    assert with_store(url, lambda store: store.retrieve(item.id), namespace=namespace, create=False) == item
    with pytest.raises(TypeError, match="create must be a bool, got str"):
        PostgresMemoryStore.open(url, namespace="n", create="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("encoding", ["LATIN1", "SQL_ASCII"])
def test_a_database_not_in_utf8_is_refused_and_left_alone(pg_url: str, encoding: str) -> None:
    # LATIN1 cannot hold "€"; SQL_ASCII holds any bytes, and psycopg reads them as bytes.
    url = fresh_database(pg_url, encoding)
    message = f"^this database's encoding is {encoding}; lionmem stores Unicode text and needs a UTF8 database"
    for create in (True, False):
        with pytest.raises(IncompatibleDatabaseError, match=message):
            with_store(url, lambda store: store.search(MemoryQuery()), create=create)
    assert lionmem_tables(url) == []


@pytest.mark.parametrize("client_encoding", ["LATIN1", "SQL_ASCII", "WIN1252"])
def test_the_client_encoding_of_the_environment_does_not_reach_the_store(
    pg_url: str, client_encoding: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # libpq takes PGCLIENTENCODING; psycopg then failed to encode "€" for LATIN1 and
    # WIN1252, and returned every text as bytes for SQL_ASCII.
    monkeypatch.setenv("PGCLIENTENCODING", client_encoding)
    item = MemoryItem(content="€ 😀 é", tags=["€"], metadata={"ß": "Ω"})

    async def body(store: PostgresMemoryStore) -> tuple[Any, ...]:
        await store.store(item)
        return await store.retrieve(item.id), await store.search(MemoryQuery(text="€", tags=["€"], filters={"ß": "Ω"}))

    # On the pool's one connection, then on two connections of a pool of two.
    namespace = fresh_namespace()
    assert with_store(pg_url, body, namespace=namespace, min_size=1, max_size=2) == (item, [item])

    async def two_at_once(store: PostgresMemoryStore) -> list[Any]:
        return await asyncio.gather(*(store.retrieve(item.id) for _ in range(2)))

    assert with_store(pg_url, two_at_once, namespace=namespace, min_size=2, max_size=2) == [item, item]


@pytest.mark.parametrize("digits", [0, -15])
def test_created_at_stays_bit_exact_whatever_float_output_the_session_asks_for(
    pg_url: str, digits: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A role or a database may set extra_float_digits; at 0 the server wrote
    # created_at with 15 digits, and a nearby float came back.
    monkeypatch.setenv("PGOPTIONS", f"-c extra_float_digits={digits}")
    item = MemoryItem(content="x", created_at=1767225600.1234567)

    async def body(store: PostgresMemoryStore) -> tuple[str, str]:
        await store.store(item)
        back = await store.retrieve(item.id)
        (found,) = await store.search(MemoryQuery())
        assert back is not None
        return back.created_at.hex(), found.created_at.hex()

    assert with_store(pg_url, body) == (item.created_at.hex(), item.created_at.hex())


@pytest.mark.parametrize("isolation", ["repeatable read", "serializable"])
def test_concurrent_writes_of_one_id_succeed_whatever_isolation_the_session_defaults_to(
    pg_url: str, isolation: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under either, about 40% of these writes failed with "could not serialize access
    # due to concurrent update".
    escaped = isolation.replace(" ", "\\ ")
    monkeypatch.setenv("PGOPTIONS", f"-c default_transaction_isolation={escaped}")

    async def body(store: PostgresMemoryStore) -> list[int]:
        async def writer(n: int) -> None:
            for k in range(10):
                await store.store(MemoryItem(id=UUID(int=k % 3 + 1), content=f"{n}-{k}"))
                await store.store_many([MemoryItem(id=UUID(int=10 + (k + j) % 4), content=f"{n}-{k}-{j}") for j in range(2)])

        await asyncio.gather(*(writer(n) for n in range(20)))
        return [item.id.int for item in await store.search(MemoryQuery(limit=100))]

    assert sorted(with_store(pg_url, body, max_size=10)) == [1, 2, 3, 10, 11, 12, 13]


def test_a_read_only_connection_opens_a_current_schema(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a replica: opening wrote to the schema table even when it was current.
    url = fresh_database(pg_url)
    item = MemoryItem(content="kept", tags=["t"])
    namespace = fresh_namespace()
    with_store(url, lambda store: store.store(item), namespace=namespace)
    empty = fresh_database(pg_url)
    monkeypatch.setenv("PGOPTIONS", "-c default_transaction_read_only=on")
    for create in (True, False):
        found = with_store(url, lambda store: store.search(MemoryQuery(tags=["t"])), namespace=namespace, create=create)
        assert found == [item]
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match="cannot execute INSERT"):
        with_store(url, lambda store: store.store(MemoryItem(content="refused")), namespace=namespace)
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match="cannot execute CREATE TABLE"):
        with_store(empty, lambda store: store.search(MemoryQuery()))
    assert lionmem_tables(empty) == []


def test_a_role_that_may_only_use_the_tables_opens_the_store(pg_url: str) -> None:
    # Since PostgreSQL 15 only the owner may create in the public schema, and opening
    # created the schema table IF NOT EXISTS: "permission denied for schema public".
    url = fresh_database(pg_url)
    namespace = fresh_namespace()
    first, second = MemoryItem(content="first", tags=["t"]), MemoryItem(content="second", tags=["t"])
    with_store(url, lambda store: store.store(first), namespace=namespace)
    role = f"app_{uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        grants = [
            "CREATE ROLE {} LOGIN PASSWORD 'app-pw'",
            "GRANT SELECT, INSERT, UPDATE ON lionmem_items TO {}",
            "GRANT SELECT ON lionmem_schema TO {}",
        ]
        for grant in grants:
            conn.execute(sql.SQL(grant).format(sql.Identifier(role)))

    async def body(store: PostgresMemoryStore) -> list[MemoryItem]:
        await store.store(second)
        return await store.search(MemoryQuery(tags=["t"]))

    app_url = make_conninfo(url, user=role, password="app-pw")
    assert with_store(app_url, body, namespace=namespace) == [first, second]


def test_a_newer_schema_is_refused(pg_url: str) -> None:
    url = fresh_database(pg_url)
    with_store(url, lambda store: store.search(MemoryQuery()))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE lionmem_schema SET version = %s", [SCHEMA_VERSION + 1])
    with pytest.raises(IncompatibleDatabaseError, match="newer than this lionmem"):
        with_store(url, lambda store: store.search(MemoryQuery()))


def test_a_tag_is_indexed_whole_up_to_2000_bytes_then_by_its_digest() -> None:
    key = postgres_writes.tag_key
    for tag in ("a" * 2_000, "é" * 1_000, "\U0001f600" * 500, "a" * 500):
        assert key(tag) is tag
    for tag in ("a" * 2_001, "é" * 1_000 + "a", "\U0001f600" * 501):
        assert key(tag) == "\x01sha256:" + hashlib.sha256(tag.encode()).hexdigest()


def test_a_tag_spelled_like_a_long_tags_digest_is_told_apart(pg_url: str) -> None:
    long = "t" * 5_000
    lookalike = postgres_writes.tag_key(long)
    items = [MemoryItem(content="long", tags=[long]), MemoryItem(content="lookalike", tags=[lookalike])]
    queries = [
        MemoryQuery(tags=[long]),
        MemoryQuery(tags=[lookalike]),
        MemoryQuery(tags=[long], limit=1),
        MemoryQuery(tags=[lookalike, "other"], limit=-1),
        MemoryQuery(tags=[long, lookalike]),
    ]

    async def body(store: PostgresMemoryStore) -> None:
        reference = InMemoryStore()
        for item in items:
            await store.store(item)
            await reference.store(item)
        for query in queries:
            assert [i.id for i in await store.search(query)] == [i.id for i in await reference.search(query)]

    with_store(pg_url, body)


def test_version_1_is_migrated_to_index_long_tags_by_digest(pg_url: str) -> None:
    """Version 1 kept a long tag whole where the index could compress it."""
    url = fresh_database(pg_url)
    long, short = "ab" * 5_000, "short"
    items = [MemoryItem(content="long", tags=[long, short]), MemoryItem(content="plain", tags=[short])]

    async def write(store: PostgresMemoryStore) -> None:
        for item in items:
            await store.store(item)

    with_store(url, write, namespace="n")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE lionmem_items SET tags = %s WHERE id = %s", [[long, short], items[0].id])
        conn.execute("UPDATE lionmem_schema SET version = 1")

    async def read(store: PostgresMemoryStore) -> list[list[UUID]]:
        return [[i.id for i in await store.search(MemoryQuery(tags=[tag]))] for tag in (long, short)]

    assert with_store(url, read, namespace="n") == [[items[0].id], [items[0].id, items[1].id]]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM lionmem_schema").fetchall() == [(SCHEMA_VERSION,)]
        stored = conn.execute("SELECT tags FROM lionmem_items ORDER BY seq").fetchall()
    assert stored == [([postgres_writes.tag_key(long), short],), ([short],)]


def test_the_gin_indexes_keep_a_short_pending_list(pg_url: str) -> None:
    # Every search reads a GIN index's pending list in full; the server's default
    # lets it grow to 4 MB between merges.
    url = fresh_database(pg_url)
    with_store(url, lambda store: store.search(MemoryQuery()))
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.reloptions FROM pg_class AS c JOIN pg_am AS a ON a.oid = c.relam"
            " WHERE a.amname = 'gin' AND c.relname LIKE 'lionmem%' ORDER BY 1"
        ).fetchall()
    assert rows == [
        (name, ["gin_pending_list_limit=256"])
        for name in ("lionmem_items_metadata", "lionmem_items_tags", "lionmem_items_text")
    ]


def test_the_plan_uses_the_indexes(pg_url: str) -> None:
    url = fresh_database(pg_url)
    items = [
        MemoryItem(
            content=f"note {i} about w{i % 2000:04d} " + "lorem ipsum dolor sit amet " * 20,
            tags=[f"t{i % 2000}"],
            metadata={"owner": f"u{i % 2000}", "n": i % 2000},
        )
        for i in range(20_000)
    ]

    async def body(store: PostgresMemoryStore) -> dict[str, str]:
        for start in range(0, len(items), 5000):
            await store.store_many(items[start : start + 5000])
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE lionmem_items")
        assert store.trigram
        return {
            "tags": await store.explain(MemoryQuery(tags=["t7"])),
            "filter": await store.explain(MemoryQuery(filters={"owner": "u7"})),
            "number": await store.explain(MemoryQuery(filters={"n": 7})),
            "text": await store.explain(MemoryQuery(text="W0007")),
            "list": await store.explain(MemoryQuery(filters={"n": [7]})),
            "one": await store.explain(MemoryQuery(filters={"n": 1})),
            "none": await store.explain(MemoryQuery(filters={"owner": None})),
            "nul value": await store.explain(MemoryQuery(filters={"owner": "u\x00"})),
            "nul key": await store.explain(MemoryQuery(filters={"own\x00er": None})),
        }

    plans = with_store(url, body)
    assert "lionmem_items_tags" in plans["tags"]
    assert "lionmem_items_metadata" in plans["filter"]
    assert "lionmem_items_metadata" in plans["number"]
    assert "lionmem_items_text" in plans["text"], plans["text"]
    # Numbers up to 2**53 are decided by containment, so the limit goes to the server;
    # a list is re-checked in Python, which reads growing prefixes instead.
    # So do 1 (or true), a None filter and filters no stored key or string can match.
    limited = ("tags", "filter", "number", "text", "one", "none", "nul value", "nul key")
    assert all(plans[kind].startswith("Limit") for kind in limited), plans
    assert not plans["list"].startswith("Limit"), plans["list"]


# -- semantics --------------------------------------------------------------------------


def test_round_trip_is_exact(pg_url: str) -> None:
    item = MemoryItem(
        content={"text": "ü✓ 𝄞 " * 50_000, "nested": [1, 2.5, -0.0, None, True, {"d": []}], "n": 2**62, "f": 1e300},
        tags=["b", "a", "a", "ü"],
        metadata={"quote'\"": {"list": [1, 1.0, True]}, "": None, "big": 2**70},
        created_at=1767225600.123456789,
    )

    async def body(store: PostgresMemoryStore) -> MemoryItem | None:
        await store.store(item)
        return await store.retrieve(item.id)

    got = with_store(pg_url, body)
    assert got is not None and got.created_at.hex() == item.created_at.hex()
    assert got.content == item.content and got.tags == item.tags and got.metadata == item.metadata
    assert math.copysign(1, got.content["nested"][2]) == -1 and type(got.content["f"]) is float
    assert type(got.metadata["quote'\""]["list"][1]) is float


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"content": {1, 2}}, "content is a set"),
        ({"content": math.inf}, "content is inf"),
        ({"content": "a\x00b"}, "U\\+0000"),
        ({"tags": ["a\x00"]}, "U\\+0000"),
        ({"metadata": {"k\x00": 1}}, "U\\+0000"),
        ({"metadata": {"k": "\ud800"}}, "lone surrogate U\\+D800"),
    ],
)
def test_refused_values_write_nothing(pg_url: str, fields: dict[str, Any], problem: str) -> None:
    bad = MemoryItem(**fields)

    async def body(store: PostgresMemoryStore) -> None:
        with pytest.raises(TypeError, match=problem):
            await store.store(bad)
        with pytest.raises(TypeError, match=problem):
            await store.store_many([MemoryItem(content="fine"), bad])
        assert await store.search(MemoryQuery()) == []

    with_store(pg_url, body)


def test_searches_agree_with_the_reference_on_awkward_values(pg_url: str) -> None:
    with_store(pg_url, lambda store: assert_searches_agree(store, seed=97, rounds=400))


HOSTILE = ["it's", 'say "hi"', "a.b", "$.a", "$", "{a}", "'; DROP TABLE lionmem_items; --", "\\", "%", "_", "%s", "?"]


@pytest.mark.parametrize("key", HOSTILE)
def test_hostile_keys_and_values_are_plain_data(pg_url: str, key: str) -> None:
    item = MemoryItem(content=f"x{key}y", tags=[key], metadata={key: key, "other": 1})
    decoy = MemoryItem(content="decoy xy", metadata={"other": 1})

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many([item, decoy])
        assert await store.search(MemoryQuery(filters={key: key})) == [item]
        assert await store.search(MemoryQuery(filters={key: None})) == [decoy]
        assert await store.search(MemoryQuery(tags=[key])) == [item]
        assert await store.search(MemoryQuery(text=key)) == [item]
        assert len(await store.search(MemoryQuery(limit=100))) == 2

    with_store(pg_url, body)


def test_filters_follow_python_equality(pg_url: str) -> None:
    metadata: list[dict[str, Any]] = [
        {"n": 1}, {"n": 1.0}, {"n": True}, {"n": "1"}, {}, {"n": None}, {"n": [1, 2]}, {"n": {"a": [1]}},
        {"n": 2**60}, {"n": 0}, {"n": False}, {"n": 2.5},
    ]
    items = [MemoryItem(content=i, metadata=m) for i, m in enumerate(metadata)]

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many(items)

        async def ids(**filters: Any) -> list[Any]:
            return [i.content for i in await store.search(MemoryQuery(filters=filters, limit=100))]

        assert await ids(n=1) == [0, 1, 2] and await ids(n=True) == [0, 1, 2]
        assert await ids(n="1") == [3] and await ids(n=None) == [4, 5]
        assert await ids(n=[1.0, True + 1]) == [6] and await ids(n={"a": [True]}) == [7]
        assert await ids(n=2**60) == [8] and await ids(n=float(2**60)) == [8]
        assert await ids(n=0) == [9, 10] and await ids(n=False) == [9, 10]
        assert await ids(n=2.5) == [11] and await ids(n=(1, 2)) == []
        for limit in (0, 1, -1, -3):
            assert [i.content for i in await store.search(MemoryQuery(filters={"n": 1}, limit=limit))] == [0, 1, 2][:limit]

    with_store(pg_url, body)


def test_a_limited_search_reads_further_when_python_drops_candidates(pg_url: str) -> None:
    # 300 lists narrow by kind but fail Python's ==; the matches sit behind them.
    items = [MemoryItem(content=i, metadata={"v": [i + 10]}) for i in range(300)]
    items += [MemoryItem(content=f"hit{i}", metadata={"v": [True]}) for i in range(3)]

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many(items)
        for limit, want in ((1, ["hit0"]), (2, ["hit0", "hit1"]), (9, ["hit0", "hit1", "hit2"]), (0, [])):
            found = await store.search(MemoryQuery(filters={"v": [1]}, limit=limit))
            assert [i.content for i in found] == want

    with_store(pg_url, body)


def test_long_results_are_fetched_in_slices_with_other_tasks_between(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lionmem.adapters._rows import SHARE_EVERY

    turns: Callable[[], int] = lambda: 0
    seen: list[tuple[int, int]] = []  # (rows fetched, loop turns so far) at each fetch
    fetchmany = psycopg.AsyncCursor.fetchmany

    async def recorded(cursor: psycopg.AsyncCursor[Any], size: int = 0) -> list[Any]:
        rows = await fetchmany(cursor, size)
        seen.append((len(rows), turns()))
        return rows

    monkeypatch.setattr(psycopg.AsyncCursor, "fetchmany", recorded)
    items = [MemoryItem(content=i) for i in range(2 * SHARE_EVERY + 1)]

    async def body(store: PostgresMemoryStore) -> None:
        nonlocal turns
        await store.store_many(items)
        async with ticking() as turns:
            seen.clear()
            found = await store.search(MemoryQuery(limit=-1))
        assert len(found) == 2 * SHARE_EVERY
        assert [n for n, _ in seen] == [SHARE_EVERY, SHARE_EVERY, 1]
        assert seen[0][1] < seen[1][1] < seen[2][1]  # other tasks ran between slices
        seen.clear()
        assert await store.retrieve(items[0].id) is not None and [n for n, _ in seen] == [1]
        seen.clear()
        await store.store(items[0])
        assert seen == []  # a statement without rows fetches nothing

    with_store(pg_url, body)


def test_long_results_are_decoded_off_the_event_loop(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from lionmem.adapters import _rows as _encoding

    threads: list[tuple[str, bool]] = []

    def recorded(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any) -> Any:
            threads.append((name, threading.get_ident() == loop_thread))
            return function(*args)

        return wrapper

    monkeypatch.setattr(
        "lionmem.adapters.postgres._planner.decode_in_slices", recorded("slices", _encoding.decode_in_slices)
    )
    monkeypatch.setattr("lionmem.adapters.postgres._planner.matching", recorded("matching", _encoding.matching))
    loop_thread = threading.get_ident()
    few = _encoding.SHARE_EVERY
    items = [MemoryItem(content=i, metadata={"v": [i % 2]}) for i in range(few + 2)]

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many(items)
        for query, count, where in [
            (MemoryQuery(limit=few), few, ("slices", True)),
            (MemoryQuery(limit=few + 1), few + 1, ("slices", False)),
            (MemoryQuery(limit=-1), few + 1, ("slices", False)),
            (MemoryQuery(filters={"v": [0]}, limit=-1), few // 2, ("matching", False)),
            (MemoryQuery(filters={"v": [0]}, limit=2), 2, ("matching", True)),
        ]:
            threads.clear()
            found = await store.search(query)
            assert [i.content for i in found] == [
                i.content for i in items if not query.filters or i.metadata["v"] == [0]
            ][:count]
            assert threads == [where], query

    with_store(pg_url, body)


# -- consistency across connections and processes -------------------------------------------


def _process(url: str, namespace: str, code: str, *args: str) -> subprocess.Popen[str]:
    script = textwrap.dedent(f"""
        import asyncio, sys, uuid
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem, MemoryQuery
        from lionmem.adapters.postgres import PostgresMemoryStore
        async def main():
            async with PostgresMemoryStore.open({url!r}, namespace={namespace!r}) as store:
        {textwrap.indent(textwrap.dedent(code), " " * 16)}
        asyncio.run(main())
    """)
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True)


def test_read_after_write_across_connections_and_processes(pg_url: str) -> None:
    namespace = fresh_namespace()
    item = MemoryItem(id=UUID(int=7), content="written by the parent")

    async def scenario() -> None:
        async with (
            PostgresMemoryStore.open(pg_url, namespace=namespace) as writer,
            PostgresMemoryStore.open(pg_url, namespace=namespace) as reader,
        ):
            await writer.store(item)
            got = await reader.retrieve(item.id)
            assert got is not None and got.content == item.content
            assert await reader.search(MemoryQuery(text="parent")) == [item]

    run(scenario())
    child = _process(pg_url, namespace, """
        got = await store.retrieve(uuid.UUID(int=7))
        await store.store(MemoryItem(id=uuid.UUID(int=8), content="written by the child"))
        print(got.content)
    """)
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0 and out.strip() == "written by the parent"
    got = with_store(pg_url, lambda store: store.retrieve(UUID(int=8)), namespace=namespace)
    assert got is not None and got.content == "written by the child"


def test_several_processes_writing_lose_nothing(pg_url: str) -> None:
    namespace = fresh_namespace()
    procs = [
        _process(pg_url, namespace, """
            await asyncio.gather(*(store.store(MemoryItem(content=f"{sys.argv[1]}-{i}")) for i in range(150)))
        """, who)
        for who in "abcd"
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    for p in procs:
        assert p.stdout is not None
        p.stdout.close()
    found = with_store(pg_url, lambda store: store.search(MemoryQuery(limit=10_000)), namespace=namespace)
    assert sorted(i.content for i in found) == sorted(f"{w}-{i}" for w in "abcd" for i in range(150))


def test_two_processes_replacing_one_id_leave_one_complete_version(pg_url: str) -> None:
    namespace = fresh_namespace()
    first = MemoryItem(id=UUID(int=1), content="first")
    with_store(pg_url, lambda store: store.store(first), namespace=namespace)
    procs = [
        _process(pg_url, namespace, """
            who = sys.argv[1]
            for n in range(200):
                await store.store(MemoryItem(
                    id=uuid.UUID(int=1), content={"who": who, "n": n}, tags=[who], metadata={"who": who, "n": n}
                ))
        """, who)
        for who in ("left", "right")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    for p in procs:
        assert p.stdout is not None
        p.stdout.close()

    async def body(store: PostgresMemoryStore) -> list[MemoryItem]:
        return await store.search(MemoryQuery(limit=10))

    (final,) = with_store(pg_url, body, namespace=namespace)
    who = final.content["who"]
    assert final.tags == [who] and final.metadata == final.content and final.content["n"] == 199


def test_concurrent_batches_sharing_ids_in_any_order_all_succeed(pg_url: str) -> None:
    # Half the batches write the items in reverse order: without care, two
    # transactions lock the same rows in opposite orders and one is aborted as a
    # deadlock.
    namespace = fresh_namespace()
    items = [MemoryItem(content=f"shared {i}", metadata={"i": i}) for i in range(300)]
    orders = [items[::-1] if k % 2 else items for k in range(8)]

    async def scenario() -> list[MemoryItem]:
        async with (
            PostgresMemoryStore.open(pg_url, namespace=namespace, max_size=4) as one,
            PostgresMemoryStore.open(pg_url, namespace=namespace, max_size=4) as other,
        ):
            for _ in range(5):
                written = await asyncio.gather(
                    *(store.store_many(batch) for store, batch in zip([one, other] * 4, orders, strict=True))
                )
                assert written == [[i.id for i in batch] for batch in orders]
            return await one.search(MemoryQuery(limit=1000))

    found = run(scenario())
    assert sorted(i.metadata["i"] for i in found) == list(range(300))


# -- faults --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("timeout", "expected", "message"),
    [
        ("statement_timeout", StoreUnavailableError, "is unavailable: canceling statement due to statement timeout"),
        ("lock_timeout", psycopg.errors.LockNotAvailable, "^canceling statement due to lock timeout"),
    ],
    ids=["statement timeout", "lock timeout"],
)
def test_a_timeout_is_unavailable_only_when_the_server_did_not_answer(
    pg_url: str, timeout: str, expected: type[Exception], message: str
) -> None:
    # While another client holds the item's row, a write waits. Past the store's own
    # statement_timeout the server did not answer in time; a lock_timeout the
    # application set is the server's answer, raised as itself.
    namespace = fresh_namespace()
    item = MemoryItem(content="held")
    if timeout == "statement_timeout":
        opening = PostgresMemoryStore.open(pg_url, namespace=namespace, statement_timeout=0.3)
    else:
        dsn = psycopg.conninfo.make_conninfo(pg_url, options="-c lock_timeout=300ms")
        opening = PostgresMemoryStore.open(dsn, namespace=namespace)

    async def scenario() -> None:
        async with opening as store:
            await store.store(item)
            async with await psycopg.AsyncConnection.connect(pg_url) as other:
                await other.execute(
                    "SELECT 1 FROM lionmem_items WHERE namespace = %s AND id = %s FOR UPDATE", [namespace, item.id]
                )
                with pytest.raises(expected, match=message):
                    await asyncio.wait_for(store.store(item.model_copy(update={"content": "changed"})), 20)
                await other.rollback()
            kept = await store.retrieve(item.id)
            assert kept is not None and kept.content == "held"

    run(scenario())


def test_a_server_error_that_is_no_outage_is_raised_as_itself(pg_url: str) -> None:
    # Another client locks `a` and then `b` while a batch holds `b` and waits for `a`:
    # PostgreSQL aborts the batch as a deadlock. The server answered, so this is not
    # StoreUnavailableError, and the batch leaves nothing behind.
    namespace = fresh_namespace()
    a, b = MemoryItem(content="a"), MemoryItem(content="b")
    touch = "UPDATE lionmem_items SET body = body WHERE namespace = %s AND id = %s"

    async def scenario() -> None:
        async with PostgresMemoryStore.open(pg_url, namespace=namespace) as store:
            await store.store_many([a, b])
            other = await psycopg.AsyncConnection.connect(pg_url)
            watcher = await psycopg.AsyncConnection.connect(pg_url, autocommit=True)
            async with other, watcher:
                await other.execute(touch, [namespace, a.id])
                batch = asyncio.create_task(store.store_many([
                    b.model_copy(update={"content": "b, changed"}),
                    a.model_copy(update={"content": "a, changed"}),
                ]))
                async with asyncio.timeout(30):
                    while not await (await watcher.execute(
                        "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                        " AND datname = current_database()"
                    )).fetchall():
                        await asyncio.sleep(0.01)
                blocked = asyncio.create_task(other.execute(touch, [namespace, b.id]))
                with pytest.raises(psycopg.errors.DeadlockDetected):
                    await batch
                await blocked
                await other.commit()
            found = await store.search(MemoryQuery())
            assert [i.content for i in found] == ["a", "b"]

    run(scenario())


def test_a_server_restart_fails_fast_applies_nothing_half_and_recovers(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with running_server() as server:
        batch = [MemoryItem(content=f"batch {i}", tags=["batch"]) for i in range(2000)]

        async def scenario() -> None:
            store = await PostgresMemoryStore.open(
                server.url, namespace="outage", timeout=2.0, max_size=2, statement_timeout=4
            )
            # As many calls as the pool has connections: unless each gives its
            # connection back to the count, the outage would be reported as a busy pool.
            await store.store(MemoryItem(content="before"))
            assert [i.content for i in await store.search(MemoryQuery())] == ["before"]
            server.stop("immediate")
            for call in (store.store(MemoryItem(content="during")), store.search(MemoryQuery()), store.store_many(batch)):
                start = time.monotonic()
                with pytest.raises(StoreUnavailableError, match="is unavailable") as failure:
                    await asyncio.wait_for(call, timeout=30)
                assert time.monotonic() - start < 15
                assert server.password not in str(failure.value)
            server.start()
            await asyncio.sleep(0.5)
            found = None
            for _ in range(20):  # the pool replaces its broken connections
                try:
                    found = await store.search(MemoryQuery(limit=10_000))
                    break
                except StoreUnavailableError:
                    await asyncio.sleep(0.5)
            assert found is not None
            assert [i.content for i in found] == ["before"]  # nothing half-applied
            # The pool's new connections carry the statement timeout too.
            assert await store._execute("SELECT current_setting('statement_timeout')") == [("4s",)]
            await store.store(MemoryItem(content="after"))
            assert [i.content for i in await store.search(MemoryQuery())] == ["before", "after"]
            await store.close()

        run(scenario())
        assert all(server.password not in record.getMessage() for record in caplog.records)


def test_a_pool_whose_connections_are_all_in_use_is_reported_busy_not_unreachable(pg_url: str) -> None:
    """A call that waits out the timeout for a connection because the store's other
    calls hold them all says so; the server itself answers."""
    held = MemoryItem(content="locked elsewhere")

    async def body(store: PostgresMemoryStore) -> str:
        await store.store(held)
        async with await psycopg.AsyncConnection.connect(pg_url) as other:
            await other.execute(
                "SELECT 1 FROM lionmem_items WHERE namespace = %s FOR UPDATE", [store.namespace]
            )
            # The only connection waits for the row lock.
            blocked = asyncio.ensure_future(store.store(held.model_copy(update={"content": "changed"})))
            await asyncio.sleep(0.1)
            with pytest.raises(StoreUnavailableError) as busy:
                await store.retrieve(held.id)
            assert not blocked.done()
        await blocked  # the lock is gone with its transaction
        again = await store.retrieve(held.id)
        assert again is not None and again.content == "changed"
        return str(busy.value)

    message = with_store(pg_url, body, max_size=1, timeout=0.3)
    assert message.endswith(
        "is busy: all 1 connections of the store's pool stayed in use for 0.3 s; "
        "raise max_size or timeout, or make fewer calls at once"
    )
    assert "unavailable" not in message and "***" in message


def test_a_cancelled_batch_is_written_whole_or_not_at_all(pg_url: str) -> None:
    """Cancelled at any point, a batch is rolled back or, cancelled while it
    commits, kept whole; the connection it held serves the next call."""
    delays = [0, 0.001, 0.005, 0.01, 0.02, 0.04, 0.08, 0.16, 0.32]

    async def body(store: PostgresMemoryStore) -> list[tuple[str, int]]:
        outcomes: list[tuple[str, int]] = []
        for delay in delays:
            batch = [MemoryItem(content=f"{delay} {n}") for n in range(3_000)]
            writing = asyncio.ensure_future(store.store_many(batch))
            await asyncio.sleep(delay)
            writing.cancel()
            try:
                await writing
                outcome = "finished"
            except asyncio.CancelledError:
                outcome = "cancelled"
            kept = [await store.retrieve(i.id) is not None for i in (batch[0], batch[-1])]
            found = await store.search(MemoryQuery(text=f"{delay} ", limit=10_000))
            outcomes.append((outcome, len(found)))
            assert kept == [bool(found)] * 2
        after = MemoryItem(content="after")
        await store.store(after)
        assert await store.retrieve(after.id) == after
        return outcomes

    outcomes = with_store(pg_url, body, max_size=1)
    assert all(count in (0, 3_000) for _, count in outcomes), outcomes
    assert ("cancelled", 0) in outcomes  # the early cancellations did stop their batch
    assert all(count == 3_000 for outcome, count in outcomes if outcome == "finished")


def test_a_batch_in_flight_when_the_server_dies_is_all_or_nothing() -> None:
    with running_server() as server:
        batch = [MemoryItem(content=f"n{i}", metadata={"pad": "x" * 200}) for i in range(20_000)]

        async def scenario() -> int:
            store = await PostgresMemoryStore.open(server.url, namespace="inflight", timeout=2.0)
            writing = asyncio.create_task(store.store_many(batch))
            await asyncio.sleep(0.3)
            server.stop("immediate")
            try:
                await asyncio.wait_for(writing, timeout=60)
            except StoreUnavailableError:
                pass
            server.start()
            count = -1
            for _ in range(20):
                try:
                    count = len(await store.search(MemoryQuery(limit=100_000)))
                    break
                except StoreUnavailableError:
                    await asyncio.sleep(0.5)
            await store.close()
            return count

        assert run(scenario()) in (0, len(batch))
