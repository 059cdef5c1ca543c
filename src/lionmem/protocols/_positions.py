"""Each item's position in an `InMemoryStore`'s insertion order, which its cursors
name: paging's record of where an item stands, kept as the Pile changes.

Governed by [ADR-0105][adr-0105-d3].
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable
from uuid import UUID

from lionmem.protocols.generic.pile import Pile
from lionmem.protocols.memory import MemoryItem

__all__ = ["Positions"]


class Positions:
    """Each item's position in insertion order, for paging: made when a page is first
    asked for, then kept by every write and delete, so that storing pays nothing until
    someone pages."""

    __slots__ = ("last", "positions")

    def __init__(self) -> None:
        self.positions: dict[UUID, int] | None = None
        self.last = 0

    def positions_of(self, items: Pile[MemoryItem]) -> dict[UUID, int]:
        """The positions, made from `items`' order if none were kept yet."""
        if self.positions is None:
            self.positions = {item_id: n for n, item_id in enumerate(items.keys(), start=1)}
            self.last = len(self.positions)
        return self.positions

    def after(self, items: Pile[MemoryItem], start: int) -> tuple[list[MemoryItem], dict[UUID, int]]:
        """The items after position `start`, in order, and the position of each item."""
        positions = self.positions_of(items)
        snapshot = items.values()
        return snapshot[bisect_right(snapshot, start, key=lambda item: positions[item.id]) :], positions

    def place(self, stored: Iterable[MemoryItem]) -> None:
        """Give each new id of `stored` the next position, once positions are kept; a
        replacement keeps its own."""
        if self.positions is None:
            return
        for item in stored:
            if item.id not in self.positions:
                self.last += 1
                self.positions[item.id] = self.last

    def drop(self, removed: Iterable[MemoryItem]) -> None:
        """Forget the positions of deleted items, once positions are kept."""
        if self.positions is not None:
            for item in removed:
                del self.positions[item.id]
