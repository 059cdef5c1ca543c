"""`export` and `import`: an exact round trip in order, a second import that changes
nothing, an interrupted one that a second run completes, and files refused by line."""

from __future__ import annotations

import codecs
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest

from lionmem import MemoryItem
from lionmem.adapters.sqlite import SQLiteMemoryStore
from tests.support.cli_support import everything, exactly, fail_store_many_at, fill, run_cli, with_namespace

AWKWARD = [
    MemoryItem(content=None, created_at=-0.0),
    MemoryItem(content="line\u2028separator \U0001f600 é", tags=["ü", ""], created_at=1e-300),
    MemoryItem(content={"deep": [[[[["x"]]]]], "big": 10**30, "f": 0.1}, metadata={"n": [1, {"k": None}]}),
    MemoryItem(content=[1, 2.5, True, "s"], created_at=2.0**53 + 2, metadata={"big": -(10**40)}),
]


def _items(count: int) -> list[MemoryItem]:
    notes = [MemoryItem(content=f"note {n}", tags=[f"t{n % 3}"], created_at=float(n)) for n in range(count)]
    return [*AWKWARD, *notes]


def test_an_export_imported_elsewhere_is_the_same_store_item_for_item_and_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source, copy = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    items = _items(1_203)  # across the batches of 500
    fill(source, items)
    fill(source, [MemoryItem(id=items[10].id, content="replaced in place")])
    exported = tmp_path / "export.jsonl"
    assert run_cli(capsys, "export", source, "--output", str(exported)) == (0, "exported 1207 items\n", "")
    lines = exported.read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"format": "lionmem-export", "version": 1} and len(lines) == 1_208
    assert run_cli(capsys, "import", copy, str(exported)) == (0, "imported 1207 items\n", "")
    assert exactly(everything(copy)) == exactly(everything(source))
    again = tmp_path / "again.jsonl"
    run_cli(capsys, "export", copy, "-o", str(again))
    assert again.read_bytes() == exported.read_bytes()
    # A second import of the same file changes nothing, order included.
    assert run_cli(capsys, "import", copy, str(exported))[:2] == (0, "imported 1207 items\n")
    run_cli(capsys, "export", copy, "-o", str(again))
    assert again.read_bytes() == exported.read_bytes()


