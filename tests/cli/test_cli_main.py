"""The command line's front: the demo, help, and the module entry point."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.cli import main
from lionmem.errors import StoreClosedError


def test_demo_stores_retrieves_and_searches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "stored 4 items"
    # The demo's ids derive from its notes, so a rerun on a durable store replaces them.
    assert lines[1] == "retrieve 663d8ce3-2530-5401-a38f-262e7eebf8e2 -> 'Paris is the capital of France'"
    assert lines[2] == (
        "search {'text': 'paris'} -> ['Paris is the capital of France', 'The Seine flows through Paris']"
    )
    assert lines[3] == "  (text: a case-insensitive substring of the content)"
    # Each search is followed by the rule it shows; the last is the least obvious one.
    assert lines[-2:] == [
        "search {'limit': -3} -> ['Paris is the capital of France']",
        "  (a negative limit drops that many of the last matches, as items[:-3] does)",
    ]


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    assert "required" in capsys.readouterr().err


def test_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert (
        "KEY:=JSON any JSON value" in out
        and "{demo,put,get,search,delete,forget,export,import,copy,stats,check}" in out
    )
    assert "][" not in out and "`" not in out  # no documentation markup in a terminal


def test_module_entry_point() -> None:
    done = subprocess.run([sys.executable, "-m", "lionmem", "demo"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("stored 4 items")


def test_a_store_error_is_one_line_and_status_1_but_a_bug_keeps_its_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    assert main(["put", url, "kept"]) == 0
    capsys.readouterr()

    async def closed(store: SQLiteMemoryStore, query: MemoryQuery) -> list[MemoryItem]:
        raise StoreClosedError("closed under the command")

    monkeypatch.setattr(SQLiteMemoryStore, "search", closed)
    assert main(["search", url]) == 1
    assert capsys.readouterr().err == "python -m lionmem: error: closed under the command\n"

    async def broken(store: SQLiteMemoryStore, query: MemoryQuery) -> list[MemoryItem]:
        raise TypeError("a bug in lionmem")

    # A TypeError that no store documents for the user's data is a bug: not caught as
    # a store's refusal, so it shows where it came from.
    monkeypatch.setattr(SQLiteMemoryStore, "search", broken)
    with pytest.raises(TypeError, match="a bug in lionmem"):
        main(["search", url])


def test_an_item_the_store_refuses_is_named_with_status_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A byte that is not UTF-8 reaches Python's argv as a lone surrogate, which no
    # durable store keeps; the message names the item the command made.
    url = f"sqlite:///{tmp_path / 'n.db'}"
    item_id = "6f1c2a9e-1d1b-4b7e-9a49-8a4c1f0f6a11"
    assert main(["put", url, "caf\udce9", "--id", item_id]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"python -m lionmem: error: the store refused item {item_id}: ")
    assert "surrogate" in err
