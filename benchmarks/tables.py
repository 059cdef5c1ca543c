"""Print the Markdown tables of docs/performance.md from benchmarks/results/stores.json.

Run: python -m benchmarks.tables. Ratios are each store's time over the in-memory
store's in the same run; below 1 means the durable store is faster.
"""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.common import STALL

RESULTS = Path(__file__).resolve().parent / "results" / "stores.json"
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


def main() -> None:
    results = json.loads(RESULTS.read_text())
    print("SQLite / in-memory\n\n" + ratios(results, "sqlite"))
    print("\nPostgreSQL / in-memory\n\n" + ratios(results, "postgres"))
    for n in (n for n in results if n != MILLION):
        row = results[n]["8 clients, searches/s"]
        print(f"\n8 clients at {int(n):,}: " + ", ".join(f"{k} {v:.0f}/s" for k, v in row.items()))
    sizes = [n for n in results if n != MILLION and STALL in results[n]]
    print(f"\n{STALL} (ms)\n\n| Items | in-memory | SQLite | PostgreSQL |\n| --- | --- | --- | --- |")
    for n in sizes:
        row = results[n][STALL]
        print(f"| {int(n):,} | " + " | ".join(f"{row[k] * 1e3:.1f}" for k in ("memory", "sqlite", "postgres")) + " |")
    if MILLION in results:
        print("\nAt 1,000,000 items\n\n" + absolute(results[MILLION]))


if __name__ == "__main__":
    main()
