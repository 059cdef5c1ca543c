"""The command line."""

from __future__ import annotations

import asyncio
import io
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lionmem import MemoryItem
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.cli import main
from pg_server import fresh_database, lionmem_tables


def test_demo_stores_retrieves_and_searches(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "stored 4 items"
    # The demo's ids derive from its notes, so a rerun on a durable store replaces them.
    assert lines[1] == "retrieve 663d8ce3-2530-5401-a38f-262e7eebf8e2 -> 'Paris is the capital of France'"
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


def test_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--help"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0
    assert "KEY:=JSON any JSON value" in out and "{demo,put,get,search,check}" in out
    assert "][" not in out and "`" not in out  # no documentation markup in a terminal


def test_module_entry_point() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "lionmem", "demo"], capture_output=True, text=True, check=True
    )
    assert done.stdout.startswith("stored 4 items")


# -- commands on a store named by URL --------------------------------------------------


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def lines_of(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


PIPED_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
"""The environment for a command whose output goes to a pipe, buffered as it is for
most users: with PYTHONUNBUFFERED set (this project's build machines set it), every
print is written at once and a missing flush would go unseen."""

KNOWN = "6f1c2a9e-1d1b-4b7e-9a49-8a4c1f0f6a11"


def test_put_get_and_search_a_sqlite_file_across_invocations(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'notes.db'}"
    status, out, _ = run_cli(
        capsys, "put", url, "Paris is the capital", "--id", KNOWN, "--tag", "geo",
        "--meta", "source=atlas", "--meta", "year:=2024", "--meta", "code=2024",
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
    assert contents("--tag", "data", "--tag", "geo", "--limit", "-1") == [
        "Paris is the capital", {"a": [1, 2.5, None]}
    ]
    assert contents("--limit", "0") == []

    # --id replaces the item in place: same position, new content.
    run_cli(capsys, "put", url, "Paris, capital of France", "--id", KNOWN)
    assert contents("--text", "paris") == ["Paris, capital of France", "The Seine flows through Paris"]


def test_each_item_is_one_line_whatever_its_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    awkward = "a\nb\rc\x85d\u2028e\u2029f\x00g"
    run_cli(capsys, "put", url, awkward, "--meta", f"k={awkward}", "--tag", awkward)
    out = run_cli(capsys, "search", url)[1]
    assert out.count("\n") == 1 and len(out.splitlines()) == 1
    [item] = lines_of(out)
    assert item["content"] == item["metadata"]["k"] == item["tags"][0] == awkward


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
    assert err == f"python -m lionmem: error: there is no database at {mistyped}; nothing was created\n"
    assert list(tmp_path.iterdir()) == []


def test_reading_an_empty_file_writes_no_schema_into_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "notes.db"
    empty.touch()
    status, out, err = run_cli(capsys, "search", f"sqlite:///{empty}")
    assert (status, out) == (1, "")
    assert err == f"python -m lionmem: error: {empty} holds no lionmem schema; nothing was created (create=False)\n"
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
        (["search", "memory:", "--filter", "k"], "--filter 'k' is not KEY=TEXT or KEY:=JSON"),
        (["search", "memory:", "--filter", "=v"], "is not KEY=TEXT or KEY:=JSON"),
        (["search", "memory:", "--filter", "k:=nope"], "--filter 'k' is not JSON"),
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
        (["search", "memory:", "--filter", "k:=" + "[" * 501 + "]" * 501], "--filter 'k' nests lists and objects"),
        (["search", "memory:", "--filter", "k:=" + "[" * 10**6 + "]" * 10**6], "--filter 'k' nests lists and"),
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
    assert foreign.read_bytes().startswith(b"not a database")


def test_put_refuses_content_a_durable_store_cannot_keep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Undecodable bytes on a command line reach Python as lone surrogates.
    url = f"sqlite:///{tmp_path / 'n.db'}"
    status, out, err = run_cli(capsys, "put", url, "bad \udcff byte")
    assert (status, out) == (1, "")
    assert "lone surrogate U+DCFF" in err
    assert run_cli(capsys, "search", url)[1] == ""


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


def test_the_deepest_content_a_store_keeps_goes_in_and_comes_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # pydantic writes at most 255 levels of content; the durable stores keep 500.
    url = f"sqlite:///{tmp_path / 'n.db'}"
    deepest = "[" * 500 + "]" * 500
    assert run_cli(capsys, "put", url, deepest, "--json", "--id", KNOWN)[:2] == (0, KNOWN + "\n")
    status, out, err = run_cli(capsys, "get", url, KNOWN)
    assert (status, err) == (0, "")
    assert lines_of(out)[0]["content"] == json.loads(deepest)
    status, out, err = run_cli(capsys, "search", url, "--filter", "k:=" + deepest)
    assert (status, out, err) == (0, "", "")
    assert [line["content"] for line in lines_of(run_cli(capsys, "search", url)[1])] == [json.loads(deepest)]


def with_namespace(url: str, namespace: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}namespace={namespace}"


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
    assert err == "python -m lionmem: error: this database has no lionmem schema; nothing was created (create=False)\n"
    assert lionmem_tables(url.partition("?")[0]) == []


# -- check on a URL template -------------------------------------------------------------


def test_check_opens_a_fresh_store_per_check_from_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    # Against the profile the store declares, unless --profile names another.
    status, out, _ = run_cli(capsys, "check", "--url", "sqlite:///{workspace}/kit.db")
    assert status == 0 and out.rstrip().endswith("17 passed, 0 failed")
    assert re.search(r"^returned_objects +copies +copies +ok$", out, flags=re.M)
    # The reference profile does not hold for SQLite: copies, not live objects.
    status, out, _ = run_cli(
        capsys, "check", "--url", "sqlite:///{workspace}/kit.db", "--only", "returned_objects",
        "--profile", "lionmem.testing:REFERENCE_PROFILE",
    )
    assert status == 1 and "returned_objects: declared live, observed copies" in out
    status, out, _ = run_cli(capsys, "check", "--url", "memory:", "--only", "returned_objects")
    assert status == 0 and re.search(r"^returned_objects +live +live +ok$", out, flags=re.M)


def test_check_on_a_postgres_url_template(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "check", "--url", with_namespace(pg_url, "kit-{name}"))
    assert status == 0 and out.rstrip().endswith("17 passed, 0 failed")
    assert re.search(r"^durability +restart +restart +ok$", out, flags=re.M)
    postgres_url = with_namespace(pg_url.replace("postgresql://", "postgres://", 1), "kit-{name}")
    status, out, _ = run_cli(capsys, "check", "--url", postgres_url, "--only", "durability")
    assert status == 0 and re.search(r"^durability +restart +restart +ok$", out, flags=re.M)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check"], "give either FACTORY or --url"),
        (["check", "tests.kit_stores:Copying", "--url", "memory:"], "give either FACTORY or --url"),
        (["check", "--url", "sqlite:///kit.db"], "must hold {workspace} or {name}"),
        (["check", "sqlite:///kit.db"], "'sqlite:///kit.db' is a store URL: check takes one as --url, holding"),
        (["check", "memory:"], "'memory:' is a store URL: check takes one as --url"),
        (["check", "postgresql://h/db?namespace=n"], "is a store URL: check takes one as --url"),
        (["check", "memory:make_store"], "cannot import 'memory': No module named 'memory'"),
        (["check", "--url", "sqlite:///{workspace}/{store}.db"], "only the fields {workspace} and {name}"),
        (["check", "--url", "sqlite:///{workspace}/{0}.db"], "only the fields {workspace} and {name}"),
        (["check", "--url", "ftp://{name}"], "starts with one of"),
        (["check", "--url", "memory:", "--only", "text"], "invalid choice: 'text' (choose from 'protocol',"),
    ],
)
def test_check_refuses_a_bad_url_template(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m lionmem check ")
    assert "\npython -m lionmem check: error: " in err and message in err


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)
KEYS = st.text(min_size=1, max_size=8).filter(lambda key: "=" not in key and not key.endswith(":"))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=KEYS, value=JSON_VALUES, text=st.text(max_size=10))
def test_values_typed_in_a_shell_round_trip_and_find_their_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: Any, text: str
) -> None:
    url = f"sqlite:///{tmp_path / f'{uuid4().hex}.db'}"
    as_json = json.dumps(value)
    # --meta=PAIR, so that a key starting with '-' is not read as an option.
    status, out, err = run_cli(capsys, "put", url, "x", f"--meta={key}:={as_json}", f"--meta={key}_t={text}")
    assert (status, err) == (0, "")
    [stored] = lines_of(run_cli(capsys, "get", url, out.strip())[1])
    assert stored["metadata"] == {key: value, f"{key}_t": text}
    found = run_cli(capsys, "search", url, f"--filter={key}:={as_json}", f"--filter={key}_t={text}")[1]
    assert [line["id"] for line in lines_of(found)] == [out.strip()]


