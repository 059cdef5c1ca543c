"""How long the `lionmem` command takes, command by command, beside bare Python's start.

Run: python -m benchmarks.bench_cli_start [--runs 15]
Each command runs as a whole process, the installed `lionmem` script, on a SQLite file
of one item (a copy of it for the commands that write); bare Python is `python -c pass`
with the same interpreter. The runs of every command and of bare Python interleave, so
that a slow moment of the machine hits each alike; the median of each counts. The
target (issue 72) is `get` and `search` within 0.2 s of bare Python. `recall` loads
the offline model and, on the first run over a file written without vectors, embeds
its item: `recall, first` times that, and `model load` the model's first embedding
inside one process, without the command line. Results are written to
benchmarks/results/cli-start.json.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "cli-start.json"
ID = "6f1c2a9e-1d1b-4b7e-9a49-8a4c1f0f6a11"
COMMANDS: dict[str, list[str]] = {
    "--help": ["--help"],
    "get": ["get", "sqlite:///one.db", ID],
    "search --text": ["search", "sqlite:///one.db", "--text", "paris"],
    "search --filter": ["search", "sqlite:///one.db", "--filter", "year>=2000"],
    "put": ["put", "sqlite:///copy.db", "Lyon is on the Rhône"],
    "stats": ["stats", "sqlite:///one.db"],
    "recall": ["recall", "sqlite:///one.db", "capital city", "-k", "1"],
    "recall, first": ["recall", "sqlite:///fresh.db", "capital city", "-k", "1"],
}
_MODEL_LOAD = (
    "import asyncio, time\nfrom lionmem.embedders import WordLlamaEmbedder\nstart = time.perf_counter()\n"
    "asyncio.run(WordLlamaEmbedder().embed(['x']))\nprint(time.perf_counter() - start)"
)


def _elapsed(argv: list[str], cwd: Path) -> float:
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - start


def measure(runs: int) -> dict[str, dict[str, float]]:
    """{command: {"ms": median wall milliseconds, "over_bare_ms": the same less bare
    Python's median}}, and the model's load as `model load`."""
    lionmem = str(Path(sys.executable).with_name("lionmem"))
    times: dict[str, list[float]] = {"bare Python": [], **{name: [] for name in COMMANDS}}
    loads: list[float] = []
    with tempfile.TemporaryDirectory() as folder:
        work = Path(folder)
        put = [lionmem, "put", "sqlite:///one.db", "Paris is the capital of France", "--id", ID, "--meta", "year:=2024"]
        subprocess.run(put, cwd=work, check=True, capture_output=True)
        shutil.copy(work / "one.db", work / "unembedded.db")
        subprocess.run([lionmem, *COMMANDS["recall"]], cwd=work, check=True, capture_output=True)  # vectors made
        for _ in range(runs):
            times["bare Python"].append(_elapsed([sys.executable, "-c", "pass"], work))
            for name, argv in COMMANDS.items():
                shutil.copy(work / "one.db", work / "copy.db")
                shutil.copy(work / "unembedded.db", work / "fresh.db")
                times[name].append(_elapsed([lionmem, *argv], work))
            model = subprocess.run([sys.executable, "-c", _MODEL_LOAD], check=True, capture_output=True, text=True)
            loads.append(float(model.stdout))
    bare = statistics.median(times["bare Python"])
    results = {
        name: {"ms": statistics.median(taken) * 1e3, "over_bare_ms": (statistics.median(taken) - bare) * 1e3}
        for name, taken in times.items()
    }
    results["model load"] = {"ms": statistics.median(loads) * 1e3, "over_bare_ms": statistics.median(loads) * 1e3}
    return results


def table(results: dict[str, dict[str, float]]) -> str:
    """The Markdown table of docs/performance.md for one run."""
    lines = ["| Command | median | over bare Python |", "| --- | --- | --- |"]
    for name, row in results.items():
        over = "" if name in ("bare Python", "model load") else f"{row['over_bare_ms'] / 1e3:.2f} s"
        lines.append(f"| `{name}` | {row['ms'] / 1e3:.2f} s | {over} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    results = measure(args.runs)
    print(table(results))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
