"""lionmem's durable stores beside LangGraph's, on one workload, in one run.

Run: python -m benchmarks.bench_langgraph [--items 100000]
Needs LangGraph's stores (the test extra installs them), imported by the measures
alone, so that the page's tables can be checked without them. Starts a throwaway local
server (or uses LIONMEM_TEST_POSTGRES_URL). Each measure is given for both sides,
with lionmem's over LangGraph's; then the semantic probes, where LangGraph's answer
is compared with the reference rule's. Results go to benchmarks/results/langgraph.json.
"""

from __future__ import annotations

import argparse
import asyncio
import html
import json
import sqlite3
import sys
import tempfile
import time
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

from benchmarks.reporting.plot import LogAxis
from benchmarks.support.common import make_items, median_time
from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.pg_server import fresh_database, postgres_url

RESULTS = Path(__file__).resolve().parent / "results" / "langgraph.json"
CHART = Path(__file__).resolve().parent.parent / "docs" / "assets" / "langgraph.svg"
NAMESPACE = ("bench",)
BATCH = 1000
SINGLES = 500
Results = dict[str, dict[str, float]]


def value_of(item: MemoryItem) -> dict[str, Any]:
    """The item as a LangGraph value: its metadata's keys at the top, where
    LangGraph's filters look, beside its content and tags."""
    return {**item.metadata, "content": item.content, "tags": item.tags}


def sqlite_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


