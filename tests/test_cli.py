"""The command line."""

from __future__ import annotations

import subprocess
import sys

import pytest

from lionmem.cli import main


def test_demo_stores_retrieves_and_searches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "stored 4 items"
    assert lines[1].endswith("-> 'Paris is the capital of France'")
    assert lines[2] == (
        "search {'text': 'paris'} -> "
        "['Paris is the capital of France', 'The Seine flows through Paris']"
    )
    assert lines[-1] == "search {'limit': -3} -> ['Paris is the capital of France']"


def test_a_command_is_required(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([])
    assert exit_info.value.code == 2
    assert "required" in capsys.readouterr().err


def test_module_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lionmem", "demo"], capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("stored 4 items")
