"""The first pages a reader meets: the home page's examples fit its code column, and
the getting-started page's run pasted, in order, into `python -m asyncio`."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[2] / "docs" / "getting-started.md"


def test_every_example_pastes_into_the_asyncio_repl() -> None:
    blocks = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert len(blocks) >= 3
    # A blank line ends a compound statement in the REPL: after each block, as a
    # reader's paste leaves one.
    pasted = "".join(block + "\n" for block in blocks) + "print('every example ran')\n"
    done = subprocess.run(
        [sys.executable, "-m", "asyncio"], input=pasted, capture_output=True, text=True, timeout=120, check=False
    )
    assert "Traceback" not in done.stderr and "Error" not in done.stderr, done.stderr
    assert "every example ran" in done.stdout


CODE_COLUMN = 88
"""The characters a code block shows on the site's home page without scrolling."""


def test_the_home_pages_code_fits_its_column() -> None:
    home = (PAGE.parent / "index.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", home, flags=re.DOTALL)
    assert blocks
    assert [line for block in blocks for line in block.splitlines() if len(line) > CODE_COLUMN] == []
