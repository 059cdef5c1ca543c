"""Timeouts, restarts, a busy pool and cancelled batches: what is raised and what is kept."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TypeVar

import psycopg
import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.postgres import (
    PostgresMemoryStore,
    StoreUnavailableError,
)
from lionmem.adapters.postgres._connect import RECENT_SECONDS
from tests.support.pg_server import running_server
from tests.support.postgres_support import execute, fresh_namespace, run, with_store


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
                batch = asyncio.create_task(
                    store.store_many(
                        [
                            b.model_copy(update={"content": "b, changed"}),
                            a.model_copy(update={"content": "a, changed"}),
                        ]
                    )
                )
                async with asyncio.timeout(30):
                    while not await (
                        await watcher.execute(
                            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
                            " AND datname = current_database()"
                        )
                    ).fetchall():
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
            for call in (
                store.store(MemoryItem(content="during")),
                store.search(MemoryQuery()),
                store.store_many(batch),
            ):
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
            assert await execute(store, "SELECT current_setting('statement_timeout')") == [("4s",)]
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
            await other.execute("SELECT 1 FROM lionmem_items WHERE namespace = %s FOR UPDATE", [store.namespace])
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
            with contextlib.suppress(StoreUnavailableError):
                await asyncio.wait_for(writing, timeout=60)
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


T = TypeVar("T")


async def _once_served(call: Callable[[], Awaitable[T]]) -> T:
    """`call()`'s result once the store serves again, trying for up to 10 s."""
    for _ in range(19):
        try:
            return await call()
        except StoreUnavailableError:
            await asyncio.sleep(0.5)
    return await call()


def test_a_frozen_server_fails_each_call_in_time_and_is_served_again_once_it_resumes() -> None:
    # A host that hangs keeps its connections open and answers nothing: no statement
    # timeout fires, and calls waited for ever (a caller's wait_for of 30 s took 40).
    with running_server() as server:

        async def scenario() -> None:
            store = await PostgresMemoryStore.open(
                server.url, namespace="frozen", timeout=2.0, max_size=2, statement_timeout=1.5
            )
            kept = MemoryItem(content="before")
            await store.store(kept)  # the pool now holds a connection
            await asyncio.sleep(RECENT_SECONDS + 0.1)  # which the pool checks before it lends it
            with server.frozen():
                for call in (
                    store.search(MemoryQuery()),
                    store.store(MemoryItem(content="during")),
                    store.store_many([MemoryItem(content="batch")]),
                    store.retrieve(kept.id),
                ):
                    start = time.monotonic()
                    with pytest.raises(StoreUnavailableError, match="is unavailable"):
                        await asyncio.wait_for(call, timeout=30)
                    # The pool's bounded check and its wait for a new connection.
                    assert time.monotonic() - start < 6
            # The pool replaces the connections it gave up on.
            found = await _once_served(lambda: store.search(MemoryQuery()))
            assert [i.content for i in found] == ["before"]
            # A call the server took up before it froze fails once a new connection
            # goes unanswered too: half the timeout waiting, half asking.
            sleeping = asyncio.ensure_future(execute(store, "SELECT pg_sleep(1)"))
            await asyncio.sleep(0.3)
            with server.frozen():
                start = time.monotonic()
                with pytest.raises(
                    StoreUnavailableError, match="did not answer within 1 s, nor a new connection within 1 s"
                ):
                    await asyncio.wait_for(sleeping, timeout=30)
                assert time.monotonic() - start < 2.5
            await _once_served(lambda: store.store(MemoryItem(content="after")))
            assert [i.content for i in await store.search(MemoryQuery())] == ["before", "after"]
            await store.close()

        run(scenario())


def test_with_the_default_settings_a_frozen_server_fails_a_call_in_about_the_timeout() -> None:
    """A connection that answered within the last second is lent unchecked, so a call
    on it meets the frozen server first: it fails once a new connection goes
    unanswered too, about the timeout (10 s) after it began, not after twice the
    statement timeout (60 s)."""
    with running_server() as server:

        async def scenario() -> None:
            async with PostgresMemoryStore.open(server.url, namespace="frozen", max_size=1) as store:
                kept = MemoryItem(content="before")
                await store.store(kept)
                with server.frozen():
                    start = time.monotonic()
                    with pytest.raises(StoreUnavailableError, match="nor a new connection within 5 s"):
                        await asyncio.wait_for(store.retrieve(kept.id), timeout=60)
                    assert 9 < time.monotonic() - start < 13

        run(scenario())


def test_a_statement_slower_than_the_timeout_finishes_while_the_server_answers(pg_url: str) -> None:
    """A statement of three seconds under a timeout of one: the store asks a new
    connection twice or more meanwhile, the server answers, and the statement ends
    well, within its statement timeout."""

    async def body(store: PostgresMemoryStore) -> None:
        start = time.monotonic()
        assert await execute(store, "SELECT pg_sleep(3), 'done'") == [("", "done")]
        assert 3 <= time.monotonic() - start < 5

    with_store(pg_url, body, timeout=1.0, statement_timeout=30)


def test_the_pool_checks_only_a_connection_that_has_not_answered_recently(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A connection that answered within RECENT_SECONDS is lent without the pool's
    check, a round trip of its own; an older one is checked. One the server dropped
    meanwhile fails its call as an outage, and the pool replaces it for the next."""
    from psycopg_pool import AsyncConnectionPool

    from lionmem.adapters.postgres import _connect

    checks: list[int] = []
    check = AsyncConnectionPool.check_connection

    async def counted(conn: psycopg.AsyncConnection[object]) -> None:
        checks.append(conn.info.backend_pid)
        await check(conn)

    monkeypatch.setattr(AsyncConnectionPool, "check_connection", staticmethod(counted))

    async def body(store: PostgresMemoryStore) -> None:
        item = MemoryItem(content="kept")
        await store.store(item)  # a connection not yet lent: checked
        assert len(checks) == 1
        for _ in range(5):
            assert await store.retrieve(item.id) == item
        assert len(checks) == 1
        monkeypatch.setattr(_connect, "RECENT_SECONDS", 0.0)
        assert await store.retrieve(item.id) == item
        assert len(checks) == 2
        monkeypatch.setattr(_connect, "RECENT_SECONDS", 3600.0)
        async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as other:
            await other.execute("SELECT pg_terminate_backend(%s)", [checks[-1]])
        with pytest.raises(StoreUnavailableError, match="is unavailable"):
            await store.retrieve(item.id)
        assert await store.retrieve(item.id) == item  # on a new connection, checked first
        assert len(checks) == 3 and checks[-1] != checks[-2]

    with_store(pg_url, body, min_size=1, max_size=1)