def test_export_to_standard_output_and_by_search(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    fill(url, _items(30))
    status, out, err = run_cli(capsys, "export", url)
    assert (status, err) == (0, "exported 34 items\n")
    assert out.splitlines()[0] == '{"format":"lionmem-export","version":1}' and len(out.splitlines()) == 35
    status, out, err = run_cli(capsys, "export", url, "--tag", "t1", "--limit", "-1")
    assert [json.loads(line)["content"] for line in out.splitlines()[1:]] == [f"note {n}" for n in range(1, 28, 3)]
    assert err == "exported 9 items\n"


def test_an_interrupted_import_is_completed_by_running_it_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    source, target = f"sqlite:///{tmp_path / 'a.db'}", f"sqlite:///{tmp_path / 'b.db'}"
    fill(source, _items(1_100))
    exported = tmp_path / "export.jsonl"
    run_cli(capsys, "export", source, "-o", str(exported))
    restore = fail_store_many_at(monkeypatch, 2, OSError("the disk went away"))
    status, out, err = run_cli(capsys, "import", target, str(exported))
    assert (status, out) == (1, "") and "the disk went away" in err
    assert len(everything(target)) == 500  # the first batch, whole; nothing of the second
    restore()
    assert run_cli(capsys, "import", target, str(exported))[:2] == (0, "imported 1104 items\n")
    assert exactly(everything(target)) == exactly(everything(source))


def test_a_file_that_is_not_an_export_is_refused_by_line_before_anything_is_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    header = '{"format":"lionmem-export","version":1}\n'
    good = json.dumps({"id": str(uuid4()), "created_at": 1.0, "metadata": {}, "content": "x", "tags": []}) + "\n"
    cases = {
        "": "is empty, not a lionmem export",
        '{"format":"something-else","version":1}\n': "line 1: not a lionmem export",
        "not json\n": "line 1: not a lionmem export",
        '{"format":"lionmem-export","version":2}\n': "written in export format version 2, newer than this lionmem reads (1)",
        '{"format":"lionmem-export","version":"1"}\n': "line 1: the export format version must be a whole number, got '1'",
        header + good + "{broken\n": "line 3: not JSON",
        header + good + '{"id":"x"}\n': "line 3: not an item; an item is a JSON object with exactly the fields",
        header + good.replace('"tags": []', '"tags": [], "extra": 1'): "line 2: not an item",
        header + good.replace('"created_at": 1.0', '"created_at": "soon"'): "line 2: not an item (created_at:",
        header + good.replace(str(json.loads(good)["id"]), "not-a-uuid"): "line 2: not an item (id:",
    }
    target = tmp_path / "store.db"
    for number, (text, message) in enumerate(cases.items()):
        bad = tmp_path / f"bad{number}.jsonl"
        bad.write_text(text, encoding="utf-8")
        with pytest.raises(SystemExit) as exit_info:
            run_cli(capsys, "import", f"sqlite:///{target}", str(bad))
        _, err = capsys.readouterr()
        assert exit_info.value.code == 2 and f"{bad}" in err and message in err, (text, err)
    assert not target.exists()
    with pytest.raises(SystemExit):
        run_cli(capsys, "import", f"sqlite:///{target}", str(tmp_path / "missing.jsonl"))
    assert "cannot read" in capsys.readouterr().err


def test_a_failed_export_leaves_no_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'a.db'}"
    fill(url, _items(600))
    scan = SQLiteMemoryStore.scan

    async def breaks_after_one_batch(
        store: SQLiteMemoryStore, batch_size: int = 500
    ) -> AsyncIterator[list[MemoryItem]]:
        async for batch in scan(store, batch_size):
            yield batch
            raise OSError("the disk is full")

    monkeypatch.setattr(SQLiteMemoryStore, "scan", breaks_after_one_batch)
    output = tmp_path / "export.jsonl"
    status, out, err = run_cli(capsys, "export", url, "-o", str(output))
    assert (status, out) == (1, "") and "the disk is full" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.db"]


