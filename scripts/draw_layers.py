"""Draw the layers that pyproject.toml's import-linter contract enforces, as the SVG
on the docs' Architecture page, so that the picture cannot drift from the rule.

Run: python scripts/draw_layers.py, and commit docs/assets/layers.svg with the change;
tests/project/test_architecture.py fails while the two differ.
"""

from __future__ import annotations

import sys
import tomllib
from html import escape
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DRAWING = ROOT / "docs" / "assets" / "layers.svg"

WIDTH, ROW, GAP, PAD, APART = 640, 56, 28, 16, 96


def layers() -> list[list[str]]:
    """The layers contract's layers, top first, each a list of sibling packages."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c["type"] == "layers"]
    (container,) = contract["containers"]
    return [[f"{container}.{name.strip()}" for name in layer.split("|")] for layer in contract["layers"]]


def drawing() -> str:
    rows = layers()
    height = PAD * 2 + len(rows) * ROW + (len(rows) - 1) * GAP
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
        f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="15">',
        "<title>lionmem's layers: each imports only the layers below it</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        'markerHeight="8" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>',
    ]
    inner = WIDTH - 2 * PAD
    for index, row in enumerate(rows):
        top = PAD + index * (ROW + GAP)
        width = (inner - (len(row) - 1) * APART) / len(row)
        for column, name in enumerate(row):
            left = PAD + column * (width + APART)
            parts.append(
                f'<rect x="{left:g}" y="{top}" width="{width:g}" height="{ROW}" rx="8" '
                'fill="#eef3fb" stroke="#3f6fb5" stroke-width="1.5"/>'
            )
            parts.append(
                f'<text x="{left + width / 2:g}" y="{top + ROW / 2 + 5:g}" text-anchor="middle">{escape(name)}</text>'
            )
        if len(row) > 1:
            parts.append(
                f'<text x="{WIDTH / 2:g}" y="{top + ROW / 2 + 5:g}" text-anchor="middle" '
                'fill="#a33" font-size="13">independent</text>'
            )
        if index + 1 < len(rows):
            x, y = WIDTH / 2, top + ROW
            parts.append(
                f'<line x1="{x:g}" y1="{y + 2}" x2="{x:g}" y2="{y + GAP - 4}" stroke="#555" '
                'stroke-width="1.5" marker-end="url(#arrow)"/>'
            )
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    DRAWING.write_text(drawing(), encoding="utf-8")
    print(f"wrote {DRAWING}", file=sys.stderr)
