"""How the PostgreSQL store reads: a search's plan run and its rows decoded off the
event loop when long, a page of a search or a scan, and the statistics.

Governed by [ADR-0097][adr-0097]; pages by [ADR-0105][adr-0105-d3].

Seam for tests: `_reads`, whose `fetch` a test wraps to delete a page's last item
between the page's read and its cursor's.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from functools import partial
from typing import Any, LiteralString

import psycopg
from psycopg import sql

from lionmem.adapters._codec import SHARE_EVERY, Row, decode_in_slices
from lionmem.adapters._plan import MAX_SQL_LIMIT, Plan, unlimited
from lionmem.adapters._settling import settled
from lionmem.adapters.postgres._conditions import UNEXPIRED
from lionmem.adapters.postgres._planner import plan_search
from lionmem.adapters.postgres._pool import Connections, fetch, snapshot
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.stats import StoreStats

__all__ = [
    "NAMESPACES",
    "STATS",
    "Execute",
    "Select",
    "decode",
    "decode_all",
    "pages",
    "read_page",
    "read_search",
    "stats_of",
]

_FIRST_WINDOW = 64

_PAGE: LiteralString = (
    "SELECT seq, id::text, created_at, body FROM lionmem_items WHERE namespace = %s AND seq > %s AND "
    + UNEXPIRED
    + " ORDER BY seq LIMIT %s"
)
"""The next page of a scan: `(namespace, after, now, size)`."""

Execute = Callable[[LiteralString, list[object]], Awaitable[list[tuple[Any, ...]]]]
"""Runs one statement with its values on a connection of the store's, as
`Connections.execute` does."""


async def pages(execute: Execute, namespace: str, size: int, after: int, now: float) -> AsyncIterator[list[MemoryItem]]:
    """Every item of `namespace` after position `after` unexpired at `now`, in insertion
    order, in lists of at most `size`, each one statement from where the last one ended."""
    while True:
        rows = await execute(_PAGE, [namespace, after, now, size])
        if rows:
            after = rows[-1][0]
            yield await decode_all([row[1:] for row in rows])
        if len(rows) < size:
            return


NAMESPACES: LiteralString = (
    "WITH RECURSIVE n AS ((SELECT namespace FROM lionmem_items ORDER BY namespace LIMIT 1) UNION ALL"
    " SELECT (SELECT i.namespace FROM lionmem_items AS i WHERE i.namespace > n.namespace"
    " ORDER BY i.namespace LIMIT 1) FROM n WHERE n.namespace IS NOT NULL)"
    " SELECT namespace FROM n WHERE namespace IS NOT NULL"
)
"""The namespaces that hold an item: one probe of the primary key for each, rather
than a read of every row."""

STATS: LiteralString = (
    "SELECT count(*), min(created_at), max(created_at),"
    " pg_total_relation_size('lionmem_items') + pg_total_relation_size('lionmem_meta')"
    " + coalesce(pg_total_relation_size(to_regclass('lionmem_vectors')), 0),"
    " (SELECT version FROM lionmem_schema)"
    " FROM lionmem_items WHERE namespace = %s AND " + UNEXPIRED
)
"""A namespace's count and span of its unexpired items, the tables' size and the schema
version, in one statement, so one snapshot: `(namespace, now)`."""


def stats_of(rows: list[tuple[Any, ...]]) -> StoreStats:
    """The `StoreStats` of the one row `STATS` returns."""
    ((items, oldest, newest, size, version),) = rows
    return StoreStats(
        items=items,
        bytes_on_disk=size,
        size_covers="the items, metadata values and vectors tables with their indexes, shared by every namespace",
        schema_version=version,
        oldest=oldest,
        newest=newest,
    )


async def decode(rows: list[Row], plan: Plan[sql.Composed], limit: int) -> list[MemoryItem]:
    """The items of `rows` as `settled` keeps them, decoded as `decode_all` decodes."""
    return await _off_the_loop_if_long(rows, lambda: settled(rows, plan, limit))


async def decode_all(rows: list[Row]) -> list[MemoryItem]:
    """Every row's item. psycopg hands rows over on the event loop's thread; up to
    `SHARE_EVERY` of them (about a millisecond) are decoded there, more on a worker
    thread that gives the GIL back between slices, so the loop never waits for a
    whole result."""
    return await _off_the_loop_if_long(rows, lambda: decode_in_slices(rows))


async def _off_the_loop_if_long(rows: list[Row], work: Callable[[], list[MemoryItem]]) -> list[MemoryItem]:
    return work() if len(rows) <= SHARE_EVERY else await asyncio.to_thread(work)


Select = Callable[[sql.Composed, list[object]], Awaitable[list[tuple[Any, ...]]]]
"""Runs a search's statement with its values, as `Connections.select` does or, within
a transaction, on its one connection."""


async def read_search(
    namespace: str, query: MemoryQuery, select: Select, now: float, *, newest_first: bool = False, after: int = 0
) -> list[MemoryItem]:
    """The items of `namespace` after position `after` unexpired at `now` matching
    `query`, its plan run through `select`: whole when SQL decides every predicate or
    the limit is negative, else in growing prefixes of the ordered rows until they hold
    `limit` matches or run out."""
    plan = plan_search(namespace, query, newest_first=newest_first, after=after, now=now)
    statement, params, limit = plan.statement, plan.params, query.limit
    if plan.pushed or limit < 0:
        return await decode(await select(statement, params), plan, limit)
    # Python re-checks some rows, so SQL cannot stop at `limit` itself; read growing
    # prefixes of the ordered rows until they hold `limit` matches or run out.
    window = min(max(_FIRST_WINDOW, 4 * limit), MAX_SQL_LIMIT)
    while True:
        rows = await select(statement + sql.SQL(" LIMIT %s"), [*params, window])
        found = await decode(rows, plan, limit)
        if len(found) >= limit or len(rows) < window:
            return found
        window = min(window * 4, MAX_SQL_LIMIT)


async def count_of(connections: Connections, namespace: str, query: MemoryQuery, now: float) -> int:
    """How many items of `namespace` unexpired at `now` `query`'s text, tags and filters
    match: counted by the server when there are none, else found and counted."""
    if not (query.text or query.tags or query.filters):
        rows = await connections.execute(
            "SELECT count(*) FROM lionmem_items WHERE namespace = %s AND " + UNEXPIRED, [namespace, now]
        )
        return int(rows[0][0])
    found = await read_search(namespace, unlimited(query), connections.select, now)
    return len(found)


async def read_page(
    conn: psycopg.AsyncConnection[Any], *, namespace: str, query: MemoryQuery, after: int, now: float
) -> tuple[list[MemoryItem], int | None]:
    """The first `query.limit` items of `namespace` after position `after` matching
    `query`, and the position of the last of them when more match after it, read in
    one repeatable-read snapshot, so that the position is the returned item's."""
    size = query.limit
    async with snapshot(conn):
        select = partial(fetch, conn, prepare=False)
        found = await read_search(namespace, query.model_copy(update={"limit": size + 1}), select, now, after=after)
        if len(found) <= size:
            return found, None
        rows = await fetch(
            conn,
            "SELECT seq FROM lionmem_items WHERE namespace = %s AND id = %s",
            [namespace, found[size - 1].id],
            prepare=False,
        )
        return found[:size], int(rows[0][0])