def test_sqlite_to_postgres_and_back(tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    source = f"sqlite:///{tmp_path / 'a.db'}"
    postgres = with_namespace(pg_url, f"cli-{uuid4().hex[:12]}")
    fill(source, _items(700))
    exported, back = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    run_cli(capsys, "export", source, "-o", str(exported))
    assert run_cli(capsys, "import", postgres, str(exported))[:2] == (0, "imported 704 items\n")
    run_cli(capsys, "export", postgres, "-o", str(back))
    assert back.read_bytes() == exported.read_bytes()


def test_an_import_of_exactly_whole_batches_ends_without_an_empty_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file of exactly one batch, imported into `memory:`, ends without an empty
    batch after it."""
    source = f"sqlite:///{tmp_path / 'a.db'}"
    fill(source, _items(496))
    exported = tmp_path / "export.jsonl"
    run_cli(capsys, "export", source, "-o", str(exported))
    assert run_cli(capsys, "import", "memory:", str(exported)) == (0, "imported 500 items\n", "")


def test_the_published_schema_describes_what_export_writes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    schema = json.loads((Path(__file__).parents[2] / "docs/assets/lionmem-export-v1.schema.json").read_text())
    header, item = schema["$defs"]["header"], schema["$defs"]["item"]
    url = f"sqlite:///{tmp_path / 'a.db'}"
    fill(url, AWKWARD)
    lines = [json.loads(line) for line in run_cli(capsys, "export", url)[1].splitlines()]
    assert lines[0] == {key: rule["const"] for key, rule in header["properties"].items()}
    assert set(header["required"]) == set(lines[0]) and header["additionalProperties"] is False
    assert set(item["properties"]) == set(item["required"]) == set(MemoryItem.model_fields)
    kinds = {"string": str, "number": float, "object": dict, "array": list}
    for line in lines[1:]:
        assert set(line) == set(item["required"])
        for field, rule in item["properties"].items():
            assert "type" not in rule or isinstance(line[field], kinds[rule["type"]]), (field, line)


def _line(**fields: Any) -> str:
    item = {"id": str(uuid4()), "created_at": 1.0, "metadata": {}, "content": "x", "tags": [], **fields}
    return json.dumps(item, allow_nan=True) + "\n"


HEADER = '{"format":"lionmem-export","version":1}\n'


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ('{"k": NaN}', "metadata['k'] is nan; NaN and infinity are not JSON values"),
        ("Infinity", "content is inf; NaN and infinity are not JSON values"),
        ("[" * 600 + "]" * 600, "nests lists and objects more than 500 levels deep"),
        ("[" * 10_000 + "]" * 10_000, "nests lists and objects deeper than Python reads"),
        ('"lone \\ud800"', "holds the lone surrogate U+D800"),
    ],
    ids=["NaN", "Infinity", "600 levels", "10,000 levels", "lone surrogate"],
)
def test_an_item_the_store_would_refuse_is_refused_at_the_check_by_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], bad: str, message: str
) -> None:
    """Line 702 of the file holds what the store refuses; the store holds one item
    before the import and after it, and the message names the file, line and item."""
    url = f"sqlite:///{tmp_path / 'm.db'}"
    fill(url, [MemoryItem(content="before")])
    good = "".join(_line(content=f"n{n}") for n in range(700))
    item_id = str(uuid4())
    line = '{"id": "' + item_id + '", "created_at": 1.0, "tags": [], '
    if bad.startswith('{"k"'):
        line += f'"metadata": {bad}, "content": "x"}}\n'
    else:
        line += f'"metadata": {{}}, "content": {bad}}}\n'
    path = tmp_path / "bad.jsonl"
    path.write_text(HEADER + good + line + _line(), encoding="utf-8")
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "import", url, str(path))
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert f"{path} line 702: " in err and message in err, err
    assert "Traceback" not in err
    if "Python reads" not in message:
        assert f"item {item_id}: the store refuses it" in err
    assert [i.content for i in everything(url)] == ["before"]


def test_u0000_is_refused_for_postgres_and_kept_by_sqlite(
    tmp_path: Path, pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "nul.jsonl"
    path.write_text(HEADER + _line(content="a") + _line(content="nul \x00 here"), encoding="utf-8")
    postgres = with_namespace(pg_url, f"nul-{uuid4().hex[:12]}")
    with pytest.raises(SystemExit):
        run_cli(capsys, "import", postgres, str(path))
    err = capsys.readouterr().err
    assert "line 3: item " in err and "holds the character U+0000, which this store cannot keep" in err
    sqlite = f"sqlite:///{tmp_path / 'm.db'}"
    assert run_cli(capsys, "import", sqlite, str(path)) == (0, "imported 2 items\n", "")


def test_an_id_given_twice_is_refused_naming_both_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    twice = str(uuid4())
    path = tmp_path / "twice.jsonl"
    path.write_text(HEADER + _line(id=twice) + _line() + _line(id=twice, content="later"), encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'm.db'}"
    with pytest.raises(SystemExit):
        run_cli(capsys, "import", url, str(path))
    err = capsys.readouterr().err
    assert f"{path} line 4: the id {twice} again, first given on line 2" in err
    assert not (tmp_path / "m.db").exists()


@pytest.mark.parametrize(
    ("line", "key"),
    [
        (
            '{{"id": "{id}", "content": "a", "content": "b", "tags": [], "metadata": {{}}, "created_at": 1.0}}',
            "content",
        ),
        ('{{"id": "{id}", "content": "a", "tags": [], "metadata": {{"k": 1, "k": 2}}, "created_at": 1.0}}', "k"),
    ],
    ids=["an item's field", "a metadata key"],
)
def test_a_key_given_twice_in_a_line_is_refused_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, key: str
) -> None:
    """JSON leaves a repeated key's value to the reader: once the last one was taken
    without a word."""
    path = tmp_path / "twice.jsonl"
    path.write_text(HEADER + _line() + line.format(id=uuid4()) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit) as usage:
        run_cli(capsys, "import", f"sqlite:///{tmp_path / 'm.db'}", str(path))
    assert usage.value.code == 2
    assert f"{path} line 3: the key {key!r} twice in one object" in capsys.readouterr().err
    assert not (tmp_path / "m.db").exists()


def test_a_file_beginning_with_a_byte_order_mark_imports(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bom.jsonl"
    path.write_bytes(codecs.BOM_UTF8 + (HEADER + _line(content="kept")).encode())
    url = f"sqlite:///{tmp_path / 'm.db'}"
    status, _, _ = run_cli(capsys, "import", url, str(path))
    assert status == 0
    assert [line["content"] for line in map(json.loads, run_cli(capsys, "search", url)[1].splitlines())] == ["kept"]


@pytest.mark.parametrize("where", ["header", "item"])
def test_text_that_is_not_utf8_is_refused_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    path = tmp_path / "latin.jsonl"
    if where == "header":
        path.write_bytes(b'{"format":"lionmem-export","version":1} caf\xe9\n')
        expected = f"{path} line 1: not a lionmem export, not UTF-8 text (byte 0xe9 at column 44)"
    else:
        path.write_bytes(HEADER.encode() + _line().encode() + _line(content="caf").encode().replace(b"caf", b"caf\xc3"))
        expected = f"{path} line 3: not UTF-8 text (byte 0xc3 at column "
    with pytest.raises(SystemExit):
        run_cli(capsys, "import", f"sqlite:///{tmp_path / 'm.db'}", str(path))
    assert expected in capsys.readouterr().err


def test_importing_a_database_file_is_refused_as_not_an_export(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "some.db"
    fill(f"sqlite:///{source}", [MemoryItem(content="x")])
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "import", f"sqlite:///{tmp_path / 'm.db'}", str(source))
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and f"{source} line 1: not a lionmem export" in err and "Traceback" not in err


def test_a_refusal_left_at_write_time_names_the_lines_and_the_first_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The file check applies the store's rules; a refusal the check did not foresee
    # (here, a store that refuses every batch) still names where in the file it was.
    items = _items(3)
    path = tmp_path / "all.jsonl"
    path.write_text(HEADER + "".join(_line(id=str(i.id), content=str(i.content)) for i in items), encoding="utf-8")

    async def refuses(store: SQLiteMemoryStore, batch: Any) -> list[Any]:
        raise ValueError("the disk says no")

    monkeypatch.setattr(SQLiteMemoryStore, "store_many", refuses)
    url = f"sqlite:///{tmp_path / 'm.db'}"
    status, out, err = run_cli(capsys, "import", url, str(path))
    assert (status, out) == (1, "")
    assert err == (
        f"python -m lionmem: error: the store refused a batch of {len(items)} items from item {items[0].id} "
        f"(lines 2-{len(items) + 1}): the disk says no\n"
    )


@pytest.mark.parametrize("own", ["m.db", "m.db-wal", "m.db-shm", "./m.db"])
def test_an_export_over_the_stores_own_file_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, own: str
) -> None:
    monkeypatch.chdir(tmp_path)
    fill("sqlite:///m.db", [MemoryItem(content="kept")])
    before = (tmp_path / "m.db").read_bytes()
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "export", f"sqlite:///{tmp_path / 'm.db'}", "--output", own)
    assert exit_info.value.code == 2
    assert f"--output {Path(own)} is the store's own file; write the export to another" in capsys.readouterr().err
    assert (tmp_path / "m.db").read_bytes() == before


def test_a_copy_of_one_item_says_one_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    fill("sqlite:///a.db", [MemoryItem(content="only")])
    status, out, _ = run_cli(capsys, "copy", "sqlite:///a.db", "sqlite:///b.db")
    assert status == 0 and out.startswith("copied 1 item; both stores hold 1 item, sha256 ")


def test_a_refusal_of_a_one_item_batch_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    only = MemoryItem(content="alone")
    path = tmp_path / "one.jsonl"
    path.write_text(HEADER + _line(id=str(only.id)), encoding="utf-8")

    async def refuses(store: SQLiteMemoryStore, batch: Any) -> list[Any]:
        raise TypeError("the disk says no")

    monkeypatch.setattr(SQLiteMemoryStore, "store_many", refuses)
    status, _, err = run_cli(capsys, "import", f"sqlite:///{tmp_path / 'm.db'}", str(path))
    assert (status, err) == (
        1,
        f"python -m lionmem: error: the store refused item {only.id} (line 2): the disk says no\n",
    )
