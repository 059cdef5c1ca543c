"""The `ForgettingStore` extension of `SQLiteMemoryStore` ([ADR-0100][adr-0100]): each
delete one transaction on the worker thread, and `scan`, a read at a time from where
the last one ended.

Governed by [ADR-0100][adr-0100]; expiry's part in them by [ADR-0105][adr-0105-d2].
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime
from typing import Concatenate, ParamSpec, TypeVar
from uuid import UUID

from lionmem._internal.arguments import as_batch_size, as_cutoff, as_uuid, as_uuids, require_type
from lionmem.adapters._expiring import Lifetime
from lionmem.adapters.sqlite._connections import Connections
from lionmem.adapters.sqlite._namespaces import Space
from lionmem.adapters.sqlite._worker import CREATED_AT
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.paging import position_of

__all__ = ["ForgettingOnWorker"]

P = ParamSpec("P")
T = TypeVar("T")


class ForgettingOnWorker(ABC):
    """`delete`, `delete_many`, `delete_matching`, `count`, `delete_created_before` and
    `scan` of `SQLiteMemoryStore`, over its connections and namespace."""

    __slots__ = ()

    _connections: Connections
    _space: Space
    _lifetime: Lifetime

    @abstractmethod
    async def _on_worker(self, call: Callable[Concatenate[Space, P], T], *args: P.args, **kwargs: P.kwargs) -> T:
        """`call` on the worker thread, given the store's namespace at the clock's one reading."""

    async def delete(self, item_id: UUID) -> bool:
        """Delete the item with `item_id`; return whether there was one.

        Its bytes leave the file by the time the store is closed ([ADR-0100][adr-0100]).
        Storing an item with that id afterwards adds it at the end of the order.

        Raises:
            ValueError: `item_id` is a string that is not a UUID.
            TypeError: `item_id` is neither a UUID nor a string.
        """
        key = as_uuid(item_id, "item_id")
        return bool(await self._on_worker(self._connections.worker.delete_ids, [key]))

    async def delete_many(self, item_ids: Iterable[UUID]) -> int:
        """Delete the items with these ids in one transaction; return how many there were.

        Raises:
            TypeError: `item_ids` is a string or not iterable, or holds something
                that is neither a UUID nor a string; nothing is deleted.
            ValueError: `item_ids` holds a string that is not a UUID; nothing is
                deleted.
        """
        keys = as_uuids(item_ids, "item_ids")
        return await self._on_worker(self._connections.worker.delete_ids, keys)

    async def delete_matching(self, query: MemoryQuery, *, created_before: float | datetime | None = None) -> int:
        """Delete exactly the items `search(query)` would return, `limit` included,
        in one transaction; return how many ([ADR-0100][adr-0100]). With
        `created_before`, of the items created before it, decided in the same
        transaction.

        Raises:
            TypeError: `query` is not a `MemoryQuery`, or `created_before` is neither
                a number nor a datetime.
            ValueError: `created_before` is NaN or infinite.
        """
        require_type(query, "query", MemoryQuery)
        before = None if created_before is None else as_cutoff(created_before, "created_before")
        return await self._on_worker(self._connections.worker.delete_matching, query, before)

    async def count(self, query: MemoryQuery) -> int:
        """The number of items `query`'s text, tags and filters match; `limit` is
        not applied.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        require_type(query, "query", MemoryQuery)
        return await self._on_worker(self._connections.worker.count, query)

    async def delete_created_before(self, cutoff: float | datetime) -> int:
        """Delete every item whose `created_at` is before `cutoff`, in one
        transaction; return how many.

        Raises:
            TypeError: `cutoff` is neither a number nor a datetime.
            ValueError: `cutoff` is NaN or infinite.
        """
        before = as_cutoff(cutoff, "cutoff")
        return await self._on_worker(self._connections.worker.delete_where, f"{CREATED_AT} < ?", [before])

    def scan(self, batch_size: int = 500, *, after: str | None = None) -> AsyncIterator[list[MemoryItem]]:
        """Copies of every item (after the cursor `after` of `search_page`, if given),
        in insertion order, in lists of at most `batch_size`.

        Each list is one read, from where the last one ended; an item written while a
        scan runs is in it if it comes after that point, and a replacement keeps its
        place, so no item comes twice.

        Raises:
            TypeError: `batch_size` is not an int, or `after` neither a str nor `None`.
            ValueError: `batch_size` is less than 1, or `after` is not a cursor.
            StoreClosedError: the store is closed (raised by the first list).
            RuntimeError: called in a process forked from the one that opened
                the store (raised by the first list).
        """
        return self._pages(as_batch_size(batch_size), position_of(after))

    async def _pages(self, size: int, after: int) -> AsyncIterator[list[MemoryItem]]:
        space = self._space.at(self._lifetime.clock())  # one reading for the whole scan
        while True:
            after, items = await self._connections.on_writer(self._connections.worker.page, space, after, size)
            if items:
                yield items
            if len(items) < size:
                return
