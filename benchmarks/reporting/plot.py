"""Draw the ratios of benchmarks/results/stores.json as an SVG bar chart for the docs.

Run: python -m benchmarks.reporting.plot [--size 100000]. Writes docs/assets/ratios-<size>.svg.
No plotting library: the chart is a few rectangles on a log scale.
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
COLOURS = {"sqlite": "#3b7dd8", "postgres": "#d8833b"}


class LogAxis(NamedTuple):
    """A horizontal log scale of ratios, from 10**low to 10**high across `width`."""

    left: float
    width: float
    low: float
    high: float

    def x(self, ratio: float) -> float:
        clamped = min(max(math.log10(ratio), self.low), self.high)
        return self.left + (clamped - self.low) / (self.high - self.low) * self.width

    def grid(self, top: float, height: float) -> list[str]:
        """A labelled line at each power of ten, and a dark one at 1x."""
        parts = []
        for tick in range(int(self.low), int(self.high) + 1):
            tx = self.x(10.0**tick)
            parts.append(f'<line x1="{tx:.1f}" y1="{top:g}" x2="{tx:.1f}" y2="{height - 20}" stroke="#ddd"/>')
            parts.append(f'<text x="{tx:.1f}" y="{height - 6}" text-anchor="middle">{10.0**tick:g}x</text>')
        one = self.x(1.0)
        parts.append(f'<line x1="{one:.1f}" y1="{top:g}" x2="{one:.1f}" y2="{height - 20}" stroke="#333"/>')
        return parts


def bars(
    title: str,
    ratios: dict[str, dict[str, float]],
    legend: dict[str, str],
    axis: LogAxis,
    marks: tuple[float, ...] = (),
) -> str:
    """An SVG chart of `ratios`, a row of bars for each label, one bar for each series
    of `legend` (coloured by `COLOURS`, labelled by `legend`) from 1x on `axis`, and a
    red line at each ratio of `marks`."""
    bar, gap = 9, 8
    height = 74 + len(ratios) * (len(legend) * bar + gap)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{axis.left + axis.width + 30:g}" height="{height}" '
        'font-family="sans-serif" font-size="11">',
        f'<text x="10" y="18" font-size="13" font-weight="bold">{title}</text>',
        *axis.grid(44, height),
        *(
            f'<line x1="{axis.x(mark):.1f}" y1="44" x2="{axis.x(mark):.1f}" y2="{height - 20}" stroke="#c00"/>'
            for mark in marks
        ),
    ]
    one, y = axis.x(1.0), 50
    for label, row in ratios.items():
        parts.append(f'<text x="{axis.left - 6:g}" y="{y + bar + 3}" text-anchor="end">{label}</text>')
        for series, name in legend.items():
            x0, x1 = sorted((one, axis.x(row[series])))
            parts.append(
                f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 1):.1f}" height="{bar}" '
                f'fill="{COLOURS[series]}"><title>{label}, {name}: {row[series]:.2f}x</title></rect>'
            )
            y += bar
        y += gap
    for i, (series, name) in enumerate(legend.items()):
        parts.append(f'<rect x="{10 + i * 150}" y="26" width="10" height="10" fill="{COLOURS[series]}"/>')
        parts.append(f'<text x="{24 + i * 150}" y="35">{name}</text>')
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def chart(rows: dict[str, dict[str, float]], title: str) -> str:
    """Each search's time in each durable store over the in-memory store's."""
    ratios = {n[7:]: {s: rows[n][s] / rows[n]["memory"] for s in COLOURS} for n in rows if n.startswith("search.")}
    return bars(title, ratios, {s: f"{s} / in-memory" for s in COLOURS}, LogAxis(220, 560, -2.0, 3.0))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", default="100000")
    args = parser.parse_args()
    results = json.loads((ROOT / "benchmarks" / "results" / "stores.json").read_text())
    title = f"Search time over the in-memory store at {int(args.size):,} items (log scale, left is faster)"
    out = ROOT / "docs" / "assets" / f"ratios-{args.size}.svg"
    out.write_text(chart(results[args.size], title))
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
