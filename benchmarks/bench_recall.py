"""Semantic recall, measured (ADR-0102, ADR-0103), in one run: embedding throughput;
recall against a bare numpy top k over the same matrix; and lionmem's three stores
beside LangGraph's `InMemoryStore` and `AsyncPostgresStore`, both given the same
offline embedder, with the probes of what each recalls.

Run: python -m benchmarks.bench_recall [--items 100000]
The LangGraph half needs the `bench` dependency group; `--no-langgraph` skips it.
Both PostgreSQL stores share one throwaway server from the `pgserver` wheel, which
has pgvector (or LIONMEM_TEST_POSTGRES_URL, when that server has it). Results go to
benchmarks/results/recall.json; `table` renders the Performance page's tables.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from uuid import UUID

import numpy as np
import psycopg

from benchmarks.common import best_time
from lionmem import InMemoryStore, MemoryItem
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.embedders import WordLlamaEmbedder

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.pg_server import fresh_database, pgvector_url

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
K = 10
BATCH = 1000
NAMESPACE = "bench"
ONE_PERCENT = {"group": 0}
TENTH_PERCENT = {"cell": 500}
STORES = ["lionmem memory", "lionmem SQLite", "lionmem PostgreSQL", "LangGraph memory", "LangGraph PostgreSQL"]
Row = dict[str, float | str]


def texts(n: int) -> list[str]:
    """`n` short notes from a small vocabulary."""
    rng = np.random.default_rng(7)
    return [" ".join(rng.choice(WORDS, size=6)) + f" note {i}" for i in range(n)]


def questions() -> list[str]:
    """The recall queries: twenty questions over the notes' vocabulary."""
    rng = np.random.default_rng(11)
    return [
        f"what about the {a} and the {b}?" for a, b in (rng.choice(WORDS, size=2, replace=False) for _ in range(20))
    ]


def items_of(notes: list[str]) -> list[MemoryItem]:
    """The notes as items: every hundredth tagged `rare`; one in a hundred (others) of
    `group` 0, the 1% filter; and one in a thousand of `cell` 500, the 0.1% filter."""
    return [
        MemoryItem(
            content=t,
            tags=["rare"] if n % 100 == 0 else ["common"],
            metadata={"group": (n + 50) % 100, "cell": n % 1000},
        )
        for n, t in enumerate(notes)
    ]


def value_of(item: MemoryItem) -> dict[str, Any]:
    """The item as a LangGraph value: its metadata at the top, where its filters look."""
    return {"content": item.content, **item.metadata}


def bare_top_k(matrix: np.ndarray[Any, Any], query: np.ndarray[Any, Any], k: int) -> list[int]:
    """The baseline: one product and a partial selection, ties unordered."""
    scores = matrix @ query
    top = np.argpartition(-scores, k)[:k]
    return [int(i) for i in top[np.argsort(-scores[top])]]


class Truth:
    """The exact answers: every item's unit vector and the question's, scored by numpy."""

    def __init__(self, items: list[MemoryItem], matrix: np.ndarray[Any, Any], asked: np.ndarray[Any, Any]) -> None:
        self.ids = {str(item.id): n for n, item in enumerate(items)}
        self.matrix = matrix / np.linalg.norm(matrix, axis=1, keepdims=True)
        self.asked = asked / np.linalg.norm(asked, axis=1, keepdims=True)
        self.masks = {
            "none": np.ones(len(items), dtype=bool),
            "1%": np.array([i.metadata["group"] == 0 for i in items]),
            "0.1%": np.array([i.metadata["cell"] == 500 for i in items]),
        }

    def share(self, question: int, found: list[str], within: str) -> float:
        """The share of the exact top k that `found` holds; an item scoring as high as
        the exact k-th (within float32's rounding) counts as one of them."""
        scores = np.where(self.masks[within], self.matrix @ self.asked[question], -np.inf)
        kth = np.sort(scores)[-K]
        hits = sum(1 for key in found[:K] if scores[self.ids[key]] >= kth - 1e-5)
        return hits / K


