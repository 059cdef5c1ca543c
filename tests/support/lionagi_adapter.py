"""A user's own store written against lionagi's types, for the tests that check one
with the kit: a dict in insertion order, applying the reference rule."""

from __future__ import annotations

import dataclasses
from uuid import UUID

from lionagi.protocols.memory import MemoryItem, MemoryQuery

from lionmem.testing import REFERENCE_PROFILE, Forgetting


class NotesStore:
    def __init__(self) -> None:
        self.items: dict[UUID, MemoryItem] = {}

    async def store(self, item: MemoryItem) -> UUID:
        self.items[item.id] = item
        return item.id

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return self.items.get(UUID(str(item_id)))

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        found = [
            item
            for item in self.items.values()
            if (not query.text or query.text.lower() in str(item.content).lower())
            and (not query.tags or set(query.tags) & set(item.tags))
            and all(item.metadata.get(key) == value for key, value in (query.filters or {}).items())
        ]
        return found[: query.limit]


PROFILE = dataclasses.replace(REFERENCE_PROFILE, forgetting=Forgetting.NOT_OFFERED)
"""What `NotesStore` promises: the reference's behaviour, without forgetting."""
