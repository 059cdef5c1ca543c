"""`delete` and `forget`: what they delete, what they say first, `--dry-run`,
`--older-than`, and an SQLite file left erased when the command returns (ADR-0100)."""

from __future__ import annotations

import asyncio
import contextlib
import re
import sqlite3
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any, cast
from uuid import uuid4

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.protocols.forgetting import ErasureWarning
from tests.support.cli_support import fill, lines_of, run_cli, with_namespace

MARKER = "qzqzxjxjwvwv"


def _contents(capsys: pytest.CaptureFixture[str], url: str) -> list[object]:
    status, out, _ = run_cli(capsys, "search", url, "--limit", "1000")
    assert status == 0
    return [line["content"] for line in lines_of(out)]


def test_delete_removes_the_items_named_and_names_those_it_did_not_find(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    items = [MemoryItem(content=f"note {n}") for n in range(3)]
    fill(url, items)
    status, out, err = run_cli(capsys, "delete", url, str(items[0].id), str(items[2].id), str(items[0].id))
    assert (status, out, err) == (0, "deleted 2 of 2 items\n", "")
    assert _contents(capsys, url) == ["note 1"]
    missing = uuid4()
    status, out, err = run_cli(capsys, "delete", url, str(items[1].id), str(missing))
    assert (status, out, err) == (1, "deleted 1 of 2 items\n", f"no item {missing}\n")
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "delete", url, "not-a-uuid")
    out, err = capsys.readouterr()
    assert exit_info.value.code == 2 and "'not-a-uuid' is not a UUID" in err and out == ""


def test_forget_says_how_many_match_and_dry_run_deletes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    fill(url, [MemoryItem(content=f"note {n}", tags=["odd" if n % 2 else "even"]) for n in range(30)])
    assert run_cli(capsys, "forget", url, "--tag", "odd", "--dry-run") == (
        0,
        "15 items match\ndry run: nothing deleted\n",
        "",
    )
    assert len(_contents(capsys, url)) == 30
    # Without --limit, every match: more than search's default of 20.
    assert run_cli(capsys, "forget", url, "--text", "NOTE", "--tag", "even", "--limit", "-2") == (
        0,
        "13 items match\ndeleted 13 items\n",
        "",
    )
    assert run_cli(capsys, "forget", url, "--tag", "odd") == (0, "15 items match\ndeleted 15 items\n", "")
    assert _contents(capsys, url) == ["note 26", "note 28"]
    assert run_cli(capsys, "forget", url, "--filter", "n:=1") == (0, "0 items match\ndeleted 0 items\n", "")
    assert run_cli(capsys, "forget", url, "--text", "26")[1] == "1 item matches\ndeleted 1 item\n"


