"""`StatsStore`: the optional extension of `MemoryStore` that reports what a store
holds and takes, and `StoreStats`, its answer, as `lionmem stats` prints it.

Governed by [ADR-0100][adr-0100-d9].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from lionmem.protocols.memory import MemoryStore

__all__ = ["StatsStore", "StoreStats"]


@dataclass(frozen=True, slots=True, kw_only=True)
class StoreStats:
    """A durable store's size and span, read in one transaction. See [ADR-0100][adr-0100-d9]."""

    items: int
    """The items the store holds in its namespace ([ADR-0105][adr-0105-d1]), but those
    expired and not yet swept ([ADR-0105][adr-0105-d2])."""
    bytes_on_disk: int
    """The bytes that `size_covers` names."""
    size_covers: str
    """What `bytes_on_disk` counts: on SQLite, the database file and its write-ahead
    log (not the log's index, a map shared in memory); on PostgreSQL, the items table
    and the table of metadata values that order comparisons read, with their indexes
    and TOAST data, which every namespace of the database shares."""
    schema_version: int
    """The version of lionmem's schema the database records."""
    oldest: float | None
    """The earliest `created_at` of those items, `None` when there is none."""
    newest: float | None
    """The latest `created_at` of those items, `None` when there is none."""


@runtime_checkable
class StatsStore(MemoryStore, Protocol):
    """A `MemoryStore` on disk that says how many items it holds, the bytes they take,
    its schema version and the span of `created_at`.

    `SQLiteMemoryStore` and `PostgresMemoryStore` implement it; `InMemoryStore` does
    not, having no disk or schema to report ([ADR-0100][adr-0100-d9]).
    """

    async def stats(self) -> StoreStats:
        """The store's item count, size, schema version and span, read together."""
        ...
