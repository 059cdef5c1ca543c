"""Unfiltered recall in the two PostgreSQL stores, question by question in turn.

Run: python -m benchmarks.bench_recall_pg [--items 100000]
Needs the `bench` dependency group. lionmem's `PostgresMemoryStore` and LangGraph's
`AsyncPostgresStore` hold the same notes in two databases of one `pgserver` server,
both loaded before either is asked. Then each round asks every question of each
side in turn, the order reversed every other round, so that a drift of the machine
reaches both sides alike: the embedder alone, lionmem as it ships (the index asked
for 100 candidates), lionmem with the index asked for 40 (pgvector's default, which
LangGraph keeps) and LangGraph. Each figure is a round's median; results go to
benchmarks/results/recall-pg.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.bench_recall import BATCH, NAMESPACE, K, items_of, langgraph_index, questions, texts, value_of
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.postgres import _recall as pg_recall
from lionmem.embedders import WordLlamaEmbedder

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.pg_server import fresh_database, pgvector_url

RESULTS = Path(__file__).resolve().parent / "results" / "recall-pg.json"
ROUNDS = 6
SIDES = ("the embedder alone", "lionmem", "lionmem, 40 candidates", "LangGraph")


async def rounds(url: str, items: int) -> dict[str, list[float]]:
    """Each side's median recall time in each round, in milliseconds."""
    from langgraph.store.base import PutOp
    from langgraph.store.postgres import AsyncPostgresStore

    embedder = WordLlamaEmbedder()
    embedder.model()
    notes = texts(items)
    ours_url, theirs_url = fresh_database(url), fresh_database(url)
    async with (
        PostgresMemoryStore.open(ours_url, namespace=NAMESPACE, embedder=embedder) as ours,
        AsyncPostgresStore.from_conn_string(theirs_url, index=langgraph_index(embedder)) as theirs,  # type: ignore[arg-type, unused-ignore]
    ):
        await theirs.setup()
        batch = items_of(notes)
        for start in range(0, len(batch), BATCH):
            await ours.store_many(batch[start : start + BATCH])
            await theirs.abatch([PutOp((NAMESPACE,), str(i.id), value_of(i)) for i in batch[start : start + BATCH]])
        for loaded in (ours_url, theirs_url):
            with psycopg.connect(loaded, autocommit=True) as conn:
                conn.execute("ANALYZE")
        shipped = pg_recall._ef_search

        async def forty(question: str) -> Any:
            pg_recall._ef_search = lambda asked: 40
            try:
                return await ours.recall(question, K)
            finally:
                pg_recall._ef_search = shipped

        sides: dict[str, Callable[[str], Awaitable[Any]]] = {
            SIDES[0]: lambda question: embedder.embed([question]),
            SIDES[1]: lambda question: ours.recall(question, K),
            SIDES[2]: forty,
            SIDES[3]: lambda question: theirs.asearch((NAMESPACE,), query=question, limit=K),
        }
        asked = questions()
        for question in asked[:3]:  # caches and plans
            for side in sides.values():
                await side(question)
        found: dict[str, list[float]] = {name: [] for name in sides}
        for number in range(ROUNDS):
            order = list(sides) if number % 2 == 0 else list(reversed(sides))
            times: dict[str, list[float]] = {name: [] for name in sides}
            for question in asked:
                for name in order:
                    began = time.perf_counter()
                    await sides[name](question)
                    times[name].append(time.perf_counter() - began)
            for name, taken in times.items():
                found[name].append(statistics.median(taken) * 1e3)
    return found


def table(results: dict[str, Any]) -> str:
    """The Markdown table of docs/performance.md for one run: each round's medians,
    and lionmem's over LangGraph's."""
    found: dict[str, list[float]] = results["rounds"]
    head = "| Side | " + " | ".join(f"round {n + 1}" for n in range(len(found[SIDES[0]]))) + " |"
    lines = [head, "| --- |" + " --- |" * len(found[SIDES[0]])]
    for name, medians in found.items():
        lines.append(f"| {name} | " + " | ".join(f"{m:.2f} ms" for m in medians) + " |")
    for name in SIDES[1:3]:
        ratios = (ours / theirs for ours, theirs in zip(found[name], found[SIDES[3]], strict=True))
        lines.append(f"| {name} / LangGraph | " + " | ".join(f"{r:.2f}x" for r in ratios) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    items = parser.parse_args().items
    with pgvector_url() as url:
        found = asyncio.run(rounds(url, items))
    results = {"items": items, "rounds": found}
    print(table(results))
    RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
