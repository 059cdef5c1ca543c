"""Where the durable stores' bytes go: each table's and index's size at 100,000 items.

Run: python -m benchmarks.bench_disk [--items 100000]
Loads the notes into an SQLite file and a PostgreSQL database (a throwaway local
server, or LIONMEM_TEST_POSTGRES_URL's) as bench_langgraph does, then reads each
object's bytes: SQLite's `dbstat` (pages in use, after `optimize`), PostgreSQL's
`pg_table_size` for a table (with its TOAST) and `pg_relation_size` for an index,
after `VACUUM ANALYZE`. Results go to benchmarks/results/disk.json.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import psycopg

from benchmarks.support import three_stores
from benchmarks.support.common import make_items
from lionmem import MemoryItem
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore

RESULTS = Path(__file__).resolve().parent / "results" / "disk.json"
BATCH = 1000
SMALL = 0.05
"""Objects smaller than this many MB are summed in one row of the table."""
Sizes = dict[str, dict[str, float]]
"""Megabytes by store and object."""


async def sqlite_sizes(items: list[MemoryItem], directory: Path) -> dict[str, float]:
    path = directory / "disk.db"
    async with SQLiteMemoryStore.open(path) as store:
        for at in range(0, len(items), BATCH):
            await store.store_many(items[at : at + BATCH])
        await store.optimize()
    with sqlite3.connect(path) as db:
        rows = db.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name ORDER BY 2 DESC").fetchall()
    db.close()
    return {name: size / 1e6 for name, size in rows if size}


async def postgres_sizes(items: list[MemoryItem], url: str) -> dict[str, float]:
    async with PostgresMemoryStore.open(url, namespace="bench") as store:
        for at in range(0, len(items), BATCH):
            await store.store_many(items[at : at + BATCH])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        rows = conn.execute(
            "SELECT c.relname, CASE c.relkind WHEN 'i' THEN pg_relation_size(c.oid) ELSE pg_table_size(c.oid) END"
            " FROM pg_class AS c JOIN pg_namespace AS n ON n.oid = c.relnamespace"
            " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'i') ORDER BY 2 DESC"
        ).fetchall()
    return {name: size / 1e6 for name, size in rows if size}


async def measure(url: str, n: int, directory: Path) -> Sizes:
    items = make_items(n)
    return {"SQLite": await sqlite_sizes(items, directory), "PostgreSQL": await postgres_sizes(items, url)}


def table(results: Sizes) -> str:
    """The Markdown table of docs/performance.md for one run."""
    lines = ["| Store | Table or index | MB | share |", "| --- | --- | --- | --- |"]
    for store, sizes in results.items():
        total = sum(sizes.values())
        for name, size in sizes.items():
            if size >= SMALL:
                lines.append(f"| {store} | `{name}` | {size:.1f} | {size / total:.0%} |")
        others = sum(size for size in sizes.values() if size < SMALL)
        lines.append(f"| {store} | the others, each under {SMALL:g} MB | {others:.2f} | {others / total:.1%} |")
        lines.append(f"| {store} | all | {total:.1f} | 100% |")
    return "\n".join(lines)


if __name__ == "__main__":
    three_stores.main(__doc__, measure, table, RESULTS)
