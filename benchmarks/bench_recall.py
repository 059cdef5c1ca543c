"""Semantic recall, measured (ADR-0102): embedding throughput, what embedding adds to
`store`, and recall against a bare numpy top k over the same matrix, in one run.

Run: python -m benchmarks.bench_recall [--items 100000]
Ratios are lionmem's time over the baseline's measured in the same run; the baseline
of a recall is `argpartition` over the same float32 matrix, with nothing else.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.common import best_time
from lionmem import InMemoryStore, MemoryItem
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.embedders import WordLlamaEmbedder

RESULTS = Path(__file__).resolve().parent / "results" / "recall.json"
WORDS = [
    "customer",
    "email",
    "renewal",
    "invoice",
    "office",
    "meeting",
    "budget",
    "travel",
    "contract",
    "support",
    "team",
    "launch",
]


def texts(n: int) -> list[str]:
    """`n` short notes from a small vocabulary."""
    rng = np.random.default_rng(7)
    return [" ".join(rng.choice(WORDS, size=6)) + f" note {i}" for i in range(n)]


def items_of(notes: list[str]) -> list[MemoryItem]:
    """The notes as items: every hundredth tagged `rare`, and one in a hundred (others)
    of `group` 0, the two 1% filters."""
    return [
        MemoryItem(content=t, tags=["rare"] if n % 100 == 0 else ["common"], metadata={"group": (n + 50) % 100})
        for n, t in enumerate(notes)
    ]


def bare_top_k(matrix: np.ndarray[Any, Any], query: np.ndarray[Any, Any], k: int) -> list[int]:
    """The baseline: one product and a partial selection, ties unordered."""
    scores = matrix @ query
    top = np.argpartition(-scores, k)[:k]
    return [int(i) for i in top[np.argsort(-scores[top])]]


async def measure(n: int) -> dict[str, float]:
    embedder = WordLlamaEmbedder()
    notes = texts(n)
    found: dict[str, float] = {}
    embedder.model()
    started = time.perf_counter()
    vectors = await embedder.embed(notes)
    found["embed texts/s"] = n / (time.perf_counter() - started)
    matrix = np.asarray(vectors, dtype=np.float32)
    (query,) = await embedder.embed(["how do we reach the client by mail"])
    query_vector = np.asarray(query, dtype=np.float32)
    found["bare top 10"] = await best_time(20, _wrapped(lambda: bare_top_k(matrix, query_vector, 10)))

    items = items_of(notes)
    plain, recalling = InMemoryStore(), InMemoryStore(embedder=embedder)
    sample = items[:2000]
    found["store, no embedder"] = await best_time(1, _filling(plain, sample)) / len(sample)
    found["store, embedding"] = await best_time(1, _filling(recalling, sample)) / len(sample)
    await _filling(recalling, items[2000:])()
    found["memory recall 10"] = await best_time(20, lambda: recalling.recall(query, 10))
    found["memory recall 10, 1% tag"] = await best_time(20, lambda: recalling.recall(query, 10, tags=["rare"]))
    found["memory recall 10, 1% metadata"] = await best_time(
        20, lambda: recalling.recall(query, 10, filters={"group": 0})
    )

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recall.db"
        async with SQLiteMemoryStore.open(path, embedder=embedder) as store:
            for start in range(0, n, 5000):
                await store.store_many(items[start : start + 5000])
            await store.recall(query, 10)  # reads the matrix into the cache
            found["sqlite recall 10"] = await best_time(20, lambda: store.recall(query, 10))
            found["sqlite recall 10, 1% tag"] = await best_time(20, lambda: store.recall(query, 10, tags=["rare"]))
            found["sqlite recall 10, 1% metadata"] = await best_time(
                20, lambda: store.recall(query, 10, filters={"group": 0})
            )
            stats = await store.stats()
            found["sqlite bytes/item"] = stats.bytes_on_disk / n
    return found


def _wrapped(function: Any) -> Any:
    async def call() -> None:
        function()

    return call


def _filling(store: InMemoryStore, items: list[MemoryItem]) -> Any:
    async def fill() -> None:
        for item in items:
            await store.store(item)

    return fill


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    found = asyncio.run(measure(args.items))
    base = found["bare top 10"]
    print(f"{args.items:,} items, 256 dimensions")
    for name, value in found.items():
        if name.endswith(("/s", "/item")):
            print(f"  {name:<30} {value:12,.0f}")
        elif name.startswith("store"):
            print(f"  {name:<30} {value * 1e6:10.1f} µs")
        else:
            print(f"  {name:<30} {value * 1e3:10.3f} ms   {value / base:6.2f}x the bare top k")
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps({str(args.items): found}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
