"""SQLiteMemoryStore beside InMemoryStore, as ratios measured in one run.

Run: python -m benchmarks.bench_sqlite [--sizes 1000,10000,100000]
A ratio is SQLite's time over the in-memory store's; below 1 means SQLite is faster.
Also reports the event loop's longest stall while SQLite searches, and the spread of
single writes into the full store, as loaded and after `optimize()` (whose own time
is compared with the batched load's).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.support.common import best_time, longest_stall, make_items, queries
from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import SQLiteMemoryStore

STALLS = 7
"""How many times each loop stall is measured."""

WRITES = 2_000
"""How many single writes into the full store are timed one by one."""


def measure(n: int, items: list[MemoryItem], directory: Path) -> dict[str, tuple[float, float]]:
    """{name: (in-memory seconds, sqlite seconds)}"""
    repeat = 5 if n <= 10_000 else 3
    results: dict[str, tuple[float, float]] = {}

    async def run() -> None:
        memory = InMemoryStore()
        ids = [i.id for i in items]
        sample = ids[:: max(1, n // 2000)]

        async def fill(store: Any) -> None:
            for item in items[: min(n, 5000)]:
                await store.store(item)

        async def single_writes(sqlite: SQLiteMemoryStore, label: str, extra: list[MemoryItem]) -> None:
            spread: dict[str, list[float]] = {}
            for name, store in (("memory", memory), ("sqlite", sqlite)):
                took: list[float] = []
                for item in extra:
                    start = time.perf_counter()
                    await store.store(item)
                    took.append(time.perf_counter() - start)
                spread[name] = took
            for statistic, pick in (
                ("median", statistics.median),
                ("p99", lambda took: statistics.quantiles(took, n=100)[98]),
                ("worst", max),
            ):
                results[f"store (one call, {label}), {statistic}"] = (
                    pick(spread["memory"]),
                    pick(spread["sqlite"]),
                )

        async with SQLiteMemoryStore.open(directory / f"one-{n}.db") as one_by_one:
            start = time.perf_counter()
            await fill(memory)
            mem_store = (time.perf_counter() - start) / min(n, 5000)
            start = time.perf_counter()
            await fill(one_by_one)
            results["store (one call)"] = (mem_store, (time.perf_counter() - start) / min(n, 5000))

        async with SQLiteMemoryStore.open(directory / f"bench-{n}.db") as sqlite:
            start = time.perf_counter()
            for chunk in range(0, n, 5000):
                await sqlite.store_many(items[chunk : chunk + 5000])
            batched = (time.perf_counter() - start) / n
            for item in items:
                await memory.store(item)
            results["store_many (per item)"] = (mem_store, batched)

            async def timed(store: Any, fn: Any) -> float:
                return await best_time(repeat, lambda: fn(store))

            async def retrieve_all(store: Any) -> None:
                for item_id in sample:
                    await store.retrieve(item_id)

            results["retrieve"] = (
                await timed(memory, retrieve_all) / len(sample),
                await timed(sqlite, retrieve_all) / len(sample),
            )
            for name, query in queries(n).items():

                async def one(store: Any, q: MemoryQuery = query) -> None:
                    await store.search(q)

                results[name] = (await timed(memory, one), await timed(sqlite, one))
            # The heartbeat ticks every 1 ms; its longest gap is compared with that tick.
            # Whether a search's own allocations set off a full collection depends on
            # what the process allocated before it, so each stall is taken `STALLS`
            # times and reported as its median and its worst.
            selective = MemoryQuery(text="W0042", limit=n)
            broad = MemoryQuery(filters={"kind": 3}, limit=n)

            async def stalls(name: str, query: MemoryQuery) -> None:
                found = [await longest_stall(sqlite, query) for _ in range(STALLS)]
                results[f"{name}, median"] = (0.001, statistics.median(found))
                results[f"{name}, worst"] = (0.001, max(found))

            await stalls("loop stall, selective text", selective)
            await stalls("loop stall, broad filter", broad)
            gc.disable()
            try:
                await stalls("loop stall, broad, gc off", broad)
            finally:
                gc.enable()
            # What an application with a large, long-lived heap can do: move it out of
            # the collector's sight, so collections triggered by results stay short.
            gc.freeze()
            try:
                await stalls("loop stall, broad, gc.freeze()", broad)
            finally:
                gc.unfreeze()
            # Last, as they add items: single writes into the full store, one at a time,
            # as loaded and then after optimize(). Their spread, since a mean hides the
            # few that wait for the text index to merge its segments or for a checkpoint.
            await single_writes(sqlite, f"into {n:,}", make_items(WRITES, seed=99))
            start = time.perf_counter()
            await sqlite.optimize()
            results["optimize(), against the batched load"] = (batched * n, time.perf_counter() - start)
            await single_writes(sqlite, "optimized", make_items(WRITES, seed=98))

    asyncio.run(run())
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        for n in (int(s) for s in args.sizes.split(",")):
            items = make_items(n)
            print(f"\n{n:,} items                                in-memory       sqlite    ratio")
            for name, (mem, sql) in measure(n, items, Path(directory)).items():
                unit, scale = ("µs", 1e6) if name.startswith(("store", "retrieve")) else ("ms", 1e3)
                print(f"  {name:<42} {mem * scale:9.3f}{unit} {sql * scale:9.3f}{unit} {sql / mem:7.2f}x")


if __name__ == "__main__":
    main()
