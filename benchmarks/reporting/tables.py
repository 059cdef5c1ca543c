"""Print the Markdown tables of docs/performance.md from benchmarks/results/stores.json.

Run: python -m benchmarks.reporting.tables. Ratios are each store's time over the in-memory
store's in the same run; below 1 means the durable store is faster.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.support.common import STALL

RESULTS = Path(__file__).resolve().parents[1] / "results" / "stores.json"
MILLION = "1000000"


def ratios(results: dict[str, dict[str, dict[str, float]]], store: str) -> str:
    """One column per size below a million: `store`'s time over the in-memory store's."""
    sizes = [n for n in results if n != MILLION]
    lines = [
        "| Operation | " + " | ".join(f"{int(n):,}" for n in sizes) + " |",
        "| --- |" + " --- |" * len(sizes),
    ]
    for name in results[sizes[-1]]:
        if name.endswith("/s") or name == STALL:
            continue
        cells = [f"{results[n][name][store] / results[n][name]['memory']:.2f}x" for n in sizes]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def absolute(rows: dict[str, dict[str, float]]) -> str:
    """Each store's own time (or rate) for one size."""
    lines = ["| Operation | in-memory | SQLite | PostgreSQL |", "| --- | --- | --- | --- |"]
    for name, row in rows.items():
        if name.endswith("/s"):
            cells = [f"{row[k]:.0f}" for k in ("memory", "sqlite", "postgres")]
        elif name.startswith(("store", "retrieve")):
            cells = [f"{row[k] * 1e6:.1f} µs" for k in ("memory", "sqlite", "postgres")]
        else:
            cells = [f"{row[k] * 1e3:.1f} ms" for k in ("memory", "sqlite", "postgres")]
        lines.append(f"| `{name}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def per_size(results: dict[str, dict[str, dict[str, float]]], name: str, scale: float, digits: int) -> str:
    """One row per size below a million: each store's value of `name`, times `scale`."""
    lines = ["| Items | in-memory | SQLite | PostgreSQL |", "| --- | --- | --- | --- |"]
    for n in (n for n in results if n != MILLION):
        row = results[n][name]
        cells = [f"{row[k] * scale:.{digits}f}" for k in ("memory", "sqlite", "postgres")]
        lines.append(f"| {int(n):,} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def tables(results: dict[str, dict[str, dict[str, float]]]) -> dict[str, str]:
    """Every table of the performance page that comes from the results, by title."""
    out = {
        "SQLite / in-memory": ratios(results, "sqlite"),
        "PostgreSQL / in-memory": ratios(results, "postgres"),
        "8 clients, searches per second": per_size(results, "8 clients, searches/s", 1, 0),
        f"{STALL} (ms)": per_size(results, STALL, 1e3, 1),
    }
    if MILLION in results:
        out["At 1,000,000 items"] = absolute(results[MILLION])
    return out


def main() -> None:
    for title, table in tables(json.loads(RESULTS.read_text())).items():
        print(f"{title}\n\n{table}\n")


if __name__ == "__main__":
    main()
