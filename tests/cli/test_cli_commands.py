"""`put`, `get` and `search` on stores named by URL, and their exit statuses."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest

from lionmem import MemoryItem
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.cli import main
from tests.support.cli_support import KNOWN, lines_of, run_cli, with_namespace
from tests.support.pg_server import fresh_database, lionmem_tables


def test_put_get_and_search_a_sqlite_file_across_invocations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'notes.db'}"
    status, out, _ = run_cli(
        capsys,
        "put",
        url,
        "Paris is the capital",
        "--id",
        KNOWN,
        "--tag",
        "geo",
        "--meta",
        "source=atlas",
        "--meta",
        "year:=2024",
        "--meta",
        "code=2024",
    )
    assert (status, out) == (0, KNOWN + "\n")
    status, out, _ = run_cli(capsys, "put", url, '{"a": [1, 2.5, null]}', "--json", "--tag", "data")
    second = UUID(out.strip())
    run_cli(capsys, "put", url, "The Seine flows through Paris", "--tag", "geo")

    status, out, _ = run_cli(capsys, "get", url, KNOWN)
    [got] = lines_of(out)
    assert status == 0
    assert got["content"] == "Paris is the capital" and got["tags"] == ["geo"]
    assert got["metadata"] == {"source": "atlas", "year": 2024, "code": "2024"}
    assert lines_of(run_cli(capsys, "get", url, str(second))[1])[0]["content"] == {"a": [1, 2.5, None]}

    def contents(*options: str) -> list[Any]:
        status, out, _ = run_cli(capsys, "search", url, *options)
        assert status == 0
        return [line["content"] for line in lines_of(out)]

    assert contents("--text", "PARIS") == ["Paris is the capital", "The Seine flows through Paris"]
    assert contents("--filter", "year:=2024") == ["Paris is the capital"]
    assert contents("--filter", "year=2024") == []  # the string "2024" is not the number
    assert contents("--filter", "code=2024") == ["Paris is the capital"]
    assert contents("--filter", "missing:=null", "--tag", "data") == [{"a": [1, 2.5, None]}]
    assert contents("--tag", "data", "--tag", "geo", "--limit", "-1") == ["Paris is the capital", {"a": [1, 2.5, None]}]
    assert contents("--limit", "0") == []

    # --id replaces the item in place: same position, new content.
    run_cli(capsys, "put", url, "Paris, capital of France", "--id", KNOWN)
    assert contents("--text", "paris") == ["Paris, capital of France", "The Seine flows through Paris"]


def test_search_without_limit_prints_the_query_default_of_20(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "n.db"

    async def fill() -> None:
        async with SQLiteMemoryStore.open(path) as store:
            await store.store_many([MemoryItem(content=n) for n in range(25)])

    asyncio.run(fill())
    status, out, _ = run_cli(capsys, "search", f"sqlite:///{path}")
    assert status == 0 and [item["content"] for item in lines_of(out)] == list(range(20))
    out = run_cli(capsys, "search", f"sqlite:///{path}", "--limit", "-22")[1]
    assert [item["content"] for item in lines_of(out)] == [0, 1, 2]


def test_get_of_a_missing_id_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    run_cli(capsys, "put", url, "another item")
    status, out, err = run_cli(capsys, "get", url, KNOWN)
    assert (status, out, err) == (1, "", f"no item {KNOWN}\n")


@pytest.mark.parametrize("argv", [["get", KNOWN], ["search", "--text", "x"]])
def test_reading_a_database_that_does_not_exist_creates_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    mistyped = tmp_path / "notes.bd"
    status, out, err = run_cli(capsys, argv[0], f"sqlite:///{mistyped}", *argv[1:])
    assert (status, out) == (1, "")
    assert err == (
        f"python -m lionmem: error: there is no database at {mistyped}; nothing was created"
        " (`put` creates a store; this command creates none)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_reading_an_empty_file_writes_no_schema_into_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    empty = tmp_path / "notes.db"
    empty.touch()
    status, out, err = run_cli(capsys, "search", f"sqlite:///{empty}")
    assert (status, out) == (1, "")
    assert err == (
        f"python -m lionmem: error: {empty} holds no lionmem schema; nothing was created"
        " (`put` creates a store; this command creates none)\n"
    )
    assert list(tmp_path.iterdir()) == [empty] and empty.stat().st_size == 0


def test_demo_runs_on_any_url(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'demo.db'}"
    first = run_cli(capsys, "demo", url)[1]
    assert first.splitlines()[0] == "stored 4 items"
    status, out, _ = run_cli(capsys, "search", url, "--limit", "-1")
    assert status == 0 and len(lines_of(out)) == 3  # the four notes, less the last
    # Run again on the same store, the notes replace themselves instead of doubling.
    assert run_cli(capsys, "demo", url)[1] == first == run_cli(capsys, "demo")[1]
    assert len(lines_of(run_cli(capsys, "search", url)[1])) == 4


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["search", "ftp://host/x"], "starts with one of memory:, sqlite:, postgresql:"),
        (["search", "memory:x"], "takes nothing after the colon"),
        (["search", "sqlite://host/x.db"], "names a local file"),
        (["search", "sqlite:///"], "names no file"),
        (["search", "sqlite:///n.db?mode=ro"], "unknown sqlite URL option 'mode'"),
        (["search", "sqlite:///n.db?busy_timeout=soon"], "busy_timeout must be a number"),
        (["search", "sqlite:///n.db?synchronous=off"], "synchronous must be 'NORMAL' or 'FULL'"),
        (["search", "postgresql://u:s3cret@h/db"], "needs ?namespace=NAME"),
        (["search", "postgresql://u:s3cret@h/db?namespace=a&namespace=b"], "'namespace' twice"),
        (["put", "memory:", "x", "--meta", "k"], "--meta 'k' is not KEY=TEXT or KEY:=JSON"),
        (["put", "memory:", "x", "--meta", "k=1", "--meta", "k:=2"], "--meta gives the key 'k' twice"),
        (["search", "memory:", "--filter", "k"], "--filter 'k' has no operator; write KEY=TEXT, KEY:=JSON"),
        (["search", "memory:", "--filter", "=v"], "--filter '=v' names no key"),
        (["search", "memory:", "--filter", "k:=nope"], "--filter 'k':=...: the value 'nope' is not JSON"),
        (["search", "memory:", "--filter", "k:=NaN"], "NaN is not a JSON value"),
        (["search", "memory:", "--filter", "k:=-1e999"], "-1e999 is beyond the range of a float"),
        (["put", "memory:", "--json", "[1.5, 1E400]"], "1E400 is beyond the range of a float"),
        (["search", "memory:", "--filter", "k=1", "--filter", "k:=1"], "gives the key 'k' twice"),
        (["put", "memory:", "{", "--json"], "CONTENT is not JSON"),
        # More than the durable stores' 500 levels is refused alike, whichever the store
        # and the Python: 501 levels parse on every version, 5,000 on 3.13, 10**6 on none.
        (["put", "memory:", "[" * 501 + "]" * 501, "--json"], "CONTENT nests lists and objects more than 500"),
        (["put", "memory:", "[" * 5000 + "]" * 5000, "--json"], "CONTENT nests lists and objects more than 500"),
        (["put", "memory:", "[" * 10**6 + "]" * 10**6, "--json"], "CONTENT nests lists and objects more than 500"),
        (
            ["search", "memory:", "--filter", "k:=" + "[" * 501 + "]" * 501],
            "--filter 'k':=...: the value '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[...' nests lists",
        ),
        (["search", "memory:", "--filter", "k:=" + "[" * 10**6 + "]" * 10**6], "--filter 'k':=...: the value '[[["),
        (["put", "memory:", "x", "--id", "seven"], "'seven' is not a UUID"),
        (["get", "memory:", "seven"], "'seven' is not a UUID"),
        (["search", "memory:", "--limit", "many"], "invalid int value"),
    ],
)
def test_bad_usage_exits_2_naming_the_problem(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    # The command's own usage and name, whether argparse or lionmem found the problem.
    assert err.startswith(f"usage: python -m lionmem {argv[0]} ")
    assert f"\npython -m lionmem {argv[0]}: error: " in err and message in err
    assert "s3cret" not in err


def test_a_store_that_fails_exits_1_with_its_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delitem(sys.modules, "psycopg")  # as for a user of SQLite alone
    foreign = tmp_path / "other.db"
    foreign.write_bytes(b"not a database at all, but long enough to read a header")
    missing_dir = tmp_path / "no" / "such" / "dir.db"
    for url, message in [
        (f"sqlite:///{foreign}", "is not an SQLite database"),
        (f"sqlite:///{missing_dir}", "no/such is not a directory"),
    ]:
        status, out, err = run_cli(capsys, "search", url)
        assert (status, out) == (1, "")
        assert err.startswith("python -m lionmem: error: ") and message in err
    # `put` creates a store where it can; it is not pointed to when it cannot.
    status, out, err = run_cli(capsys, "put", f"sqlite:///{missing_dir}", "x")
    assert (status, out) == (1, "")
    assert "no/such is not a directory" in err and "`put`" not in err
    assert foreign.read_bytes().startswith(b"not a database")


def test_put_get_and_search_postgres_by_url(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    namespace = f"cli-{uuid4().hex[:12]}"
    url = with_namespace(pg_url, namespace)
    assert run_cli(capsys, "put", url, "kept in postgres", "--id", KNOWN, "--meta", "n:=1")[:2] == (0, KNOWN + "\n")
    assert lines_of(run_cli(capsys, "get", url, KNOWN)[1])[0]["content"] == "kept in postgres"
    assert [line["content"] for line in lines_of(run_cli(capsys, "search", url, "--filter", "n:=1")[1])] == [
        "kept in postgres"
    ]
    other = with_namespace(pg_url, f"{namespace}-other")
    assert run_cli(capsys, "get", other, KNOWN)[0] == 1


def test_a_read_that_finds_nothing_in_an_empty_store_says_so(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A mistyped namespace is an empty one: the read says the store is empty, on
    stderr, and a read that finds nothing in a store with items says nothing."""
    namespace = f"cli-{uuid4().hex[:12]}"
    assert run_cli(capsys, "put", with_namespace(pg_url, namespace), "kept", "--id", KNOWN)[0] == 0
    note = "python -m lionmem: note: the store holds no items; is its name right?\n"
    mistyped = with_namespace(pg_url, namespace + "x")
    assert run_cli(capsys, "search", mistyped, "--text", "kept") == (0, "", note)
    assert run_cli(capsys, "get", mistyped, KNOWN) == (1, "", f"no item {KNOWN}\n" + note)
    right = with_namespace(pg_url, namespace)
    assert run_cli(capsys, "search", right, "--text", "absent") == (0, "", "")
    assert run_cli(capsys, "search", right, "--limit", "0") == (0, "", "")
    assert run_cli(capsys, "get", right, str(UUID(int=1))) == (1, "", f"no item {UUID(int=1)}\n")