Recaller = Callable[[str, dict[str, Any] | None], Awaitable[list[str]]]
"""Recall the top `K` for a question, with a filter or none: the items' ids as text."""


async def recall_measures(recall: Recaller, truth: Truth, asked: list[str]) -> Row:
    """Median latency and mean recall@10 over the questions, with no filter and with
    the 1% one; and the fewest items a 0.1% filter gave."""
    row: Row = {}
    await recall(asked[0], None)  # the first call pays for caches and plans
    for name, filters, within in (("no filter", None, "none"), ("1% filter", ONE_PERCENT, "1%")):
        times, shares = [], []
        for n, question in enumerate(asked):
            start = time.perf_counter()
            found = await recall(question, filters)
            times.append(time.perf_counter() - start)
            shares.append(truth.share(n, found, within))
        row[f"recall k=10, {name}, median ms"] = statistics.median(times) * 1e3
        row[f"recall@10 against exact, {name}"] = statistics.fmean(shares)
    counts = [len(await recall(q, TENTH_PERCENT)) for q in asked]
    row["items given for k=10, 0.1% filter (fewest)"] = float(min(counts))
    return row


async def probes(
    recall: Recaller,
    replace: Callable[[str, str], Awaitable[None]],
    delete: Callable[[str], Awaitable[None]],
    elsewhere: Callable[[str], Awaitable[str]] | str,
) -> dict[str, str]:
    """What a store recalls after a deletion, a replacement, and a write in another
    namespace (or why a store has none); "yes" when the store kept the rule."""
    out: dict[str, str] = {}
    question = "a fresh question about the budget meeting"
    first = (await recall(question, None))[0]
    await delete(first)
    out["a deleted item is never recalled"] = "yes" if first not in await recall(question, None) else "no"
    target = (await recall("contract renewal", None))[-1]
    await replace(target, "penguins skating on the frozen harbour")
    found = await recall("penguins skating on the frozen harbour", None)
    out["a replaced item is found by its new text"] = "yes" if found[:1] == [target] else "no"
    if isinstance(elsewhere, str):
        out["namespaces are kept apart"] = elsewhere
    else:
        text = "a secret kept in another namespace"
        key = await elsewhere(text)
        out["namespaces are kept apart"] = "yes" if key not in await recall(text, None) else "no"
    return out


async def footprint(load: Callable[[], Awaitable[Any]]) -> float:
    """The Python heap that what `load` builds and keeps holds, in bytes."""
    gc.collect()
    tracemalloc.start()
    try:
        kept = await load()
        gc.collect()
        size, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    del kept
    return float(size)


async def timed_load(load: Callable[[list[MemoryItem]], Awaitable[Any]], items: list[MemoryItem]) -> float:
    """Seconds an item to load `items` in batches."""
    start = time.perf_counter()
    for at in range(0, len(items), BATCH):
        await load(items[at : at + BATCH])
    return (time.perf_counter() - start) / len(items)


def ids(found: list[Any]) -> list[str]:
    return [str(r.item.id) for r in found]


async def lionmem_memory(embedder: WordLlamaEmbedder, items: list[MemoryItem], truth: Truth, asked: list[str]) -> Any:
    store = InMemoryStore(embedder=embedder)
    row: Row = {"load with embedding, µs an item": await timed_load(store.store_many, items) * 1e6}

    async def recall(q: str, filters: dict[str, Any] | None) -> list[str]:
        return ids(await store.recall(q, K, filters=filters))

    row.update(await recall_measures(recall, truth, asked))
    return store, recall, row


def replacer(store: Any) -> Callable[[str, str], Awaitable[None]]:
    async def replace(key: str, text: str) -> None:
        old = await store.retrieve(UUID(key))
        await store.store(old.model_copy(update={"content": text}))

    return replace