def test_forget_older_than_a_duration(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    now = time.time()
    fill(
        url,
        [
            MemoryItem(content="last month", tags=["a"], created_at=now - 31 * 86_400),
            MemoryItem(content="last week", tags=["b"], created_at=now - 7 * 86_400),
            MemoryItem(content="an hour ago", tags=["a"], created_at=now - 3_600),
            MemoryItem(content="now", tags=["a"], created_at=now + 60),
        ],
    )
    assert run_cli(capsys, "forget", url, "--older-than", "30d", "--dry-run")[1] == (
        "1 item matches\ndry run: nothing deleted\n"
    )
    assert run_cli(capsys, "forget", url, "--older-than", "2w", "--tag", "a")[1] == "1 item matches\ndeleted 1 item\n"
    assert run_cli(capsys, "forget", url, "--older-than", "1.5d")[1] == "1 item matches\ndeleted 1 item\n"
    assert run_cli(capsys, "forget", url, "--older-than", "30m")[1] == "1 item matches\ndeleted 1 item\n"
    assert _contents(capsys, url) == ["now"]
    for bad in ("3x", "1.5.5d", "d", "5 days"):
        with pytest.raises(SystemExit) as exit_info:
            run_cli(capsys, "forget", url, "--older-than", bad)
        out, err = capsys.readouterr()
        assert (exit_info.value.code, out) == (2, "") and "is not a duration such as 90s, 15m, 12h, 30d" in err


def test_delete_and_forget_leave_an_sqlite_file_erased_when_they_return(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    secrets = [MemoryItem(content=f"{MARKER} {n}", tags=[MARKER]) for n in range(2)]
    fill(url, [*secrets, *(MemoryItem(content=f"item {n}") for n in range(100))])
    assert run_cli(capsys, "delete", url, str(secrets[0].id))[0] == 0
    assert run_cli(capsys, "forget", url, "--tag", MARKER)[1] == "1 item matches\ndeleted 1 item\n"
    data = b"".join(path.read_bytes() for path in tmp_path.iterdir())
    assert MARKER[:6].encode() not in data and len(_contents(capsys, url)) == 100


def test_delete_and_forget_on_postgres(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = with_namespace(pg_url, f"cli-{uuid4().hex[:12]}")
    items = [MemoryItem(content=f"note {n}", metadata={"n": n}) for n in range(4)]
    fill(url, items)
    assert run_cli(capsys, "delete", url, str(items[0].id))[:2] == (0, "deleted 1 of 1 item\n")
    assert run_cli(capsys, "forget", url, "--filter", "n:=2")[1] == "1 item matches\ndeleted 1 item\n"
    assert _contents(capsys, url) == ["note 1", "note 3"]


def test_delete_on_a_missing_file_creates_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "forget", f"sqlite:///{tmp_path / 'none.db'}", "--dry-run")
    assert (status, out) == (1, "") and "(`put` creates a store; this command creates none)" in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_forget_older_than_keeps_an_item_replaced_after_it_was_counted(
    backend: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    """Another process replaces an old item with a new one between the count `forget`
    prints and its delete. The delete decides the age itself, so the new item stays;
    deleting the ids the count found lost it in every run."""
    if backend == "sqlite":
        url, store_class = f"sqlite:///{tmp_path / 'm.db'}", cast(type[Any], SQLiteMemoryStore)
    else:
        url, store_class = (
            with_namespace(request.getfixturevalue("pg_url"), f"age-{uuid4().hex[:12]}"),
            PostgresMemoryStore,
        )
    old = time.time() - 10 * 86_400
    items = [MemoryItem(content=f"old {n}", created_at=old + n) for n in range(3)]
    fill(url, items)
    replaced = items[1].id
    search = store_class.search

    async def search_then_replace(store: Any, query: MemoryQuery) -> list[MemoryItem]:
        found: list[MemoryItem] = await search(store, query)
        put = ["put", url, "fresh", "--id", str(replaced)]
        done = subprocess.run([sys.executable, "-m", "lionmem", *put], capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stderr
        return found

    monkeypatch.setattr(store_class, "search", search_then_replace)
    assert run_cli(capsys, "forget", url, "--older-than", "1d") == (0, "3 items match\ndeleted 2 items\n", "")
    monkeypatch.setattr(store_class, "search", search)
    assert _contents(capsys, url) == ["fresh"]


def test_erasure_that_closing_cannot_prove_is_said_with_status_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Another connection reading the file keeps its write-ahead log: the deleted
    marker may still be there when the command returns, and the command says so."""
    path = tmp_path / "m.db"
    url = f"sqlite:///{path}"
    marked = MemoryItem(content=f"secret {MARKER}")
    fill(url, [marked, MemoryItem(content="kept")])
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as reader:
        reader.execute("BEGIN")
        reader.execute("SELECT count(*) FROM items").fetchone()  # a read snapshot held open
        status, out, err = run_cli(capsys, "delete", url, str(marked.id))
        wal = path.with_name("m.db-wal")
        assert status == 1 and out == "deleted 1 of 1 item\n"
        assert err.startswith(
            f"python -m lionmem: warning: erasure of what was deleted is not proven: the write-ahead log {wal} still holds "
        )
        assert err.endswith("open and close it with lionmem again to finish the erasure (ADR-0100 D3)\n")
        reader.execute("COMMIT")
    # With the other connection gone, opening and closing finishes it: a delete of
    # nothing still empties the log.
    status, out, err = run_cli(capsys, "forget", url, "--text", MARKER)
    assert (status, err) == (0, "")
    assert not path.with_name("m.db-wal").exists()
    assert MARKER.encode() not in path.read_bytes()


def test_a_store_that_closes_with_its_log_emptied_gives_no_warning(tmp_path: Path) -> None:
    async def scenario() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "m.db") as store:
            item = MemoryItem(content="gone")
            await store.store(item)
            assert await store.delete(item.id)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asyncio.run(scenario())
    assert not (tmp_path / "m.db-wal").exists()


def test_the_store_warns_once_when_erasure_is_not_proven(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def scenario() -> None:
        store = await SQLiteMemoryStore.open(path)
        item = MemoryItem(content="gone")
        await store.store(item)
        await store.delete(item.id)
        with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM items").fetchone()
            with pytest.warns(ErasureWarning, match=f"the write-ahead log {re.escape(str(path))}-wal still holds"):
                await store.close()
            await store.close()  # closing again says nothing more

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asyncio.run(scenario())


def test_older_than_takes_ascii_digits_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # \d accepts other scripts' digits: an Arabic-Indic three and "d" was three days.
    for given in ("\u0663d", "\uff13d", "1.\u0665h"):  # Arabic-Indic, fullwidth
        with pytest.raises(SystemExit) as exit_info:
            run_cli(capsys, "forget", f"sqlite:///{tmp_path / 'm.db'}", "--older-than", given)
        assert exit_info.value.code == 2
        assert f"--older-than {given!r} is not a duration" in capsys.readouterr().err


def test_a_serialization_failure_says_to_run_the_command_again(
    pg_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import psycopg

    url = with_namespace(pg_url, f"retry-{uuid4().hex[:12]}")
    fill(url, [MemoryItem(content="a")])

    async def conflicted(store: PostgresMemoryStore, query: MemoryQuery, **kwargs: Any) -> int:
        raise psycopg.errors.SerializationFailure("could not serialize access due to concurrent update")

    monkeypatch.setattr(PostgresMemoryStore, "delete_matching", conflicted)
    status, _, err = run_cli(capsys, "forget", url, "--text", "a")
    assert status == 1
    assert err == (
        "python -m lionmem: error: could not serialize access due to concurrent update (another client changed "
        "a matching item meanwhile; nothing was deleted: run the command again)\n"
    )


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_forget_expired_sweeps_what_expired_and_nothing_else(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest, capsys: pytest.CaptureFixture[str]
) -> None:
    if backend == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.db'}"
    else:
        url = with_namespace(request.getfixturevalue("pg_url"), f"cli-{uuid4().hex[:12]}")
    items = [MemoryItem(content=f"note {n}") for n in range(5)]
    fill(url, items)

    async def expiring() -> None:
        opened = (
            SQLiteMemoryStore.open(tmp_path / "m.db")
            if backend == "sqlite"
            else PostgresMemoryStore.open(request.getfixturevalue("pg_url"), namespace=url.rsplit("=", 1)[1])
        )
        async with opened as store:
            assert await store.expire([items[1].id, items[3].id], at=time.time() - 1) == 2
            assert await store.expire([items[4].id], ttl=3_600) == 1

    asyncio.run(expiring())
    assert _contents(capsys, url) == ["note 0", "note 2", "note 4"]  # hidden before the sweep
    assert run_cli(capsys, "forget", url, "--expired") == (0, "deleted 2 items that had expired\n", "")
    assert run_cli(capsys, "forget", url, "--expired") == (0, "deleted 0 items that had expired\n", "")
    assert _contents(capsys, url) == ["note 0", "note 2", "note 4"]
    for other in (["--dry-run"], ["--tag", "a", "--limit", "0"], ["--older-than", "1d"]):
        with pytest.raises(SystemExit) as exit_info:
            run_cli(capsys, "forget", url, "--expired", *other)
        out, err = capsys.readouterr()
        assert (exit_info.value.code, out) == (2, "")
        assert "forget --expired deletes every expired item and takes no other option, got " + other[0] in err