def test_check_reports_a_store_that_cannot_be_opened(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "check", "--url", "sqlite:///{workspace}/no/such/kit.db")
    assert (status, out) == (1, "")
    assert err.startswith("python -m lionmem: error: no store to check: FileNotFoundError: ")
    assert "no/such is not a directory" in err


def test_check_prints_each_row_as_its_check_ends(tmp_path: Path) -> None:
    """So a store that never answers shows which check it holds up."""
    (tmp_path / "stuck.py").write_text(textwrap.dedent("""
        import asyncio
        from lionmem import InMemoryStore

        class StuckOnTags(InMemoryStore):
            async def search(self, query):
                if query.tags:
                    await asyncio.Event().wait()
                return await super().search(query)
    """))
    checker = subprocess.Popen(
        [sys.executable, "-m", "lionmem", "check", "stuck:StuckOnTags"],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        env={**PIPED_ENV, "PYTHONPATH": str(tmp_path)},
    )
    assert checker.stdout is not None
    lines: list[str] = []
    reading = threading.Thread(target=lambda: lines.extend(checker.stdout or ()))
    reading.start()
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("text_match ") for line in lines) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # room for a row that should not come
    finally:
        checker.kill()
        reading.join()
        checker.wait()
        checker.stdout.close()
    assert [line.split()[0] for line in lines] == ["check", "protocol", "concurrent_writes", "text_match"]
    assert lines[3].rstrip().endswith("ok")


def test_a_reader_that_stops_early_ends_the_output_quietly(tmp_path: Path) -> None:
    async def fill() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "many.db") as store:
            await store.store_many([MemoryItem(content="x" * 1000) for _ in range(2000)])

    asyncio.run(fill())
    reader = subprocess.Popen(
        [sys.executable, "-m", "lionmem", "search", f"sqlite:///{tmp_path / 'many.db'}", "--limit", "-1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=PIPED_ENV,
    )
    assert reader.stdout is not None and reader.stderr is not None
    assert json.loads(reader.stdout.readline())["content"] == "x" * 1000
    reader.stdout.close()  # as `| head -1` does, with 2 MB still to come
    with reader.stderr:
        assert reader.wait(timeout=60) == 1
        assert reader.stderr.read() == b""
