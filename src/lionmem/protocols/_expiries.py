"""The expiries of one namespace of an `InMemoryStore`: each item's expiry by id, and a
heap of them that says at once whether anything has expired, so that a store holding
nothing expired reads as fast as one holding no expiry at all.

Governed by [ADR-0105][adr-0105-d2].
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from typing import TYPE_CHECKING, Final, TypeAlias
from uuid import UUID

from lionmem.protocols.expiry import expiry_of

if TYPE_CHECKING:
    from datetime import datetime

    from lionmem.protocols.expiry import Clock
    from lionmem.protocols.generic.pile import Pile
    from lionmem.protocols.memory import MemoryItem

__all__ = ["Expired", "Expiries", "Hidden", "Lifetimes"]

Expired: TypeAlias = Mapping[int, UUID]
"""The items expired at a reading of the clock, each id by its integer: a read asks
`item.id.int in expired`, an int's hash being a fraction of a UUID's."""


class Hidden:
    """The items of a namespace expired at one reading of the clock: their ids, and the
    identities of the objects stored for them, which a read checks without touching
    the item (the item's id is a UUID, whose hash is computed in Python)."""

    __slots__ = ("ids", "objects")

    def __init__(self, ids: Expired, objects: AbstractSet[int]) -> None:
        self.ids = ids
        """The expired items' ids, by their integers."""
        self.objects = objects
        """`id()` of each expired item's stored object."""

    def __len__(self) -> int:
        return len(self.ids)


NOTHING_HIDDEN: Final = Hidden({}, frozenset())
"""What a read passes over when nothing has expired."""


class Expiries:
    """When each item of a namespace that carries an expiry expires, and which have.

    The expiries not yet passed are kept in batches, one for each time, with a heap of
    the times: `expire` of many items at once, or a `ttl` given to a batch stored,
    sets one time, so that a reading of the clock passes a whole batch in one step.
    """

    __slots__ = ("_at", "_batches", "_gone", "_objects", "_read", "_times")

    def __init__(self) -> None:
        # Each expiry, and the id it is of, by the id's integer, whose hash is the C's.
        self._at: dict[int, tuple[float, UUID]] = {}
        self._batches: dict[float, dict[int, UUID]] = {}  # the expiries not passed, by time
        # The times of the batches, soonest first; one whose batch has emptied is passed
        # over when it reaches the top. Seam for tests: `_times`, read to show it stays
        # within twice the expiries it holds.
        self._times: list[float] = []
        self._gone: dict[int, UUID] = {}  # the items expired by `_read`, their batches passed
        self._objects: set[int] | None = None  # `Hidden.objects` of `_gone`, until it changes
        self._read = -math.inf  # the latest reading of the clock asked about

    def set(self, item_ids: Iterable[UUID], at: float | None) -> None:
        """Make the items with these ids expire `at`, or never for `None`."""
        if at is None:
            self.drop(item_ids)
            return
        self._objects = None
        expiries, batch = self._at, self._batches.get(at)
        if batch is None:
            batch = self._batches[at] = {}
            heapq.heappush(self._times, at)
        for item_id in item_ids:
            key = item_id.int
            old = expiries.pop(key, None)
            if old is not None:
                self._unfile(key, old[0])
            expiries[key] = (at, item_id)
            batch[key] = item_id
        if len(self._times) > 2 * len(expiries) + 64:
            self._rebuild()

    def drop(self, item_ids: Iterable[UUID]) -> None:
        """Forget the expiries of these items: deleted, or made never to expire."""
        expiries = self._at
        if not expiries:  # nothing to forget, as after a sweep of every expiry
            return
        self._objects = None
        for item_id in item_ids:
            key = item_id.int
            old = expiries.pop(key, None)
            if old is not None:
                self._unfile(key, old[0])

    def _unfile(self, key: int, when: float) -> None:
        """Take the item `key` out of the expired or, not passed yet, out of the batch
        of `when`: every expiry is in the one or the other."""
        if self._gone.pop(key, None) is None:
            del self._batches[when][key]

    def __bool__(self) -> bool:
        """Whether any item carries an expiry."""
        return bool(self._at)

    def at(self, item_id: UUID) -> float | None:
        """When the item with `item_id` expires, or `None`."""
        entry = self._at.get(item_id.int)
        return None if entry is None else entry[0]

    def expired(self, now: float) -> Expired:
        """The ids of the items expired at `now`, those whose expiry is at or before it:
        the batches passed since the last reading join them, so a store reading a clock
        that goes forward pays for each batch once. A reading before the last one files
        every expiry again."""
        if now < self._read:
            self._rebuild()
        self._read = now
        times, batches, gone = self._times, self._batches, self._gone
        while times and times[0] <= now:
            batch = batches.pop(heapq.heappop(times), None)
            if batch:
                gone.update(batch)
                self._objects = None
        return gone

    def hidden(self, now: float, items: Pile[MemoryItem]) -> Hidden:
        """The items expired at `now`, with the identities of their objects in `items`,
        the namespace's pile: found once for each change of which have expired."""
        gone = self.expired(now)
        if not gone:
            return NOTHING_HIDDEN
        if self._objects is None:
            self._objects = {id(items.get(item_id)) for item_id in gone.values()}
        return Hidden(gone, self._objects)

    def take_expired(self, now: float) -> list[UUID]:
        """The ids of the items expired at `now`, their expiries forgotten: those a
        sweep deletes."""
        gone, expiries = self.expired(now), self._at
        for key in gone:
            del expiries[key]
        self._gone, self._objects = {}, None
        return list(gone.values())

    def _rebuild(self) -> None:
        """Every expiry filed again in a batch of its time, none passed yet."""
        batches: dict[float, dict[int, UUID]] = {}
        for key, (when, item_id) in self._at.items():
            batches.setdefault(when, {})[key] = item_id
        self._batches, self._times = batches, list(batches)
        heapq.heapify(self._times)
        self._gone, self._objects = {}, None
        self._read = -math.inf


class Lifetimes:
    """A store's expiry settings and its namespace's `Expiries`: what an
    `InMemoryStore` reads and sets on each call ([ADR-0105][adr-0105-d2])."""

    __slots__ = ("clock", "expiries", "items", "refresh", "ttl")

    def __init__(
        self, items: Pile[MemoryItem], ttl: float | None, refresh: bool, clock: Clock, expiries: Expiries | None = None
    ) -> None:
        self.items = items
        self.ttl = ttl
        self.refresh = refresh
        self.clock = clock
        self.expiries = Expiries() if expiries is None else expiries

    def sibling(self, expiries: Expiries | None, items: Pile[MemoryItem]) -> Lifetimes:
        """The same settings over another namespace's `items` and `expiries` (new ones
        for `None`)."""
        return Lifetimes(items, self.ttl, self.refresh, self.clock, expiries)

    def expired(self) -> tuple[float, Hidden]:
        """The clock's one reading for a call, and the items expired at it."""
        now = self.clock()
        return now, self.expiries.hidden(now, self.items)

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

    def expire(self, item_ids: list[UUID], at: float | datetime | None, ttl: float | None) -> int:
        """Make the unexpired stored items with these ids expire `at` a time or `ttl`
        seconds from now; return how many there were.

        Raises:
            TypeError, ValueError: as [`expiry_of`][lionmem.protocols.expiry.expiry_of].
        """
        now = self.clock()
        return self._set(item_ids, expiry_of(now, at, ttl), now)

    def persist(self, item_ids: list[UUID]) -> int:
        """Make the unexpired stored items with these ids never expire; return how
        many there were."""
        return self._set(item_ids, None, self.clock())

    def _set(self, item_ids: list[UUID], at: float | None, now: float) -> int:
        expired = self.expiries.expired(now)
        held = self.items
        live = [i for i in dict.fromkeys(item_ids) if i in held and i.int not in expired]
        self.expiries.set(live, at)
        return len(live)
