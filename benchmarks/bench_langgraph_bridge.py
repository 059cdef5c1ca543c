"""LangGraph's store API on lionmem (ADR-0106) beside lionmem's own calls and LangGraph's
own stores, in one run.

Run: python -m benchmarks.bench_langgraph_bridge [--items 100000]
Each store holds `--items` LangGraph items under ("bench", owner), loaded in batches.
Then, awaited on one loop, in turns, each the median of 300 calls: a put of a new key,
a get, a filtered search (limit 10) and a `query=` search (limit 10, hashing embedder):
through `StoreForLangGraph.open` over the in-memory, SQLite and PostgreSQL stores;
lionmem's own call doing the same (`store`, `retrieve`, `search` and `recall` with the
filters the bridge makes); and LangGraph's `InMemoryStore`, `AsyncSqliteStore` and
`AsyncPostgresStore` with the same embedding function (the test extra installs them;
LangGraph's SQLite store without an index, whose vectors need an extension this Python
cannot load). PostgreSQL runs on the pgvector server of the test support. Results go to benchmarks/results/langgraph_bridge.json.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from lionmem import InMemoryStore, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.embedders import HashingEmbedder
from lionmem.integrations._langgraph_items import filters_of, item_id, memory_item, text_to_index
from lionmem.integrations.langgraph import StoreForLangGraph

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.pg_server import fresh_database, pgvector_url

RESULTS = Path(__file__).resolve().parent / "results" / "langgraph_bridge.json"
CALLS = 300
BATCH = 1_000
DIMS = 64
WORDS = ["invoice", "meeting", "travel", "refund", "garden", "recipe", "contract", "deadline", "holiday", "budget"]
EMBEDDER = HashingEmbedder(DIMS)
Results = dict[str, dict[str, float]]


def embed(texts: Sequence[str]) -> list[list[float]]:
    """The hashing embedder as LangGraph calls an embedding function."""
    return asyncio.run(EMBEDDER.embed(list(texts))) if texts else []


async def aembed(texts: Sequence[str]) -> list[list[float]]:
    return await EMBEDDER.embed(list(texts))


def values(n: int, seed: int) -> list[tuple[tuple[str, ...], str, dict[str, Any]]]:
    rng = random.Random(seed)
    return [
        (
            ("bench", f"u{i % 100}"),
            f"k{seed}-{i}",
            {"text": f"{rng.choice(WORDS)} {rng.choice(WORDS)} note {i}", "kind": i % 10, "score": rng.random()},
        )
        for i in range(n)
    ]


async def median_us(calls: list[Callable[[], Awaitable[Any]]]) -> float:
    times = []
    for call in calls:
        start = time.perf_counter()
        await call()
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


async def load(store: Any, rows: list[tuple[tuple[str, ...], str, dict[str, Any]]]) -> None:
    from langgraph.store.base import PutOp

    for start in range(0, len(rows), BATCH):
        await store.abatch([PutOp(ns, key, value) for ns, key, value in rows[start : start + BATCH]])


async def measure_pair(
    bridge: StoreForLangGraph, theirs: Any, n: int, *, their_query: bool
) -> dict[str, dict[str, float]]:
    """Each operation through the bridge, by lionmem's own call, and by LangGraph's store."""
    lion: Any = bridge.store_of
    fresh = values(CALLS, seed=2)
    targets = values(n, seed=1)
    picks = [targets[i][:2] for i in random.Random(3).sample(range(n), CALLS)]
    queries = [f"{w} note" for w in WORDS] * (CALLS // len(WORDS))
    filters = {"kind": 3}
    lion_filters = filters_of(("bench",), filters)
    now = time.time()
    own_items = [
        memory_item(
            ns, key + "own", value, text=text_to_index(value, ["text"]), created_at=now, updated_at=now, ttl=None
        )
        for ns, key, value in fresh
    ]
    ops: dict[str, list[list[Callable[[], Awaitable[Any]]]]] = {
        "put": [
            [partial(bridge.aput, ns, key, value) for ns, key, value in fresh],
            [partial(lion.store, item) for item in own_items],
            [partial(theirs.aput, ns, key + "lg", value) for ns, key, value in fresh],
        ],
        "get": [
            [partial(bridge.aget, ns, key) for ns, key in picks],
            [partial(lion.retrieve, item_id(ns, key)) for ns, key in picks],
            [partial(theirs.aget, ns, key) for ns, key in picks],
        ],
        "search filter": [
            [partial(bridge.asearch, ("bench",), filter=filters, limit=10)] * CALLS,
            [partial(lion.search, MemoryQuery(filters=lion_filters, limit=10))] * CALLS,
            [partial(theirs.asearch, ("bench",), filter=filters, limit=10)] * CALLS,
        ],
        "search query": [
            [partial(bridge.asearch, ("bench",), query=q, limit=10) for q in queries],
            [partial(lion.recall, q, 10, filters=filters_of(("bench",), None)) for q in queries],
            [partial(theirs.asearch, ("bench",), query=q, limit=10) for q in queries] if their_query else [],
        ],
    }
    out: dict[str, dict[str, float]] = {}
    for name, (through, own, langgraph) in ops.items():
        out[name] = {"bridge_us": await median_us(through), "lionmem_us": await median_us(own)}
        if langgraph:
            out[name]["langgraph_us"] = await median_us(langgraph)
    return out


async def measure(n: int, directory: Path, server: str) -> Results:
    from langgraph.store.memory import InMemoryStore as LangGraphInMemoryStore
    from langgraph.store.postgres.aio import AsyncPostgresStore
    from langgraph.store.sqlite.aio import AsyncSqliteStore

    rows = values(n, seed=1)
    index: Any = {"dims": DIMS, "embed": aembed, "fields": ["text"]}
    results: Results = {}
    lionmem_stores: dict[str, Any] = {
        "memory": InMemoryStore(embedder=EMBEDDER),
        "sqlite": SQLiteMemoryStore.open(directory / "lionmem.db", embedder=EMBEDDER),
        "postgres": PostgresMemoryStore.open(fresh_database(server), namespace="bench", embedder=EMBEDDER),
    }
    for name, opening in lionmem_stores.items():
        theirs_opening: Any
        if name == "memory":
            theirs_opening = contextlib.nullcontext(LangGraphInMemoryStore(index=index))
        elif name == "sqlite":
            # No index: LangGraph's SQLite vectors need sqlite-vec loaded as an extension,
            # which this Python's sqlite3 cannot do; its `query=` is not measured.
            theirs_opening = AsyncSqliteStore.from_conn_string(str(directory / "langgraph.db"))
        else:
            theirs_opening = AsyncPostgresStore.from_conn_string(fresh_database(server), index=index)
        async with StoreForLangGraph.open(opening, index=index) as bridge:
            start = time.perf_counter()
            await load(bridge, rows)
            loaded = time.perf_counter() - start
            async with theirs_opening as theirs:
                if name != "memory":
                    await theirs.setup()
                start = time.perf_counter()
                await load(theirs, rows)
                their_load = time.perf_counter() - start
                found = await measure_pair(bridge, theirs, n, their_query=name != "sqlite")
                found["load per item"] = {"langgraph_us": their_load / n * 1e6}
            found.setdefault("load per item", {})["bridge_us"] = loaded / n * 1e6
            for op, row in found.items():
                results[f"{name} {op}"] = row
            print(f"{name}: done", file=sys.stderr)
    return results


def table(run: dict[str, Any]) -> str:
    """The Markdown table of docs/performance.md for one run."""
    results: Results = run["results"]
    lines = [
        "| Store, call | through the bridge | lionmem's own call | bridge / own | LangGraph's store |",
        "| --- | --- | --- | --- | --- |",
    ]
    for name, row in results.items():
        bridge, own, theirs = row.get("bridge_us"), row.get("lionmem_us"), row.get("langgraph_us")
        ratio = "" if bridge is None or own is None else f"{bridge / own:.2f}x"
        cells = [f"{value:,.0f} µs" if value is not None else "" for value in (bridge, own)]
        lines.append(
            f"| `{name}` | {cells[0]} | {cells[1]} | {ratio} | {'' if theirs is None else f'{theirs:,.0f} µs'} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder, pgvector_url() as server:
        results = asyncio.run(measure(args.items, Path(folder), server))
    run = {"items": args.items, "results": results}
    print(table(run))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(run, indent=1) + "\n")


if __name__ == "__main__":
    main()
