"""Recall@10 and time in the two PostgreSQL stores, on everyday notes, with and without
filters (ADR-0103 D3).

Run: python -m benchmarks.bench_recall_pg [--items 20000 100000]
Needs LangGraph's PostgreSQL store (the test extra). For each count, lionmem's `PostgresMemoryStore`
and LangGraph's `AsyncPostgresStore` hold the same everyday notes in two databases of
one `pgserver` server, embedded by the same offline model. Each side is asked the same
sixty everyday questions, with no filter, with an operator filter keeping the newest
twentieth and with an equality keeping every other note; each answer is compared with
the exact top 10 numpy gives over the same vectors. lionmem is measured as it ships,
at other candidate counts and with `exact=True`; LangGraph at pgvector's default
`hnsw.ef_search` of 40 and raised until it reaches lionmem's recall. Results go to
benchmarks/results/recall-pg.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.bench_recall import NAMESPACE, deleter, langgraph_index, langgraph_writes, probes, replacer
from benchmarks.support.everyday import (
    FILTERS,
    K,
    Truth,
    items_of,
    langgraph_filter,
    lionmem_filter,
    measured,
    questions,
)
from lionmem import MemoryItem
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.postgres._recall import CANDIDATES
from lionmem.embedders import WordLlamaEmbedder

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.pg_server import fresh_database, pgvector_url

RESULTS = Path(__file__).resolve().parent / "results" / "recall-pg.json"
BATCH = 1000
OUR_COUNTS = (40, 100, 200, 400, 800)
THEIR_EF = (40, 100, 200, 400, 800, 1000)
Side = dict[str, dict[str, float]]
"""A side's measures under each filter."""


async def ours(
    url: str, embedder: WordLlamaEmbedder, items: list[Any], truth: Truth, asked: list[str]
) -> dict[str, Any]:
    """lionmem's load time, and its measures at each candidate count and exact."""
    count = len(items)
    started = time.perf_counter()
    async with PostgresMemoryStore.open(url, namespace=NAMESPACE, embedder=embedder) as store:
        for start in range(0, count, BATCH):
            await store.store_many(items[start : start + BATCH])
    load = (time.perf_counter() - started) / count * 1e6
    analyze(url)
    sides: dict[str, Side] = {}
    for candidates in (*OUR_COUNTS, None):
        label = "exact=True" if candidates is None else f"candidates={candidates}"
        async with PostgresMemoryStore.open(
            url, namespace=NAMESPACE, embedder=embedder, candidates=candidates or CANDIDATES
        ) as store:

            async def recall(question: str, within: str) -> list[str]:
                filters = lionmem_filter(within, count)
                found = await store.recall(question, K, filters=filters, exact=candidates is None)
                return [str(r.item.id) for r in found]

            sides[label] = {within: await measured(recall, truth, asked, within) for within in FILTERS}
    async with PostgresMemoryStore.open(url, namespace=NAMESPACE, embedder=embedder) as store:

        async def unfiltered(question: str) -> list[str]:
            return [str(r.item.id) for r in await store.recall(question, K)]

        async def elsewhere(text: str) -> str:
            async with PostgresMemoryStore.open(url, namespace="other", embedder=embedder) as other:
                return str(await other.store(MemoryItem(content=text)))

        found = await probes(unfiltered, replacer(store), deleter(store), elsewhere)
    return {"load µs an item": load, "sides": sides, "probes": found}


async def theirs(
    url: str, embedder: WordLlamaEmbedder, items: list[Any], truth: Truth, asked: list[str]
) -> dict[str, Any]:
    """LangGraph's load time, and its measures at each `hnsw.ef_search`."""
    from langgraph.store.base import PutOp
    from langgraph.store.postgres import AsyncPostgresStore

    count = len(items)
    started = time.perf_counter()
    async with AsyncPostgresStore.from_conn_string(url, index=langgraph_index(embedder)) as store:  # type: ignore[arg-type, unused-ignore]
        await store.setup()
        for start in range(0, count, BATCH):
            await store.abatch(
                [
                    PutOp((NAMESPACE,), str(i.id), {"content": i.content, **i.metadata})
                    for i in items[start : start + BATCH]
                ]
            )
    load = (time.perf_counter() - started) / count * 1e6
    analyze(url)
    sides: dict[str, Side] = {}
    found: dict[str, str] = {}
    database = url.rsplit("/", 1)[1]
    for ef in THEIR_EF:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"ALTER DATABASE {database} SET hnsw.ef_search = {ef}")
        async with AsyncPostgresStore.from_conn_string(url, index=langgraph_index(embedder)) as store:  # type: ignore[arg-type, unused-ignore]

            async def recall(question: str, within: str) -> list[str]:
                filters = langgraph_filter(within, count)
                found = await store.asearch((NAMESPACE,), query=question, filter=filters, limit=K)
                return [r.key for r in found]

            sides[f"ef_search={ef}"] = {within: await measured(recall, truth, asked, within) for within in FILTERS}

            async def unfiltered(question: str) -> list[str]:
                return await recall(question, "none")

            if ef == THEIR_EF[-1]:
                found = await probes(unfiltered, *langgraph_writes(store))
    return {"load µs an item": load, "sides": sides, "probes": found}


