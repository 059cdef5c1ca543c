"""What the SQLite store does with a path: files it must not touch, and places it cannot write."""

from __future__ import annotations

import contextlib
import os
import pwd
import random
import re
import shutil
import socket
import sqlite3
import tempfile
import warnings
from collections.abc import Awaitable, Iterator
from pathlib import Path

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.errors import IncompatibleDatabaseError, MissingSchemaError
from lionmem.adapters.sqlite import (
    SCHEMA_VERSION,
    SQLiteMemoryStore,
)
from lionmem.adapters.sqlite import _connect as sqlite_connect
from tests.support.sqlite_support import connect, digest, with_store


@pytest.mark.parametrize(
    "text", ["dear diary\n" * 100, "x", "SQLite format 3"], ids=["text", "one byte", "header cut short"]
)
def test_a_file_that_is_not_sqlite_is_refused_untouched(tmp_path: Path, text: str) -> None:
    path = tmp_path / "notes.txt"
    path.write_text(text)
    before = digest(path)
    with pytest.raises(IncompatibleDatabaseError, match="not an SQLite database"):
        with_store(path, lambda store: store.search(MemoryQuery()))
    assert digest(path) == before and not Path(str(path) + "-wal").exists()


def test_another_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    db = connect(path)
    db.execute("CREATE TABLE users (name TEXT)")
    db.commit()
    db.close()
    before = digest(path)
    with pytest.raises(IncompatibleDatabaseError, match="not a lionmem one"):
        with_store(path, lambda store: store.search(MemoryQuery()))
    assert digest(path) == before
    assert connect(path).execute("PRAGMA journal_mode").fetchone() == ("delete",)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(IncompatibleDatabaseError, match="directory"):
        with_store(tmp_path, lambda store: store.search(MemoryQuery()))


@pytest.mark.parametrize("kind", ["a named pipe", "a socket", "a character device"])
def test_a_file_that_is_not_a_regular_file_is_refused_and_nothing_is_made_beside_it(tmp_path: Path, kind: str) -> None:
    # SQLite would open any of these, fail with "disk I/O error", and for /dev/null
    # leave a /dev/null-journal behind.
    path = tmp_path / "m.db"
    with contextlib.ExitStack() as cleanup:
        if kind == "a named pipe":
            os.mkfifo(path)
        elif kind == "a socket":
            listener = cleanup.enter_context(socket.socket(socket.AF_UNIX))
            listener.bind(str(path))
        else:
            path = Path(os.devnull)
        siblings = sorted(path.parent.iterdir())
        with pytest.raises(IncompatibleDatabaseError, match=f"^{re.escape(str(path))} is {kind}, not a database file"):
            with_store(path, lambda store: store.search(MemoryQuery()))
        assert sorted(path.parent.iterdir()) == siblings


@contextlib.contextmanager
def _scratch() -> Iterator[Path]:
    """A directory of its own, made here rather than in tmp_path, which only root can
    enter, and removed afterwards whatever its mode."""
    directory = Path(tempfile.mkdtemp())
    try:
        yield directory
    finally:
        directory.chmod(0o700)
        shutil.rmtree(directory)


def _refused(path: Path, place: Path) -> str:
    """How the child reports that the store may not write `place` to open `path`."""
    return (
        f"PermissionError: cannot open {path}: {place} is not writable here, and the store "
        "writes the database file and keeps its write-ahead log beside it, even to read"
    )


