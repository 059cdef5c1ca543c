"""Where a write's time goes in both durable stores, and the PostgreSQL bulk loads tried.

Run: python -m benchmarks.bench_write_parts [--items 100000]
Each store first holds `--items` notes. SQLite: `store` through the store, a call
to its writer thread that does nothing, in turns with the same call to a pool of one
thread with no store and with two bare threads waking each other (its floors), then
the same write on a connection of the benchmark's own (no writer thread), whole and
without each index; and a load through `store_many` beside the same statements on the
caller's thread. PostgreSQL: `store` through the store, then its item statement on one
connection (without the term rows of hybrid recall, which the store writes too), with
and without the `lionmem_meta` trigger, beside a two-column insert; and the store's own
write function on one connection, a single write and a load (the same-work
baselines). PostgreSQL bulk loads, each into a fresh database in batches of 1,000:
`store_many` as shipped, without the trigger, without the trigger and the GIN and
trigram indexes, and a `COPY` into a staging table with statement-level triggers over
transition tables (a design measured, not built; the items are new, so it replaces
nothing). Single writes are medians of `SINGLES`; results (µs) go to
benchmarks/results/write-parts.json.
"""

from __future__ import annotations

import asyncio
import sqlite3
import statistics
import threading
import time
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import LiteralString

import psycopg

from benchmarks.support import three_stores
from benchmarks.support.common import make_items, median_time
from lionmem import MemoryItem
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.postgres._writes import UPSERT, item_row, write_batch
from lionmem.adapters.postgres.schema import LOCK_KEY
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.sqlite._indexes import indexable
from lionmem.adapters.sqlite._namespaces import allocate, span_of
from lionmem.adapters.sqlite._writes import Write, put, put_many, write_transaction
from tests.support.pg_server import fresh_database

RESULTS = Path(__file__).resolve().parent / "results" / "write-parts.json"
SINGLES = 200
BATCH = 1000
Results = dict[str, float]

_SQLITE_PARTS: dict[str, LiteralString] = {
    "text index": "INSERT INTO items_text (rowid, indexed) VALUES (?, ?)",
    "tag rows": "INSERT INTO item_tags (seq, tag) VALUES (?, ?)",
    "value rows": "INSERT INTO item_meta (seq, key, kind, value) VALUES (?, ?, ?, ?)",
}


_SPAN = span_of(0)
"""The namespace `default`, which the store writes."""


def _new_item(write: Write, db: sqlite3.Connection, without: str | None) -> None:
    """A new item's write as `put` makes it, leaving out the part `without`."""
    with write_transaction(db):
        db.execute(
            "SELECT seq, folded FROM items WHERE id = ? AND seq BETWEEN ? AND ?",
            (write.columns[0], _SPAN.first, _SPAN.last),
        ).fetchone()
        seq = allocate(db, _SPAN, 1)
        db.execute(
            "INSERT INTO items (seq, id, created_at, body, folded) VALUES (?, ?, ?, ?, ?)", (seq, *write.columns)
        )
        rows: dict[str, list[tuple[object, ...]]] = {
            "text index": [(seq, indexable(write.columns[3]))],
            "tag rows": [(seq, tag) for tag in write.tags],
            "value rows": [(seq, *row) for row in write.meta],
        }
        for part, statement in _SQLITE_PARTS.items():
            if part != without:
                db.executemany(statement, rows[part])


def _median_us(calls: list[Callable[[], object]]) -> float:
    times = []
    for call in calls:
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


async def _hops(on_writer: Callable[[], Awaitable[object]]) -> Results:
    """The median round trip of a call that does nothing, handed to the store's writer
    thread, to a pool of one thread with no store, and between two bare threads waking
    each other on `threading.Event`s, in turns, so that each meets the machine as the
    others do: how soon an idle thread wakes varies with what the cores are doing."""
    loop = asyncio.get_running_loop()
    there, back, stop = threading.Event(), threading.Event(), False

    def other() -> None:
        while True:
            there.wait()
            there.clear()
            if stop:
                return
            back.set()

    times: dict[str, list[float]] = {name: [] for name in _HOPS}
    with ThreadPoolExecutor(1) as pool:
        thread = threading.Thread(target=other)
        thread.start()
        for _ in range(SINGLES * 5):
            for name in _HOPS:
                start = time.perf_counter()
                if name == _HOPS[0]:
                    await on_writer()
                elif name == _HOPS[1]:
                    await loop.run_in_executor(pool, int)
                else:
                    there.set()
                    back.wait()
                    back.clear()
                times[name].append(time.perf_counter() - start)
        stop = True
        there.set()
        thread.join()
    return {name: statistics.median(taken) * 1e6 for name, taken in times.items()}


_HOPS = (
    "SQLite: a call to the store's writer thread that does nothing",
    "the same call to a pool of one thread, no store",
    "two bare threads waking each other (`threading.Event`)",
)


