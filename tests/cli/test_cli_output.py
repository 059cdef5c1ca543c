"""Items printed as JSON lines: one line an item, valid whatever stdout can encode."""

from __future__ import annotations

import asyncio
import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from lionmem import MemoryItem
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.transfer import item_line
from lionmem.cli import main
from tests.support.cli_support import PIPED_ENV, lines_of, run_cli


def test_each_item_is_one_line_whatever_its_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    awkward = "a\nb\rc\x85d\u2028e\u2029f\x00g"
    run_cli(capsys, "put", url, awkward, "--meta", f"k={awkward}", "--tag", awkward)
    out = run_cli(capsys, "search", url)[1]
    assert out.count("\n") == 1 and len(out.splitlines()) == 1
    [item] = lines_of(out)
    assert item["content"] == item["metadata"]["k"] == item["tags"][0] == awkward


@pytest.mark.parametrize("breaking", ["\x85", "\u2028", "\u2029"], ids=["NEL", "LS", "PS"])
def test_each_character_that_ends_a_line_is_escaped_alone(breaking: str) -> None:
    line = item_line(MemoryItem(content=f"a{breaking}b"))
    assert breaking not in line and len(line.splitlines()) == 1
    assert json.loads(line)["content"] == f"a{breaking}b"


@pytest.mark.parametrize("encoding", ["ascii", "latin-1", "cp1252"])
def test_output_stays_valid_json_where_stdout_cannot_take_every_character(
    tmp_path: Path, encoding: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As on a Windows pipe, or with PYTHONIOENCODING: print() failed on "€".
    url = f"sqlite:///{tmp_path / 'n.db'}"
    text = "€ 😀 café \u2028 °"
    _, out, _ = run_cli(capsys, "put", url, text, "--meta", f"ß={text}", "--tag", text)
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding=encoding, write_through=True))
    assert main(["search", url]) == 0
    assert main(["get", url, out.strip()]) == 0
    lines = raw.getvalue().decode("ascii").splitlines()
    assert len(lines) == 2 and lines[0] == lines[1]
    item = json.loads(lines[0])
    assert item["content"] == item["metadata"]["ß"] == item["tags"][0] == text
    # Text for people shows what the encoding lacks as escapes, as stderr does.
    raw.seek(0)
    raw.truncate()
    assert main(["demo"]) == 0
    shown = raw.getvalue()
    monkeypatch.undo()
    wanted = run_cli(capsys, "demo")[1]
    assert shown == wanted.encode(encoding, "backslashreplace")
    assert (b"\\xb0" in shown) == (encoding == "ascii")


def test_an_item_prints_as_its_model_writes_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    item = MemoryItem(
        content={"text": "Rhône \u2028 é", "n": [1, -0.0, 2.5e-7, 10**30, None, True]},
        tags=["a", "b"],
        metadata={"k": {"nested": [1.5]}, "z": "", "created": 1e16},
        created_at=-0.0,
    )

    async def stored() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "n.db") as store:
            await store.store(item)

    asyncio.run(stored())
    status, out, _ = run_cli(capsys, "get", f"sqlite:///{tmp_path / 'n.db'}", str(item.id))
    assert status == 0 and out.count("\n") == 1
    printed = json.loads(out)
    assert printed == json.loads(item.model_dump_json())
    assert list(printed) == ["id", "created_at", "metadata", "content", "tags"]


def test_a_reader_that_stops_early_ends_the_output_quietly(tmp_path: Path) -> None:
    async def fill() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "many.db") as store:
            await store.store_many([MemoryItem(content="x" * 1000) for _ in range(2000)])

    asyncio.run(fill())
    reader = subprocess.Popen(
        [sys.executable, "-m", "lionmem", "search", f"sqlite:///{tmp_path / 'many.db'}", "--limit", "-1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=PIPED_ENV,
    )
    assert reader.stdout is not None and reader.stderr is not None
    assert json.loads(reader.stdout.readline())["content"] == "x" * 1000
    reader.stdout.close()  # as `| head -1` does, with 2 MB still to come
    with reader.stderr:
        assert reader.wait(timeout=60) == 1
        assert reader.stderr.read() == b""
