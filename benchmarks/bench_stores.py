"""PostgresMemoryStore beside SQLiteMemoryStore and InMemoryStore, in one run.

Run: python -m benchmarks.bench_stores [--sizes 10000,100000] [--million]
Starts a throwaway local server (or uses LIONMEM_TEST_POSTGRES_URL). Ratios are
each store's time over the in-memory store's. --million adds tag and filter
searches at 1,000,000 items. Results are also written to benchmarks/results/.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.support.common import STALL, best_time, longest_stall, make_items, queries
from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.pg_server import postgres_url

RESULTS = Path(__file__).resolve().parent / "results"


async def fill(store: Any, items: list[MemoryItem]) -> float:
    start = time.perf_counter()
    if isinstance(store, InMemoryStore):
        for item in items:
            await store.store(item)
    else:
        for chunk in range(0, len(items), 5000):
            await store.store_many(items[chunk : chunk + 5000])
    return (time.perf_counter() - start) / len(items)


async def measure(url: str, n: int, directory: Path, names: list[str] | None) -> dict[str, dict[str, float]]:
    items = make_items(n)
    repeat = 5 if n <= 100_000 else 3
    out: dict[str, dict[str, float]] = {}
    memory = InMemoryStore()
    async with (
        SQLiteMemoryStore.open(directory / f"pg-bench-{n}.db") as sqlite,
        PostgresMemoryStore.open(url, namespace=f"bench-{n}-{time.time_ns()}", max_size=8) as pg,
    ):
        stores: dict[str, Any] = {"memory": memory, "sqlite": sqlite, "postgres": pg}
        out["store_many (per item)"] = {k: await fill(s, items) for k, s in stores.items()}
        # What each store's documentation asks for after a bulk load. PostgreSQL: what
        # autovacuum would do soon, give the planner statistics. SQLite: merge the text
        # index, so that the single writes below do not pay for merging what the load left.
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("ANALYZE lionmem_items, lionmem_meta")
        await sqlite.optimize()
        one = make_items(500, seed=99)
        for name, store in stores.items():
            start = time.perf_counter()
            for item in one:
                await store.store(item)
            out.setdefault("store (one call)", {})[name] = (time.perf_counter() - start) / len(one)
        sample = [i.id for i in items[:: max(1, n // 1000)]]
        for name, store in stores.items():

            async def retrieve_all(s: Any = store) -> None:
                for item_id in sample:
                    await s.retrieve(item_id)

            out.setdefault("retrieve", {})[name] = await best_time(repeat, retrieve_all) / len(sample)
        for qname, query in queries(n).items():
            if names and not any(qname.startswith(f"search.{k}") for k in names):
                continue
            for name, store in stores.items():

                async def one_search(s: Any = store, q: MemoryQuery = query) -> None:
                    await s.search(q)

                out.setdefault(qname, {})[name] = await best_time(repeat, one_search)
        # The event loop's longest pause (median of `repeat`) while each store finds and
        # returns the broad filter's matches; the heap is frozen so that a full collection
        # of the benchmark's own objects does not stand in for the store's work.
        broad = MemoryQuery(filters={"kind": 3}, limit=n)
        gc.freeze()
        try:
            for name, store in stores.items():
                stalls = [await longest_stall(store, broad) for _ in range(repeat)]
                out.setdefault(STALL, {})[name] = statistics.median(stalls)
        finally:
            gc.unfreeze()
        # Eight clients at once, each running selective searches: throughput per second.
        selective = [MemoryQuery(tags=[f"t{k}"]) for k in range(40)]
        for name, store in stores.items():

            async def client(s: Any = store) -> None:
                for q in selective:
                    await s.search(q)

            start = time.perf_counter()
            await asyncio.gather(*(client() for _ in range(8)))
            out.setdefault("8 clients, searches/s", {})[name] = 8 * len(selective) / (time.perf_counter() - start)
    return out


def show(n: int, results: dict[str, dict[str, float]]) -> None:
    print(f"\n{n:,} items                    in-memory      sqlite    postgres   sqlite/mem  pg/mem")
    for name, row in results.items():
        per_second = name.endswith("/s")
        unit, scale = (
            ("/s", 1.0) if per_second else (("µs", 1e6) if name.startswith(("store", "retrieve")) else ("ms", 1e3))
        )
        cells = "".join(
            f"{row[k] * scale:10.1f}{unit}" if per_second else f"{row[k] * scale:10.3f}{unit}"
            for k in ("memory", "sqlite", "postgres")
        )
        ratios = "" if per_second else f"{row['sqlite'] / row['memory']:10.2f}x {row['postgres'] / row['memory']:7.2f}x"
        print(f"  {name:<26}{cells}{ratios}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--million", action="store_true")
    args = parser.parse_args()
    RESULTS.mkdir(exist_ok=True)
    report: dict[str, Any] = {}
    with postgres_url() as url, tempfile.TemporaryDirectory() as directory:
        for n in (int(s) for s in args.sizes.split(",")):
            report[str(n)] = asyncio.run(measure(url, n, Path(directory), None))
            show(n, report[str(n)])
        if args.million:
            n = 1_000_000
            report[str(n)] = asyncio.run(measure(url, n, Path(directory), ["tags", "filter"]))
            show(n, report[str(n)])
    (RESULTS / "stores.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
