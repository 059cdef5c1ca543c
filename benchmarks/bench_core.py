"""InMemoryStore against the hand-written baseline, as ratios measured in one run.

Run: python -m benchmarks.bench_core [--sizes 1000,10000,100000]
A ratio below 1 means InMemoryStore is faster than the baseline.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from benchmarks.common import BaselineStore, best_of, make_items, queries
from lionmem import InMemoryStore, MemoryItem


def measure(store: Any, items: list[MemoryItem], repeat: int) -> dict[str, float]:
    n = len(items)
    timings: dict[str, float] = {}

    async def fill() -> None:
        for item in items:
            await store.store(item)

    timings["store"] = best_of(1, fill) / n
    ids = [i.id for i in items]

    async def retrieve_all() -> None:
        for item_id in ids:
            await store.retrieve(item_id)

    timings["retrieve"] = best_of(repeat, retrieve_all) / n
    for name, query in queries(n).items():

        async def one(q: Any = query) -> None:
            await store.search(q)

        timings[name] = best_of(repeat, one)
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="1000,10000,100000")
    args = parser.parse_args()
    report: dict[str, dict[str, dict[str, float]]] = {}
    for n in (int(s) for s in args.sizes.split(",")):
        items = make_items(n)
        repeat = 5 if n <= 10_000 else 3
        base = measure(BaselineStore(), items, repeat)
        ours = measure(InMemoryStore(), items, repeat)
        report[str(n)] = {name: {"baseline": base[name], "lionmem": ours[name]} for name in base}
        print(f"\n{n:,} items                 baseline      lionmem    ratio")
        for name in base:
            unit, scale = ("µs", 1e6) if name in ("store", "retrieve") else ("ms", 1e3)
            print(
                f"  {name:<20} {base[name] * scale:9.3f}{unit} {ours[name] * scale:9.3f}{unit}"
                f"  {ours[name] / base[name]:6.2f}x"
            )
    results = Path(__file__).resolve().parent / "results"
    results.mkdir(exist_ok=True)
    (results / "core.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
