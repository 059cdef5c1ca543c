"""The command line's front: the demo, help, and the module entry point."""

from __future__ import annotations

import subprocess
import sys
import warnings
from pathlib import Path

import pytest

from lionmem import MemoryQuery
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.cli import main
from lionmem.errors import StoreClosedError
from lionmem.protocols.paging import Page


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
        and "{demo,put,get,recall,search,delete,forget,export,import,copy,stats,namespaces,verify,check}" in out
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

    async def closed(store: SQLiteMemoryStore, query: MemoryQuery, after: str | None = None) -> Page:
        raise StoreClosedError("closed under the command")

    monkeypatch.setattr(SQLiteMemoryStore, "search_page", closed)
    assert main(["search", url]) == 1
    assert capsys.readouterr().err == "python -m lionmem: error: closed under the command\n"

    async def broken(store: SQLiteMemoryStore, query: MemoryQuery, after: str | None = None) -> Page:
        raise TypeError("a bug in lionmem")

    # A TypeError that no store documents for the user's data is a bug: not caught as
    # a store's refusal, so it shows where it came from.
    monkeypatch.setattr(SQLiteMemoryStore, "search_page", broken)
    with pytest.raises(TypeError, match="a bug in lionmem"):
        main(["search", url])


def test_an_item_the_store_refuses_is_named_with_status_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # A lone surrogate, written as an escape in JSON, which no durable store keeps;
    # the message names the item the command made.
    url = f"sqlite:///{tmp_path / 'n.db'}"
    item_id = "6f1c2a9e-1d1b-4b7e-9a49-8a4c1f0f6a11"
    assert main(["put", url, '"caf\\udce9"', "--json", "--id", item_id]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"python -m lionmem: error: the store refused item {item_id}: ")
    assert "surrogate" in err


def test_the_parser_names_the_kits_checks() -> None:
    from lionmem.cli._parser import CHECKS as NAMED
    from lionmem.testing import CHECKS

    assert NAMED == CHECKS


@pytest.mark.parametrize("argv", [["--help"], ["search", "--help"], ["search", "memory:", "--txt", "x"]])
def test_help_and_usage_errors_load_no_store_kit_or_model(argv: list[str]) -> None:
    # --help took 0.31-0.36 s, 283 ms of it imports of the stores, the kit and pydantic.
    code = (
        "import sys\nfrom lionmem.cli import main\ntry:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        "loaded = sorted(m for m in sys.modules if m.startswith(('pydantic', 'lionmem.adapters', 'lionmem.testing',"
        " 'lionmem.protocols', 'asyncio', 'psycopg')))\nprint(loaded, file=sys.stderr)"
    )
    done = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, check=True)
    assert done.stderr.splitlines()[-1] == "[]"


def test_an_unknown_option_shows_the_commands_own_usage(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["search", "memory:", "--txt", "x"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.startswith("usage: python -m lionmem search ")
    assert err.endswith("python -m lionmem search: error: unrecognized arguments: --txt x\n")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("sqlite:///:memory:", "an SQLite store needs a file: ':memory:' would give its writer and its reader"),
        ("sqlite:///no/such/dir/m.db", "no/such/dir is not a directory; the store creates its database file"),
    ],
)
def test_messages_speak_of_the_store_not_the_class(
    url: str, message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    status: object = None
    try:
        status = main(["put", url, "x"])
    except SystemExit as exit_info:
        status = exit_info.code
    err = capsys.readouterr().err
    assert status in (1, 2) and message in err and "MemoryStore" not in err.replace("memory: (InMemoryStore)", "")


def test_a_warning_other_than_erasure_passes_through_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    assert main(["put", url, "x"]) == 0
    search_page = SQLiteMemoryStore.search_page

    async def warns(store: SQLiteMemoryStore, query: MemoryQuery, after: str | None = None) -> Page:
        warnings.warn("a store's own warning", UserWarning, stacklevel=1)
        return await search_page(store, query, after)

    monkeypatch.setattr(SQLiteMemoryStore, "search_page", warns)
    with pytest.warns(UserWarning, match="^a store's own warning$"):
        assert main(["search", url]) == 0
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize(
    ("command", "prog"),
    [
        ([str(Path(sys.executable).with_name("lionmem"))], "lionmem"),
        ([sys.executable, "-m", "lionmem"], "python -m lionmem"),
    ],
)
def test_the_installed_command_and_the_module_name_themselves_as_typed(command: list[str], prog: str) -> None:
    done = subprocess.run([*command, "get", "memory:", "not-an-id"], capture_output=True, text=True, check=False)
    assert done.returncode == 2
    assert done.stderr.startswith(f"usage: {prog} get ")
    assert done.stderr.splitlines()[-1].startswith(f"{prog} get: error: ")


@pytest.mark.parametrize("argv", [["search", "--text", "x"], ["get", "00000000-0000-0000-0000-000000000000"]])
def test_a_read_of_a_sqlite_file_loads_only_that_store(argv: list[str], tmp_path: Path) -> None:
    # The kit, the in-memory store, export and copy took 38 of a search's 253 ms.
    url = f"sqlite:///{tmp_path / 'notes.db'}"
    assert main(["put", url, "x"]) == 0
    code = (
        "import sys\nfrom lionmem.cli import main\nmain(sys.argv[1:])\n"
        "print(sorted(m for m in sys.modules if m.startswith(('lionmem.testing', 'lionmem.protocols.in_memory',"
        " 'lionmem.cli._copy', 'lionmem.cli._transfer', 'lionmem.adapters.postgres', 'tqdm', 'numpy', 'psycopg',"
        " 'hypothesis'))), file=sys.stderr)"
    )
    command, *rest = argv
    done = subprocess.run(
        [sys.executable, "-c", code, command, url, *rest], capture_output=True, text=True, check=False
    )
    assert done.stderr.splitlines()[-1] == "[]"
