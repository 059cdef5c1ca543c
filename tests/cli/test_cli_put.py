"""`put` of several items, from arguments or JSON lines on stdin, and `import
--no-header` of the items `get` and `search` print: each all or nothing, and input
refused by line before a store opens."""

from __future__ import annotations

import io
import json
from pathlib import Path
from uuid import UUID, uuid4

import pytest

from lionmem import MemoryItem
from tests.cli.test_cli_transfer import AWKWARD
from tests.support.cli_support import everything, exactly, fill, lines_of, run_cli, with_namespace


def _stdin(monkeypatch: pytest.MonkeyPatch, text: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(text)))


def test_put_stores_an_item_for_each_content_in_one_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    status, out, err = run_cli(capsys, "put", url, "one", "two", "three", "--tag", "t", "--meta", "n:=1")
    ids = [UUID(line) for line in out.splitlines()]
    assert (status, err, len(ids)) == (0, "", 3)
    stored = everything(url)
    assert [(i.id, i.content, i.tags, i.metadata) for i in stored] == [
        (item_id, content, ["t"], {"n": 1}) for item_id, content in zip(ids, ["one", "two", "three"], strict=True)
    ]
    status, out, _ = run_cli(capsys, "put", url, "[1, 2]", "null", "--json")
    assert status == 0 and [i.content for i in everything(url)[3:]] == [[1, 2], None]


def test_several_contents_are_stored_all_or_none(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = with_namespace(pg_url, f"put-{uuid4().hex[:12]}")
    status, out, err = run_cli(capsys, "put", url, "fine", "a U+0000: \x00")
    assert (status, out) == (1, "")
    assert "the store refused a batch of 2 items from item " in err and "U+0000" in err
    assert everything(url) == []


def test_put_dash_reads_items_as_json_lines_from_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    given = MemoryItem(id=UUID(int=7), content={"k": [1]}, tags=["a"], metadata={"x": 2}, created_at=5.0)
    lines = [
        '{"content": "only content"}',
        given.model_dump_json(),
        '{"content": null, "tags": ["b"]}',
    ]
    _stdin(monkeypatch, ("\n".join(lines) + "\n").encode())
    status, out, err = run_cli(capsys, "put", url, "-")
    ids = [UUID(line) for line in out.splitlines()]
    assert (status, err) == (0, "") and ids[1] == given.id
    first, second, third = everything(url)
    assert (first.id, first.content, first.tags, first.metadata) == (ids[0], "only content", [], {})
    assert exactly([second]) == exactly([given])
    assert (third.content, third.tags) == (None, ["b"])


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (b'{"content": 1}\n{broken\n', "stdin line 2: not JSON"),
        (b'{"tags": ["a"]}\n', "stdin line 1: not an item; an item is a JSON object with content and any of"),
        (b'{"content": 1, "extra": 2}\n', "stdin line 1: not an item"),
        (b'"just text"\n', "stdin line 1: not an item"),
        (b'{"content": 1, "created_at": "soon"}\n', "stdin line 1: not an item (created_at:"),
        (b'{"content": 1, "content": 2}\n', "stdin line 1: the key 'content' twice in one object"),
        (b'{"content": "\xff"}\n', "stdin line 1: not UTF-8 text (byte 0xff at column 14)"),
        (b'{"content": NaN}\n', "stdin line 1: "),
        (
            b'{"id": "00000000-0000-0000-0000-000000000001", "content": 1}\n{"content": 2}\n'
            b'{"id": "00000000-0000-0000-0000-000000000001", "content": 3}\n',
            "stdin line 3: the id 00000000-0000-0000-0000-000000000001 again, first given on line 1",
        ),
    ],
)
def test_a_bad_line_on_stdin_is_refused_by_number_before_a_store_is_made(
    stdin: bytes, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _stdin(monkeypatch, stdin)
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "put", f"sqlite:///{tmp_path / 'm.db'}", "-")
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and f"error: {message}" in err, err
    assert not (tmp_path / "m.db").exists()


def test_put_dash_checks_each_item_by_the_rules_of_the_store_it_goes_to(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = with_namespace(pg_url, f"put-{uuid4().hex[:12]}")
    _stdin(monkeypatch, b'{"content": "fine"}\n{"content": "\\u0000"}\n')
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "put", url, "-")
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "stdin line 2: item " in err and "the store refuses it" in err
    assert everything(url) == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["-", "--tag", "t"], "put - reads whole items from stdin, each line with its own fields; it takes no --tag"),
        (["-", "more", "--json", "--meta", "k=v"], "it takes no a CONTENT, --json, --meta"),
        (["-", "--id", str(UUID(int=1))], "it takes no --id"),
        (["a", "b", "--id", str(UUID(int=1))], "--id names one item, and put got 2 contents"),
    ],
)
def test_put_refuses_options_that_do_not_fit(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "put", f"sqlite:///{tmp_path / 'm.db'}", *argv)
    assert exit_info.value.code == 2 and message in capsys.readouterr().err
    assert not (tmp_path / "m.db").exists()


def test_put_dash_with_nothing_on_stdin_stores_nothing_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    _stdin(monkeypatch, b"")
    assert run_cli(capsys, "put", url, "-") == (0, "", "put: stdin held no items; nothing was stored\n")
    assert everything(url) == []


def test_what_search_prints_imports_without_a_header_item_for_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    fill(source, AWKWARD)
    status, out, _ = run_cli(capsys, "search", source, "--limit", "100")
    assert status == 0 and len(lines_of(out)) == len(AWKWARD)
    (tmp_path / "items.jsonl").write_text(out, encoding="utf-8")
    status, out, err = run_cli(capsys, "import", target, str(tmp_path / "items.jsonl"), "--no-header")
    assert (status, out, err) == (0, f"imported {len(AWKWARD)} items\n", "")
    assert exactly(everything(target)) == exactly(AWKWARD)
    # Again: by id, nothing changes.
    assert run_cli(capsys, "import", target, str(tmp_path / "items.jsonl"), "--no-header")[0] == 0
    assert exactly(everything(target)) == exactly(AWKWARD)


def test_without_the_header_every_line_is_an_item_and_an_export_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = f"sqlite:///{tmp_path / 'a.db'}"
    fill(source, AWKWARD[:2])
    exported = tmp_path / "export.jsonl"
    assert run_cli(capsys, "export", source, "-o", str(exported))[0] == 0
    target = f"sqlite:///{tmp_path / 'b.db'}"
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "import", target, str(exported), "--no-header")
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and f"{exported} line 1: not an item; an item is a JSON object" in err
    twice = tmp_path / "twice.jsonl"
    line = json.dumps(json.loads(AWKWARD[1].model_dump_json()))
    twice.write_text(f"{line}\n{line}\n", encoding="utf-8")
    with pytest.raises(SystemExit):
        run_cli(capsys, "import", target, str(twice), "--no-header")
    err = capsys.readouterr().err
    assert f"{twice} line 2: the id {AWKWARD[1].id} again, first given on line 1; a file of items holds" in err
    # Its first line is an item like any other: one that is not UTF-8 is not called a bad header.
    binary = tmp_path / "binary.jsonl"
    binary.write_bytes(b'{"id": "\xff"}\n')
    with pytest.raises(SystemExit):
        run_cli(capsys, "import", target, str(binary), "--no-header")
    assert capsys.readouterr().err.endswith(f"{binary} line 1: not UTF-8 text (byte 0xff at column 9)\n")
    assert not (tmp_path / "b.db").exists()
