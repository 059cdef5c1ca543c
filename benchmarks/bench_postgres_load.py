"""PostgreSQL under load from several processes: lionmem beside bare psycopg.

Run: python -m benchmarks.bench_postgres_load [--rounds 250] [--profile]
Starts a throwaway server of its own on this machine (with `pg_stat_statements`).
For 1, 2, 4 and 8 processes of `TASKS` tasks each, every task stores an item,
searches by one filter with limit 20 and retrieves the item by id, `--rounds`
times. lionmem's side is a `PostgresMemoryStore` a process; the bare side is the
code a careful user would write without lionmem: a `psycopg_pool` pool (the same
size), one table of JSON documents with a GIN index and an order index, and the same
`MemoryItem`s in and out. Each count runs in fresh databases holding `PRELOAD` items,
the sides in turn. Afterwards every acknowledged item is looked for. With
`--profile`, one client process of each side's 8 runs under cProfile, and the
server's statements are read from `pg_stat_statements`; both are printed, and no
results are written. Results go to benchmarks/results/load.json.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import multiprocessing
import pstats
import statistics
import sys
import time
from collections.abc import Callable
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier
from pathlib import Path
from typing import Any, Protocol
from uuid import UUID

import psycopg
from psycopg_pool import AsyncConnectionPool

from benchmarks.support.common import make_items
from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.pg_server import fresh_database, running_server

RESULTS = Path(__file__).resolve().parent / "results" / "load.json"
PROCESSES = (1, 2, 4, 8)
TASKS = 8
PRELOAD = 10_000
POOL = 10
"""Connections a process: the size of lionmem's default pool, on both sides."""
SIDES = ("lionmem", "bare psycopg")

BARE_SCHEMA = [
    "CREATE TABLE items (id uuid PRIMARY KEY, seq bigint GENERATED ALWAYS AS IDENTITY, body jsonb NOT NULL)",
    "CREATE INDEX items_order ON items (seq)",
    # The pending list as small as lionmem's: with the default (4 MB), every search
    # read a list that grew with the load, and the bare side fell behind.
    "CREATE INDEX items_body ON items USING gin (body jsonb_path_ops) WITH (gin_pending_list_limit = 256)",
]
BARE_STORE = "INSERT INTO items (id, body) VALUES (%s, %s::jsonb) ON CONFLICT (id) DO UPDATE SET body = excluded.body"
BARE_SEARCH = "SELECT body::text FROM items WHERE body @> %s::jsonb ORDER BY seq LIMIT 20"
BARE_RETRIEVE = "SELECT body::text FROM items WHERE id = %s"


class Side(Protocol):
    async def store(self, item: MemoryItem) -> UUID: ...
    async def search(self, query: MemoryQuery) -> list[MemoryItem]: ...
    async def retrieve(self, item_id: UUID) -> MemoryItem | None: ...


class Bare:
    """The three calls, written directly on a psycopg pool."""

    def __init__(self, pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]]) -> None:
        self.pool = pool

    async def store(self, item: MemoryItem) -> UUID:
        async with self.pool.connection() as conn:
            await conn.execute(BARE_STORE, [item.id, item.model_dump_json()])
        return item.id

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        async with self.pool.connection() as conn:
            cursor = await conn.execute(BARE_SEARCH, [json.dumps({"metadata": query.filters})])
            return [MemoryItem.model_validate_json(body) for (body,) in await cursor.fetchall()]

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        async with self.pool.connection() as conn:
            row = await (await conn.execute(BARE_RETRIEVE, [item_id])).fetchone()
        return None if row is None else MemoryItem.model_validate_json(row[0])


async def task(side: Side, process: int, number: int, rounds: int, store_times: list[float]) -> list[UUID]:
    """`rounds` of store, search, retrieve; the ids stored."""
    stored = []
    query = MemoryQuery(filters={"owner": f"u{number}"})
    for at in range(rounds):
        item = MemoryItem(
            content=f"process {process} task {number} round {at}",
            tags=[f"p{process}", f"t{number}"],
            metadata={"kind": at % 10, "owner": f"u{number}"},
        )
        start = time.perf_counter()
        await side.store(item)
        store_times.append(time.perf_counter() - start)
        stored.append(item.id)
        await side.search(query)
        found = await side.retrieve(item.id)
        assert found is not None and found.id == item.id
    return stored


async def process_body(side_name: str, url: str, process: int, rounds: int, barrier: Barrier) -> dict[str, Any]:
    if side_name == "lionmem":
        opened: Any = PostgresMemoryStore.open(url, namespace="load", max_size=POOL)
    else:
        opened = AsyncConnectionPool(url, min_size=1, max_size=POOL, kwargs={"autocommit": True}, open=False)
    async with opened as handle:
        side: Side = handle if side_name == "lionmem" else Bare(handle)
        warm: list[float] = []
        await asyncio.gather(*(task(side, process, n, 2, warm) for n in range(TASKS)))
        await asyncio.to_thread(barrier.wait)
        started = time.perf_counter()
        store_times: list[float] = []
        stored = await asyncio.gather(*(task(side, process, n, rounds, store_times) for n in range(TASKS)))
        ended = time.perf_counter()
    ids = [str(i) for ids in stored for i in ids]
    return {"started": started, "ended": ended, "store_times": store_times, "ids": ids}


