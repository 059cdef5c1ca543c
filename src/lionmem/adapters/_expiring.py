"""What the durable stores share of the `ExpiringStore` extension: the settings a store
is opened with, the checks of `expire`'s arguments, the clock's one reading a call,
and the refresh of what a read returned; each store writes the expiries its own way.

Governed by [ADR-0105][adr-0105-d2].
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Iterable
from datetime import datetime
from typing import Final, NamedTuple
from uuid import UUID

from lionmem._internal.arguments import as_uuids
from lionmem.protocols.expiry import Clock, check_expiring, expiry_of
from lionmem.protocols.memory import MemoryItem

__all__ = ["NEVER", "ExpiringRows", "Lifetime"]


class Lifetime(NamedTuple):
    """A store's expiry settings, as it was opened with them."""

    ttl: float | None
    """The seconds after storing at which an item expires, or `None`."""
    refresh: bool
    """Whether a read moves the expiry of what it returns to `ttl` from then."""
    clock: Clock
    """What the store reads the time from."""

    @classmethod
    def of(cls, ttl: object, refresh_on_read: object, clock: Clock) -> Lifetime:
        """The settings, checked as [`check_expiring`][lionmem.protocols.expiry.check_expiring] checks them."""
        return cls(*check_expiring(ttl, refresh_on_read, clock))

    def expires(self, now: float) -> float | None:
        """The expiry of an item stored at `now`."""
        return None if self.ttl is None else now + self.ttl


NEVER: Final = Lifetime(None, False, time.time)
"""The settings of a store opened without any: nothing it stores expires."""


class ExpiringRows(ABC):
    """The [`ExpiringStore`][lionmem.protocols.expiry.ExpiringStore] members of a store
    keeping each item's expiry in its row, over the two writes each store makes its own
    way: `_set_expiry` and `_sweep`."""

    __slots__ = ()

    _lifetime: Lifetime

    @property
    def ttl(self) -> float | None:
        """The seconds after storing at which an item stored here expires, or `None`:
        then an item stored here never expires until `expire` says when."""
        return self._lifetime.ttl

    async def expire(
        self, item_ids: Iterable[UUID], *, at: float | datetime | None = None, ttl: float | None = None
    ) -> int:
        """Make the unexpired items with these ids expire `at` a time (a timestamp or a
        datetime) or `ttl` seconds from now, in one transaction; return how many there
        were ([ADR-0105][adr-0105-d2]).

        Raises:
            TypeError: `item_ids` is a string or not iterable, or holds something that
                is neither a UUID nor a string; or as [`expiry_of`][lionmem.protocols.expiry.expiry_of].
            ValueError: `item_ids` holds a string that is not a UUID; or as `expiry_of`.
                Nothing changes.
        """
        keys = [str(key) for key in as_uuids(item_ids, "item_ids")]
        now = self._lifetime.clock()
        return await self._set_expiry(now, keys, expiry_of(now, at, ttl), refresh=False)

    async def persist(self, item_ids: Iterable[UUID]) -> int:
        """Make the unexpired items with these ids never expire, in one transaction;
        return how many there were.

        Raises:
            TypeError, ValueError: as for `expire`'s `item_ids`; nothing changes.
        """
        keys = [str(key) for key in as_uuids(item_ids, "item_ids")]
        return await self._set_expiry(self._lifetime.clock(), keys, None, refresh=False)

    async def sweep(self) -> int:
        """Delete every item of this namespace that has expired, in one transaction;
        return how many. Its bytes leave the file or table as a delete's do."""
        return await self._sweep(self._lifetime.clock())

    async def _refreshed(self, now: float, items: list[MemoryItem]) -> list[MemoryItem]:
        """`items`, a read's result at `now`, after moving the expiry of each that has
        one to `ttl` from `now` when the store refreshes on read."""
        ttl = self._lifetime.ttl
        if self._lifetime.refresh and items:
            assert ttl is not None  # refresh_on_read needs a ttl
            await self._set_expiry(now, [str(item.id) for item in items], now + ttl, refresh=True)
        return items

    @abstractmethod
    async def _set_expiry(self, now: float, keys: list[str], at: float | None, *, refresh: bool) -> int:
        """Make the items with these ids that are unexpired at `now` expire `at` (never,
        for `None`); `refresh`: only those that have an expiry. Return how many."""

    @abstractmethod
    async def _sweep(self, now: float) -> int:
        """Delete the items expired at `now`; return how many."""
