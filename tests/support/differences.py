"""A page of differences from another library, and the side-by-side tests of its rows.

Each test is registered under its row's name; a failure names the row and the page, so
that when the other library changes a behaviour the page states, the row to revise is
in the message. `check_page` holds the page and the tests to the same rows.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROW_NAME = re.compile(r"^\| \[\]\(\)\{#([a-z-]+)\} `([a-z-]+)` \|")


class Ledger:
    """The rows of one page, `docs/<page>`, and the test of each."""

    def __init__(self, page: str) -> None:
        self.page = page
        self.path = Path(__file__).parents[2] / "docs" / page
        self.rows: dict[str, Callable[..., None]] = {}

    def row(self, name: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
        """Register a test as the check of row `name`, and name the row when it fails."""

        def register(test: Callable[..., None]) -> Callable[..., None]:
            @functools.wraps(test)
            def named(*args: Any, **kwargs: Any) -> None:
                try:
                    test(*args, **kwargs)
                except (Exception, pytest.fail.Exception) as exc:
                    raise AssertionError(
                        f"row {name!r} of docs/{self.page} no longer holds; revise the row or the code it describes: {exc}"
                    ) from exc

            assert name not in self.rows, f"two tests for row {name!r}"
            self.rows[name] = named
            return named

        return register

    def page_rows(self) -> dict[str, str]:
        """The page's table rows by name, each the whole line."""
        rows: dict[str, str] = {}
        for line in self.path.read_text(encoding="utf-8").splitlines():
            found = ROW_NAME.match(line)
            if found:
                assert found[1] == found[2], f"the row {found[1]!r} has the anchor {found[2]!r}"
                assert found[1] not in rows, f"the page has two rows {found[1]!r}"
                rows[found[1]] = line
        return rows

    def check_page(self) -> None:
        """The page's rows are the tests', each with six cells, a status, a decision and
        a version."""
        rows = self.page_rows()
        assert sorted(rows) == sorted(self.rows), "a row without a test, or a test without a row"
        for name, line in rows.items():
            cells = [cell.strip() for cell in line.strip("|").split(" | ")]
            assert len(cells) == 6, f"row {name!r} has {len(cells)} cells, not 6"
            status, why, since = cells[3], cells[4], cells[5]
            assert status in {"matched", "declared"}, f"row {name!r}: status {status!r}"
            assert re.search(r"\]\[adr-0\d{3}[a-z0-9-]*\]", why), f"row {name!r} links no decision"
            assert re.fullmatch(r"\d+\.\d+\.\d+", since), f"row {name!r}: since {since!r}"
