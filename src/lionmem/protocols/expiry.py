"""`ExpiringStore`: the optional extension of `MemoryStore` for stores whose items may
expire, and `Sweeper`, which removes what expired in the background when asked to.

An item's expiry is kept by the store beside the item, never in `MemoryItem` or
`MemoryQuery`: a store that knows nothing of expiry is not an `ExpiringStore`, so no
caller can take it for one. Nothing is removed unless someone calls `sweep` or starts
a `Sweeper` ([ADR-0092][adr-0092] D5). Governed by [ADR-0105][adr-0105-d2].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from datetime import datetime
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self, runtime_checkable
from uuid import UUID

from lionmem._internal.arguments import as_cutoff, kind_of, require_type
from lionmem.protocols.memory import MemoryStore

if TYPE_CHECKING:
    import asyncio

__all__ = ["Clock", "ExpiringStore", "Sweeper", "check_expiring", "check_ttl", "expiry_of"]

Clock = Callable[[], float]
"""What a store reads the time from: UTC seconds, as `time.time` gives them."""


@runtime_checkable
class ExpiringStore(MemoryStore, Protocol):
    """A `MemoryStore` whose items may carry an expiry, an absolute time in UTC seconds.

    Each call reads the store's clock once; an item whose expiry is at or before that
    reading is expired for the whole call, and no read returns or counts it (search,
    retrieve, recall, paging, counts, scans, stats, export and copy alike). It stays
    stored, unseen, until [`sweep`][lionmem.protocols.expiry.ExpiringStore.sweep]
    removes it. `InMemoryStore`, `SQLiteMemoryStore` and `PostgresMemoryStore`
    implement it alike, which the conformance kit checks. See [ADR-0105][adr-0105-d2].
    """

    @property
    def ttl(self) -> float | None:
        """The seconds after storing at which an item stored here expires, or `None`:
        then an item stored here never expires until `expire` says when."""
        ...

    async def expire(
        self, item_ids: Iterable[UUID], *, at: float | datetime | None = None, ttl: float | None = None
    ) -> int:
        """Make the unexpired items with these ids expire `at` a time or `ttl` seconds
        from now (exactly one of the two); return how many there were."""
        ...

    async def persist(self, item_ids: Iterable[UUID]) -> int:
        """Make the unexpired items with these ids never expire; return how many there
        were."""
        ...

    async def sweep(self) -> int:
        """Delete every expired item of the store in one step; return how many."""
        ...


def check_ttl(ttl: object, name: str = "ttl") -> float | None:
    """`ttl` as seconds, if it is `None` or a finite number above 0.

    Raises:
        TypeError: `ttl` is neither a number nor `None` (a bool is not a number here).
        ValueError: it is not above 0, or is NaN or infinite.
    """
    if ttl is None:
        return None
    if isinstance(ttl, bool) or not isinstance(ttl, (int, float)):
        raise TypeError(f"{name} must be a number of seconds or None, got {kind_of(ttl)}")
    seconds = float(ttl)
    if not (math.isfinite(seconds) and seconds > 0):
        raise ValueError(f"{name} must be a finite number of seconds above 0, got {ttl!r}")
    return seconds


def check_expiring(ttl: object, refresh_on_read: object, clock: Clock) -> tuple[float | None, bool, Clock]:
    """A store's expiry settings, checked: its default `ttl`, whether reading refreshes
    an expiry, and the clock it reads.

    Raises:
        TypeError: `ttl` is not a number or `None`, `refresh_on_read` not a bool, or
            `clock` not callable.
        ValueError: `ttl` is not above 0, or `refresh_on_read` is asked without a `ttl`
            to refresh to.
    """
    seconds = check_ttl(ttl)
    require_type(refresh_on_read, "refresh_on_read", bool)
    if not callable(clock):
        raise TypeError(f"clock must be callable, got {kind_of(clock)}")
    if refresh_on_read and seconds is None:
        raise ValueError("refresh_on_read needs a ttl: it moves each expiry read to ttl seconds from then")
    return seconds, bool(refresh_on_read), clock


def expiry_of(now: float, at: float | datetime | None, ttl: float | None) -> float:
    """The expiry that `expire(..., at=at, ttl=ttl)` sets when the clock reads `now`.

    Raises:
        TypeError: neither or both of `at` and `ttl` are given, or either is of the
            wrong type.
        ValueError: `at` is NaN or infinite, or `ttl` is not a finite number above 0.
    """
    if (at is None) == (ttl is None):
        raise TypeError("expire takes exactly one of at= (a time) and ttl= (seconds from now)")
    if at is not None:
        return as_cutoff(at, "at")
    seconds = check_ttl(ttl)
    assert seconds is not None  # ttl is not None here
    return now + seconds


class Sweeper:
    """Sweeps a store every `every` seconds while an `async with` block runs: the
    background sweeper a long-running process may start ([ADR-0105][adr-0105-d2]).

    The first sweep runs on entering. If a sweep fails, sweeping stops and the error
    is raised when the block exits; leaving the block cancels the next sweep.

    Examples:
        >>> import asyncio
        >>> from lionmem import InMemoryStore
        >>> async def main() -> int:
        ...     async with Sweeper(InMemoryStore(), every=60) as sweeper:
        ...         await asyncio.sleep(0)
        ...     return sweeper.swept
        >>> asyncio.run(main())
        0
    """

    def __init__(self, store: ExpiringStore, *, every: float) -> None:
        """Prepare to sweep `store` every `every` seconds.

        Raises:
            TypeError: `store` is not an `ExpiringStore`, or `every` not a number.
            ValueError: `every` is not a finite number above 0.
        """
        if not isinstance(store, ExpiringStore):
            raise TypeError(f"store must be an ExpiringStore, got {kind_of(store)}")
        interval = check_ttl(every, "every")
        assert interval is not None  # every is not None here
        self._store = store
        self._every = interval
        self._task: asyncio.Task[None] | None = None
        self.swept: int = 0
        """How many items the sweeps so far removed."""

    async def __aenter__(self) -> Self:
        import asyncio  # not on importing lionmem: running a sweeper means a loop runs

        if self._task is not None:
            raise RuntimeError("this Sweeper is already running")
        self._task = asyncio.get_running_loop().create_task(self._run())
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        import asyncio

        task, self._task = self._task, None
        assert task is not None  # entered
        task.cancel()  # nothing, if a sweep failed and ended it
        await asyncio.wait([task])
        if not task.cancelled() and (failure := task.exception()) is not None:
            raise failure

    async def _run(self) -> None:
        import asyncio

        while True:
            self.swept += await self._store.sweep()
            await asyncio.sleep(self._every)
