"""`copy`: every item into an empty store in order, checked by count and digest;
resumed after an interruption; a progress bar on a terminal only (ADR-0100)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from lionmem import MemoryItem
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.urls import open_store
from tests.support.cli_support import (
    everything,
    exactly,
    fail_store_many_at,
    fill,
    on_a_terminal,
    run_cli,
    with_namespace,
)


def _fill(url: str, count: int) -> list[MemoryItem]:
    items = [
        MemoryItem(content=f"note {n} é", tags=[f"t{n % 7}"], metadata={"n": n}, created_at=n / 3) for n in range(count)
    ]

    async def fill() -> None:
        async with SQLiteMemoryStore.open(url.removeprefix("sqlite:///")) as store:
            await store.store_many(items)

    asyncio.run(fill())
    return items


@pytest.fixture(autouse=True)
def _in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # where copy keeps its resume file


def test_copy_fills_an_empty_store_in_order_and_checks_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _fill(source, 10_000)
    status, out, err = run_cli(capsys, "copy", source, target)
    assert (status, err) == (0, "")  # no progress bar: stderr is not a terminal
    assert out.startswith("copied 10000 items; both stores hold 10000 items, sha256 ")
    assert exactly(everything(target)) == exactly(everything(source))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db", "b.db"]  # no resume file left
    status, out, err = run_cli(capsys, "copy", source, target)
    assert (status, out) == (1, "") and "the destination holds 10000 items; copy fills an empty store" in err
    # Where an interrupted copy would have left its progress, named for a run elsewhere.
    assert err.rstrip().endswith("in the directory it ran in: run it again from there")
    assert ".lionmem-copy-" in err


def test_an_interrupted_copy_goes_on_where_it_stopped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _fill(source, 2_300)  # five batches of at most 500
    store_many = SQLiteMemoryStore.store_many
    written: list[int] = []

    async def counted(store: SQLiteMemoryStore, items: Any) -> Any:
        if len(written) == 2 and fail:
            raise OSError("the connection was lost")
        written.append(len(items))
        return await store_many(store, items)

    fail = True
    monkeypatch.setattr(SQLiteMemoryStore, "store_many", counted)
    status, out, err = run_cli(capsys, "copy", source, target)
    assert (status, out) == (1, "") and "the connection was lost" in err
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".lionmem-copy-")] != []
    fail = False
    written.clear()
    progress = next(p for p in tmp_path.iterdir() if p.name.startswith(".lionmem-copy-"))
    status, out, _ = run_cli(capsys, "copy", source, target)
    resumed, copied = out.splitlines()
    assert resumed == f"resuming: 1000 items copied by an earlier run, as {progress} records"
    assert status == 0 and copied.startswith("copied 2300 items; both stores hold 2300 items")
    assert written == [500, 500, 300]  # only what the first run had not written
    assert exactly(everything(target)) == exactly(everything(source))


def test_a_copy_whose_source_changed_since_it_stopped_starts_over_and_says_what_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    items = _fill(source, 1_200)
    restore = fail_store_many_at(monkeypatch, 2, OSError("interrupted"))
    assert run_cli(capsys, "copy", source, target)[0] == 1
    restore()

    async def forget_one() -> None:
        async with open_store(source) as store:
            await store.delete(items[10].id)  # before the resume point: it moves

    asyncio.run(forget_one())
    status, out, err = run_cli(capsys, "copy", source, target)
    # Started over, by id: the item copied before it was deleted is still there.
    assert status == 1 and out.startswith("resuming: 500 items copied by an earlier run")
    assert "does not hold the source's items exactly: 1199 items" in err and "1200 items, sha256" in err
    # The difference is named: the deleted item's place in the source.
    assert f"item 11 is {items[11].id} in the source but {items[10].id} in the destination" in err
    assert err.rstrip().endswith("Empty the destination (python -m lionmem forget TARGET) and copy again")


def test_copy_from_sqlite_to_postgres(tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = f"sqlite:///{tmp_path / 'a.db'}"
    target = with_namespace(pg_url, f"copy-{uuid4().hex[:12]}")
    _fill(source, 1_234)
    status, out, _ = run_cli(capsys, "copy", source, target)
    assert status == 0 and out.startswith("copied 1234 items; both stores hold 1234 items")
    assert exactly(everything(target)) == exactly(everything(source))


def test_copy_shows_a_progress_bar_on_a_terminal(tmp_path: Path) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _fill(source, 1_500)
    done, shown = on_a_terminal(["copy", source, target], tmp_path)
    assert done.returncode == 0 and done.stdout.startswith("copied 1500 items")
    assert b"1500/1500" in shown and b"100%" in shown


def test_copy_checks_every_item_against_the_destination_before_it_writes_one(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Item 999 holds U+0000, which PostgreSQL cannot keep: the copy once wrote 500
    items, then failed at the same item on every resume. Now nothing is written, and
    the error names the item, its place and the rule."""
    source = f"sqlite:///{tmp_path / 'nul.db'}"
    items = [MemoryItem(content=f"fine {n}") for n in range(1_200)]
    refused = items[998] = MemoryItem(content="a U+0000: \x00")
    fill(source, items)
    target = with_namespace(pg_url, f"copy-{uuid4().hex[:12]}")
    status, out, err = run_cli(capsys, "copy", source, target)
    assert status == 1 and out == ""
    assert (
        f"error: the destination refuses item {refused.id}, number 999 in the source: content holds the "
        "character U+0000, which this store cannot keep; nothing was copied" in err
    )
    assert exactly(everything(target)) == []
    assert list(tmp_path.glob(".lionmem-copy-*")) == [] and list(Path.cwd().glob(".lionmem-copy-*")) == []


def test_copy_from_a_directory_it_cannot_write_in_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    _fill(source, 600)

    def read_only(path: Path, *args: Any, **kwargs: Any) -> int:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(Path, "write_text", read_only)  # as in a directory that is not writable
    status, out, err = run_cli(capsys, "copy", source, target)
    assert (status, out) == (1, "") and "Permission denied" in err and ".lionmem-copy-" in err
    monkeypatch.undo()
    assert exactly(everything(target)) == []


EXTRA = MemoryItem(content="only in the destination")


@pytest.mark.parametrize("seen", ["short", "longer"])
def test_the_first_difference_names_an_item_the_destination_lacks_or_has_more_of(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, seen: str
) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    items = _fill(source, 3)
    scan = SQLiteMemoryStore.scan

    def as_seen(store: SQLiteMemoryStore, batch_size: int = 500) -> Any:
        # The destination read back one item short, or with one more, than was written.
        async def batches() -> Any:
            async for batch in scan(store, batch_size):
                if store.path.name != "b.db":
                    yield batch
                else:
                    yield batch[:2] if seen == "short" else [*batch, EXTRA]

        return batches()

    monkeypatch.setattr(SQLiteMemoryStore, "scan", as_seen)
    status, _, err = run_cli(capsys, "copy", source, target)
    assert status == 1
    if seen == "short":
        assert f"the destination ends before item {items[2].id}, number 3 in the source" in err
    else:
        assert f"the destination holds item {EXTRA.id}, which the source does not, after the source's last" in err