def analyze(url: str) -> None:
    """Take the statistics autovacuum takes soon after a load (ADR-0097)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


async def one_count(url: str, embedder: WordLlamaEmbedder, count: int) -> dict[str, Any]:
    """Both stores over `count` notes."""
    asked = questions()
    items = items_of(count)
    truth = Truth(items, await embedder.embed([str(i.content) for i in items]), await embedder.embed(asked))
    return {
        "lionmem": await ours(fresh_database(url), embedder, items, truth, asked),
        "LangGraph": await theirs(fresh_database(url), embedder, items, truth, asked),
    }


def reaching(their: dict[str, Side], within: str, recall: float) -> str | None:
    """The first of LangGraph's settings whose recall@10 under `within` reaches `recall`."""
    return next((name for name, side in their.items() if side[within]["recall@10"] >= recall - 1e-9), None)


def table(results: dict[str, Any]) -> str:
    """The Markdown table of the Performance page: for each count and filter, lionmem
    as it ships and exactly, LangGraph at its default and at the setting that reaches
    lionmem's recall, each as recall@10 (worst question) and median time."""
    lines = [
        "| Notes | Filter | lionmem (candidates=400) | lionmem, exact=True | LangGraph, ef_search=40 "
        "| LangGraph at lionmem's recall | lionmem / LangGraph, same recall |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for count, found in results["counts"].items():
        our, their = found["lionmem"]["sides"], found["LangGraph"]["sides"]
        for within in FILTERS:
            shipped, exact, default = (
                our[f"candidates={CANDIDATES}"][within],
                our["exact=True"][within],
                their["ef_search=40"][within],
            )
            setting = reaching(their, within, shipped["recall@10"])
            if setting is None:
                matched, ratio = "never, up to ef_search=1000", "-"
            else:
                side = their[setting][within]
                matched = f"{_cell(side)} at {setting}"
                ratio = f"{shipped['median ms'] / side['median ms']:.2f}x"
            lines.append(
                f"| {int(count):,} | {within} | {_cell(shipped)} | {_cell(exact)} | {_cell(default)} | {matched} | {ratio} |"
            )
    return "\n\n".join(["\n".join(lines), settings_table(results), probe_table(results)]) + "\n"


def recall_table(results: dict[str, Any]) -> str:
    """The table of docs/recall.md: PostgreSQL's recall@10 as it ships (the worst
    question in brackets), at each count of notes and under each filter."""
    lines = ["| Notes | No filter | The newest twentieth | Every other note |", "| --- | --- | --- | --- |"]
    for count, found in results["counts"].items():
        shipped = found["lionmem"]["sides"][f"candidates={CANDIDATES}"]
        cells = [f"{shipped[within]['recall@10']:.3f} ({shipped[within]['worst']:.1f})" for within in FILTERS]
        lines.append(f"| {int(count):,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def settings_table(results: dict[str, Any]) -> str:
    """Unfiltered recall@10 (worst question) and median time at every candidate count
    of lionmem's and every `hnsw.ef_search` of LangGraph's, at each count of notes."""
    lines = [
        "| Notes | Side | " + " | ".join(str(n) for n in THEIR_EF) + " |",
        "| --- | --- |" + " --- |" * len(THEIR_EF),
    ]
    for count, found in results["counts"].items():
        our, their = found["lionmem"]["sides"], found["LangGraph"]["sides"]
        cells = [_cell(our[f"candidates={n}"]["none"]) if f"candidates={n}" in our else "-" for n in THEIR_EF]
        lines.append(f"| {int(count):,} | lionmem, candidates | " + " | ".join(cells) + " |")
        lines.append(
            f"| {int(count):,} | LangGraph, ef_search | "
            + " | ".join(_cell(their[f"ef_search={n}"]["none"]) for n in THEIR_EF)
            + " |"
        )
    return "\n".join(lines)


def probe_table(results: dict[str, Any]) -> str:
    """The probes of both stores, from the last count's run."""
    found = list(results["counts"].values())[-1]
    ours_found, theirs_found = found["lionmem"]["probes"], found["LangGraph"]["probes"]
    lines = ["| Probe | lionmem PostgreSQL | LangGraph PostgreSQL |", "| --- | --- | --- |"]
    lines.extend(f"| {probe} | {ours_found[probe]} | {theirs_found[probe]} |" for probe in ours_found)
    return "\n".join(lines)


def _cell(side: dict[str, float]) -> str:
    return f"{side['recall@10']:.3f} ({side['worst']:.1f}), {side['median ms']:.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, nargs="+", default=[20_000, 100_000])
    counts = parser.parse_args().items
    embedder = WordLlamaEmbedder()
    embedder.model()
    results: dict[str, Any] = {"questions": len(questions()), "counts": {}}
    with pgvector_url() as url:
        for count in counts:
            results["counts"][str(count)] = asyncio.run(one_count(url, embedder, count))
            print(table(results), flush=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
