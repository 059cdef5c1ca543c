"""What importing lionmem costs, against importing pydantic and building one model.

Run: python -m benchmarks.bench_import [--runs 15]
Each statement runs in a fresh interpreter, timed from inside it, and the runs of all
statements interleave so that a slow moment of the machine hits each alike. The
baseline, measured in the same run, is what any pydantic program pays: importing
pydantic and building its first model (which also loads pydantic's plugin machinery).
Each lionmem row is timed after that baseline's work, in the same interpreter, so its
ratio is what lionmem adds on top. The command line is timed as a whole process,
against a process that only runs the baseline.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

BASELINE = "import pydantic\nclass First(pydantic.BaseModel):\n    a: int = 0"

STATEMENTS = {
    "import lionmem": "import lionmem",
    "the memory contract": "from lionmem import MemoryItem, MemoryQuery, InMemoryStore",
    "the whole core": "from lionmem import MemoryItem, MemoryQuery, InMemoryStore, Branch, Session",
    "the SQLite adapter": "from lionmem.adapters.sqlite import SQLiteMemoryStore",
}

_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
"""Lets the first run write bytecode caches, so that no run compiles source."""

_TIMED = """\
import time
start = time.perf_counter()
{baseline}
middle = time.perf_counter()
{statement}
print(middle - start, time.perf_counter() - middle)
"""


def timed_in_process(statement: str) -> tuple[float, float]:
    """Seconds of the baseline's work, then of `statement` after it, in a fresh
    interpreter."""
    code = _TIMED.format(baseline=BASELINE, statement=statement)
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True, env=_ENV)
    baseline, took = map(float, out.stdout.split())
    return baseline, took


def timed_process(args: list[str]) -> float:
    """Wall seconds of a whole interpreter process running `args`."""
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, capture_output=True, env=_ENV)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    timed_in_process(STATEMENTS["the SQLite adapter"])  # compile every module once
    timed_process(["-m", "lionmem", "--help"])
    runs: dict[str, list[float]] = {name: [] for name in ("baseline", *STATEMENTS)}
    processes: dict[str, list[float]] = {"baseline process": [], "python -m lionmem --help": []}
    for _ in range(args.runs):
        for name, statement in STATEMENTS.items():
            baseline, took = timed_in_process(statement)
            runs["baseline"].append(baseline)
            runs[name].append(took)
        processes["baseline process"].append(timed_process(["-c", BASELINE]))
        processes["python -m lionmem --help"].append(timed_process(["-m", "lionmem", "--help"]))
    base = statistics.median(runs["baseline"])
    print(f"median of {args.runs} runs                          ms   ratio to baseline")
    for name, times in runs.items():
        took = statistics.median(times)
        print(f"  {name:<40} {took * 1e3:6.1f}   {took / base:5.2f}x")
    base_process = statistics.median(processes["baseline process"])
    for name, times in processes.items():
        took = statistics.median(times)
        print(f"  {name:<40} {took * 1e3:6.1f}   {took / base_process:5.2f}x")


if __name__ == "__main__":
    main()