async def sqlite_parts(items: list[MemoryItem], directory: Path) -> Results:
    path = directory / "parts.db"
    async with SQLiteMemoryStore.open(path) as store:
        await store.store_many(items)
        await store.optimize()
        out = {
            "SQLite: `store`": await median_time([partial(store.store, i) for i in make_items(SINGLES, 91)]) * 1e6,
            **await _hops(partial(store._connections.on_writer, int)),
        }
    fresh = make_items(SINGLES * 5, seed=92)
    out["SQLite: encoding the item (`Write.of`)"] = _median_us([partial(Write.of, i) for i in fresh[:SINGLES]])
    writes = [Write.of(i) for i in fresh]
    db = sqlite3.connect(path, isolation_level=None)
    try:
        db.execute("PRAGMA synchronous = NORMAL")  # the store's default
        batches = [writes[at : at + SINGLES] for at in range(0, len(writes), SINGLES)]

        def whole(write: Write) -> None:
            with write_transaction(db):
                put(db, _SPAN, write, None)

        out["SQLite: the same write on the caller's thread"] = _median_us([partial(whole, w) for w in batches[0]])
        for batch, without in zip(batches[1:], [None, *_SQLITE_PARTS], strict=True):
            name = "every part" if without is None else f"all but the {without}"
            out[f"SQLite: {name}, on the caller's thread"] = _median_us(
                [partial(_new_item, w, db, without) for w in batch]
            )
    finally:
        db.close()
    return out


async def postgres_singles(items: list[MemoryItem], server: str) -> Results:
    url = fresh_database(server)
    async with PostgresMemoryStore.open(url, namespace="parts") as store:
        await store.store_many(items)
        async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
            await conn.execute("ANALYZE")
            out = {"PostgreSQL: `store`": await median_time([partial(store.store, i) for i in make_items(SINGLES, 93)])}
            rows = [item_row("parts", i) for i in make_items(SINGLES * 3, seed=94)]

            async def upsert(row: tuple[object, ...]) -> None:
                await conn.execute(UPSERT, (*row, None))

            out["PostgreSQL: its item statement on one connection (no term rows)"] = await median_time(
                [partial(upsert, r) for r in rows[:SINGLES]]
            )
            await conn.execute("ALTER TABLE lionmem_items DISABLE TRIGGER USER")
            out["PostgreSQL: the item statement without the `lionmem_meta` trigger"] = await median_time(
                [partial(upsert, r) for r in rows[SINGLES : 2 * SINGLES]]
            )
            await conn.execute("CREATE TABLE two (id uuid PRIMARY KEY, body text NOT NULL)")

            async def insert(row: tuple[object, ...]) -> None:
                await conn.execute("INSERT INTO two VALUES (%s, %s)", [row[1], row[3]])

            out["PostgreSQL: a two-column insert"] = await median_time(
                [partial(insert, r) for r in rows[2 * SINGLES :]]
            )
    return {name: seconds * 1e6 for name, seconds in out.items()}


# The design measured, not built: a batch copied into a staging table, then written
# with one statement, whose statement-level triggers read transition tables.
_STATEMENT_TRIGGERS = """
DROP FUNCTION lionmem_meta_write() CASCADE;
CREATE FUNCTION lionmem_meta_added() RETURNS trigger LANGUAGE plpgsql AS $b$ BEGIN
 INSERT INTO lionmem_meta (namespace, seq, key, num, txt) SELECT i.namespace, i.seq, e.key,
  CASE jsonb_typeof(e.value) WHEN 'number' THEN e.value::numeric WHEN 'boolean' THEN e.value::boolean::int END,
  CASE jsonb_typeof(e.value) WHEN 'string' THEN left(e.value #>> '{}', 200) END
 FROM added AS i, jsonb_each(i.metadata) AS e
 WHERE jsonb_typeof(e.value) IN ('number', 'boolean', 'string') AND octet_length(e.key) <= 1000;
 RETURN NULL; END $b$;
CREATE TRIGGER lionmem_items_added AFTER INSERT ON lionmem_items REFERENCING NEW TABLE AS added
 FOR EACH STATEMENT EXECUTE FUNCTION lionmem_meta_added();
CREATE TEMP TABLE staging (n int, id uuid, created_at float8, body text, folded text, tags text[], metadata jsonb);
"""
_FROM_STAGING: LiteralString = (
    "INSERT INTO lionmem_items (namespace, id, created_at, body, folded, tags, metadata)"
    " SELECT 'parts', id, created_at, body, folded, tags, metadata FROM staging ORDER BY n"
)
_BULK: dict[str, str | None] = {
    "as shipped (`store_many`)": None,
    "without the `lionmem_meta` trigger": "ALTER TABLE lionmem_items DISABLE TRIGGER USER",
    "without the trigger, the GIN and trigram indexes": (
        "ALTER TABLE lionmem_items DISABLE TRIGGER USER; DROP INDEX lionmem_items_tags;"
        " DROP INDEX lionmem_items_metadata; DROP INDEX IF EXISTS lionmem_items_text"
    ),
    "`COPY` to a staging table, statement-level trigger": _STATEMENT_TRIGGERS,
}


