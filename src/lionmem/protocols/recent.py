"""`RecentStore`: the optional extension of `MemoryStore` for the newest matches first.

Governed by [ADR-0099][adr-0099-d7].
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore

__all__ = ["RecentStore"]


@runtime_checkable
class RecentStore(MemoryStore, Protocol):
    """A `MemoryStore` that answers a search newest first, reading no more than the
    answer needs where it can: "the 20 newest notes tagged `todo`".

    `InMemoryStore`, `SQLiteMemoryStore` and `PostgresMemoryStore` implement it with
    the same semantics, which a shared test pins. See [ADR-0099][adr-0099-d7].
    """

    async def search_newest(self, query: MemoryQuery) -> list[MemoryItem]:
        """The items `search` matches for `query`'s text, tags and filters, the last
        in insertion order first, cut by `limit` with Python's slice rules: the same
        as `search` without a limit, reversed, then `[:limit]`."""
        ...
