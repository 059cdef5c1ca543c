"""Opening the PostgreSQL store's pool, the settings each connection gets, and
which failures mean the server is unavailable.

Governed by [ADR-0097][adr-0097].
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import weakref
from collections.abc import Awaitable, Callable, Generator
from typing import Any, TypeVar

import psycopg
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from lionmem.adapters.postgres._dsn import unavailable
from lionmem.adapters.postgres._pgvector import send_vectors_binary
from lionmem.adapters.postgres.schema import migrate
from lionmem.errors import StoreUnavailableError

T = TypeVar("T")

_OUTAGES = frozenset({"57014", "57P01", "57P02", "57P03"})
"""SQLSTATEs besides connection exceptions (class 08) that mean the server did not
answer in time (a statement timeout) or went away (shut down, restarting)."""


def _is_outage(error: Exception) -> bool:
    """Whether a failed call means the server could not be reached or did not answer:
    no connection in time, a connection lost or refused (no SQLSTATE, or class 08),
    or one of `_OUTAGES`. Any other error is the server's answer, such as a deadlock
    or a full disk, and is raised as psycopg reports it."""
    state = getattr(error, "sqlstate", None)
    return state is None or state.startswith("08") or state in _OUTAGES


@contextlib.contextmanager
def outages_unavailable(conninfo: str, busy: Callable[[], StoreUnavailableError | None]) -> Generator[None, None, None]:
    """Raise an outage (see `_is_outage`) on an open store as `StoreUnavailableError`,
    or, for the pool's timeout, what `busy()` gives if anything, and any other error
    as psycopg reports it."""
    try:
        yield
    except PoolTimeout as exc:
        raise busy() or unavailable(conninfo, exc) from None
    except psycopg.OperationalError as exc:
        if not _is_outage(exc):
            raise
        raise unavailable(conninfo, exc) from None


async def answered(
    conn: psycopg.AsyncConnection[Any],
    call: Awaitable[T],
    patience: float,
    alive: Callable[[], Awaitable[bool]] | None = None,
) -> T:
    """What `call` on `conn` returns, or `psycopg.OperationalError` once the server
    seems frozen: `call` has not finished within `patience`, and `alive()` (whether
    the server answers on another connection) says no. A call that is merely slow
    goes on as long as the server answers there, each `patience`; the server's own
    statement timeout bounds each of its statements. Without `alive`, `patience` is a
    plain deadline.

    A server that stopped answering (a frozen host) enforces no statement timeout,
    and cancelling a call on it waits for a cancel request it never answers. So at
    the deadline the connection is closed under the call, which then ends at once,
    and the pool discards the connection. A caller's own cancellation reaches the
    call as before, and waits for its clean-up, as awaiting the call directly would.
    """
    running = asyncio.ensure_future(call)
    waited = 0.0
    try:
        while True:
            done, _ = await asyncio.wait({running}, timeout=patience)
            waited += patience
            if done:
                return running.result()
            if alive is None or not await alive():
                break
    except asyncio.CancelledError:
        running.cancel()
        await asyncio.wait({running})
        raise
    await conn.close()
    running.cancel()
    await asyncio.wait({running})
    # Whether it ended cancelled or failing on the closed connection, its outcome is
    # read, so that asyncio does not report an exception nobody retrieved.
    _ = running.cancelled() or running.exception()
    if alive is None:
        raise psycopg.OperationalError(f"the server did not answer within {patience:g} s")
    raise psycopg.OperationalError(
        f"the server did not answer within {waited:g} s, nor a new connection within {patience:g} s"
    )


async def answering(conninfo: str, patience: float) -> bool:
    """Whether the server at `conninfo` answers a new connection's `SELECT 1` within
    `patience` seconds."""
    probe = asyncio.ensure_future(_select_one(conninfo))
    done, _ = await asyncio.wait({probe}, timeout=patience)
    if not done:
        probe.cancel()
        await asyncio.wait({probe})
    return not probe.cancelled() and probe.exception() is None


async def _select_one(conninfo: str) -> None:
    async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as probe:
        await probe.execute("SELECT 1")


RECENT_SECONDS = 1.0
"""How long after a connection last answered the pool lends it without checking it."""


class Recent:
    """When each of a pool's connections last answered a call.

    The pool checks a connection before lending it, which costs a round trip: on a
    busy store as much as the call itself. A connection that answered within
    `RECENT_SECONDS` is lent unchecked; one the server dropped since then fails its
    call as an outage, as it would if the server went away just after a check.
    """

    def __init__(self, timeout: float) -> None:
        self._answered: weakref.WeakKeyDictionary[psycopg.AsyncConnection[Any], float] = weakref.WeakKeyDictionary()
        self._timeout = timeout

    def note(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """Note that `conn` just answered a call."""
        self._answered[conn] = time.monotonic()

    async def check(self, conn: psycopg.AsyncConnection[Any]) -> None:
        """The pool's check, bounded in time (on a frozen server it waited for ever),
        for a connection that has not answered recently."""
        last = self._answered.get(conn)
        if last is None or time.monotonic() - last >= RECENT_SECONDS:
            await answered(conn, AsyncConnectionPool.check_connection(conn), self._timeout)


async def connect(
    conninfo: str, min_size: int, max_size: int, timeout: float, statement_ms: int, create: bool
) -> tuple[AsyncConnectionPool[psycopg.AsyncConnection[Any]], Recent, bool]:
    """Check (creating, with `create`) the schema, then open the pool: the pool, the
    record of its connections' answers the pool's check reads, and whether text
    search can use a trigram index."""

    # The statement timeout is set on each connection rather than given to libpq as
    # `options`, which would replace the options a service file or PGOPTIONS gives.
    # So are the settings the store's rules depend on, which a role, a database or
    # the environment may set otherwise: with PGCLIENTENCODING=LATIN1 psycopg could
    # not send "€" (with SQL_ASCII it returned text as bytes); with extra_float_digits
    # at 0 created_at came back rounded to 15 digits; and under repeatable read or
    # serializable isolation, concurrent writes of one id failed to serialize.
    async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute(
            "SELECT set_config('statement_timeout', %s, false),"
            " set_config('client_encoding', 'UTF8', false),"
            " set_config('extra_float_digits', '3', false),"
            " set_config('default_transaction_isolation', 'read committed', false)",
            [f"{statement_ms}ms"],
        )
        send_vectors_binary(conn)

    # The schema is checked on a connection of its own before the pool opens: a pool
    # that cannot connect only reports that it timed out, while a direct attempt says
    # why (refused, unknown host, wrong password, no such database).
    failure: Exception | None = None
    trigram = False
    try:
        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
            await configure(conn)
            trigram = await migrate(conn, create)
    except psycopg.OperationalError as exc:
        failure = unavailable(conninfo, exc)
    if failure is not None:
        # Raised out of the handler: psycopg's error, chained as the context, would
        # keep the connection string, secrets and all.
        raise failure
    recent = Recent(timeout)
    pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
        conninfo,
        min_size=min_size,
        max_size=max_size,
        timeout=timeout,
        kwargs={"autocommit": True},
        configure=configure,
        check=recent.check,
        open=False,
    )
    try:
        await pool.open(wait=True, timeout=timeout)
    except (PoolTimeout, psycopg.OperationalError) as exc:
        failure = unavailable(conninfo, exc)
    except BaseException:
        await pool.close()
        raise
    if failure is not None:
        await pool.close()
        raise failure
    return pool, recent, trigram
