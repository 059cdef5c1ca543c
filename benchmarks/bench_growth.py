"""Each search with limit 20 at 100,000 and at 1,000,000 items, in both durable stores.

Run: python -m benchmarks.bench_growth [--items 100000]
Fills an SQLite file and a PostgreSQL namespace with `--items` notes, asks each
search, then fills them to ten times as many and asks again: the cost of each at the
larger size over its cost at the smaller is its growth. Starts a throwaway local
server (or uses LIONMEM_TEST_POSTGRES_URL). Each figure is the median of
`REPEATS` calls; results go to benchmarks/results/growth.json and the chart to
docs/assets/growth.svg.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.common import make_items
from benchmarks.plot import LogAxis
from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.filters import Ge, In

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.pg_server import fresh_database, postgres_url

RESULTS = Path(__file__).resolve().parent / "results" / "growth.json"
CHART = Path(__file__).resolve().parent.parent / "docs" / "assets" / "growth.svg"
STORES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
COLOURS = {"sqlite": "#3b7dd8", "postgres": "#d8833b"}
GROWTH = 10
"""How many times more items the second size holds."""
TARGET = 2.0
"""The most a search may cost at the second size, over its cost at the first."""
REPEATS = 21
BATCH = 5000
SEARCHES: dict[str, MemoryQuery] = {
    "text": MemoryQuery(text="W0042"),
    "tags": MemoryQuery(tags=["t7", "t8"]),
    "filter": MemoryQuery(filters={"owner": "u42"}),
    "range, kind >= 9": MemoryQuery(filters={"kind": Ge(9)}),
    "In, 2 owners": MemoryQuery(filters={"owner": In(["u42", "u43"])}),
    "combined": MemoryQuery(text="river", tags=["g1", "g2"], filters={"kind": 1}),
}
"""The searches, each with the default limit of 20 (make_items: 0.1% of the notes
hold a topic word, 0.4% one of two rare tags, 0.1% an owner; a kind is 10%)."""
NEWEST = "newest 20"
RETRIEVE = "retrieve"
Results = dict[str, dict[str, dict[str, float]]]
"""Milliseconds by search, store and size."""


async def median_ms(calls: list[Callable[[], Awaitable[Any]]]) -> float:
    times = []
    for call in calls:
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


async def measure_store(store: Any, items: list[MemoryItem]) -> dict[str, float]:
    """Each search's median time on `store`, which holds `items`, in milliseconds."""
    out = {}
    for name, query in SEARCHES.items():
        out[name] = await median_ms([partial(store.search, query)] * REPEATS)
    out[NEWEST] = await median_ms([partial(store.search_newest, MemoryQuery())] * REPEATS)
    # Ids spread over the whole store, each asked once.
    ids = [items[at].id for at in range(0, len(items), max(1, len(items) // 200))]
    out[RETRIEVE] = await median_ms([partial(store.retrieve, i) for i in ids])
    return out


async def fill(sqlite: SQLiteMemoryStore, pg: PostgresMemoryStore, items: list[MemoryItem], url: str) -> None:
    """Add `items` to both stores, then make them ready as their documentation asks
    after a bulk load: SQLite's text index merged, PostgreSQL's statistics taken."""
    for at in range(0, len(items), BATCH):
        await sqlite.store_many(items[at : at + BATCH])
        await pg.store_many(items[at : at + BATCH])
    await sqlite.optimize()
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("VACUUM ANALYZE lionmem_items, lionmem_meta")


async def measure(url: str, n: int, directory: Path) -> Results:
    items = make_items(n * GROWTH)
    out: Results = {name: {store: {} for store in STORES} for name in [*SEARCHES, NEWEST, RETRIEVE]}
    async with (
        SQLiteMemoryStore.open(directory / "growth.db") as sqlite,
        PostgresMemoryStore.open(url, namespace="growth") as pg,
    ):
        for size, added in ((n, items[:n]), (n * GROWTH, items[n:])):
            await fill(sqlite, pg, added, url)
            for store_name, store in (("sqlite", sqlite), ("postgres", pg)):
                for name, ms in (await measure_store(store, items[:size])).items():
                    out[name][store_name][str(size)] = ms
    return out


def sizes(results: Results) -> tuple[str, str]:
    small, large = next(iter(next(iter(results.values())).values()))
    return small, large


def table(results: Results) -> str:
    """The Markdown table of docs/performance.md for one run."""
    small, large = sizes(results)
    lines = [
        "| Search, limit 20 | "
        + " | ".join(f"{STORES[s]}, {int(small):,} | {STORES[s]}, {int(large):,} | {STORES[s]}, growth" for s in STORES)
        + " |",
        "| --- |" + " --- |" * 3 * len(STORES),
    ]
    for name, row in results.items():
        cells = []
        for store in STORES:
            at_small, at_large = row[store][small], row[store][large]
            cells += [f"{at_small:.2f} ms", f"{at_large:.2f} ms", f"{at_large / at_small:.2f}x"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def chart(results: Results) -> str:
    """Each search's growth in each store as a bar on a log scale, with the target."""
    small, large = sizes(results)
    left, width, bar, gap = 150, 520, 9, 8
    height = 74 + len(results) * (2 * bar + gap)
    axis = LogAxis(left, width, -1.0, 2.0)  # 0.1x .. 100x
    title = f"Cost at {int(large):,} items over the cost at {int(small):,} (log scale; the red line is {TARGET:g}x)"
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 30}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="10" y="18" font-size="13" font-weight="bold">{title}</text>',
        *axis.grid(44, height),
        f'<line x1="{axis.x(TARGET):.1f}" y1="44" x2="{axis.x(TARGET):.1f}" y2="{height - 20}" stroke="#c00"/>',
    ]
    one, y = axis.x(1.0), 50
    for name, row in results.items():
        parts.append(f'<text x="{left - 6}" y="{y + bar + 3}" text-anchor="end">{name}</text>')
        for store, colour in COLOURS.items():
            growth = row[store][large] / row[store][small]
            x0, x1 = sorted((one, axis.x(growth)))
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{bar}" '
                f'fill="{colour}"><title>{STORES[store]} {name}: {growth:.2f}x</title></rect>'
            )
            y += bar
        y += gap
    for i, (store, colour) in enumerate(COLOURS.items()):
        parts.append(f'<rect x="{10 + i * 150}" y="26" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{24 + i * 150}" y="35">{STORES[store]}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    with postgres_url() as server, tempfile.TemporaryDirectory() as directory:
        measured = asyncio.run(measure(fresh_database(server), args.items, Path(directory)))
    print(table(measured))
    RESULTS.write_text(json.dumps(measured, indent=1) + "\n")
    CHART.write_text(chart(measured), encoding="utf-8")


if __name__ == "__main__":
    main()