async def measure_sqlite(items: list[MemoryItem], singles: list[MemoryItem], directory: Path) -> Results:
    from langgraph.store.base import PutOp
    from langgraph.store.sqlite import SqliteStore

    out: Results = {}
    more_singles = make_items(SINGLES, seed=98)
    ours_path, theirs_path = directory / "lionmem.db", directory / "langgraph.db"
    query = MemoryQuery(filters={"kind": 3})
    async with SQLiteMemoryStore.open(ours_path) as ours:
        start = time.perf_counter()
        for at in range(0, len(items), BATCH):
            await ours.store_many(items[at : at + BATCH])
        load = (time.perf_counter() - start) / len(items)
        await ours.optimize()
        write = await median_time([partial(ours.store, i) for i in singles])
        unsynced = await median_time([partial(ours.store, i) for i in more_singles])  # lionmem's default: WAL, NORMAL
        read = await median_time([partial(ours.retrieve, i.id) for i in singles])
        search = await median_time([partial(ours.search, query)] * 50)
    ours_bytes = sqlite_bytes(ours_path)
    with SqliteStore.from_conn_string(str(theirs_path)) as theirs:
        theirs.setup()
        start = time.perf_counter()
        for at in range(0, len(items), BATCH):
            theirs.batch([PutOp(NAMESPACE, str(i.id), value_of(i)) for i in items[at : at + BATCH]])
        their_load = (time.perf_counter() - start) / len(items)

        async def put(i: MemoryItem) -> None:
            theirs.put(NAMESPACE, str(i.id), value_of(i))

        async def get(i: MemoryItem) -> None:
            theirs.get(NAMESPACE, str(i.id))

        async def find() -> None:
            theirs.search(NAMESPACE, filter={"kind": 3}, limit=20)

        their_write = await median_time([partial(put, i) for i in singles])
        their_read = await median_time([partial(get, i) for i in singles])
        their_search = await median_time([find] * 50)
        theirs.conn.execute("PRAGMA journal_mode = WAL")
        theirs.conn.execute("PRAGMA synchronous = NORMAL")
        their_unsynced = await median_time([partial(put, i) for i in more_singles])
    with sqlite3.connect(theirs_path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    their_bytes = sqlite_bytes(theirs_path)
    for name, mine, their in (
        ("bulk load, µs an item", load * 1e6, their_load * 1e6),
        ("single write, median µs", write * 1e6, their_write * 1e6),
        ("single write, both on WAL and NORMAL, median µs", unsynced * 1e6, their_unsynced * 1e6),
        ("retrieve, median µs", read * 1e6, their_read * 1e6),
        ("filter search, limit 20, median µs", search * 1e6, their_search * 1e6),
        ("file, MB", ours_bytes / 1e6, their_bytes / 1e6),
    ):
        out[f"SQLite: {name}"] = {"lionmem": mine, "langgraph": their}
    return out


def analyze(url: str) -> None:
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE")


async def measure_postgres(items: list[MemoryItem], singles: list[MemoryItem], server: str) -> Results:
    from langgraph.store.base import PutOp
    from langgraph.store.postgres import AsyncPostgresStore

    out: Results = {}
    ours_url, theirs_url = fresh_database(server), fresh_database(server)
    query = MemoryQuery(filters={"kind": 3})
    async with PostgresMemoryStore.open(ours_url, namespace="bench") as ours:
        start = time.perf_counter()
        for at in range(0, len(items), BATCH):
            await ours.store_many(items[at : at + BATCH])
        load = (time.perf_counter() - start) / len(items)
        analyze(ours_url)  # what autovacuum does soon after a load, as ADR-0097 asks
        write = await median_time([partial(ours.store, i) for i in singles])
        read = await median_time([partial(ours.retrieve, i.id) for i in singles])
        search = await median_time([partial(ours.search, query)] * 50)
    async with AsyncPostgresStore.from_conn_string(theirs_url) as theirs:
        await theirs.setup()
        start = time.perf_counter()
        for at in range(0, len(items), BATCH):
            await theirs.abatch([PutOp(NAMESPACE, str(i.id), value_of(i)) for i in items[at : at + BATCH]])
        their_load = (time.perf_counter() - start) / len(items)
        analyze(theirs_url)
        their_write = await median_time([partial(theirs.aput, NAMESPACE, str(i.id), value_of(i)) for i in singles])
        their_read = await median_time([partial(theirs.aget, NAMESPACE, str(i.id)) for i in singles])
        their_search = await median_time([partial(theirs.asearch, NAMESPACE, filter={"kind": 3}, limit=20)] * 50)
    sizes = []
    for url in (ours_url, theirs_url):
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("VACUUM ANALYZE")
            row = conn.execute(
                "SELECT sum(pg_total_relation_size(c.oid)) FROM pg_class AS c"
                " JOIN pg_namespace AS n ON n.oid = c.relnamespace"
                " WHERE n.nspname = 'public' AND c.relkind IN ('r', 'm')"
            ).fetchone()
            sizes.append(int(row[0]) if row and row[0] is not None else 0)
    for name, mine, their in (
        ("bulk load, µs an item", load * 1e6, their_load * 1e6),
        ("single write, median µs", write * 1e6, their_write * 1e6),
        ("retrieve, median µs", read * 1e6, their_read * 1e6),
        ("filter search, limit 20, median µs", search * 1e6, their_search * 1e6),
        ("disk, MB", sizes[0] / 1e6, sizes[1] / 1e6),
    ):
        out[f"PostgreSQL: {name}"] = {"lionmem": mine, "langgraph": their}
    return out


PROBES: dict[str, tuple[list[dict[str, Any]], dict[str, Any]]] = {
    "`True == 1`": ([{"legs": 1}, {"legs": True}, {"legs": 2}], {"legs": 1}),
    "`None` matches a missing key": ([{"a": 1}, {}, {"a": None}, {"b": 2}], {"a": None}),
    "a dotted key is one key": ([{"a.b": 1}, {"a": {"b": 1}}], {"a.b": 1}),
    "a key with a space": ([{"a b": 1}, {"a": 1}], {"a b": 1}),
    "`2**53 + 1` is exact": ([{"n": 2**53}, {"n": 2**53 + 1}], {"n": 2**53 + 1}),
}
"""Each probe: the metadata of the items stored in order, and the filter asked."""


async def reference_answer(metadata: list[dict[str, Any]], filters: dict[str, Any]) -> list[int]:
    store = InMemoryStore()
    items = [MemoryItem(content=n, metadata=m) for n, m in enumerate(metadata)]
    for item in items:
        await store.store(item)
    return [i.content for i in await store.search(MemoryQuery(filters=filters, limit=100))]


def langgraph_answer(store: Any, metadata: list[dict[str, Any]], filters: dict[str, Any], probe: str) -> Any:
    namespace = ("probe", str(abs(hash(probe))))
    for n, m in enumerate(metadata):
        store.put(namespace, f"k{n}", m)
    try:
        found = store.search(namespace, filter=filters, limit=100)
    except Exception as exc:  # a probe may make a store raise: that is its answer
        return f"raises {type(exc).__name__}"
    return sorted(int(r.key[1:]) for r in found)


async def order_after_replace(store: Any) -> list[str]:
    namespace = ("probe", "order")
    for key in ("a", "b", "c"):
        store.put(namespace, key, {"v": 1})
    store.put(namespace, "a", {"v": 2})
    return [r.key for r in store.search(namespace, limit=10)]


async def probes(server: str, directory: Path) -> dict[str, dict[str, str]]:
    from langgraph.store.postgres import PostgresStore
    from langgraph.store.sqlite import SqliteStore

    out: dict[str, dict[str, str]] = {}
    with (
        SqliteStore.from_conn_string(str(directory / "probes.db")) as sqlite_store,
        PostgresStore.from_conn_string(fresh_database(server)) as pg_store,
    ):
        sqlite_store.setup()
        pg_store.setup()
        for probe, (metadata, filters) in PROBES.items():
            want = await reference_answer(metadata, filters)
            row = {"reference": str(want)}
            for name, store in (("LangGraph SQLite", sqlite_store), ("LangGraph PostgreSQL", pg_store)):
                got = langgraph_answer(store, metadata, filters, probe)
                row[name] = "agrees" if got == want else f"{got}"
            out[probe] = row
        row = {"reference": "['a', 'b', 'c']"}
        for name, store in (("LangGraph SQLite", sqlite_store), ("LangGraph PostgreSQL", pg_store)):
            got = await order_after_replace(store)
            row[name] = "agrees" if got == ["a", "b", "c"] else str(got)
        out["order after a replace"] = row
    return out


def table(results: dict[str, Any]) -> str:
    """The Markdown tables of the Performance page."""
    lines = ["| Measure | lionmem | LangGraph | lionmem / LangGraph |", "| --- | --- | --- | --- |"]
    for name, row in results["measures"].items():
        lines.append(
            f"| {name} | {row['lionmem']:,.1f} | {row['langgraph']:,.1f} | {row['lionmem'] / row['langgraph']:.3g}x |"
        )
    lines += ["", "| Probe | reference | LangGraph SQLite | LangGraph PostgreSQL |", "| --- | --- | --- | --- |"]
    for probe, row in results["probes"].items():
        lines.append(f"| {probe} | {row['reference']} | {row['LangGraph SQLite']} | {row['LangGraph PostgreSQL']} |")
    return "\n".join(lines) + "\n"


HOME_ROWS = {
    "Filter search, limit 20": (
        "SQLite: filter search, limit 20, median µs",
        "PostgreSQL: filter search, limit 20, median µs",
    ),
    "Retrieve by id": ("SQLite: retrieve, median µs", "PostgreSQL: retrieve, median µs"),
    "Single write": ("SQLite: single write, median µs", "PostgreSQL: single write, median µs"),
    "Bulk load, an item": ("SQLite: bulk load, µs an item", "PostgreSQL: bulk load, µs an item"),
}
HOME_SIZES = ("SQLite: file, MB", "PostgreSQL: disk, MB")


def home_table(results: dict[str, Any]) -> str:
    """The home page's comparison: the same run's measures, SQLite / PostgreSQL."""
    measures = results["measures"]

    def pair(names: tuple[str, str], side: str, unit: str, spec: str) -> str:
        return " / ".join(f"{measures[name][side]:{spec}}" for name in names) + f" {unit}"

    lines = [
        f"| {results['items']:,} items, SQLite / PostgreSQL | lionmem | LangGraph's stores |",
        "| --- | --- | --- |",
    ]
    for label, names in HOME_ROWS.items():
        lines.append(f"| {label} | {pair(names, 'lionmem', 'µs', ',.0f')} | {pair(names, 'langgraph', 'µs', ',.0f')} |")
    lines.append(
        f"| Size | {pair(HOME_SIZES, 'lionmem', 'MB', '.1f')} | {pair(HOME_SIZES, 'langgraph', 'MB', '.1f')} |"
    )
    probes = results["probes"]
    differ = sum(row["LangGraph SQLite"] != row["LangGraph PostgreSQL"] for row in probes.values())
    lines.append(
        "| One filter, asked of the SQLite and the PostgreSQL store | one answer, the reference rule's "
        f"| two answers on {differ} of {len(probes)} probes |"
    )
    return "\n".join(lines) + "\n"


def chart(results: dict[str, Any]) -> str:
    """lionmem's time or size over LangGraph's for each measure, as an SVG bar chart
    on a log scale (0.01x to 100x): a bar left of the line is lionmem ahead."""
    rows = results["measures"]
    low, high = -2.0, 2.0
    left, width, bar, gap = 300, 420, 14, 8
    height = 74 + len(rows) * (bar + gap)

    axis = LogAxis(left, width, low, high)
    x = axis.x
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + width + 30}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="10" y="18" font-size="13" font-weight="bold">lionmem / LangGraph, '
        f"{results['items']:,} items (left of 1x: lionmem ahead)</text>",
        *axis.grid(34, height),
    ]
    one = x(1.0)
    y = 40
    for name, row in rows.items():
        ratio = row["lionmem"] / row["langgraph"]
        x0, x1 = sorted((one, x(ratio)))
        colour = "#3b7dd8" if name.startswith("SQLite") else "#d8833b"
        parts.append(f'<text x="{left - 6}" y="{y + bar - 3}" text-anchor="end">{html.escape(name)}</text>')
        parts.append(
            f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{bar}" fill="{colour}">'
            f"<title>{html.escape(name)}: {ratio:.2f}x</title></rect>"
        )
        y += bar + gap
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


async def measure(server: str, n: int, directory: Path) -> dict[str, Any]:
    items, singles = make_items(n), make_items(SINGLES, seed=99)
    measures = {**await measure_sqlite(items, singles, directory), **await measure_postgres(items, singles, server)}
    return {"items": n, "measures": measures, "probes": await probes(server, directory)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=100_000)
    args = parser.parse_args()
    with postgres_url() as server, tempfile.TemporaryDirectory() as directory:
        results = asyncio.run(measure(server, args.items, Path(directory)))
    print(table(results))
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")
    CHART.write_text(chart(results), encoding="utf-8")


if __name__ == "__main__":
    main()
