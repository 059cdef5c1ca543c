"""InMemoryStore against the hand-written baseline, as ratios measured in one run.

Run: python -m benchmarks.bench_in_memory [--sizes 1000,10000,100000]
A ratio below 1 means InMemoryStore is faster than the baseline. Then the cost of
building a `MemoryQuery`, against lionagi's model of the same fields (its `lionagi`
extra) in the same run.
"""

from __future__ import annotations

import argparse
import json
import timeit
from pathlib import Path
from typing import Any

from benchmarks.support.common import BaselineStore, best_of, make_items, queries
from lionmem import InMemoryStore, MemoryItem, MemoryQuery

RESULTS = Path(__file__).resolve().parent / "results" / "core.json"

QUERY_FIELDS: dict[str, dict[str, Any]] = {
    "no predicate": {},
    "text": {"text": "river"},
    "text, tags, filters, limit": {"text": "river", "tags": ["g1", "g2"], "filters": {"kind": 1}, "limit": 5},
}
"""The queries whose building is timed."""


def query_building() -> dict[str, dict[str, float]]:
    """Seconds to build each of `QUERY_FIELDS`, lionagi's model and lionmem's, the
    best of seven rounds of 20,000 builds each."""
    from lionagi.protocols.memory import MemoryQuery as LionagiQuery

    built: dict[str, dict[str, float]] = {}
    for name, fields in QUERY_FIELDS.items():
        built[name] = {}
        for model, cls in (("baseline", LionagiQuery), ("lionmem", MemoryQuery)):

            def build(cls: Any = cls, fields: dict[str, Any] = fields) -> None:
                cls(**fields)

            built[name][model] = min(timeit.repeat(build, number=20_000, repeat=7)) / 20_000
    return built


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


def table(report: dict[str, dict[str, dict[str, float]]]) -> str:
    """The Markdown tables of docs/performance.md for one run: each operation's ratio
    at each size, then the building of a query."""
    sizes = [n for n in report if n.isdigit()]
    lines = [
        "| Operation | " + " | ".join(f"{int(n) // 1000}k" for n in sizes) + " |",
        "| --- |" + " --- |" * len(sizes),
    ]
    for name in report[sizes[0]]:
        ratios = (report[n][name]["lionmem"] / report[n][name]["baseline"] for n in sizes)
        lines.append(f"| `{name}` | " + " | ".join(f"{r:.2f}x" for r in ratios) + " |")
    lines += ["", "| `MemoryQuery(...)` with | lionagi's | lionmem's | ratio |", "| --- | --- | --- | --- |"]
    for name, took in report["MemoryQuery"].items():
        lines.append(
            f"| {name} | {took['baseline'] * 1e6:.2f} µs | {took['lionmem'] * 1e6:.2f} µs"
            f" | {took['lionmem'] / took['baseline']:.2f}x |"
        )
    return "\n".join(lines)


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
    report["MemoryQuery"] = query_building()
    print("\nbuilding a MemoryQuery       lionagi      lionmem    ratio")
    for name, took in report["MemoryQuery"].items():
        print(
            f"  {name:<26} {took['baseline'] * 1e6:7.3f}µs {took['lionmem'] * 1e6:7.3f}µs"
            f"  {took['lionmem'] / took['baseline']:6.2f}x"
        )
    RESULTS.write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
