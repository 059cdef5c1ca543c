"""`search_newest` beside `search` with the same limit, in all three stores, in one run.

Run: python -m benchmarks.bench_recent [--items 100000]
Starts a throwaway local server (or uses LIONMEM_TEST_POSTGRES_URL). Each ratio is a
store's `search_newest(query)` time over its own `search(query)` time, both with the
default limit of 20, best of five; the baseline is measured in the same run on the
same store. Results are written to benchmarks/results/recent.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.common import best_time, make_items, queries
from lionmem import InMemoryStore, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pg_server import fresh_database, postgres_url  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "recent.json"
STORES = ("memory", "sqlite", "postgres")
NAMES = ["all", "text", "tags", "tags.broad", "filter", "filter.broad", "combined"]
"""The searches compared: every kind `benchmarks.common.queries` has but the miss,
which reads everything either way."""


async def measure(url: str, n: int, directory: Path) -> dict[str, dict[str, float]]:
    items = make_items(n)
    asked = {name: queries(n)[f"search.{name}[20]"] for name in NAMES}
    out: dict[str, dict[str, float]] = {}
    async with (
        SQLiteMemoryStore.open(directory / "recent.db") as sqlite,
        PostgresMemoryStore.open(url, namespace="recent") as pg,
    ):
        memory = InMemoryStore()
        for item in items:
            await memory.store(item)
        for chunk in range(0, n, 5000):
            await sqlite.store_many(items[chunk : chunk + 5000])
            await pg.store_many(items[chunk : chunk + 5000])
        await sqlite.optimize()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("ANALYZE lionmem_items")
        stores: dict[str, Any] = {"memory": memory, "sqlite": sqlite, "postgres": pg}
        for name, query in asked.items():
            for store_name, store in stores.items():

                async def oldest(s: Any = store, q: MemoryQuery = query) -> None:
                    await s.search(q)

                async def newest(s: Any = store, q: MemoryQuery = query) -> None:
                    await s.search_newest(q)

                searched = await best_time(5, oldest)
                out.setdefault(name, {})[f"{store_name} search, ms"] = searched * 1e3
                out[name][f"{store_name} newest / search"] = await best_time(5, newest) / searched
    return out


def table(results: dict[str, dict[str, float]]) -> str:
    """The Markdown table of docs/performance.md for one run."""
    lines = [
        "| Search, limit 20 | " + " | ".join(f"{s}: `search`, newest/search" for s in STORES) + " |",
        "| --- |" + " --- |" * len(STORES),
    ]
    for name, row in results.items():
        cells = [f"{row[f'{s} search, ms']:.2f} ms, {row[f'{s} newest / search']:.2f}x" for s in STORES]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    with postgres_url() as server, tempfile.TemporaryDirectory() as directory:
        results = asyncio.run(measure(fresh_database(server), args.items, Path(directory)))
    print(table(results))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