def test_an_error_the_server_answers_with_is_a_store_error(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    # The application's own lock_timeout, passed on to libpq, ends a write that waits
    # on a row another client holds: status 1 and the server's message, no traceback.
    namespace = f"cli-{uuid4().hex[:12]}"
    url = with_namespace(pg_url, namespace) + "&options=-c%20lock_timeout%3D200ms"
    assert run_cli(capsys, "put", url, "held", "--id", KNOWN)[0] == 0
    with psycopg.connect(pg_url) as other:
        other.execute("SELECT 1 FROM lionmem_items WHERE namespace = %s FOR UPDATE", [namespace])
        status, out, err = run_cli(capsys, "put", url, "changed", "--id", KNOWN)
    assert (status, out) == (1, "")
    assert err.startswith("python -m lionmem: error: canceling statement due to lock timeout\n")
    assert "Traceback" not in err
    assert lines_of(run_cli(capsys, "get", url, KNOWN)[1])[0]["content"] == "held"


def test_reading_a_postgres_database_without_the_schema_creates_nothing(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = with_namespace(fresh_database(pg_url), "notes")
    status, out, err = run_cli(capsys, "search", url)
    assert (status, out) == (1, "")
    assert err == (
        "python -m lionmem: error: this database has no lionmem schema; nothing was created"
        " (`put` creates a store; this command creates none)\n"
    )
    assert lionmem_tables(url.partition("?")[0]) == []
