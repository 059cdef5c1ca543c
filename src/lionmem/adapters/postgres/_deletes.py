"""How the PostgreSQL store deletes, on one connection: the items a condition
selects, and exactly the items a search finds, decided in one snapshot.

Governed by [ADR-0100][adr-0100].
"""

from __future__ import annotations

from functools import partial
from typing import Any, LiteralString

import psycopg

from lionmem.adapters._plan import unlimited
from lionmem.adapters._settling import aged_matches
from lionmem.adapters.postgres._pool import fetch, snapshot
from lionmem.adapters.postgres._reads import read_search
from lionmem.protocols.memory import MemoryQuery

__all__ = ["delete_found", "delete_where"]


async def delete_where(
    conn: psycopg.AsyncConnection[Any], *, namespace: str, where: LiteralString, params: list[object]
) -> int:
    """Delete the items of `namespace` that `where` selects; return how many."""
    cursor = await conn.execute("DELETE FROM lionmem_items WHERE namespace = %s AND " + where, [namespace, *params])
    return cursor.rowcount


async def delete_found(
    conn: psycopg.AsyncConnection[Any], *, namespace: str, query: MemoryQuery, before: float | None, now: float
) -> int:
    """Delete what `search(query)` finds in `namespace` at `now`, of the items created
    before `before` when given, in one repeatable-read transaction: the search and the
    delete read one snapshot, so an item another client changes in between fails the
    call with a serialization failure rather than being deleted unseen."""
    async with snapshot(conn):
        select = partial(fetch, conn, prepare=False)
        if before is None:
            found = await read_search(namespace, query, select, now)
        else:
            found = aged_matches(await read_search(namespace, unlimited(query), select, now), before, query.limit)
        if not found:
            return 0
        cursor = await conn.execute(
            "DELETE FROM lionmem_items WHERE namespace = %s AND id = ANY(%s)", [namespace, [item.id for item in found]]
        )
        return cursor.rowcount
