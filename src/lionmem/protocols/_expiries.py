"""The expiries of one namespace of an `InMemoryStore`: each item's expiry by id, and a
heap of them that says at once whether anything has expired, so that a store holding
nothing expired reads as fast as one holding no expiry at all.

Governed by [ADR-0105][adr-0105-d2].
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Container, Iterable
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING
from uuid import UUID

from lionmem.protocols.expiry import expiry_of

if TYPE_CHECKING:
    from datetime import datetime

    from lionmem.protocols.expiry import Clock
    from lionmem.protocols.memory import MemoryItem

__all__ = ["Expiries", "Lifetimes"]


class Expiries:
    """When each item of a namespace that carries an expiry expires, and which have."""

    __slots__ = ("_at", "_gone", "_heap", "_read")

    def __init__(self) -> None:
        self._at: dict[UUID, float] = {}
        # Each expiry set and not yet passed, soonest first; an entry no longer in
        # `_at` is stale and dropped when it reaches the top. Seam for tests: `_heap`,
        # read to show it stays within twice the expiries it holds.
        self._heap: list[tuple[float, UUID]] = []
        self._gone: set[UUID] = set()  # the items expired by `_read`, popped off the heap
        self._read = -math.inf  # the latest reading of the clock asked about

    def set(self, item_ids: Iterable[UUID], at: float | None) -> None:
        """Make the items with these ids expire `at`, or never for `None`."""
        for item_id in item_ids:
            self._gone.discard(item_id)
            if at is None:
                self._at.pop(item_id, None)
            else:
                self._at[item_id] = at
                heapq.heappush(self._heap, (at, item_id))
        if len(self._heap) > 2 * len(self._at) + 64:
            self._rebuild()

    def drop(self, item_ids: Iterable[UUID]) -> None:
        """Forget the expiries of deleted items."""
        for item_id in item_ids:
            self._at.pop(item_id, None)
            self._gone.discard(item_id)

    def __bool__(self) -> bool:
        """Whether any item carries an expiry."""
        return bool(self._at)

    def at(self, item_id: UUID) -> float | None:
        """When the item with `item_id` expires, or `None`."""
        return self._at.get(item_id)

    def expired(self, now: float) -> AbstractSet[UUID]:
        """The ids of the items expired at `now`, those whose expiry is at or before it:
        the expiries passed since the last reading are popped off the heap, so a store
        reading a clock that goes forward pays for each expiry once. A reading before
        the last one sorts them all again."""
        if now < self._read:
            self._rebuild()
        self._read = now
        heap, at, gone = self._heap, self._at, self._gone
        while heap and heap[0][0] <= now:
            when, item_id = heapq.heappop(heap)
            if at.get(item_id) == when:
                gone.add(item_id)
        return gone

    def _rebuild(self) -> None:
        """The heap made again from the expiries, none counted as passed yet."""
        self._heap = [(when, item_id) for item_id, when in self._at.items()]
        heapq.heapify(self._heap)
        self._gone = set()
        self._read = -math.inf


class Lifetimes:
    """A store's expiry settings and its namespace's `Expiries`: what an
    `InMemoryStore` reads and sets on each call ([ADR-0105][adr-0105-d2])."""

    __slots__ = ("clock", "expiries", "refresh", "ttl")

    def __init__(self, ttl: float | None, refresh: bool, clock: Clock, expiries: Expiries | None = None) -> None:
        self.ttl = ttl
        self.refresh = refresh
        self.clock = clock
        self.expiries = Expiries() if expiries is None else expiries

    def sibling(self, expiries: Expiries | None) -> Lifetimes:
        """The same settings over another namespace's `expiries` (new ones for `None`)."""
        return Lifetimes(self.ttl, self.refresh, self.clock, expiries)

    def expired(self) -> tuple[float, AbstractSet[UUID]]:
        """The clock's one reading for a call, and the ids expired at it."""
        now = self.clock()
        return now, self.expiries.expired(now)

    def unexpired(self, item: MemoryItem | None) -> MemoryItem | None:
        """`item`, refreshed, unless it is `None` or expired now."""
        if item is None or not self.expiries:
            return item
        now = self.clock()
        at = self.expiries.at(item.id)
        return None if at is not None and at <= now else self.refreshed([item], now)[0]

    def stored(self, item_ids: list[UUID]) -> None:
        """Give items just stored the store's expiry, replacing any they had."""
        if self.ttl is not None:
            self.expiries.set(item_ids, self.clock() + self.ttl)
        elif self.expiries:
            self.expiries.set(item_ids, None)

    def refreshed(self, items: list[MemoryItem], now: float) -> list[MemoryItem]:
        """`items`, after moving the expiry of each that has one to `ttl` from `now`,
        when the store refreshes on read."""
        if self.refresh and self.expiries:
            assert self.ttl is not None  # refresh_on_read needs a ttl
            self.expiries.set([i.id for i in items if self.expiries.at(i.id) is not None], now + self.ttl)
        return items

    def expire(
        self, item_ids: list[UUID], at: float | datetime | None, ttl: float | None, held: Container[UUID]
    ) -> int:
        """Make the unexpired items of `held` with these ids expire `at` a time or `ttl`
        seconds from now; return how many there were.

        Raises:
            TypeError, ValueError: as [`expiry_of`][lionmem.protocols.expiry.expiry_of].
        """
        now = self.clock()
        return self._set(item_ids, expiry_of(now, at, ttl), now, held)

    def persist(self, item_ids: list[UUID], held: Container[UUID]) -> int:
        """Make the unexpired items of `held` with these ids never expire; return how
        many there were."""
        return self._set(item_ids, None, self.clock(), held)

    def _set(self, item_ids: list[UUID], at: float | None, now: float, held: Container[UUID]) -> int:
        expired = self.expiries.expired(now)
        live = [i for i in dict.fromkeys(item_ids) if i in held and i not in expired]
        self.expiries.set(live, at)
        return len(live)
