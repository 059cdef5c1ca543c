"""The `ForgettingStore` extension of `PostgresMemoryStore` ([ADR-0100][adr-0100]):
each delete one statement or one repeatable-read transaction, and `scan`, a statement
at a time from where the last one ended.

Governed by [ADR-0100][adr-0100]; expiry's part in them by [ADR-0105][adr-0105-d2].
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from functools import partial
from typing import LiteralString
from uuid import UUID

from lionmem._internal.arguments import as_batch_size, as_cutoff, as_uuid, as_uuids, require_type
from lionmem.adapters._expiring import Lifetime
from lionmem.adapters.postgres._deletes import delete_found, delete_where
from lionmem.adapters.postgres._pool import Connections
from lionmem.adapters.postgres._reads import count_of, pages
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.paging import position_of

__all__ = ["Forgetting"]


class Forgetting:
    """`delete`, `delete_many`, `delete_matching`, `count`, `delete_created_before` and
    `scan` of `PostgresMemoryStore`, over its pool and namespace."""

    __slots__ = ()

    _connections: Connections
    _lifetime: Lifetime
    namespace: str

    async def delete(self, item_id: UUID) -> bool:
        """Delete the item with `item_id` in this namespace; return whether there was one.

        Storing an item with that id afterwards adds it at the end of the order.
        What the server keeps of it, and for how long, is in [ADR-0100][adr-0100].

        Raises:
            ValueError: `item_id` is a string that is not a UUID.
            TypeError: `item_id` is neither a UUID nor a string.
        """
        key = as_uuid(item_id, "item_id")
        return await self._delete("id = %s", [key]) > 0

    async def delete_many(self, item_ids: Iterable[UUID]) -> int:
        """Delete the items with these ids in one statement; return how many there were.

        Raises:
            TypeError: `item_ids` is a string or not iterable, or holds something
                that is neither a UUID nor a string; nothing is deleted.
            ValueError: `item_ids` holds a string that is not a UUID; nothing is
                deleted.
        """
        keys = as_uuids(item_ids, "item_ids")
        return await self._delete("id = ANY(%s)", [keys]) if keys else 0

    async def delete_matching(self, query: MemoryQuery, *, created_before: float | datetime | None = None) -> int:
        """Delete exactly the items `search(query)` would return, `limit` included,
        in one transaction; return how many ([ADR-0100][adr-0100]). With
        `created_before`, of the items created before it.

        The search and the delete read one snapshot (repeatable read): an item another
        client changes in between fails the call rather than being deleted unseen.

        Raises:
            TypeError: `query` is not a `MemoryQuery`, or `created_before` is neither
                a number nor a datetime.
            ValueError: `created_before` is NaN or infinite.
            psycopg.errors.SerializationFailure: another client changed a found
                item meanwhile; nothing is deleted, and the call may be retried.
        """
        require_type(query, "query", MemoryQuery)
        before = None if created_before is None else as_cutoff(created_before, "created_before")
        self._connections.writable()
        return await self._connections.on_connection(
            partial(delete_found, namespace=self.namespace, query=query, before=before, now=self._lifetime.clock())
        )

    async def count(self, query: MemoryQuery) -> int:
        """The number of items in this namespace that `query`'s text, tags and filters
        match; `limit` is not applied.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        require_type(query, "query", MemoryQuery)
        return await count_of(self._connections, self.namespace, query, self._lifetime.clock())

    async def delete_created_before(self, cutoff: float | datetime) -> int:
        """Delete every item in this namespace whose `created_at` is before `cutoff`,
        in one statement; return how many.

        Raises:
            TypeError: `cutoff` is neither a number nor a datetime.
            ValueError: `cutoff` is NaN or infinite.
        """
        return await self._delete("created_at < %s", [as_cutoff(cutoff, "cutoff")])

    def scan(self, batch_size: int = 500, *, after: str | None = None) -> AsyncIterator[list[MemoryItem]]:
        """Copies of every item in this namespace (after the cursor `after` of
        `search_page`, if given), in insertion order, in lists of at most `batch_size`.

        Each list is one query, from where the last one ended; an item written while a
        scan runs is in it if it comes after that point, and a replacement keeps its
        place, so no item comes twice.

        Raises:
            TypeError: `batch_size` is not an int, or `after` neither a str nor `None`.
            ValueError: `batch_size` is less than 1, or `after` is not a cursor.
            StoreClosedError: the store is closed (raised by the first list).
        """
        size, start = as_batch_size(batch_size), position_of(after)
        return pages(self._connections.execute, self.namespace, size, start, self._lifetime.clock())

    async def _delete(self, where: LiteralString, params: list[object]) -> int:
        self._connections.writable()
        return await self._connections.on_connection(
            partial(delete_where, namespace=self.namespace, where=where, params=params)
        )
