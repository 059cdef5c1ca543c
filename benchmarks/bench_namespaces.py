"""What a namespace costs a search: one namespace alone in its database against the same
items in a namespace that shares its database with another of the same size, in all
three stores, in one run (ADR-0105 D1).

Run: python -m benchmarks.bench_namespaces [--items 100000]
Starts a throwaway local server (or uses LIONMEM_TEST_POSTGRES_URL). The two namespaces
of the shared database are written in turns, 5,000 items at a time, so that their
items interleave as two users' would. Each ratio is a search's time in the shared
database over its time alone, best of five, both measured in this run. Results are
written to benchmarks/results/namespaces.json.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.support import three_stores
from benchmarks.support.common import best_time, make_items, queries
from benchmarks.support.three_stores import STORES, Results, markdown_table
from lionmem import InMemoryStore, MemoryItem
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from tests.support.pg_server import fresh_database

RESULTS = Path(__file__).resolve().parent / "results" / "namespaces.json"
NAMES = ["all", "text", "text.broad", "tags", "tags.broad", "filter", "filter.broad", "combined", "miss"]


@asynccontextmanager
async def opened(kind: str, place: str, url: str, directory: Path) -> AsyncIterator[Any]:
    """A fresh database of `kind` at `place`, bound to the namespace `a`."""
    if kind == "memory":
        yield InMemoryStore(namespace="a")
    elif kind == "sqlite":
        async with SQLiteMemoryStore.open(directory / f"{place}.db", namespace="a") as store:
            yield store
    else:
        async with PostgresMemoryStore.open(fresh_database(url), namespace="a") as store:
            yield store


async def fill(store: Any, items: list[MemoryItem], neighbour: list[MemoryItem] | None) -> None:
    other = None if neighbour is None else store.in_namespace("b")
    for start in range(0, len(items), 5000):
        await store.store_many(items[start : start + 5000])
        if other is not None and neighbour is not None:
            await other.store_many(neighbour[start : start + 5000])
    if isinstance(store, SQLiteMemoryStore):
        await store.optimize()
    if isinstance(store, PostgresMemoryStore):
        await store._connections.execute("ANALYZE lionmem_items, lionmem_meta")


async def measure(url: str, n: int, directory: Path) -> Results:
    items, neighbour = make_items(n), make_items(n, seed=11)
    asked = {name: queries(n)[f"search.{name}[20]"] for name in NAMES}
    asked |= {f"{name}, every match": queries(n)[f"search.{name}"] for name in ("tags.broad", "filter.broad")}
    out: Results = {}
    for kind in STORES:
        async with AsyncExitStack() as stack:
            alone = await stack.enter_async_context(opened(kind, "alone", url, directory))
            shared = await stack.enter_async_context(opened(kind, "shared", url, directory))
            await fill(alone, items, None)
            await fill(shared, items, neighbour)
            for name, query in asked.items():
                assert await alone.search(query) == await shared.search(query), (kind, name)
                by_itself = await best_time(5, partial(alone.search, query))
                beside = await best_time(5, partial(shared.search, query))
                out.setdefault(name, {})[f"{kind} alone, ms"] = by_itself * 1e3
                out[name][f"{kind} shared / alone"] = beside / by_itself
    return out


def table(results: Results) -> str:
    """The Markdown table of docs/performance.md for one run."""
    return markdown_table(
        results,
        "Search",
        "alone, shared/alone",
        lambda row, s: f"{row[f'{s} alone, ms']:.2f} ms, {row[f'{s} shared / alone']:.2f}x",
    )


if __name__ == "__main__":
    three_stores.main(__doc__, measure, table, RESULTS)