def deleter(store: Any) -> Callable[[str], Awaitable[None]]:
    async def delete(key: str) -> None:
        await store.delete(UUID(key))

    return delete


async def lionmem_durable(
    opened: Callable[[str], Any], items: list[MemoryItem], truth: Truth, asked: list[str], *, server: str | None
) -> tuple[Row, dict[str, str]]:
    """A durable store's row and probes; with the URL of its `server`, statistics are
    taken after the load, and a second namespace probed."""
    async with opened(NAMESPACE) as store:
        row: Row = {"load with embedding, µs an item": await timed_load(store.store_many, items) * 1e6}
        if server is not None:
            analyze(server)

        async def recall(q: str, filters: dict[str, Any] | None) -> list[str]:
            return ids(await store.recall(q, K, filters=filters))

        row.update(await recall_measures(recall, truth, asked))
        row["bytes an item"] = (await store.stats()).bytes_on_disk / len(items)

        async def elsewhere(text: str) -> str:
            async with opened("other") as other:
                return str(await other.store(MemoryItem(content=text)))

        apart = elsewhere if server is not None else "no namespaces: one file each"
        found = await probes(recall, replacer(store), deleter(store), apart)
    return row, found


def langgraph_index(embedder: WordLlamaEmbedder) -> dict[str, Any]:
    async def embed(batch: list[str]) -> list[list[float]]:
        return await embedder.embed(batch)

    return {"dims": embedder.dimensions, "embed": embed, "fields": ["content"]}


async def langgraph_rows(
    store: Any, items: list[MemoryItem], truth: Truth, asked: list[str], server: str | None = None
) -> tuple[Row, Any]:
    from langgraph.store.base import PutOp

    async def load(batch: list[MemoryItem]) -> None:
        await store.abatch([PutOp((NAMESPACE,), str(i.id), value_of(i)) for i in batch])

    row: Row = {"load with embedding, µs an item": await timed_load(load, items) * 1e6}
    if server is not None:
        analyze(server)

    async def recall(q: str, filters: dict[str, Any] | None) -> list[str]:
        return [r.key for r in await store.asearch((NAMESPACE,), query=q, filter=filters, limit=K)]

    row.update(await recall_measures(recall, truth, asked))
    return row, recall


async def langgraph_probes(store: Any, recall: Recaller) -> dict[str, str]:
    async def replace(key: str, text: str) -> None:
        old = await store.aget((NAMESPACE,), key)
        await store.aput((NAMESPACE,), key, {**old.value, "content": text})

    async def delete(key: str) -> None:
        await store.adelete((NAMESPACE,), key)

    async def elsewhere(text: str) -> str:
        await store.aput(("other",), "secret", {"content": text})
        return "secret"

    return await probes(recall, replace, delete, elsewhere)