async def postgres_bulk(items: list[MemoryItem], server: str) -> Results:
    out = {}
    for name, change in _BULK.items():
        url = fresh_database(server)
        async with (
            PostgresMemoryStore.open(url, namespace="parts") as store,
            await psycopg.AsyncConnection.connect(url, autocommit=True) as conn,
        ):
            if change is not None:
                await conn.execute(change)
            start = time.perf_counter()
            for at in range(0, len(items), BATCH):
                batch = items[at : at + BATCH]
                if change is not _STATEMENT_TRIGGERS:
                    await store.store_many(batch)
                    continue
                async with conn.transaction(), conn.cursor() as cursor:
                    async with cursor.copy("COPY staging FROM STDIN") as copy:
                        for n, row in enumerate(item_row("parts", i) for i in batch):
                            await copy.write_row((n, *row[1:]))
                    await cursor.execute(_FROM_STAGING)
                    await cursor.execute("TRUNCATE staging")
            out[f"PostgreSQL bulk load, an item: {name}"] = (time.perf_counter() - start) / len(items) * 1e6
    return out


async def sqlite_bulk(items: list[MemoryItem], directory: Path) -> Results:
    """A load of `items` in batches of `BATCH` into a fresh file, through `store_many`
    and as the same statements on a connection of the benchmark's own: the items
    encoded, then `put_many` in one transaction a batch (the same-work baseline)."""
    seed = MemoryItem(content="seed")
    paths = {name: directory / f"bulk-{n}.db" for n, name in enumerate(("store", "same"))}
    for path in paths.values():  # the schema and the namespace, as a store leaves them
        async with SQLiteMemoryStore.open(path) as store:
            await store.store(seed)
    async with SQLiteMemoryStore.open(paths["store"]) as store:
        start = time.perf_counter()
        for at in range(0, len(items), BATCH):
            await store.store_many(items[at : at + BATCH])
        through_store = time.perf_counter() - start
    db = sqlite3.connect(paths["same"], isolation_level=None)
    try:
        db.execute("PRAGMA synchronous = NORMAL")  # the store's default
        start = time.perf_counter()
        for at in range(0, len(items), BATCH):
            writes = [Write.of(item) for item in items[at : at + BATCH]]
            with write_transaction(db):
                put_many(db, _SPAN, writes, None)
        same = time.perf_counter() - start
    finally:
        db.close()
    return {
        "SQLite bulk load, an item: `store_many`": through_store / len(items) * 1e6,
        "SQLite bulk load, an item: the same statements on the caller's thread": same / len(items) * 1e6,
    }


async def postgres_same_work(items: list[MemoryItem], server: str) -> Results:
    """The store's own write function, `write_batch`, on a connection of the
    benchmark's own (no pool, no event loop hop beyond the connection's): a single
    write, and a load in batches of `BATCH` into a fresh database, as the store's
    same-work baselines."""
    url = fresh_database(server)
    async with PostgresMemoryStore.open(url, namespace="parts"):
        pass  # the schema
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        write = partial(write_batch, conn, namespace="parts", lock_key=LOCK_KEY)
        start = time.perf_counter()
        for at in range(0, len(items), BATCH):
            await write(rows=[item_row("parts", i) for i in items[at : at + BATCH]])
        loaded = time.perf_counter() - start
        await conn.execute("ANALYZE")
        singles: list[Callable[[], Awaitable[None]]] = [
            partial(write, rows=[item_row("parts", i)]) for i in make_items(SINGLES, seed=95)
        ]
        single = await median_time(singles)
    return {
        "PostgreSQL: the store's write (`write_batch`) on one connection": single * 1e6,
        "PostgreSQL bulk load, an item: the same writes (`write_batch`) on one connection": loaded / len(items) * 1e6,
    }


async def measure(server: str, n: int, directory: Path) -> Results:
    items = make_items(n)
    return {
        **await sqlite_parts(items, directory),
        **await sqlite_bulk(items, directory),
        **await postgres_singles(items, server),
        **await postgres_same_work(items, server),
        **await postgres_bulk(items, server),
    }


def table(results: Results) -> str:
    """The Markdown table of docs/performance.md for one run."""
    lines = ["| Measure | µs |", "| --- | --- |"]
    lines += [f"| {name} | {us:,.1f} |" for name, us in results.items()]
    return "\n".join(lines)


if __name__ == "__main__":
    three_stores.main(__doc__, measure, table, RESULTS)
