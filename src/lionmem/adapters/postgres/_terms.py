"""What the PostgreSQL store reads of its term index, for hybrid recall: the holders of
each term, and the count of a namespace's items up to a bound. The writes keep the
index (`_writes.write_terms`). Governed by [ADR-0104][adr-0104]."""

from __future__ import annotations

from typing import LiteralString

from lionmem.adapters._codec import decode_in_slices
from lionmem.adapters._expiring import Lifetime
from lionmem.adapters.postgres._conditions import UNEXPIRED
from lionmem.adapters.postgres._pool import Connections
from lionmem.protocols.memory import MemoryItem

__all__ = ["TermReads"]


_HOLDING: LiteralString = (
    "SELECT q.n, t.tf, i.id::text, i.created_at, i.body FROM unnest(%s::text[]) WITH ORDINALITY AS q (term, n)"
    " CROSS JOIN LATERAL (SELECT h.seq, h.tf FROM lionmem_terms AS h"
    " JOIN lionmem_items AS e ON e.namespace = h.namespace AND e.seq = h.seq"
    " WHERE h.namespace = %s AND h.term = q.term AND (e.expires_at IS NULL OR e.expires_at > %s)"
    " ORDER BY h.seq LIMIT %s) AS t"
    " JOIN lionmem_items AS i ON i.namespace = %s AND i.seq = t.seq ORDER BY q.n, t.seq"
)
"""Each term's first holders unexpired at a time: `(terms, namespace, now, limit,
namespace)`. An expired holder is passed over before the limit cuts them."""


async def holding(
    connections: Connections, namespace: str, terms: list[str], limit: int, now: float
) -> list[list[tuple[MemoryItem, int]]]:
    """For each term, the first `limit` items of `namespace` unexpired at `now` holding
    it, in insertion order, each with how often: one statement, an index probe a term
    ([ADR-0104][adr-0104])."""
    rows = await connections.execute(_HOLDING, [terms, namespace, now, limit, namespace])
    found: list[list[tuple[MemoryItem, int]]] = [[] for _ in terms]
    for (n, tf, *_), item in zip(rows, decode_in_slices([row[2:] for row in rows]), strict=True):
        found[int(n) - 1].append((item, int(tf)))
    return found


async def items_up_to(connections: Connections, namespace: str, most: int, now: float) -> int:
    """How many items `namespace` holds unexpired at `now`, counted up to `most` along
    its order index."""
    rows = await connections.execute(
        "SELECT count(*) FROM (SELECT 1 FROM lionmem_items WHERE namespace = %s AND " + UNEXPIRED + " LIMIT %s)"
        " AS counted",
        [namespace, now, most],
    )
    return int(rows[0][0])


class TermReads:
    """What the store reads of its term index: the methods hybrid recall looks for."""

    __slots__ = ()

    _connections: Connections
    _lifetime: Lifetime
    namespace: str

    async def holding(self, terms: list[str], limit: int) -> list[list[tuple[MemoryItem, int]]]:
        """For each of `terms`, the first `limit` items holding it among their terms, in
        insertion order, each with how often: hybrid recall's words ([ADR-0104][adr-0104])."""
        return await holding(self._connections, self.namespace, terms, limit, self._lifetime.clock())

    async def count_up_to(self, most: int) -> int:
        """How many items the namespace holds, counted up to `most` ([ADR-0104][adr-0104])."""
        return await items_up_to(self._connections, self.namespace, most, self._lifetime.clock())
