"""Semantic recall in memory and in SQLite, measured on everyday notes (ADR-0102), in one
run: recall against a bare numpy top k over the same matrix, and lionmem's two stores
beside LangGraph's `InMemoryStore`, given the same offline embedder, at each count
of notes, with and without filters, with the probes of what each recalls.

Run: python -m benchmarks.bench_recall [--items 20000 100000]
The LangGraph half needs LangGraph's stores (the test extra); `--no-langgraph` skips it. The
PostgreSQL stores are `bench_recall_pg`'s. Results go to
benchmarks/results/recall.json; `table` renders the Performance page's tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np

from benchmarks.support.common import best_time
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
from lionmem import InMemoryStore, MemoryItem
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.embedders import WordLlamaEmbedder

RESULTS = Path(__file__).resolve().parent / "results" / "recall.json"
BATCH = 1000
NAMESPACE = "bench"
STORES = ["lionmem memory", "lionmem SQLite", "LangGraph memory"]


def langgraph_index(embedder: WordLlamaEmbedder) -> dict[str, Any]:
    """A LangGraph index around `embedder`, embedding each value's `content`."""

    async def embed(batch: list[str]) -> list[list[float]]:
        return await embedder.embed(batch)

    return {"dims": embedder.dimensions, "embed": embed, "fields": ["content"]}


async def timed_load(load: Callable[[list[MemoryItem]], Awaitable[Any]], items: list[MemoryItem]) -> float:
    """Microseconds an item to load `items` in batches."""
    start = time.perf_counter()
    for at in range(0, len(items), BATCH):
        await load(items[at : at + BATCH])
    return (time.perf_counter() - start) / len(items) * 1e6


async def probes(
    recall: Callable[[str], Awaitable[list[str]]],
    replace: Callable[[str, str], Awaitable[None]],
    delete: Callable[[str], Awaitable[None]],
    elsewhere: Callable[[str], Awaitable[str]] | str,
) -> dict[str, str]:
    """What a store recalls after a deletion, a replacement, and a write in another
    namespace (or why a store has none); "yes" when the store kept the rule."""
    out: dict[str, str] = {}
    question = "When is the next meeting about Falcon?"
    first = (await recall(question))[0]
    await delete(first)
    out["a deleted item is never recalled"] = "yes" if first not in await recall(question) else "no"
    target = (await recall("Who works on Project Heron?"))[-1]
    await replace(target, "penguins skating on the frozen harbour")
    found = await recall("penguins skating on the frozen harbour")
    out["a replaced item is found by its new text"] = "yes" if found[:1] == [target] else "no"
    if isinstance(elsewhere, str):
        out["namespaces are kept apart"] = elsewhere
    else:
        text = "a secret kept in another namespace"
        key = await elsewhere(text)
        out["namespaces are kept apart"] = "yes" if key not in await recall(text) else "no"
    return out


def replacer(store: Any) -> Callable[[str, str], Awaitable[None]]:
    async def replace(key: str, text: str) -> None:
        old = await store.retrieve(UUID(key))
        await store.store(old.model_copy(update={"content": text}))

    return replace


def deleter(store: Any) -> Callable[[str], Awaitable[None]]:
    async def delete(key: str) -> None:
        await store.delete(UUID(key))

    return delete


def langgraph_writes(
    store: Any,
) -> tuple[Callable[[str, str], Awaitable[None]], Callable[[str], Awaitable[None]], Callable[[str], Awaitable[str]]]:
    """What `probes` writes through a LangGraph store: a replace, a delete, and a put
    into another namespace that returns its key."""

    async def replace(key: str, text: str) -> None:
        old = await store.aget((NAMESPACE,), key)
        assert old is not None
        await store.aput((NAMESPACE,), key, {**old.value, "content": text})

    async def delete(key: str) -> None:
        await store.adelete((NAMESPACE,), key)

    async def elsewhere(text: str) -> str:
        await store.aput(("other",), "secret", {"content": text})
        return "secret"

    return replace, delete, elsewhere


