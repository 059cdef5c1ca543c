"""What expiry costs, in all three stores, in one run (ADR-0105 D2): each search of a
store whose every item carries an expiry, over the same search of a store holding the
same items without one; and a sweep of a tenth of a store's items, over deleting as
many by id in one batch.

Run: python -m benchmarks.bench_expiry [--items 100000] [--sweep-items 1000000]
Starts a throwaway local server (or uses LIONMEM_TEST_POSTGRES_URL). Searches: best of
seven rounds each, the two stores in turns, a round about 20 ms of calls, first with no item expired (every item expiring a day on), then with every
tenth item expired and not yet swept, whose results are checked to hold none of them;
in SQLite and PostgreSQL the two stores are two namespaces of one database, opened
again after its writes, as a store is read after its load (SQLite's log copied into
the file first).
Sweeps: one store of `--sweep-items` items; every tenth item (counted from the first)
is deleted by id in one `delete_many` and stored again, then every tenth (counted from
the second) is made to expire and swept, so that both remove as many items, as spread
through as many. Results are written to benchmarks/results/expiry.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from pathlib import Path
from typing import Any

from benchmarks.support.common import best_time, make_items, queries
from benchmarks.support.three_stores import STORES, Results, markdown_table
from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from tests.support.pg_server import fresh_database, postgres_url

RESULTS = Path(__file__).resolve().parent / "results" / "expiry.json"
NAMES = ["all", "text", "text.broad", "tags", "tags.broad", "filter", "filter.broad", "combined", "miss"]
DAY = 86_400.0
SWEPT = "sweep of a tenth, over delete_many of as many"
ROUNDS = 7
"""Rounds of each search in each store, in turns; the best round counts."""
CALLS_MS = 20.0
"""About how long a round runs, in calls of the search one after another, whose mean
is the round's time: a search of a tenth of a millisecond crosses to the store's
thread and back, and one crossing varies on two cores by more than the search."""


async def mean_time(calls: int, search: Callable[[], Awaitable[Any]]) -> float:
    """The mean wall time of `calls` calls of `search`, one after another, in seconds."""
    start = time.perf_counter()
    for _ in range(calls):
        await search()
    return (time.perf_counter() - start) / calls


class Clock:
    """The stores' clock, set by the benchmark: a time past which nothing it made
    expires until it says so."""

    def __init__(self) -> None:
        self.now = time.time()

    def __call__(self) -> float:
        return self.now


@asynccontextmanager
async def opened(kind: str, where: str, **settings: Any) -> AsyncIterator[Any]:
    """The store of `kind` on the database `where` names (a file, or a URL), with the
    expiry `settings` given."""
    if kind == "sqlite":
        async with SQLiteMemoryStore.open(where, **settings) as store:
            yield store
    else:
        async with PostgresMemoryStore.open(where, namespace="bench", **settings) as store:
            yield store


def settle(kind: str, where: str) -> None:
    """Copy an SQLite file's write-ahead log into it and empty the log, so that each
    file is read from its own pages alone, as every file is once its checkpoints
    catch up."""
    if kind == "sqlite":
        db = sqlite3.connect(where)
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        db.close()


async def fill(store: Any, items: list[MemoryItem]) -> None:
    for start in range(0, len(items), 5000):
        await store.store_many(items[start : start + 5000])
    if isinstance(store, SQLiteMemoryStore):
        await store.optimize()
    if isinstance(store, PostgresMemoryStore):
        await store._connections.execute("ANALYZE lionmem_items, lionmem_meta")


async def timed(asked: dict[str, MemoryQuery], kind: str, state: str, plain: Any, expiring: Any, out: Results) -> None:
    """Each search of `asked` in both stores, best of `ROUNDS`, in turns, into `out`: the expiring
    store's results checked to hold no expired item, and, with none expired, to be the
    plain store's."""
    for name, query in asked.items():
        found = await expiring.search(query)
        if state == "none expired":
            assert found == await plain.search(query), (kind, name)
        else:
            assert all(int(str(i.content).split(":")[0][5:]) % 10 for i in found), (kind, name)
        calls = max(1, round(CALLS_MS / (await best_time(3, partial(plain.search, query)) * 1e3)))
        without = with_expiry = float("inf")
        for _ in range(ROUNDS):  # in turns, so that neither store has the quieter moments
            without = min(without, await mean_time(calls, partial(plain.search, query)))
            with_expiry = min(with_expiry, await mean_time(calls, partial(expiring.search, query)))
        out.setdefault(name, {})[f"{kind} without, ms"] = without * 1e3
        out[name][f"{kind} {state}"] = with_expiry / without


