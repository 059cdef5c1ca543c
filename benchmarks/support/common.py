"""Shared workload and timing helpers for the benchmarks (not tests)."""

from __future__ import annotations

import asyncio
import random
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any
from uuid import UUID

from lionmem import MemoryItem, MemoryQuery

WORDS = ["apple", "river", "stone", "cloud", "ember", "frost", "maple", "orbit", "quartz", "tundra"]


def make_items(n: int, seed: int = 7) -> list[MemoryItem]:
    """Notes with a common word pair (10% share one), a topic among 1,000 (0.1% share
    one), a rare tag among 500 and a group tag among 20, a kind among 10 and an owner
    among 1,000."""
    rng = random.Random(seed)
    return [
        MemoryItem(
            content=(
                f"Note {i}: the {rng.choice(WORDS)} near the {rng.choice(WORDS)} about w{rng.randrange(1000):04d}"
            ),
            tags=[f"t{rng.randrange(500)}", f"g{i % 20}"],
            metadata={"kind": i % 10, "owner": f"u{i % 1000}"},
        )
        for i in range(n)
    ]


def queries(n: int) -> dict[str, MemoryQuery]:
    """Each kind of search, selective (about 0.1-1% match) and broad (5-10% match),
    scanning everything (limit n) and with the default limit of 20."""
    kinds: dict[str, dict[str, Any]] = {
        "all": {},
        "text": {"text": "W0042"},
        "text.broad": {"text": "APPLE near"},
        "tags": {"tags": ["t7", "t8"]},
        "tags.broad": {"tags": ["g3"]},
        "filter": {"filters": {"owner": "u42"}},
        "filter.number": {"filters": {"kind": 3, "owner": "u13"}},
        "filter.broad": {"filters": {"kind": 3}},
        "combined": {"text": "river", "tags": ["g1", "g2"], "filters": {"kind": 1}},
        "miss": {"text": "no such words"},
    }
    out: dict[str, MemoryQuery] = {}
    for name, fields in kinds.items():
        out[f"search.{name}"] = MemoryQuery(limit=n, **fields)
        out[f"search.{name}[20]"] = MemoryQuery(**fields)
    return out


async def median_time(calls: list[Callable[[], Awaitable[Any]]]) -> float:
    """The median of each call's own time, in seconds."""
    times = []
    for call in calls:
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


async def best_time(repeat: int, fn: Callable[[], Awaitable[Any]]) -> float:
    """Best wall time of `repeat` runs of the coroutine `fn`, in seconds."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        await fn()
        best = min(best, time.perf_counter() - start)
    return best


STALL = "loop stall, broad filter"
"""The name of the result that holds `longest_stall` of the broad filter, per store."""


async def longest_stall(store: Any, query: MemoryQuery) -> float:
    """The longest gap between ticks of a 1 ms heartbeat on the event loop while
    `store` runs `query`, in seconds."""
    worst = 0.0
    running = True

    async def heartbeat() -> None:
        nonlocal worst
        last = time.perf_counter()
        while running:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            worst = max(worst, now - last)
            last = now

    beat = asyncio.create_task(heartbeat())
    await asyncio.sleep(0.005)
    found = await store.search(query)
    running = False
    await beat
    del found  # freeing thousands of results is the caller's time, after the heartbeat
    return worst


def best_of(repeat: int, fn: Callable[[], Awaitable[Any]]) -> float:
    """`best_time` in a fresh event loop."""
    return asyncio.run(best_time(repeat, fn))


class BaselineStore:
    """The hand-written baseline: a dict, a list and list comprehensions."""

    def __init__(self) -> None:
        self.by_id: dict[UUID, MemoryItem] = {}
        self.order: list[UUID] = []

    async def store(self, item: MemoryItem) -> UUID:
        if item.id not in self.by_id:
            self.order.append(item.id)
        self.by_id[item.id] = item
        return item.id

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return self.by_id.get(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        results = [self.by_id[i] for i in self.order]
        if query.text:
            needle = query.text.lower()
            results = [r for r in results if needle in str(r.content).lower()]
        if query.tags:
            wanted = set(query.tags)
            results = [r for r in results if wanted & set(r.tags)]
        if query.filters:
            results = [r for r in results if all(r.metadata.get(k) == v for k, v in query.filters.items())]
        return results[: query.limit]
