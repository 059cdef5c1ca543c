"""`BatchingStore`: the optional extension of `MemoryStore` that writes many items in
one call.

Governed by [ADR-0096][adr-0096] and [ADR-0097][adr-0097], where the durable stores
make a batch one transaction.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol, runtime_checkable
from uuid import UUID

from lionmem.protocols.memory import MemoryItem, MemoryStore

__all__ = ["BatchingStore"]


@runtime_checkable
class BatchingStore(MemoryStore, Protocol):
    """A `MemoryStore` that stores many items in one call: all of them or, on error,
    none, with the same result as storing them one by one in order.

    `SQLiteMemoryStore` and `PostgresMemoryStore` implement it, each batch one
    transaction, and so does `InMemoryStore`, which embeds a batch in one call. The
    command line's `import` and `copy` write through it.
    """

    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]:
        """Store `items` in order, atomically, and return their ids in that order."""
        ...
