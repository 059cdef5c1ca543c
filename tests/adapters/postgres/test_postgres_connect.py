"""Connecting: why a server cannot be used, and the settings each connection gets whatever the environment asks."""

from __future__ import annotations

import asyncio
import time
from typing import Any, cast
from uuid import UUID, uuid4

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.postgres import (
    PostgresMemoryStore,
    StoreUnavailableError,
)
from tests.support.postgres_support import fresh_namespace, open_only, run, unused_port, with_store


def test_opening_says_why_the_server_cannot_be_used(pg_url: str) -> None:
    parts = psycopg.conninfo.conninfo_to_dict(pg_url)
    nobody = f"postgresql://me:s3cret@127.0.0.1:{unused_port()}/db"
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
        assert "\n" not in message and "\t" not in message  # libpq's hint joins the line
        assert time.monotonic() - started < 5  # a refusal is reported at once, not at the timeout
    without_password = f"postgresql://me@127.0.0.1:{unused_port()}/db"
    with pytest.raises(StoreUnavailableError, match="refused") as failure:
        run(open_only(without_password, namespace="n", timeout=5))
    assert "user=me" in str(failure.value) and "***" not in str(failure.value)
    hint = "Is the server running on that host and accepting TCP/IP connections?"
    assert str(failure.value).endswith(f"failed: Connection refused. {hint}")
    # Each host libpq tried has its lines; all of them make one line, in order.
    ports = unused_port(), unused_port()
    two_hosts = f"host=127.0.0.1,127.0.0.1 port={ports[0]},{ports[1]} user=me dbname=db"
    with pytest.raises(StoreUnavailableError) as failure:
        run(open_only(two_hosts, namespace="n", timeout=5))
    message = str(failure.value)
    assert "\n" not in message and "\t" not in message
    for port in ports:
        assert f"port {port} failed: Connection refused. {hint}" in message


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
                await store.store_many(
                    [MemoryItem(id=UUID(int=10 + (k + j) % 4), content=f"{n}-{k}-{j}") for j in range(2)]
                )

        await asyncio.gather(*(writer(n) for n in range(20)))
        return [item.id.int for item in await store.search(MemoryQuery(limit=100))]

    assert sorted(with_store(pg_url, body, max_size=10)) == [1, 2, 3, 10, 11, 12, 13]


@pytest.mark.parametrize(
    ("setting", "refusal"),
    [
        ({"sslmode": "bogus"}, 'invalid sslmode value: "bogus"'),
        ({"target_session_attrs": "nonsense"}, 'invalid target_session_attrs value: "nonsense"'),
        ({"port": "44055x"}, 'invalid integer value "44055x" for connection option "port"'),
    ],
)
def test_a_value_libpq_refuses_is_a_bad_dsn_not_an_outage(pg_url: str, setting: dict[str, str], refusal: str) -> None:
    # Retry logic retries StoreUnavailableError; a misconfiguration would never pass.
    dsn = psycopg.conninfo.make_conninfo(pg_url, password="s3cret-value", **setting)
    started = time.monotonic()
    with pytest.raises(ValueError) as failure:
        run(open_only(dsn, namespace="n", timeout=5))
    assert not isinstance(failure.value, StoreUnavailableError)
    assert str(failure.value) == f"the dsn has a value libpq refuses: {refusal}"
    assert failure.value.__cause__ is None and failure.value.__context__ is None
    assert time.monotonic() - started < 5


def test_a_callers_cancellation_reaches_the_call_and_waits_for_its_clean_up() -> None:
    """The deadline's other way out: cancelled by its caller, `answered` cancels the
    call and returns only once the call has cleaned up, as awaiting it directly would."""
    from lionmem.adapters.postgres._connect import answered

    async def body() -> list[str]:
        started, steps = asyncio.Event(), []

        async def call() -> None:
            started.set()
            try:
                await asyncio.Event().wait()
            finally:
                await asyncio.sleep(0)  # a clean-up that itself awaits
                steps.append("cleaned up")

        unused = cast("psycopg.AsyncConnection[Any]", None)  # touched only at the deadline
        waiting = asyncio.ensure_future(answered(unused, call(), 30))
        await started.wait()
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        steps.append("returned")
        return steps

    assert asyncio.run(body()) == ["cleaned up", "returned"]