async def lionmem_side(
    store: Any, items: list[MemoryItem], truth: Truth, asked: list[str], apart: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """One of lionmem's stores: its load, its measures under each filter, its probes."""
    row: dict[str, Any] = {"load µs an item": await timed_load(store.store_many, items)}

    async def recall(question: str, within: str) -> list[str]:
        found = await store.recall(question, K, filters=lionmem_filter(within, len(items)))
        return [str(r.item.id) for r in found]

    row["filters"] = {within: await measured(recall, truth, asked, within) for within in FILTERS}
    found = await probes(lambda q: recall(q, "none"), replacer(store), deleter(store), apart)
    return row, found


async def langgraph_side(
    embedder: WordLlamaEmbedder, items: list[MemoryItem], truth: Truth, asked: list[str]
) -> tuple[dict[str, Any], dict[str, str]]:
    """LangGraph's `InMemoryStore`, given the same embedder."""
    from langgraph.store.base import PutOp
    from langgraph.store.memory import InMemoryStore as LangGraphMemory

    store = LangGraphMemory(index=langgraph_index(embedder))  # type: ignore[arg-type, unused-ignore]
    refused: list[str] = []

    async def load(batch: list[MemoryItem]) -> None:
        puts = [PutOp((NAMESPACE,), str(i.id), {"content": i.content, **i.metadata}) for i in batch]
        try:
            await store.abatch(puts)
        except ValueError as exc:  # a batch holding one text twice: put one at a time
            refused.append(str(exc))
            for put in puts:
                await store.abatch([put])

    row: dict[str, Any] = {"load µs an item": await timed_load(load, items), "batches refused": refused[:1]}
    row["batches refused, count"] = len(refused)

    async def recall(question: str, within: str) -> list[str]:
        filters = langgraph_filter(within, len(items))
        return [r.key for r in await store.asearch((NAMESPACE,), query=question, filter=filters, limit=K)]

    row["filters"] = {within: await measured(recall, truth, asked, within) for within in FILTERS}

    return row, await probes(lambda q: recall(q, "none"), *langgraph_writes(store))


async def one_count(embedder: WordLlamaEmbedder, count: int, langgraph: bool) -> dict[str, Any]:
    """Every store over `count` notes, and the bare top k over the same matrix."""
    asked = questions()
    items = items_of(count)
    vectors = await embedder.embed([str(i.content) for i in items])
    truth = Truth(items, vectors, await embedder.embed(asked))
    matrix = np.asarray(vectors, dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    (query,) = await embedder.embed([asked[0]])
    target = np.asarray(query, dtype=np.float32)

    async def bare() -> None:
        scores = matrix @ target
        top = np.argpartition(-scores, K)[:K]
        top[np.argsort(-scores[top])].tolist()

    found: dict[str, Any] = {"bare top 10, ms": await best_time(20, bare) * 1e3, "rows": {}, "probes": {}}
    memory = InMemoryStore(embedder=embedder)
    found["rows"][STORES[0]], found["probes"][STORES[0]] = await lionmem_side(
        memory, items, truth, asked, "no namespaces: one store each"
    )
    del memory
    with tempfile.TemporaryDirectory() as folder:
        async with SQLiteMemoryStore.open(Path(folder) / "recall.db", embedder=embedder) as sqlite:
            found["rows"][STORES[1]], found["probes"][STORES[1]] = await lionmem_side(
                sqlite, items, truth, asked, "no namespaces: one file each"
            )
    if langgraph:
        found["rows"][STORES[2]], found["probes"][STORES[2]] = await langgraph_side(embedder, items, truth, asked)
    return found


def table(results: dict[str, Any]) -> str:
    """The Markdown tables of the Performance page: each store's recall@10 (worst
    question) and median time under each filter, at each count; then the probes."""
    stores = [s for s in STORES if s in next(iter(results["counts"].values()))["rows"]]
    lines = ["| Notes | Filter | " + " | ".join(stores) + " |", "| --- | --- |" + " --- |" * len(stores)]
    for count, found in results["counts"].items():
        rows = found["rows"]
        lines.append(
            f"| {int(count):,} | load, µs an item | "
            + " | ".join(f"{rows[s]['load µs an item']:,.0f}" for s in stores)
            + " |"
        )
        for within in FILTERS:
            cells = [rows[s]["filters"][within] for s in stores]
            lines.append(
                f"| {int(count):,} | {within} | "
                + " | ".join(f"{c['recall@10']:.3f} ({c['worst']:.1f}), {c['median ms']:.2f} ms" for c in cells)
                + " |"
            )
    probed = next(iter(results["counts"].values()))["probes"]
    lines += ["", "| Probe | " + " | ".join(stores) + " |", "| --- |" + " --- |" * len(stores)]
    lines.extend(f"| {probe} | " + " | ".join(probed[s][probe] for s in stores) + " |" for probe in probed[stores[0]])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, nargs="+", default=[20_000, 100_000])
    parser.add_argument("--no-langgraph", action="store_true", help="lionmem's stores only")
    args = parser.parse_args()
    embedder = WordLlamaEmbedder()
    embedder.model()
    results: dict[str, Any] = {"questions": len(questions()), "counts": {}}
    for count in args.items:
        results["counts"][str(count)] = asyncio.run(one_count(embedder, count, not args.no_langgraph))
        print(table(results), flush=True)
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
