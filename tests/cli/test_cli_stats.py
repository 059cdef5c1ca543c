"""`stats`: the number of items, the size on disk, the schema version and the span
of `created_at`, for both durable stores (ADR-0100)."""

from __future__ import annotations

import re
from pathlib import Path
from uuid import uuid4

import pytest

from lionmem import MemoryItem
from lionmem.adapters.postgres import SCHEMA_VERSION as POSTGRES_VERSION
from lionmem.adapters.sqlite import SCHEMA_VERSION as SQLITE_VERSION
from tests.support.cli_support import fill, run_cli, with_namespace


def _rows(out: str) -> dict[str, str]:
    return {line[:16].rstrip(): line[16:] for line in out.splitlines()}


def test_stats_of_an_sqlite_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "m.db"
    url = f"sqlite:///{path}"
    fill(url, [MemoryItem(content="b", created_at=1767225600.25), MemoryItem(content="a", created_at=-0.5)])
    status, out, err = run_cli(capsys, "stats", url)
    assert (status, err) == (0, "")
    rows = _rows(out)
    assert list(rows) == ["items", "size on disk", "schema version", "oldest", "newest"]
    assert rows["items"] == "2"
    # Measured while the store is open, its log beside it: the adapter's tests check the sum.
    size = re.fullmatch(
        r"([\d,]+) bytes \((\d+\.\d) MiB\): the database file and its write-ahead log",
        rows["size on disk"],
    )
    assert size is not None, rows["size on disk"]
    count = int(size[1].replace(",", ""))
    assert count >= path.stat().st_size and size[2] == f"{count / 2**20:.1f}"
    assert rows["schema version"] == str(SQLITE_VERSION)
    assert rows["oldest"] == "1969-12-31 23:59:59.500000 UTC (created_at -0.5)"
    assert rows["newest"] == "2026-01-01 00:00:00.250000 UTC (created_at 1767225600.25)"


def test_stats_of_an_empty_store_and_of_times_no_datetime_can_hold(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    fill(url, [])
    status, out, _ = run_cli(capsys, "stats", url)
    assert status == 0
    assert _rows(out)["items"] == "0"
    assert _rows(out)["oldest"] == _rows(out)["newest"] == "none: the store is empty"
    fill(url, [MemoryItem(content="far", created_at=1e20), MemoryItem(content="near", created_at=5e-324)])
    status, out, _ = run_cli(capsys, "stats", url)
    assert (_rows(out)["oldest"], _rows(out)["newest"]) == (
        "1970-01-01 00:00:00.000000 UTC (created_at 5e-324)",
        "created_at 1e+20",
    )


def test_stats_creates_nothing_and_refuses_memory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "none.db"
    status, out, err = run_cli(capsys, "stats", f"sqlite:///{missing}")
    assert (status, out) == (1, "") and "this command creates none" in err
    assert not missing.exists()
    status, out, err = run_cli(capsys, "stats", "memory:")
    assert (status, out) == (1, "")
    assert err.endswith("error: stats reads a durable store; memory: holds nothing between commands\n")


def test_stats_of_a_postgres_namespace(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = with_namespace(pg_url, f"cli-{uuid4().hex[:12]}")
    other = with_namespace(pg_url, f"cli-{uuid4().hex[:12]}")
    fill(url, [MemoryItem(content=str(n), created_at=float(n)) for n in range(3)])
    fill(other, [MemoryItem(content="elsewhere", created_at=-1e9)])
    status, out, err = run_cli(capsys, "stats", url)
    assert (status, err) == (0, "")
    rows = _rows(out)
    assert rows["items"] == "3"  # this namespace's only
    assert rows["schema version"] == str(POSTGRES_VERSION)
    assert rows["oldest"] == "1970-01-01 00:00:00.000000 UTC (created_at 0.0)"
    assert rows["newest"] == "1970-01-01 00:00:02.000000 UTC (created_at 2.0)"
    assert rows["size on disk"].endswith(
        " MiB): the items, metadata values and vectors tables with their indexes, shared by every namespace"
    )
    assert int(rows["size on disk"].partition(" bytes")[0].replace(",", "")) >= 8192
