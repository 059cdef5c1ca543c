"""`search_newest` beside `search` with the same limit, in all three stores, in one run.

Run: python -m benchmarks.bench_recent [--items 100000]
Starts a throwaway local server (or uses LIONMEM_TEST_POSTGRES_URL). Each ratio is a
store's `search_newest(query)` time over its own `search(query)` time, both with the
default limit of 20, best of five; the baseline is measured in the same run on the
same store. Results are written to benchmarks/results/recent.json.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from benchmarks.support import three_stores
from benchmarks.support.common import best_time, make_items, queries
from benchmarks.support.three_stores import Results, filled, markdown_table
from lionmem import MemoryQuery

RESULTS = Path(__file__).resolve().parent / "results" / "recent.json"
NAMES = ["all", "text", "tags", "tags.broad", "filter", "filter.broad", "combined"]
"""The searches compared: every kind `benchmarks.support.common.queries` has but the miss,
which reads everything either way."""


async def measure(url: str, n: int, directory: Path) -> Results:
    items = make_items(n)
    asked = {name: queries(n)[f"search.{name}[20]"] for name in NAMES}
    out: Results = {}
    async with filled(url, items, directory) as stores:
        for name, query in asked.items():
            for store_name, store in stores.items():

                async def oldest(s: Any = store, q: MemoryQuery = query) -> None:
                    await s.search(q)

                async def newest(s: Any = store, q: MemoryQuery = query) -> None:
                    await s.search_newest(q)

                searched = await best_time(5, oldest)
                out.setdefault(name, {})[f"{store_name} search, ms"] = searched * 1e3
                out[name][f"{store_name} newest / search"] = await best_time(5, newest) / searched
    return out


def table(results: Results) -> str:
    """The Markdown table of docs/performance.md for one run."""
    return markdown_table(
        results,
        "Search, limit 20",
        "`search`, newest/search",
        lambda row, s: f"{row[f'{s} search, ms']:.2f} ms, {row[f'{s} newest / search']:.2f}x",
    )


if __name__ == "__main__":
    three_stores.main(__doc__, measure, table, RESULTS)
