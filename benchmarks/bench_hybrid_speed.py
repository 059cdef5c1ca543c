"""Hybrid recall's cost beside plain recall (ADR-0104), in each of lionmem's stores, at
100,000 everyday notes, unfiltered and with a filter keeping 1%, in one run: the
median of 30 questions (20 everyday ones, 10 naming a ticket), `k` = 10.

Run: python -m benchmarks.bench_hybrid_speed [--items 100000]
Results go to benchmarks/results/hybrid_speed.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from lionmem import InMemoryStore, MemoryItem
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.embedders import WordLlamaEmbedder
from lionmem.filters import Ge
from lionmem.testing.notes import everyday_notes, everyday_questions
from tests.support.pg_server import pgvector_url

RESULTS = Path(__file__).resolve().parent / "results" / "hybrid_speed.json"
K = 10
BATCH = 5_000


async def measured(store: Any, count: int) -> dict[str, dict[str, float]]:
    """Load `count` notes into `store`; the median milliseconds of each way, each filter."""
    items = [MemoryItem(content=text, metadata={"n": n}) for n, text in enumerate(everyday_notes(count))]
    for at in range(0, count, BATCH):
        await store.store_many(items[at : at + BATCH])
    questions = everyday_questions(20) + [f"What is the status of ticket {40000 + n}?" for n in range(10)]
    found: dict[str, dict[str, float]] = {}
    for name, filters in (("unfiltered", None), ("1% filter", {"n": Ge(int(count * 0.99))})):
        for way in ("recall", "recall_hybrid"):
            call = getattr(store, way)
            await call(questions[0], K, filters=filters)
            times = []
            for question in questions:
                start = time.perf_counter()
                await call(question, K, filters=filters)
                times.append(time.perf_counter() - start)
            found.setdefault(name, {})[way] = statistics.median(times) * 1000
    return found


async def measure(count: int) -> dict[str, Any]:
    embedder = WordLlamaEmbedder()
    stores: dict[str, Any] = {"memory": await measured(InMemoryStore(embedder=embedder), count)}
    with tempfile.TemporaryDirectory() as directory:
        async with SQLiteMemoryStore.open(Path(directory) / "speed.db", embedder=embedder) as sqlite:
            stores["SQLite"] = await measured(sqlite, count)
    with pgvector_url() as url:
        async with PostgresMemoryStore.open(url, namespace="speed", embedder=embedder) as postgres:
            stores["PostgreSQL"] = await measured(postgres, count)
    return {"items": count, "stores": stores}


def table(results: dict[str, Any]) -> str:
    """The Performance page's table: each store's plain and hybrid recall, and their ratio."""
    lines = ["| store | filter | recall (ms) | recall_hybrid (ms) | ratio |", "| --- | --- | --- | --- | --- |"]
    for store, filters in results["stores"].items():
        for name, ways in filters.items():
            plain, hybrid = ways["recall"], ways["recall_hybrid"]
            lines.append(f"| {store} | {name} | {plain:.2f} | {hybrid:.2f} | {hybrid / plain:.2f}x |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    results = asyncio.run(measure(args.items))
    print(f"{results['items']} everyday notes, median of 30 questions, k = {K}")
    print(table(results))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
