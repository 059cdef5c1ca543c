"""One PostgreSQL store's connections: its pool, the event loop and process the pool
belongs to, and how a call holds a connection, is bounded in time and fetches rows.

Governed by [ADR-0097][adr-0097].
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Awaitable, Callable, Iterable
from typing import Any, LiteralString, TypeVar

import psycopg
from psycopg import sql
from psycopg_pool import AsyncConnectionPool

from lionmem.adapters._codec import SHARE_EVERY
from lionmem.adapters.lifecycle import process_id, refuse_forked
from lionmem.adapters.postgres._connect import Recent, answered, answering, outages_unavailable
from lionmem.adapters.postgres._dsn import redacted
from lionmem.errors import DatabaseCorruptError, StoreClosedError, StoreUnavailableError

__all__ = ["Connections", "Pool", "fetch", "snapshot"]

T = TypeVar("T")

Pool = AsyncConnectionPool[psycopg.AsyncConnection[Any]]


class Connections:
    """The pool of one store, for the calls of the event loop that opened it."""

    def __init__(self, pool: Pool, recent: Recent, namespace: str, conninfo: str, patience: float) -> None:
        self.pool: Pool | None = pool
        """The pool, `None` once closed."""
        self._recent = recent
        # The pool's waiters and maintenance tasks belong to the loop that opened it.
        self._loop = asyncio.get_running_loop()
        self._pid = process_id()
        # One pool serves every store `in_namespace` made from the one opened.
        self._what = f"the PostgresMemoryStore opened for {namespace!r}"
        self.conninfo = conninfo
        """The connection string, secrets and all: never shown but `redacted`."""
        self._in_use = 0
        # How long a call waits for its answer before it asks whether the server
        # still answers a new connection, and how long that may take: half the
        # store's timeout each, so that a frozen server fails a call in about the
        # timeout, while a slow statement on a live one runs on.
        self._patience = patience
        self._damage: str | None = None  # what verify found broken, if anything

    def note_damage(self, damage: list[str]) -> None:
        """Remember the first of `damage`, which `verify` found, to refuse every write."""
        if damage:
            self._damage = f"{damage[0]}{f' (and {len(damage) - 1} more)' if len(damage) > 1 else ''}"

    def writable(self) -> None:
        """Refuse a write once `verify` has found damage.

        Raises:
            DatabaseCorruptError: naming what was found.
        """
        if self._damage is not None:
            raise DatabaseCorruptError(f"refusing to write: verify found {self._damage}")

    async def close(self) -> None:
        """Close the pool; idempotent. Refused from another loop or process while open."""
        if self.pool is not None:
            self.check_loop()
        pool, self.pool = self.pool, None
        if pool is not None:
            await pool.close()

    def check_loop(self) -> None:
        """Refuse a call from a forked process, or from another event loop."""
        refuse_forked(self._pid, self._what)
        if asyncio.get_running_loop() is not self._loop:
            raise RuntimeError(
                f"{self._what} belongs to the event loop that opened it; open a store in each loop that needs one"
            )

    def live(self) -> Pool:
        """The pool, for a call made where it may be used; `StoreClosedError` once closed."""
        if self.pool is None:
            raise StoreClosedError(f"{self._what} is closed")
        self.check_loop()
        return self.pool

    def _busy(self, pool: Pool) -> StoreUnavailableError | None:
        """For the pool's timeout: the error saying the pool is busy, if this store's
        other calls hold every connection (the remedy differs from an outage's)."""
        if self._in_use < pool.max_size:
            return None
        return StoreUnavailableError(
            f"PostgreSQL at {redacted(self.conninfo)} is busy: all {pool.max_size} "
            f"connections of the store's pool stayed in use for {pool.timeout:g} s; "
            "raise max_size or timeout, or make fewer calls at once"
        )

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncGenerator[psycopg.AsyncConnection[Any], None]:
        """A connection of the pool for one call, counted as in use while held; a
        server or pool that does not answer raises `StoreUnavailableError`."""
        pool = self.live()
        with outages_unavailable(self.conninfo, lambda: self._busy(pool)):
            async with pool.connection() as conn:
                self._in_use += 1
                try:
                    yield conn
                finally:
                    self._in_use -= 1

    async def execute(
        self, query: sql.Composed | LiteralString, params: Iterable[object] = (), *, prepare: bool | None = None
    ) -> list[tuple[Any, ...]]:
        """Run one statement on a connection of its own; its rows, if any."""
        return await self.on_connection(lambda conn: fetch(conn, query, list(params), prepare))

    async def select(self, statement: sql.Composed, params: list[object]) -> list[tuple[Any, ...]]:
        """The rows of a search's `statement`, planned afresh: psycopg prepares a
        statement after its fifth run, and the server may then keep one plan for all
        values, while a search's best plan depends on its values ([ADR-0097][adr-0097])."""
        return await self.execute(statement, params, prepare=False)

    async def on_connection(self, work: Callable[[psycopg.AsyncConnection[Any]], Awaitable[T]]) -> T:
        """`work` on a connection of the pool, held for it alone. An outage raises
        `StoreUnavailableError` with no exception chained: psycopg's error keeps the
        connection string, secrets and all."""
        try:
            async with self._connection() as conn:
                done = await answered(conn, work(conn), self._patience, self._alive)
                self._recent.note(conn)
                return done
        except StoreUnavailableError as exc:
            failure = exc
        # Raised again out of the handler, where nothing becomes its context.
        failure.__context__ = None
        raise failure

    async def _alive(self) -> bool:
        return await answering(self.conninfo, self._patience)


@contextlib.asynccontextmanager
async def snapshot(conn: psycopg.AsyncConnection[Any]) -> AsyncGenerator[None, None]:
    """A repeatable-read transaction on `conn`: every statement in it reads one
    snapshot, and a write that another client's change since conflicts with fails it
    with a serialization failure rather than acting on what it did not see."""
    async with conn.transaction():
        await conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        yield


async def fetch(
    conn: psycopg.AsyncConnection[Any],
    query: sql.Composed | LiteralString,
    params: list[object],
    prepare: bool | None,
) -> list[tuple[Any, ...]]:
    """The rows of `query` on `conn`, fetched a slice at a time."""
    cursor = await conn.execute(query, params, prepare=prepare)
    rows: list[tuple[Any, ...]] = []
    # psycopg builds rows on the loop's thread as they are fetched: a slice at
    # a time, letting other tasks run between slices of a long result.
    while cursor.description and (chunk := await cursor.fetchmany(SHARE_EVERY)):
        rows += chunk
        if len(chunk) < SHARE_EVERY:
            break
        await asyncio.sleep(0)
    return rows
