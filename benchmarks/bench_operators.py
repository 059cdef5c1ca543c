"""Range and in-set filters at 100,000 items, in all three stores, in one run.

Run: python -m benchmarks.bench_operators [--items 100000]
Starts a throwaway local server (or uses LIONMEM_TEST_POSTGRES_URL). Each store's
time is given with its ratio to the in-memory store's for the same search in the
same run, and to its own time for an equality filter as selective. Results are
written to benchmarks/results/operators.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.support import three_stores
from benchmarks.support.common import best_time, make_items
from benchmarks.support.three_stores import Results, filled, markdown_table
from lionmem import MemoryQuery
from lionmem.filters import Ge, In, Lt

RESULTS = Path(__file__).resolve().parent / "results" / "operators.json"


def searches(n: int) -> dict[str, tuple[MemoryQuery, MemoryQuery]]:
    """Each search with an operator, beside an equality filter matching about as many
    items (make_items: kind among 10, owner among 1,000)."""
    every: dict[str, Any] = {"limit": n}
    return {
        "owner in 2 of 1,000": (
            MemoryQuery(filters={"owner": In(["u42", "u43"])}, **every),
            MemoryQuery(filters={"owner": "u42"}, **every),
        ),
        "kind in 2 of 10": (
            MemoryQuery(filters={"kind": In([3, 4])}, **every),
            MemoryQuery(filters={"kind": 3}, **every),
        ),
        "kind >= 9 (10%)": (MemoryQuery(filters={"kind": Ge(9)}, **every), MemoryQuery(filters={"kind": 9}, **every)),
        "owner < u001 (0.1%)": (
            MemoryQuery(filters={"owner": Lt("u001")}, **every),
            MemoryQuery(filters={"owner": "u0"}, **every),
        ),
        "kind >= 9, limit 20": (MemoryQuery(filters={"kind": Ge(9)}), MemoryQuery(filters={"kind": 9})),
    }


async def measure(url: str, n: int, directory: Path) -> Results:
    items = make_items(n)
    out: Results = {}
    async with filled(url, items, directory) as stores:
        for name, (asked, equal) in searches(n).items():
            row = out.setdefault(name, {})
            for store_name, store in stores.items():

                async def operator(s: Any = store, q: MemoryQuery = asked) -> None:
                    await s.search(q)

                async def equality(s: Any = store, q: MemoryQuery = equal) -> None:
                    await s.search(q)

                row[f"{store_name}, ms"] = await best_time(5, operator) * 1e3
                row[f"{store_name} / equality"] = row[f"{store_name}, ms"] / (await best_time(5, equality) * 1e3)
    return out


def table(results: Results) -> str:
    """The Markdown table of docs/performance.md for one run."""
    return markdown_table(
        results,
        "Filter",
        "time, / in-memory, / equality",
        lambda row, s: (
            f"{row[f'{s}, ms']:.2f} ms, {row[f'{s}, ms'] / row['memory, ms']:.2f}x, {row[f'{s} / equality']:.2f}x"
        ),
    )


if __name__ == "__main__":
    three_stores.main(__doc__, measure, table, RESULTS)
