"""What returning copies costs by itself, with no database, beside the in-memory search.

Run: python -m benchmarks.bench_returned_copies [--size 100000]
For each broad search that asks for every match, the in-memory store's search is the
baseline; against it, in the same run: the SQL alone that `SQLiteMemoryStore` runs for
it (the rows fetched, no object built), rebuilding the matches from the rows a durable
store keeps (`decode_rows`, the fastest path lionmem has, with the rows already read),
pydantic's `model_copy(deep=True)` of the live matches (what a store holding
decoded items would pay to hand out independent copies), and the least such a store
could pay: a new item for each match with its own field dict, field set, tag list and
metadata dict, sharing the id, the timestamp and the content string, which is a whole
copy only because these items hold no nested values. A ratio above 1 means that step
alone is slower than the whole in-memory search.

Then the collector's share: rebuilding every row of the store at once under the
collector's default settings, after `gc.freeze()` and with a first-generation
threshold of 10,000, against the same work with the collector off.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from benchmarks.support.common import best_time, make_items, queries
from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters._codec import decode_rows, encode_item
from lionmem.adapters.sqlite import SQLiteMemoryStore

BROAD = ("search.text.broad", "search.tags.broad", "search.filter.broad")
COLLECTOR = ("off", "default", "gc.freeze()", "threshold 10,000")


async def sql_alone(sqlite: SQLiteMemoryStore, query: MemoryQuery) -> float:
    """Best time of the statements `sqlite` runs for `query`, fetching every row, on
    the store's own thread and connection."""

    def statements() -> list[str]:
        captured: list[str] = []
        sqlite._connections.worker.db.set_trace_callback(captured.append)
        try:
            sqlite._connections.worker.search(sqlite._space, query)
        finally:
            sqlite._connections.worker.db.set_trace_callback(None)
        return captured

    def best(sql: list[str]) -> float:
        times = []
        for _ in range(5):
            start = time.perf_counter()
            for statement in sql:
                sqlite._connections.worker.db.execute(statement).fetchall()
            times.append(time.perf_counter() - start)
        return min(times)

    sql: list[str] = await sqlite._connections.on_writer(statements)
    took: float = await sqlite._connections.on_writer(best, sql)
    return took


def fresh_objects(matches: list[MemoryItem]) -> list[MemoryItem]:
    """New items equal to `matches`, built the cheapest way `decode_rows` knows, from
    values already in memory: a floor for any store that keeps decoded items. A copy
    only for items whose content is a string and whose metadata values are scalars."""
    new, put = object.__new__, object.__setattr__
    copies: list[MemoryItem] = []
    for item in matches:
        values = item.__dict__
        copy = new(MemoryItem)
        put(
            copy,
            "__dict__",
            {
                "id": values["id"],
                "created_at": values["created_at"],
                "metadata": dict(values["metadata"]),
                "content": values["content"],
                "tags": list(values["tags"]),
            },
        )
        put(copy, "__pydantic_fields_set__", set(item.__pydantic_fields_set__))
        put(copy, "__pydantic_extra__", None)
        put(copy, "__pydantic_private__", None)
        copies.append(copy)
    return copies


async def broad_copies(n: int, directory: Path) -> None:
    store = InMemoryStore()
    items = make_items(n)
    for item in items:
        await store.store(item)
    sqlite = await SQLiteMemoryStore.open(directory / "copies.db")
    for start in range(0, n, 5000):
        await sqlite.store_many(items[start : start + 5000])
    del items
    print(
        f"{n:,} items          matches  in-memory search    SQL alone    decode copies    "
        "model_copy(deep)    fresh objects"
    )
    for name in BROAD:
        query = queries(n)[name]
        matches = await store.search(query)
        rows = [(row.id, row.created_at, row.body) for row in map(encode_item, matches)]
        assert fresh_objects(matches) == matches

        async def search() -> None:
            await store.search(query)

        async def decode() -> None:
            decode_rows(rows)

        async def deep_copy() -> None:
            for item in matches:
                item.model_copy(deep=True)

        async def fresh() -> None:
            fresh_objects(matches)

        base = await best_time(5, search)
        took = [
            await sql_alone(sqlite, query),
            await best_time(5, decode),
            await best_time(5, deep_copy),
            await best_time(5, fresh),
        ]
        cells = [f"{base * 1e3:8.1f} ms", *(f"{t * 1e3:8.1f} ms {t / base:5.2f}x" for t in took)]
        print(f"  {name:<20}{len(matches):7,}  " + "   ".join(cells))
    await sqlite.close()


@contextmanager
def collector(setting: str) -> Iterator[None]:
    """Run the block with the collector as `setting` says, then restore it."""
    threshold = gc.get_threshold()
    if setting == "off":
        gc.disable()
    elif setting == "gc.freeze()":
        gc.freeze()
    elif setting == "threshold 10,000":
        gc.set_threshold(10_000, *threshold[1:])
    try:
        yield
    finally:
        gc.enable()
        gc.unfreeze()
        gc.set_threshold(*threshold)


async def collector_share(n: int) -> None:
    """Rebuild all `n` rows at once under each setting in `COLLECTOR`."""
    rows = [(row.id, row.created_at, row.body) for row in map(encode_item, make_items(n))]

    async def decode() -> None:
        decode_rows(rows)

    print(f"decoding all {n:,} rows, by collector setting")
    base = 0.0
    for setting in COLLECTOR:
        with collector(setting):
            took = await best_time(3, decode)
        base = base or took
        print(f"  {setting:<20}{took * 1e3:8.1f} ms {took / base:5.2f}x")


async def measure(n: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        await broad_copies(n, Path(directory))  # its stores are gone before the collector is measured
    await collector_share(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    asyncio.run(measure(parser.parse_args().size))


if __name__ == "__main__":
    main()
