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

from functools import partial
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.reporting.plot import LogAxis, bars
from benchmarks.support import three_stores
from benchmarks.support.common import make_items, median_time
from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.filters import Ge, In

RESULTS = Path(__file__).resolve().parent / "results" / "growth.json"
CHART = Path(__file__).resolve().parent.parent / "docs" / "assets" / "growth.svg"
STORES = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
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


async def measure_store(store: Any, items: list[MemoryItem]) -> dict[str, float]:
    """Each search's median time on `store`, which holds `items`, in milliseconds."""
    out = {}
    for name, query in SEARCHES.items():
        out[name] = await median_time([partial(store.search, query)] * REPEATS) * 1e3
    out[NEWEST] = await median_time([partial(store.search_newest, MemoryQuery())] * REPEATS) * 1e3
    # Ids spread over the whole store, each asked once.
    ids = [items[at].id for at in range(0, len(items), max(1, len(items) // 200))]
    out[RETRIEVE] = await median_time([partial(store.retrieve, i) for i in ids]) * 1e3
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
    """The two sizes of a run, smaller first, as the results' keys."""
    small, large = results[RETRIEVE]["sqlite"]
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
    growth = {name: {s: row[s][large] / row[s][small] for s in STORES} for name, row in results.items()}
    title = f"Cost at {int(large):,} items over the cost at {int(small):,} (log scale; the red line is {TARGET:g}x)"
    return bars(title, growth, STORES, LogAxis(150, 520, -1.0, 2.0), marks=(TARGET,))


if __name__ == "__main__":
    CHART.write_text(chart(three_stores.main(__doc__, measure, table, RESULTS)), encoding="utf-8")
