"""Concurrent LangGraph puts through the bridge (ADR-0106 D6), grouped as they queue,
beside the same puts one after another and lionmem's own `store_many` of them.

Run: python -m benchmarks.bench_langgraph_writes [--puts 500]
For each of the in-memory, SQLite and PostgreSQL stores (no embedder), each round puts
`--puts` new keys through `StoreForLangGraph.open`: awaited one after another, then
all at once from as many tasks (`asyncio.gather`), and lionmem's own `store_many` of
the same number of items made beforehand, the floor of one batch. The median of 5
rounds of each. PostgreSQL runs on the pgvector server of the test support. Results
go to benchmarks/results/langgraph_writes.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

from lionmem import InMemoryStore
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.integrations._langgraph_items import memory_item, text_to_index
from lionmem.integrations.langgraph import StoreForLangGraph

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.support.common import median_time
from tests.support.pg_server import fresh_database, pgvector_url

RESULTS = Path(__file__).resolve().parent / "results" / "langgraph_writes.json"
ROUNDS = 5
Results = dict[str, dict[str, float]]


def value(i: int) -> dict[str, Any]:
    return {"text": f"note {i} about the weekly budget", "kind": i % 10, "owner": f"u{i % 100}"}


async def median_ms(run: Callable[[int], Awaitable[Any]]) -> float:
    """The median of `ROUNDS` runs of `run(round)`, in milliseconds."""
    return await median_time([partial(run, round_) for round_ in range(ROUNDS)]) * 1e3


async def measure_store(opening: Any, puts: int) -> dict[str, float]:
    async with StoreForLangGraph.open(opening) as bridge:
        lion: Any = bridge.store_of

        async def one_after_another(round_: int) -> None:
            for i in range(puts):
                await bridge.aput(("seq", str(round_)), f"k{i}", value(i))

        async def at_once(round_: int) -> None:
            await asyncio.gather(*(bridge.aput(("once", str(round_)), f"k{i}", value(i)) for i in range(puts)))

        now = time.time()
        batches = [
            [
                memory_item(
                    ("own", str(round_)),
                    f"k{i}",
                    value(i),
                    text=text_to_index(value(i), None),
                    created_at=now,
                    updated_at=now,
                    ttl=None,
                )
                for i in range(puts)
            ]
            for round_ in range(ROUNDS)
        ]

        async def store_many(round_: int) -> None:
            await lion.store_many(batches[round_])

        return {
            "one_after_another_ms": await median_ms(one_after_another),
            "at_once_ms": await median_ms(at_once),
            "store_many_ms": await median_ms(store_many),
        }


async def measure(puts: int, directory: Path, server: str) -> Results:
    openings: dict[str, Any] = {
        "memory": InMemoryStore(),
        "sqlite": SQLiteMemoryStore.open(directory / "writes.db"),
        "postgres": PostgresMemoryStore.open(fresh_database(server), namespace="writes"),
    }
    results: Results = {}
    for name, opening in openings.items():
        results[name] = await measure_store(opening, puts)
        print(f"{name}: done", file=sys.stderr)
    return results


def table(run: dict[str, Any]) -> str:
    """The Markdown table of docs/performance.md for one run."""
    lines = [
        f"| Store | {run['puts']} puts one after another | at once | lionmem's `store_many` | at once / one after another |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, row in run["results"].items():
        apart, together, floor = row["one_after_another_ms"], row["at_once_ms"], row["store_many_ms"]
        lines.append(f"| {name} | {apart:,.1f} ms | {together:,.1f} ms | {floor:,.1f} ms | {together / apart:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--puts", type=int, default=500)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, pgvector_url() as server:
        results = asyncio.run(measure(args.puts, Path(folder), server))
    run = {"puts": args.puts, "results": results}
    print(table(run))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(run, indent=1) + "\n")


if __name__ == "__main__":
    main()
