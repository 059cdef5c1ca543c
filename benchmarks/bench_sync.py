"""What a `SyncStore` call costs beside awaiting the same store's method (ADR-0107).

Run: python -m benchmarks.bench_sync [--items 10000]
For the in-memory store and SQLite, each holding `--items` items: `retrieve` of one id
and a tag search with limit 20, called through a `SyncStore` from the main thread, and
awaited on the store itself inside one event loop, in turns, best of seven rounds of
about 50 ms of calls each. The difference is the trip to the facade's loop thread and
back. Results are written to benchmarks/results/sync.json.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.synchronous import SyncStore

RESULTS = Path(__file__).resolve().parent / "results" / "sync.json"
ROUNDS = 7
ROUND_SECONDS = 0.05


def _best_sync(call: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(ROUNDS):
        calls, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < ROUND_SECONDS:
            call()
            calls += 1
        best = min(best, elapsed / calls)
    return best


def _best_async(store: SyncStore[Any], call: Callable[[Any], Any]) -> float:
    """The best round of awaiting `call(store)` back to back on the store's own loop."""

    async def rounds(inner: Any) -> float:
        best = float("inf")
        for _ in range(ROUNDS):
            calls, start = 0, time.perf_counter()
            while (elapsed := time.perf_counter() - start) < ROUND_SECONDS:
                await call(inner)
                calls += 1
            best = min(best, elapsed / calls)
        return best

    return store.run(rounds)


def measure(items: int) -> dict[str, dict[str, float]]:
    notes = [MemoryItem(content=f"note {n}", tags=[f"t{n % 100}"]) for n in range(items)]
    query = MemoryQuery(tags=["t7"], limit=20)
    results: dict[str, dict[str, float]] = {}
    with tempfile.TemporaryDirectory() as folder:
        openings: dict[str, Any] = {
            "memory": InMemoryStore(),
            "sqlite": SQLiteMemoryStore.open(Path(folder) / "m.db"),
        }
        for name, opening in openings.items():
            with SyncStore.open(opening) as store:
                store.store_many(notes)
                target = notes[items // 2].id
                calls: dict[str, tuple[Callable[[], object], Callable[[Any], Any]]] = {
                    "retrieve": (lambda: store.retrieve(target), lambda s: s.retrieve(target)),
                    "search tags[20]": (lambda: store.search(query), lambda s: s.search(query)),
                }
                for call, (through, awaited) in calls.items():
                    sync_s = _best_sync(through)
                    async_s = _best_async(store, awaited)
                    results[f"{name} {call}"] = {"awaited_us": async_s * 1e6, "sync_us": sync_s * 1e6}
    return results


def table(results: dict[str, dict[str, float]]) -> str:
    """The Markdown table of docs/performance.md for one run."""
    lines = ["| Call | awaited | through SyncStore | added |", "| --- | --- | --- | --- |"]
    for name, row in results.items():
        added = row["sync_us"] - row["awaited_us"]
        lines.append(
            f"| `{name}` | {row['awaited_us']:.1f} µs | {row['sync_us']:.1f} µs "
            f"({row['sync_us'] / row['awaited_us']:.2f}x) | {added:.1f} µs |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=10_000)
    args = parser.parse_args()
    results = measure(args.items)
    print(table(results))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