def process_main(
    side: str, url: str, process: int, rounds: int, barrier: Barrier, profile: bool, results: Queue[Any]
) -> None:
    """One process of the load: its outcome goes to `results`."""
    if not profile:
        results.put(asyncio.run(process_body(side, url, process, rounds, barrier)))
        return
    profiler = cProfile.Profile()
    done = profiler.runcall(asyncio.run, process_body(side, url, process, rounds, barrier))
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
    done["profile"] = out.getvalue()
    results.put(done)


def found_of(side: str, url: str, ids: list[str]) -> int:
    table = "lionmem_items WHERE namespace = 'load' AND" if side == "lionmem" else "items WHERE"
    with psycopg.connect(url) as conn:
        row = conn.execute(f"SELECT count(*) FROM {table} id = ANY(%s::uuid[])", [ids]).fetchone()
    return int(row[0]) if row else 0


async def prepare(side: str, url: str) -> None:
    """The side's schema and `PRELOAD` items."""
    items = make_items(PRELOAD)
    if side == "lionmem":
        async with PostgresMemoryStore.open(url, namespace="load") as store:
            await store.store_many(items)
    else:
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            for statement in BARE_SCHEMA:
                await conn.execute(statement)
            async with conn.cursor() as cursor:
                await cursor.executemany(BARE_STORE, [(i.id, i.model_dump_json()) for i in items])
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")


def run_side(side: str, server: str, processes: int, rounds: int, profile: bool) -> dict[str, Any]:
    url = fresh_database(server)
    asyncio.run(prepare(side, url))
    context = multiprocessing.get_context("spawn")
    barrier = context.Barrier(processes)
    outcomes: Queue[Any] = context.Queue()
    children = [
        context.Process(target=process_main, args=(side, url, p, rounds, barrier, profile and p == 0, outcomes))
        for p in range(processes)
    ]
    for child in children:
        child.start()
    done = [outcomes.get(timeout=600) for _ in children]
    for child in children:
        child.join()
        if child.exitcode != 0:
            raise RuntimeError(f"a process of the load ended with status {child.exitcode}")
    ids = [i for d in done for i in d["ids"]]
    times = sorted(t for d in done for t in d["store_times"])
    elapsed = max(d["ended"] for d in done) - min(d["started"] for d in done)
    for d in done:
        if "profile" in d:
            print(f"--- cProfile of one of {side}'s {processes} processes ---\n{d['profile']}")
    return {
        "ops/s": 3 * len(ids) / elapsed,
        "store p99, ms": times[int(0.99 * (len(times) - 1))] * 1e3,
        "store median, ms": statistics.median(times) * 1e3,
        "acknowledged": len(ids),
        "found": found_of(side, url, ids),
    }


def server_statements(url: str) -> str:
    """The statements that took the server's time, most first."""
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT calls, round(total_exec_time::numeric, 1), round(mean_exec_time::numeric, 3),"
            " left(regexp_replace(query, '\\s+', ' ', 'g'), 110)"
            " FROM pg_stat_statements WHERE calls > 100 ORDER BY total_exec_time DESC LIMIT 12"
        ).fetchall()
    return "\n".join(
        f"{calls:>8} calls {total:>9} ms total {mean:>7} ms mean  {query}" for calls, total, mean, query in rows
    )


def measure(rounds: int, profile: bool) -> dict[str, dict[str, dict[str, float]]]:
    results: dict[str, dict[str, dict[str, float]]] = {}
    with running_server() as server:
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
        server.stop()
        server.start()
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute("CREATE EXTENSION pg_stat_statements")
        for processes in PROCESSES:
            row = results.setdefault(str(processes), {})
            profiled = profile and processes == PROCESSES[-1]
            for side in SIDES:
                if profiled:
                    with psycopg.connect(server.url, autocommit=True) as conn:
                        conn.execute("SELECT pg_stat_statements_reset()")
                row[side] = run_side(side, server.url, processes, rounds, profiled)
                if profiled:
                    print(f"--- the server's statements for {side} at {processes} processes ---")
                    print(server_statements(server.url))
                print(processes, side, row[side], flush=True)
    return results


def table(results: dict[str, dict[str, dict[str, float]]]) -> str:
    """The Markdown table of docs/performance.md for one run."""
    counts = list(results)
    lines = ["| Processes of 8 tasks | " + " | ".join(counts) + " |", "| --- |" + " --- |" * len(counts)]
    rows: list[tuple[str, Callable[[dict[str, dict[str, float]]], str]]] = [
        ("lionmem, ops/s", lambda r: f"{r['lionmem']['ops/s']:,.0f}"),
        ("bare psycopg, ops/s", lambda r: f"{r['bare psycopg']['ops/s']:,.0f}"),
        ("lionmem / bare, throughput", lambda r: f"{r['lionmem']['ops/s'] / r['bare psycopg']['ops/s']:.2f}x"),
        ("lionmem store p99", lambda r: f"{r['lionmem']['store p99, ms']:.0f} ms"),
        ("bare psycopg store p99", lambda r: f"{r['bare psycopg']['store p99, ms']:.0f} ms"),
        (
            "items acknowledged, found",
            lambda r: ", ".join(f"{r[s]['acknowledged']:,.0f}/{r[s]['found']:,.0f}" for s in SIDES),
        ),
    ]
    for name, cell in rows:
        lines.append(f"| {name} | " + " | ".join(cell(results[n]) for n in counts) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=250)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    results = measure(args.rounds, args.profile)
    print(table(results))
    if not args.profile:  # a profiled run is slower than the others
        RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
