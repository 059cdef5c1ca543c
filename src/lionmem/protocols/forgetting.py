"""`ForgettingStore`: the optional extension of `MemoryStore` for stores that delete.

The three-method protocol stays as [ADR-0092][adr-0092-d2] fixed it; a store that can
forget offers these methods besides. Governed by [ADR-0100][adr-0100].
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import Protocol, runtime_checkable
from uuid import UUID

from lionmem.errors import LionmemWarning
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore

__all__ = ["ErasureWarning", "ForgettingStore"]


@runtime_checkable
class ForgettingStore(MemoryStore, Protocol):
    """A `MemoryStore` that can delete, count and expire its items, and hand all of
    them over in order, to export or copy them before they are forgotten.

    Every call is atomic: it deletes all it names or, on error, nothing. A deleted
    item is gone: storing an item with its id afterwards adds a new item at the end
    of the insertion order. `InMemoryStore`, `SQLiteMemoryStore` and
    `PostgresMemoryStore` implement it with the same semantics, which the
    conformance kit checks. See [ADR-0100][adr-0100].
    """

    async def delete(self, item_id: UUID) -> bool:
        """Delete the item with `item_id`; return whether there was one."""
        ...

    async def delete_many(self, item_ids: Iterable[UUID]) -> int:
        """Delete the items with these ids, at once; return how many there were."""
        ...

    async def delete_matching(self, query: MemoryQuery) -> int:
        """Delete exactly the items `search(query)` returns, `limit` included, at
        once; return how many."""
        ...

    async def count(self, query: MemoryQuery) -> int:
        """The number of items `query`'s text, tags and filters match, whatever its
        `limit`."""
        ...

    async def delete_created_before(self, cutoff: float | datetime) -> int:
        """Delete every item whose `created_at` is before `cutoff` (a UTC timestamp,
        or a datetime, naive ones read as UTC); return how many."""
        ...

    def scan(self, batch_size: int = 500) -> AsyncIterator[list[MemoryItem]]:
        """Every item, in insertion order, in lists of at most `batch_size`, none
        empty, so that memory stays bounded whatever the store's size.

        Every item present from start to end comes once; an item stored during the
        scan comes at its end, or not at all.
        """
        ...


class ErasureWarning(LionmemWarning):
    """A store closed after deleting, but cannot show that the deleted bytes left its
    files: SQLite's write-ahead log could be neither emptied nor removed, because
    another connection has the file open or its directory forbids it. The message
    names the file and how to finish ([ADR-0100][adr-0100-d3])."""