def _opened_without_root(path: Path, create: bool) -> str:
    """How opening `path` and searching it ended in a forked child that runs as
    `nobody` when this process is root, for whom permissions do not apply."""
    read, write = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork() with threads running
        pid = os.fork()
    if pid == 0:
        try:
            if os.geteuid() == 0:
                nobody = pwd.getpwnam("nobody")
                os.setgid(nobody.pw_gid)
                os.setuid(nobody.pw_uid)
            try:
                found = with_store(path, lambda store: store.search(MemoryQuery()), create=create)
                outcome = f"found {len(found)}"
            except BaseException as exc:
                outcome = f"{type(exc).__name__}: {exc}"
            os.write(write, outcome.encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        outcome = pipe.read()
    os.waitpid(pid, 0)
    return outcome


@pytest.mark.parametrize(
    ("file_mode", "directory_mode", "unwritable"),
    [(0o666, 0o555, "directory"), (0o644, 0o777, "file"), (None, 0o555, "directory")],
)
def test_a_file_or_directory_the_store_cannot_write_is_named(
    file_mode: int | None, directory_mode: int, unwritable: str
) -> None:
    # SQLite said "attempt to write a readonly database" or "unable to open database
    # file".
    with _scratch() as directory:
        path = directory / "m.db"
        if file_mode is not None:
            with_store(path, lambda store: store.store(MemoryItem(content="kept")))
            path.chmod(file_mode)
        directory.chmod(directory_mode)
        before = sorted(directory.iterdir())
        place = directory if unwritable == "directory" else path
        assert _opened_without_root(path, create=file_mode is None) == _refused(path, place)
        assert sorted(directory.iterdir()) == before
        directory.chmod(0o777)
        if file_mode is not None:
            path.chmod(0o666)
        assert _opened_without_root(path, create=True) == f"found {0 if file_mode is None else 1}"


def test_which_place_is_named_follows_what_the_system_allows(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Root, as CI runs, may write anything: the test above shows the real refusals
    # in a child running as nobody, and this one takes the same decisions here.
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store(MemoryItem(content="kept")))
    denied: set[Path] = {path}
    monkeypatch.setattr(os, "access", lambda place, mode: Path(place) not in denied)

    def search(store: SQLiteMemoryStore) -> Awaitable[list[MemoryItem]]:
        return store.search(MemoryQuery())

    with pytest.raises(PermissionError, match=f"^cannot open {re.escape(str(path))}: {re.escape(str(path))} is not"):
        with_store(path, search)

    def unable(*args: object) -> sqlite3.Connection:
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(sqlite_connect, "_connect_writer", unable)
    denied = {tmp_path}
    with pytest.raises(
        PermissionError, match=f"^cannot open {re.escape(str(path))}: {re.escape(str(tmp_path))} is not"
    ) as caught:
        with_store(path, search)
    assert isinstance(caught.value.__cause__, sqlite3.OperationalError)
    denied = set()  # a writable directory: SQLite's own error, as it was
    with pytest.raises(sqlite3.OperationalError, match="^unable to open database file$"):
        with_store(path, search)


def test_a_missing_directory_is_named_and_not_created(tmp_path: Path) -> None:
    missing = tmp_path / "no" / "such"
    with pytest.raises(FileNotFoundError, match=f"{re.escape(str(missing))} is not a directory"):
        with_store(missing / "m.db", lambda store: store.search(MemoryQuery()))
    assert list(tmp_path.iterdir()) == []


def test_without_create_a_missing_file_is_an_error_and_stays_missing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with pytest.raises(FileNotFoundError, match=f"there is no database at {re.escape(str(path))}"):
        with_store(path, lambda store: store.search(MemoryQuery()), create=False)
    assert list(tmp_path.iterdir()) == []
    item = MemoryItem(content="kept")
    with_store(path, lambda store: store.store(item))
    found = with_store(path, lambda store: store.retrieve(item.id), create=False)
    assert found == item
    with pytest.raises(TypeError, match="create must be a bool, got str"):
        SQLiteMemoryStore.open(path, create="no")  # type: ignore[arg-type]


def test_without_create_a_file_with_no_lionmem_schema_is_left_as_it_was(tmp_path: Path) -> None:
    """An empty file, or an SQLite database with no tables, as PostgreSQL refuses a
    database without the schema: a reader writes no schema into it."""
    empty = tmp_path / "empty.db"
    empty.touch()
    bare = tmp_path / "bare.db"
    with contextlib.closing(sqlite3.connect(bare)) as db:
        db.execute("CREATE TABLE t (x)")
        db.execute("DROP TABLE t")
    before = digest(bare)
    for path in (empty, bare):
        message = f"^{re.escape(str(path))} holds no lionmem schema; nothing was created$"
        with pytest.raises(MissingSchemaError, match=message):
            with_store(path, lambda store: store.search(MemoryQuery()), create=False)
    assert sorted(tmp_path.iterdir()) == [bare, empty]
    assert empty.stat().st_size == 0 and digest(bare) == before
    item = MemoryItem(content="kept")
    with_store(empty, lambda store: store.store(item))  # with create, it is a new store
    assert with_store(empty, lambda store: store.retrieve(item.id), create=False) == item


@pytest.mark.parametrize("name", ["file:notes.db", "file:notes.db?mode=memory", "notes #1?.db", "%41.db"])
def test_the_file_opened_is_the_path_as_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """SQLite built with SQLITE_USE_URI, as Debian's is, reads a name starting with
    "file:" as a URI: "file:notes.db" was notes.db, checked as a foreign file under
    the other name, and with ?mode=memory nothing was kept."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.db").write_text("not a database")  # what "file:notes.db" opened
    item = MemoryItem(content="kept")
    with_store(Path(name), lambda store: store.store(item))
    assert with_store(Path(name), lambda store: store.retrieve(item.id), create=False) == item
    assert (tmp_path / name).is_file()
    assert (tmp_path / "notes.db").read_text() == "not a database"


def test_without_create_the_file_is_opened_read_write_so_never_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Should the file go between the check that it exists and the connection."""
    monkeypatch.setattr(sqlite_connect, "refuse_foreign_file", lambda path, create: None)
    with pytest.raises(sqlite3.OperationalError, match="unable to open database file"):
        with_store(tmp_path / "gone.db", lambda store: store.search(MemoryQuery()), create=False)
    assert list(tmp_path.iterdir()) == []


def test_a_log_file_the_store_cannot_write_is_named() -> None:
    # SQLite said "attempt to write a readonly database", naming no file.
    with _scratch() as directory:
        path = directory / "m.db"
        wal = path.with_name("m.db-wal")
        with_store(path, lambda store: store.store(MemoryItem(content="kept")))
        other = connect(path, isolation_level=None)  # keeps the log while it is open
        other.execute("PRAGMA journal_mode = WAL")
        other.execute("CREATE TABLE scratch (x)")
        assert wal.exists()
        directory.chmod(0o777)
        path.chmod(0o666)
        path.with_name("m.db-shm").chmod(0o666)
        wal.chmod(0o444)
        assert _opened_without_root(path, create=False) == _refused(path, wal)
        wal.chmod(0o666)
        assert _opened_without_root(path, create=False) == "found 1"


def test_each_log_file_is_asked_here_as_the_system_would_answer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Root may write anything: the test above refuses for real as nobody, this one
    # takes the same decision here.
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store(MemoryItem(content="kept")))
    for log in (path.with_name("m.db-wal"), path.with_name("m.db-shm")):
        log.touch()
        monkeypatch.setattr(os, "access", lambda place, mode, log=log: Path(place) != log)
        with pytest.raises(PermissionError, match=f"^cannot open {re.escape(str(path))}: {re.escape(str(log))} is not"):
            with_store(path, lambda store: store.search(MemoryQuery()))
        log.unlink()


