"""The exact answers the recall checks compare a store with: every item's vector from the
store's own embedder, scored one by one. See [ADR-0102][adr-0102-d5].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import mul
from typing import Any
from uuid import UUID

from lionmem.protocols.memory import MemoryItem
from lionmem.protocols.recall import Embedder

__all__ = ["TOLERANCE", "Brute", "holding"]

TOLERANCE = 1e-4
"""How far a score may stray from the brute-force one: float32 vectors round."""


def holding(tags: list[str] | None, filters: dict[str, Any] | None) -> Callable[[MemoryItem], bool]:
    """Whether an item meets `tags` and `filters` by the reference rule."""

    def held(item: MemoryItem) -> bool:
        if tags and not set(tags) & set(item.tags):
            return False
        return all(item.metadata.get(k) == v for k, v in (filters or {}).items())

    return held


class Brute:
    """The exact ranking: every item's vector from the store's embedder, scored."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.order: list[UUID] = []
        self.items: dict[UUID, tuple[MemoryItem, list[float]]] = {}

    async def add(self, items: list[MemoryItem]) -> None:
        vectors = await self.embedder.embed([str(i.content) for i in items])
        for item, vector in zip(items, vectors, strict=True):
            if item.id not in self.items:
                self.order.append(item.id)
            self.items[item.id] = (item, _unit(vector))

    def remove(self, item_id: UUID) -> None:
        del self.items[item_id]
        self.order.remove(item_id)

    async def top(
        self, text: str, k: int, keep: Callable[[MemoryItem], bool]
    ) -> tuple[list[tuple[MemoryItem, float]], dict[UUID, float]]:
        """The top `k` of the items `keep` keeps, highest first and ties in insertion
        order, and the score of every item it keeps."""
        (query,) = await self.embedder.embed([text])
        unit = _unit(query)
        held = [self.items[i] for i in self.order]
        scored = [(n, item, sum(map(mul, unit, vector))) for n, (item, vector) in enumerate(held) if keep(item)]
        every = {item.id: score for _, item, score in scored}
        scored.sort(key=lambda entry: (-entry[2], entry[0]))
        return [(item, score) for _, item, score in scored[:k]], every


def _unit(vector: Sequence[float]) -> list[float]:
    norm = sum(v * v for v in vector) ** 0.5
    return [v / norm for v in vector] if norm else [0.0 for _ in vector]
