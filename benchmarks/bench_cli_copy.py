"""`python -m lionmem copy` from SQLite to PostgreSQL: its time, its rate beside each
store's bulk load, and its peak memory, all measured in one run.

Run: python -m benchmarks.bench_cli_copy [--items 1000000]
Starts a throwaway local server (or uses LIONMEM_TEST_POSTGRES_URL).

Each store's bulk load is `store_many` of the same items in lists of 5,000, timed
without making the items. The copy runs as the command line runs it, in a process
of its own, which reports its peak resident memory (VmHWM); the growth reported is
that peak less the peak of the same command copying one item, measured just before. Results are written to benchmarks/results/copy.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.support.common import make_items
from lionmem import MemoryItem
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.support.cli_support import with_namespace
from tests.support.pg_server import fresh_database, postgres_url

RESULTS = Path(__file__).resolve().parent / "results"
CHUNK = 5000
RATE_LIMIT = 1.5
"""The copy may take at most this many times the slower store's bulk load."""
GROWTH_LIMIT = 200 * 2**20
"""Peak resident memory the copy may add to the command's own."""


def chunks(n: int) -> Iterator[list[MemoryItem]]:
    """`n` items, made `CHUNK` at a time, the same ones on every call."""
    for first in range(0, n, CHUNK):
        yield make_items(min(CHUNK, n - first), seed=first)


async def bulk_load(store: SQLiteMemoryStore | PostgresMemoryStore, n: int) -> float:
    """Seconds `store_many` takes to write `n` items, making them not counted."""
    spent = 0.0
    for chunk in chunks(n):
        start = time.perf_counter()
        await store.store_many(chunk)
        spent += time.perf_counter() - start
    return spent


# Runs the command line as `python -m lionmem` does, then reports the process's peak
# resident memory. VmHWM is that of the program exec() started; ru_maxrss would also
# count the benchmark's own memory, which the child has between fork() and exec().
_MEASURED = """
import atexit, runpy, sys

def report():
    with open("/proc/self/status") as status:
        peak = next(line for line in status if line.startswith("VmHWM:"))
    sys.stderr.write("peak " + peak.split()[1] + "\\n")

atexit.register(report)
sys.argv[0] = "lionmem"
runpy.run_module("lionmem", run_name="__main__", alter_sys=True)
"""


def copy(source: Path, target: str, directory: Path) -> tuple[float, int, str]:
    """Run `copy` in a process of its own: its seconds, its peak RSS in bytes, its output."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _MEASURED, "copy", f"sqlite:///{source}", target],
        cwd=directory,
        capture_output=True,
        text=True,
        check=False,
    )
    elapsed = time.perf_counter() - start
    *errors, peak = done.stderr.strip().splitlines()
    if done.returncode != 0:
        raise SystemExit(f"copy failed ({done.returncode}): {' '.join(errors)}")
    return elapsed, int(peak.removeprefix("peak ")) * 1024, done.stdout.strip()


async def loads(url: str, n: int, directory: Path) -> dict[str, float]:
    async with SQLiteMemoryStore.open(directory / "source.db") as sqlite:
        sqlite_load = await bulk_load(sqlite, n)
    async with PostgresMemoryStore.open(url, namespace="bulk-load") as pg:
        pg_load = await bulk_load(pg, n)
    async with SQLiteMemoryStore.open(directory / "one.db") as one:
        await one.store_many(make_items(1))
    return {"sqlite": sqlite_load, "postgres": pg_load}


def measure(url: str, n: int, directory: Path) -> dict[str, Any]:
    load = asyncio.run(loads(url, n, directory))
    _, baseline, _ = copy(directory / "one.db", with_namespace(url, "one"), directory)
    seconds, peak, said = copy(directory / "source.db", with_namespace(url, "copied"), directory)
    slower = max(load.values())
    return {
        "items": n,
        "bulk load, s": load,
        "copy, s": seconds,
        "copy, items/s": n / seconds,
        "copy / slower bulk load": seconds / slower,
        "copy / each bulk load": {store: seconds / load[store] for store in load},
        "peak RSS copying 1 item, MiB": baseline / 2**20,
        "peak RSS copying, MiB": peak / 2**20,
        "peak RSS growth, MiB": (peak - baseline) / 2**20,
        "within rate": seconds / slower <= RATE_LIMIT,
        "within memory": peak - baseline < GROWTH_LIMIT,
        "copy said": said,
    }


def table(report: dict[str, Any]) -> str:
    """The Markdown table of docs/performance.md for one run's `report`."""
    load = report["bulk load, s"]
    each = report["copy / each bulk load"]
    rows = [
        ("Items", f"{report['items']:,}"),
        ("SQLite bulk load", f"{load['sqlite']:.0f} s"),
        ("PostgreSQL bulk load", f"{load['postgres']:.0f} s"),
        (
            "`copy`, SQLite to PostgreSQL, checked",
            f"{report['copy, s']:.0f} s ({report['copy, items/s']:,.0f} items/s)",
        ),
        ("`copy` / the slower bulk load", f"{report['copy / slower bulk load']:.2f}x (target: at most {RATE_LIMIT}x)"),
        ("`copy` / SQLite's, PostgreSQL's bulk load", f"{each['sqlite']:.2f}x, {each['postgres']:.2f}x"),
        ("Peak memory copying 1 item", f"{report['peak RSS copying 1 item, MiB']:.0f} MiB"),
        ("Peak memory copying them all", f"{report['peak RSS copying, MiB']:.0f} MiB"),
        ("Growth", f"{report['peak RSS growth, MiB']:.0f} MiB (target: under {GROWTH_LIMIT // 2**20} MiB)"),
    ]
    return "\n".join(["| Measure | Value |", "| --- | --- |", *(f"| {name} | {value} |" for name, value in rows)])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--items", type=int, default=1_000_000)
    args = parser.parse_args()
    with postgres_url() as server, tempfile.TemporaryDirectory() as directory:
        report = measure(fresh_database(server), args.items, Path(directory))
    print(table(report))
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"copy-{args.items}.json").write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
