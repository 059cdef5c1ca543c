"""Progress on the long commands: a bar on stderr when it is a terminal, nothing
when it is a pipe; `recall` says when it embeds stored items."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lionmem import MemoryItem
from tests.support.cli_support import PIPED_ENV, on_a_terminal


def _filled(tmp_path: Path, count: int) -> str:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    lines = "".join(MemoryItem(content=f"note {n}").model_dump_json() + "\n" for n in range(count))
    done = subprocess.run(
        [sys.executable, "-m", "lionmem", "put", url, "-"], input=lines, capture_output=True, text=True, check=True
    )
    assert len(done.stdout.splitlines()) == count
    return url


def test_export_and_import_show_a_bar_on_a_terminal(tmp_path: Path) -> None:
    url = _filled(tmp_path, 1_500)
    done, shown = on_a_terminal(["export", url, "-o", "out.jsonl"], tmp_path)
    assert done.returncode == 0 and done.stdout == "exported 1500 items\n"
    assert b"1500/1500" in shown and b"100%" in shown
    target = f"sqlite:///{tmp_path / 'b.db'}"
    done, shown = on_a_terminal(["import", target, "out.jsonl"], tmp_path)
    assert done.returncode == 0 and done.stdout == "imported 1500 items\n"
    assert b"1500/1500" in shown and b"100%" in shown
    # An export to stdout counts what a search selects.
    done, shown = on_a_terminal(["export", url, "--text", "note 14"], tmp_path)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1 + 111 and b"111/111" in shown


def test_piped_the_long_commands_print_only_their_own_lines(tmp_path: Path) -> None:
    url = _filled(tmp_path, 600)
    for argv, err in [
        (["export", url, "-o", "out.jsonl"], ""),
        (["import", f"sqlite:///{tmp_path / 'b.db'}", "out.jsonl"], ""),
        (["export", url, "--limit", "3"], "exported 3 items\n"),
    ]:
        done = subprocess.run(
            [sys.executable, "-m", "lionmem", *argv], capture_output=True, text=True, cwd=tmp_path, env=PIPED_ENV
        )
        assert (done.returncode, done.stderr) == (0, err), argv


def test_recall_says_it_embeds_the_items_without_vectors_with_a_bar_on_a_terminal(tmp_path: Path) -> None:
    url = _filled(tmp_path, 700)
    done, shown = on_a_terminal(["recall", url, "note 5", "-k", "1"], tmp_path)
    assert done.returncode == 0 and len(done.stdout.splitlines()) == 1
    text = shown.decode()
    assert "python -m lionmem: embedding the items that have no vector for this model yet" in text
    assert "embedding: " in text and "700item" in text and "python -m lionmem: embedded 700 items" in text
    done, shown = on_a_terminal(["recall", url, "note 5", "-k", "1"], tmp_path)
    assert done.returncode == 0 and shown == b""