def analyze(url: str) -> None:
    """Take the statistics autovacuum takes soon after a load (ADR-0097)."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


def database_bytes(url: str) -> float:
    """Every table of the database with its indexes and TOAST, after a vacuum."""
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("VACUUM ANALYZE")
        row = conn.execute(
            "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class AS c"
            " JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relkind = 'r'"
        ).fetchone()
    return float(row[0]) if row and row[0] is not None else 0.0


async def warm_up(url: str, embedder: WordLlamaEmbedder, items: list[MemoryItem]) -> None:
    """A throwaway load, so that neither measured load pays for the server's first
    WAL files and a cold cache."""
    async with PostgresMemoryStore.open(fresh_database(url), namespace="warm", embedder=embedder) as store:
        await timed_load(store.store_many, items)


async def compared(url: str, embedder: WordLlamaEmbedder, items: list[MemoryItem], notes: list[str]) -> dict[str, Any]:
    """The table of lionmem's stores beside LangGraph's, and each one's probes."""
    from langgraph.store.memory import InMemoryStore as LangGraphMemory
    from langgraph.store.postgres import AsyncPostgresStore

    asked = questions()
    matrix = np.asarray(await embedder.embed(notes), dtype=np.float32)
    truth = Truth(items, matrix, np.asarray(await embedder.embed(asked), dtype=np.float32))
    rows: dict[str, Row] = {}
    found: dict[str, dict[str, str]] = {}

    store, recall, rows["lionmem memory"] = await lionmem_memory(embedder, items, truth, asked)
    found["lionmem memory"] = await probes(recall, replacer(store), deleter(store), "no namespaces: one store each")
    del store

    async def lionmem_footprint() -> Any:
        kept = InMemoryStore(embedder=embedder)
        await timed_load(kept.store_many, items_of(notes))
        return kept

    rows["lionmem memory"]["bytes an item"] = await footprint(lionmem_footprint) / len(items)

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "recall.db"
        rows["lionmem SQLite"], found["lionmem SQLite"] = await lionmem_durable(
            lambda _: SQLiteMemoryStore.open(path, embedder=embedder), items, truth, asked, server=None
        )

    await warm_up(url, embedder, items[: len(items) // 5])
    ours = fresh_database(url)
    rows["lionmem PostgreSQL"], found["lionmem PostgreSQL"] = await lionmem_durable(
        lambda namespace: PostgresMemoryStore.open(ours, namespace=namespace, embedder=embedder),
        items,
        truth,
        asked,
        server=ours,
    )
    rows["lionmem PostgreSQL"]["bytes an item"] = database_bytes(ours) / len(items)

    theirs = LangGraphMemory(index=langgraph_index(embedder))  # type: ignore[arg-type, unused-ignore]
    rows["LangGraph memory"], recall = await langgraph_rows(theirs, items, truth, asked)
    found["LangGraph memory"] = await langgraph_probes(theirs, recall)
    del theirs

    async def langgraph_footprint() -> Any:
        from langgraph.store.base import PutOp

        kept = LangGraphMemory(index=langgraph_index(embedder))  # type: ignore[arg-type, unused-ignore]
        fresh = items_of(notes)
        for at in range(0, len(fresh), BATCH):
            await kept.abatch([PutOp((NAMESPACE,), str(i.id), value_of(i)) for i in fresh[at : at + BATCH]])
        return kept

    rows["LangGraph memory"]["bytes an item"] = await footprint(langgraph_footprint) / len(items)

    theirs_url = fresh_database(url)
    async with AsyncPostgresStore.from_conn_string(theirs_url, index=langgraph_index(embedder)) as pg:  # type: ignore[arg-type, unused-ignore]
        await pg.setup()
        rows["LangGraph PostgreSQL"], recall = await langgraph_rows(pg, items, truth, asked, theirs_url)
        found["LangGraph PostgreSQL"] = await langgraph_probes(pg, recall)
    rows["LangGraph PostgreSQL"]["bytes an item"] = database_bytes(theirs_url) / len(items)
    return {"rows": rows, "probes": found}


async def bare(embedder: WordLlamaEmbedder, items: list[MemoryItem], notes: list[str]) -> dict[str, float]:
    """Embedding throughput, `store` with and without an embedder, and recall in
    memory and SQLite over the bare numpy top k of the same matrix."""
    found: dict[str, float] = {}
    started = time.perf_counter()
    vectors = await embedder.embed(notes)
    found["embed texts/s"] = len(notes) / (time.perf_counter() - started)
    started = time.perf_counter()
    for at in range(0, len(notes), BATCH):
        await embedder.embed(notes[at : at + BATCH])
    found["embed in batches of 1,000, µs an item"] = (time.perf_counter() - started) / len(notes) * 1e6
    matrix = np.asarray(vectors, dtype=np.float32)
    (query,) = await embedder.embed(["how do we reach the client by mail"])
    query_vector = np.asarray(query, dtype=np.float32)

    async def baseline() -> None:
        bare_top_k(matrix, query_vector, K)

    found["bare top 10"] = await best_time(20, baseline)

    plain, recalling = InMemoryStore(), InMemoryStore(embedder=embedder)
    sample = items[:2000]
    found["store, no embedder"] = await best_time(1, _filling(plain, sample)) / len(sample)
    found["store, embedding"] = await best_time(1, _filling(recalling, sample)) / len(sample)
    await _filling(recalling, items[2000:])()
    found["memory recall 10"] = await best_time(20, lambda: recalling.recall(query, K))
    found["memory recall 10, 1% tag"] = await best_time(20, lambda: recalling.recall(query, K, tags=["rare"]))
    found["memory recall 10, 1% metadata"] = await best_time(
        20, lambda: recalling.recall(query, K, filters=ONE_PERCENT)
    )

    with tempfile.TemporaryDirectory() as folder:
        async with SQLiteMemoryStore.open(Path(folder) / "recall.db", embedder=embedder) as store:
            for at in range(0, len(items), 5000):
                await store.store_many(items[at : at + 5000])
            await store.recall(query, K)  # reads the matrix into the cache
            found["sqlite recall 10"] = await best_time(20, lambda: store.recall(query, K))
            found["sqlite recall 10, 1% tag"] = await best_time(20, lambda: store.recall(query, K, tags=["rare"]))
            found["sqlite recall 10, 1% metadata"] = await best_time(
                20, lambda: store.recall(query, K, filters=ONE_PERCENT)
            )
            found["sqlite bytes/item"] = (await store.stats()).bytes_on_disk / len(items)
    return found


def _filling(store: InMemoryStore, items: list[MemoryItem]) -> Callable[[], Awaitable[None]]:
    async def fill() -> None:
        for item in items:
            await store.store(item)

    return fill


def _cell(name: str, value: float | str) -> str:
    if isinstance(value, str):
        return value
    if name.startswith("recall@"):
        return f"{value:.3f}"
    if name.startswith("items"):
        return f"{value:.0f}"
    if name.startswith("recall k"):
        return f"{value:.2f}"
    return f"{value:,.0f}"


def table(results: dict[str, Any]) -> str:
    """The Markdown tables of the Performance page: the measures, then the probes."""
    rows, found = results["compared"]["rows"], results["compared"]["probes"]
    head = ["| Measure | " + " | ".join(STORES) + " |", "| --- |" + " --- |" * len(STORES)]
    lines = list(head)
    embed = results["bare"]["embed in batches of 1,000, µs an item"]
    lines.append("| the embedder alone, µs an item | " + " | ".join(f"{embed:,.0f}" for _ in STORES) + " |")
    lines.extend(
        f"| {name} | " + " | ".join(_cell(name, rows[s][name]) for s in STORES) + " |" for name in rows[STORES[0]]
    )
    lines += ["", "| Probe | " + " | ".join(STORES) + " |", head[1]]
    lines.extend(f"| {probe} | " + " | ".join(found[s][probe] for s in STORES) + " |" for probe in found[STORES[0]])
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--no-langgraph", action="store_true", help="only the bare measures")
    args = parser.parse_args()
    embedder = WordLlamaEmbedder()
    embedder.model()
    notes = texts(args.items)
    items = items_of(notes)
    results: dict[str, Any] = {"items": args.items, "bare": asyncio.run(bare(embedder, items, notes))}
    base = results["bare"]["bare top 10"]
    print(f"{args.items:,} items, {embedder.dimensions} dimensions")
    for name, value in results["bare"].items():
        if name.endswith(("/s", "/item", "an item")):
            print(f"  {name:<40} {value:12,.1f}")
        elif name.startswith("store"):
            print(f"  {name:<40} {value * 1e6:10.1f} µs")
        else:
            print(f"  {name:<40} {value * 1e3:10.3f} ms   {value / base:6.2f}x the bare top k")
    if not args.no_langgraph:
        with pgvector_url() as url:
            results["compared"] = asyncio.run(compared(url, embedder, items_of(notes), notes))
        print(table(results))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
