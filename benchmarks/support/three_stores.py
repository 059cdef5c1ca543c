"""The three stores filled alike, and the command line of a benchmark that measures
stores in one run: shared by `bench_recent`, `bench_operators`, `bench_growth` and
`bench_disk`."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import psycopg

from lionmem import InMemoryStore, MemoryItem
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.support.pg_server import fresh_database, postgres_url

STORES = ("memory", "sqlite", "postgres")
Results = dict[str, dict[str, float]]
R = TypeVar("R")


@asynccontextmanager
async def filled(url: str, items: list[MemoryItem], directory: Path) -> AsyncIterator[dict[str, Any]]:
    """An in-memory store, an SQLite file and a PostgreSQL namespace holding `items`,
    by name, each as its documentation asks after a bulk load: SQLite's text index
    merged, PostgreSQL's statistics taken."""
    async with (
        SQLiteMemoryStore.open(directory / "bench.db") as sqlite,
        PostgresMemoryStore.open(url, namespace="bench") as pg,
    ):
        memory = InMemoryStore()
        for item in items:
            await memory.store(item)
        for chunk in range(0, len(items), 5000):
            await sqlite.store_many(items[chunk : chunk + 5000])
            await pg.store_many(items[chunk : chunk + 5000])
        await sqlite.optimize()
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("ANALYZE lionmem_items, lionmem_meta")
        yield {"memory": memory, "sqlite": sqlite, "postgres": pg}


def markdown_table(results: Results, heading: str, column: str, cell: Callable[[dict[str, float], str], str]) -> str:
    """The Markdown table of docs/performance.md for one run: a row for each result,
    named `heading`, and a cell for each store, `column` saying what `cell` writes."""
    lines = [
        f"| {heading} | " + " | ".join(f"{store}: {column}" for store in STORES) + " |",
        "| --- |" + " --- |" * len(STORES),
    ]
    for name, row in results.items():
        lines.append(f"| `{name}` | " + " | ".join(cell(row, store) for store in STORES) + " |")
    return "\n".join(lines)


def main(
    description: str | None,
    measure: Callable[[str, int, Path], Coroutine[Any, Any, R]],
    table: Callable[[R], str],
    results: Path,
) -> R:
    """Run `measure` on a throwaway server (or LIONMEM_TEST_POSTGRES_URL's) with
    `--items` items, print its `table`, write the results to `results` and return
    them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    with postgres_url() as server, tempfile.TemporaryDirectory() as directory:
        measured = asyncio.run(measure(fresh_database(server), args.items, Path(directory)))
    print(table(measured))
    results.parent.mkdir(exist_ok=True)
    results.write_text(json.dumps(measured, indent=1) + "\n")
    return measured