def test_a_damaged_file_is_named_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store_many([MemoryItem(content=f"note {n}" * 50) for n in range(200)]))
    data = bytearray(path.read_bytes())
    data[100:2100] = random.Random(7).randbytes(2000)  # the schema's page, after the header
    path.write_bytes(bytes(data))
    with pytest.raises(IncompatibleDatabaseError) as caught:
        with_store(path, lambda store: store.search(MemoryQuery()))
    assert str(caught.value) == (
        f"{path} is damaged (SQLite: database disk image is malformed); left as it was. Restore "
        f"it from a backup, or see what can be saved with: sqlite3 {path} .recover"
    )
    assert caught.value.__cause__ is None and caught.value.__suppress_context__
    assert path.read_bytes() == bytes(data)


def test_a_file_whose_version_was_lowered_by_hand_is_named_and_left_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    item = MemoryItem(content="kept")
    with_store(path, lambda store: store.store(item))
    connect(path, isolation_level=None).execute("PRAGMA user_version = 1")
    with pytest.raises(
        IncompatibleDatabaseError,
        match=(
            f"^{re.escape(str(path))} says it holds schema version 1, but its tables are not that "
            r"version's \(SQLite: table item_tags already exists\); nothing was changed\."
        ),
    ):
        with_store(path, lambda store: store.search(MemoryQuery()))
    db = connect(path, isolation_level=None)
    assert db.execute("PRAGMA user_version").fetchone() == (1,)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    assert with_store(path, lambda store: store.retrieve(item.id)) == item