async def searches(url: str, n: int, directory: Path) -> Results:
    """Each search in a store without expiry and in one whose every item carries one.
    Each durable store's two are namespaces of one database, on the same connections,
    so that neither has a thread or a connection better placed than the other's; the
    database is opened again after its writes, as a store is read after its load."""
    items = make_items(n)
    asked = {name: queries(n)[f"search.{name}[20]"] for name in NAMES}
    asked |= {f"{name}, every match": queries(n)[f"search.{name}"] for name in ("tags.broad", "filter.broad")}
    tenth = [i.id for i in items[::10]]
    out: Results = {}
    clock = Clock()
    plain, expiring = InMemoryStore(), InMemoryStore(ttl=DAY, clock=clock)
    await fill(plain, items)
    await fill(expiring, items)
    await timed(asked, "memory", "none expired", plain, expiring, out)
    assert await expiring.expire(tenth, at=clock.now - 1) == len(tenth)
    await timed(asked, "memory", "a tenth expired", plain, expiring, out)
    for kind in ("sqlite", "postgres"):
        where = str(directory / "bench.db") if kind == "sqlite" else fresh_database(url)
        async with opened(kind, where) as store:
            await fill(store.in_namespace("plain"), items)
        async with opened(kind, where, ttl=DAY, clock=clock) as store:
            await fill(store.in_namespace("expiring"), items)
        for state in ("none expired", "a tenth expired"):
            if state == "a tenth expired":
                async with opened(kind, where, clock=clock) as store:
                    assert await store.in_namespace("expiring").expire(tenth, at=clock.now - 1) == len(tenth)
                    if isinstance(store, PostgresMemoryStore):
                        await store._connections.execute("ANALYZE lionmem_items")
            settle(kind, where)
            async with opened(kind, where, clock=clock) as store:
                await timed(asked, kind, state, store.in_namespace("plain"), store.in_namespace("expiring"), out)
    return out


async def sweeps(url: str, n: int, directory: Path) -> Results:
    items = make_items(n, seed=13)
    out: Results = {SWEPT: {}}
    for kind in STORES:
        clock = Clock()
        where = str(directory / "sweep.db") if kind == "sqlite" else fresh_database(url)
        store_of = (
            contextlib.nullcontext(InMemoryStore(clock=clock)) if kind == "memory" else opened(kind, where, clock=clock)
        )
        async with store_of as store:
            await fill(store, items)
            deleted = [i.id for i in items[::10]]
            start = time.perf_counter()
            assert await store.delete_many(deleted) == len(deleted)
            deleting = time.perf_counter() - start
            await fill(store, items[::10])
            expired = [i.id for i in items[1::10]]
            assert await store.expire(expired, at=clock.now) == len(expired)
            start = time.perf_counter()
            assert await store.sweep() == len(expired)
            sweeping = time.perf_counter() - start
            assert await store.count(MemoryQuery()) == n - len(expired)
        out[SWEPT][f"{kind} delete_many, s"] = deleting
        out[SWEPT][f"{kind} sweep, s"] = sweeping
        out[SWEPT][f"{kind} sweep / delete_many"] = sweeping / deleting
    return out


async def measure(url: str, n: int, swept: int, directory: Path) -> dict[str, Results]:
    return {"searches": await searches(url, n, directory), "sweeps": await sweeps(url, swept, directory)}


def table(results: dict[str, Results]) -> str:
    """The two Markdown tables of docs/performance.md for one run."""
    searched = markdown_table(
        results["searches"],
        "Search",
        "without, none expired, a tenth expired",
        lambda row, s: (
            f"{row[f'{s} without, ms']:.2f} ms, {row[f'{s} none expired']:.2f}x, {row[f'{s} a tenth expired']:.2f}x"
        ),
    )
    swept = markdown_table(
        results["sweeps"],
        "Removal",
        "delete_many, sweep, ratio",
        lambda row, s: (
            f"{row[f'{s} delete_many, s']:.2f} s, {row[f'{s} sweep, s']:.2f} s, {row[f'{s} sweep / delete_many']:.2f}x"
        ),
    )
    return f"{searched}\n\n{swept}"


def main() -> dict[str, Results]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--sweep-items", type=int, default=1_000_000)
    args = parser.parse_args()
    with postgres_url() as server, tempfile.TemporaryDirectory() as directory:
        measured = asyncio.run(measure(server, args.items, args.sweep_items, Path(directory)))
    print(table(measured))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(measured, indent=1) + "\n")
    return measured


if __name__ == "__main__":
    main()
