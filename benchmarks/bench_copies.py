"""What returning copies costs by itself, with no database, beside the in-memory search.

Run: python -m benchmarks.bench_copies [--size 100000]
For each broad search that asks for every match, the in-memory store's search is the
baseline; against it, in the same run: rebuilding the matches from the rows a durable
store keeps (`decode_rows`, the fastest path lionmem has, with the rows already read)
and pydantic's `model_copy(deep=True)` of the live matches (what a store holding
decoded items would pay to hand out independent copies). A ratio above 1 means that
step alone is slower than the whole in-memory search.

Then the collector's share: rebuilding every row of the store at once under the
collector's default settings, after `gc.freeze()` and with a first-generation
threshold of 10,000, against the same work with the collector off.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
from collections.abc import Iterator
from contextlib import contextmanager

from benchmarks.common import best_time, make_items, queries
from lionmem import InMemoryStore
from lionmem.adapters._encoding import decode_rows, encode_item

BROAD = ("search.text.broad", "search.tags.broad", "search.filter.broad")
COLLECTOR = ("off", "default", "gc.freeze()", "threshold 10,000")


async def broad_copies(n: int) -> None:
    store = InMemoryStore()
    for item in make_items(n):
        await store.store(item)
    print(f"{n:,} items          matches  in-memory search    decode copies    model_copy(deep)")
    for name in BROAD:
        query = queries(n)[name]
        matches = await store.search(query)
        rows = [(row.id, row.created_at, row.body) for row in map(encode_item, matches)]

        async def search() -> None:
            await store.search(query)

        async def decode() -> None:
            decode_rows(rows)

        async def deep_copy() -> None:
            for item in matches:
                item.model_copy(deep=True)

        base = await best_time(5, search)
        cells = [f"{base * 1e3:8.1f} ms"]
        for step in (decode, deep_copy):
            took = await best_time(5, step)
            cells.append(f"{took * 1e3:8.1f} ms {took / base:5.2f}x")
        print(f"  {name:<20}{len(matches):7,}  " + "   ".join(cells))


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
    await broad_copies(n)  # its store is gone before the collector is measured
    await collector_share(n)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=100_000)
    asyncio.run(measure(parser.parse_args().size))


if __name__ == "__main__":
    main()
