"""The command line's front: the demo, help, and the module entry point."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lionmem.cli import main


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
