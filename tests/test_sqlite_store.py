"""SQLiteMemoryStore: lifecycle, schema, exact semantics, durability and concurrency."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import json
import math
import os
import pwd
import re
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import warnings
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters import sqlite as sqlite_module
from lionmem.adapters.sqlite import _connect as sqlite_connect
from lionmem.adapters.sqlite import _planner as sqlite_planner
from lionmem.adapters.sqlite import _writes as sqlite_writes
from lionmem.adapters.sqlite import schema as sqlite_schema
from lionmem.adapters._rows import encode_item
from lionmem.adapters.errors import IncompatibleDatabaseError, StoreClosedError
from lionmem.adapters import lifecycle
from lionmem.adapters.lifecycle import MAX_TIMEOUT
from lionmem.adapters.sqlite import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLITE_PROFILE,
    SQLiteMemoryStore,
)
from lionmem.testing import FidelityProfile, StoreFactory
from lionmem.testing.pytest_plugin import MemoryStoreContract
from store_checks import (
    STORE_CHECKS,
    StoreCheck,
    assert_freed_once_dropped,
    assert_searches_agree,
    assert_writes_keep_the_item_as_called,
    ticking,
)
from together import start_together

SRC = str(Path(__file__).resolve().parent.parent / "src")


_opened: list[sqlite3.Connection] = []


def connect(
    path: str | Path, *, isolation_level: Literal["DEFERRED"] | None = "DEFERRED", check_same_thread: bool = True
) -> sqlite3.Connection:
    """A connection of the test's own, closed when the test ends if not before."""
    db = sqlite3.connect(path, isolation_level=isolation_level, check_same_thread=check_same_thread)
    _opened.append(db)
    return db


@pytest.fixture(autouse=True)
def _close_test_connections() -> Iterator[None]:
    yield
    while _opened:
        _opened.pop().close()


def run(coro: Awaitable[Any]) -> Any:
    return asyncio.run(coro)  # type: ignore[arg-type]


def with_store(path: Path, body: Callable[[SQLiteMemoryStore], Awaitable[Any]], **kwargs: Any) -> Any:
    async def scenario() -> Any:
        async with SQLiteMemoryStore.open(path, **kwargs) as store:
            return await body(store)

    return run(scenario())


async def traced_search(store: SQLiteMemoryStore, query: MemoryQuery) -> tuple[list[MemoryItem], list[str]]:
    """`query`'s results and the statements that read them (not FTS5's own or the index
    counts), run on the store's own thread."""

    def traced() -> tuple[list[MemoryItem], list[str]]:
        captured: list[str] = []
        store._writer.set_trace_callback(captured.append)
        try:
            found = sqlite_planner.search(store._writer, query)
        finally:
            store._writer.set_trace_callback(None)
        return found, [sql for sql in captured if sql.startswith("SELECT items.")]

    result: tuple[list[MemoryItem], list[str]] = await store._on_writer(traced)
    return result


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


class TestSQLiteContract(MemoryStoreContract):
    @pytest.fixture
    def memory_store_factory(self) -> StoreFactory:
        return lambda workspace: SQLiteMemoryStore.open(workspace / "memory.db")

    @pytest.fixture
    def memory_store_profile(self) -> FidelityProfile:
        return SQLITE_PROFILE


# -- lifecycle ----------------------------------------------------------------


def test_the_fork_hook_tracks_the_process_and_the_refusal_names_both() -> None:
    # Both run for real only in a forked child (assert_forked_child_refused), which
    # coverage does not follow.
    lifecycle._forked()
    assert lifecycle.process_id() == os.getpid()
    lifecycle.refuse_forked(os.getpid(), "the store")
    with pytest.raises(RuntimeError, match=rf"^the store was opened in process 1, and this is process {os.getpid()}, forked"):
        lifecycle.refuse_forked(1, "the store")


def test_open_close_and_await_form(tmp_path: Path) -> None:
    async def scenario() -> None:
        store = await SQLiteMemoryStore.open(tmp_path / "m.db")
        item = MemoryItem(content="x")
        await store.store(item)
        was_open = not store.closed
        await store.close()
        await store.close()  # idempotent
        assert was_open and store.closed and store.path == tmp_path / "m.db"
        calls = (store.store(MemoryItem()), store.retrieve(item.id), store.search(MemoryQuery()), store.optimize())
        for call in calls:
            with pytest.raises(StoreClosedError, match="is closed"):
                await call
        with pytest.raises(StoreClosedError):
            await store.store_many([MemoryItem()])

    run(scenario())


def test_context_manager_closes_the_store(tmp_path: Path) -> None:
    async def scenario() -> SQLiteMemoryStore:
        async with SQLiteMemoryStore.open(tmp_path / "m.db") as store:
            return store

    assert run(scenario()).closed


def test_no_hidden_default_location() -> None:
    with pytest.raises(TypeError):
        SQLiteMemoryStore.open()  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"synchronous": "OFF"}, "synchronous"),
        ({"busy_timeout": -1}, "busy_timeout"),
        ({"busy_timeout": math.inf}, r"busy_timeout must be from 0 to 2147483\.647 seconds, got inf"),
        ({"busy_timeout": math.nan}, r"busy_timeout must be from 0 to 2147483\.647 seconds, got nan"),
        # Beyond what SQLite's busy timeout holds (2**31 - 1 milliseconds), or beyond
        # a float once in milliseconds: it failed on opening with OverflowError.
        ({"busy_timeout": 2147483.648}, r"busy_timeout must be from 0 to 2147483\.647 seconds"),
        ({"busy_timeout": 1e308}, r"busy_timeout must be from 0 to 2147483\.647 seconds"),
    ],
)
def test_bad_open_arguments(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SQLiteMemoryStore.open(tmp_path / "m.db", **kwargs)


@pytest.mark.parametrize(
    ("busy_timeout", "pragma"), [(0, 0), (0.0004, 1), (1.0001, 1001), (MAX_TIMEOUT, 2**31 - 1)]
)
def test_busy_timeout_reaches_sqlite_in_milliseconds_rounded_up(
    tmp_path: Path, busy_timeout: float, pragma: int
) -> None:
    """0 is a timeout SQLite takes (fail at once), unlike PostgreSQL; the longest is
    what SQLite holds."""

    async def body(store: SQLiteMemoryStore) -> tuple[int, int]:
        (reader,) = store._live_reader().execute("PRAGMA busy_timeout").fetchone()
        (writer,) = await store._on_writer(
            lambda: store._writer.execute("PRAGMA busy_timeout").fetchone()
        )
        return reader, writer

    assert with_store(tmp_path / "m.db", body, busy_timeout=busy_timeout) == (pragma, pragma)


def test_the_event_loop_reader_cannot_write(tmp_path: Path) -> None:
    """`retrieve` reads on the event loop's thread; only the store's own thread may
    write, so the loop never waits for a write lock."""

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        await store.store(MemoryItem(content="kept"))
        with pytest.raises(sqlite3.OperationalError, match="attempt to write a readonly database"):
            store._live_reader().execute("DELETE FROM items")
        return await store.search(MemoryQuery())

    assert [i.content for i in with_store(tmp_path / "m.db", body)] == ["kept"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"path": 7}, "^path must be a str or a path, got int$"),
        ({"path": b"m.db"}, "^path must be a str or a path, got bytes$"),
        ({"busy_timeout": "10"}, "^busy_timeout must be a number of seconds, got str$"),
        ({"busy_timeout": None}, "^busy_timeout must be a number of seconds, got NoneType$"),
        # True would have been one second.
        ({"busy_timeout": True}, "^busy_timeout must be a number of seconds, got bool$"),
    ],
)
def test_open_arguments_of_the_wrong_type_are_named(tmp_path: Path, kwargs: dict[str, Any], message: str) -> None:
    given: dict[str, Any] = {"path": tmp_path / "m.db", **kwargs}
    with pytest.raises(TypeError, match=message):
        SQLiteMemoryStore.open(given.pop("path"), **given)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("path", [":memory:", Path(":memory:")])
def test_an_in_memory_database_is_refused(path: str | Path) -> None:
    with pytest.raises(ValueError, match="needs a file.*InMemoryStore"):
        SQLiteMemoryStore.open(path)


def test_an_empty_path_is_refused_as_empty_not_as_the_current_directory() -> None:
    with pytest.raises(ValueError, match="^path is empty; name the database file$"):
        SQLiteMemoryStore.open("")


@pytest.mark.parametrize(
    ("name", "message"),
    [
        # Its file: URI holds %00, where SQLite ends the name: "a" was created.
        ("a\0b.db", "path 'a\\x00b.db' holds a NUL character, which no file name can"),
        # Path() drops the separator, and a file "data" was created.
        ("data/", "path 'data/' ends with a separator, as a directory's does; name the file"),
    ],
)
def test_a_path_no_file_can_have_is_refused_before_anything_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        SQLiteMemoryStore.open(name)
    assert list(tmp_path.iterdir()) == []


def test_the_repr_names_the_file_and_whether_the_store_is_open(tmp_path: Path) -> None:
    async def body() -> None:
        store = await SQLiteMemoryStore.open(tmp_path / "r.db")
        assert repr(store) == f"<SQLiteMemoryStore {str(tmp_path / 'r.db')!r} open>"
        await store.close()
        assert repr(store) == f"<SQLiteMemoryStore {str(tmp_path / 'r.db')!r} closed>"

    run(body())


@pytest.mark.parametrize("check", STORE_CHECKS, ids=[c.__name__.removeprefix("assert_") for c in STORE_CHECKS])
def test_the_shared_store_checks(tmp_path: Path, check: StoreCheck) -> None:
    with_store(tmp_path / "m.db", check)


def test_an_item_changed_during_its_write_is_stored_as_called(tmp_path: Path) -> None:
    async def body(store: SQLiteMemoryStore) -> None:
        @contextlib.asynccontextmanager
        async def paused() -> AsyncIterator[None]:
            # White-box: occupy the store's one worker thread until the block ends.
            release = threading.Event()
            store._executor.submit(release.wait)
            try:
                yield
            finally:
                release.set()

        await assert_writes_keep_the_item_as_called(store, paused)

    with_store(tmp_path / "m.db", body)


def test_a_store_works_from_an_event_loop_on_another_thread(tmp_path: Path) -> None:
    # As a sync framework's helper that runs each call in a fresh loop on a worker does.
    item = MemoryItem(content="shared", tags=["t"])

    async def opened() -> SQLiteMemoryStore:
        return await SQLiteMemoryStore.open(tmp_path / "m.db")

    store = run(opened())
    found: list[Any] = []

    def elsewhere() -> None:
        async def calls() -> None:
            await store.store(item)
            found.append(await store.retrieve(item.id))
            found.append(await store.search(MemoryQuery(tags=["t"])))

        asyncio.run(calls())

    worker = threading.Thread(target=elsewhere)
    worker.start()
    worker.join()
    assert found == [item, [item]]

    # Four threads read at once, each its own items: from Python 3.12, threads that
    # shared the reader connection unguarded got each other's rows, none, or errors.
    owned = [[MemoryItem(content=f"reader {n}, item {i}") for i in range(8)] for n in range(4)]
    run(store.store_many([one for items in owned for one in items]))
    wrong: list[tuple[int, object]] = []

    def reads(n: int) -> None:
        async def calls() -> None:
            for turn in range(1_000):
                mine = owned[n][turn % 8]
                got = await store.retrieve(mine.id)
                if got is None or got.content != mine.content:
                    wrong.append((n, None if got is None else got.content))
            found.append(n)

        asyncio.run(calls())

    readers = [threading.Thread(target=reads, args=(n,)) for n in range(4)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert sorted(found[2:]) == [0, 1, 2, 3] and wrong == []
    closing = threading.Thread(target=lambda: asyncio.run(store.close()))
    closing.start()
    closing.join()
    assert store.closed


def test_wal_journal_and_versioned_schema(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store(MemoryItem()))
    db = connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    # The number every lionmem database carries ("LMEM"); changing it would make every
    # existing database look foreign.
    assert db.execute("PRAGMA application_id").fetchone() == (APPLICATION_ID,) == (0x4C4D454D,)


# -- schema versions and foreign files ---------------------------------------------


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store(MemoryItem()))
    db = connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(IncompatibleDatabaseError, match="newer than this lionmem"):
        with_store(path, lambda store: store.search(MemoryQuery()))


def _version_one(path: Path, items: list[MemoryItem]) -> None:
    db = connect(path, isolation_level=None)
    MIGRATIONS[1](db)
    db.executemany(
        "INSERT INTO items (id, created_at, body, folded) VALUES (?, ?, ?, ?)",
        [encode_item(i) for i in items],
    )
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 1")
    db.close()


def test_an_older_schema_is_migrated_with_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    items = [
        MemoryItem(content="Alpha Centauri", tags=["star"], metadata={"n": 1}),
        MemoryItem(content="beta", tags=["greek"], metadata={"n": 2}),
    ]
    _version_one(path, items)

    async def body(store: SQLiteMemoryStore) -> None:
        assert [i.id for i in await store.search(MemoryQuery(text="centauri"))] == [items[0].id]
        assert [i.id for i in await store.search(MemoryQuery(tags=["greek"]))] == [items[1].id]
        assert [i.id for i in await store.search(MemoryQuery(filters={"n": 2.0}))] == [items[1].id]

    with_store(path, body)
    assert connect(path).execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


def test_a_failed_migration_leaves_the_old_schema(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.db"
    _version_one(path, [MemoryItem(content="kept")])
    step_two = MIGRATIONS[2]

    def half_done(db: sqlite3.Connection) -> None:
        step_two(db)
        db.execute("INSERT INTO no_such_table VALUES (1)")

    monkeypatch.setitem(sqlite_module.MIGRATIONS, 2, half_done)
    with pytest.raises(sqlite3.OperationalError, match="no_such_table"):
        with_store(path, lambda store: store.search(MemoryQuery()))
    db = connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (1,)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    assert "item_tags" not in tables
    assert db.execute("SELECT body FROM items").fetchall() == [('["kept",[],{}]',)]


def test_concurrent_first_opens_migrate_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    script = textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem
        from lionmem.adapters.sqlite import SQLiteMemoryStore
        async def main():
            async with SQLiteMemoryStore.open({str(path)!r}) as store:
                await store.store(MemoryItem(content=sys.argv[1]))
        wait_for_go()
        asyncio.run(main())
    """)
    procs = start_together(script, [str(n) for n in range(4)], tmp_path / "barrier")
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    found = with_store(path, lambda store: store.search(MemoryQuery(limit=100)))
    assert sorted(i.content for i in found) == ["0", "1", "2", "3"]


def _hold_write_lock(path: Path) -> sqlite3.Connection:
    """Another connection in the middle of a write, as a process migrating the file
    in rollback-journal mode would be."""
    other = connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    other.execute("UPDATE items SET body = body")
    return other


def test_switching_to_wal_waits_for_another_writer(tmp_path: Path) -> None:
    # SQLite answers the switch to WAL with "database is locked" at once, without its
    # busy handler, while another connection holds a write lock; seen in CI with four
    # processes opening one new file.
    path = tmp_path / "old.db"
    _version_one(path, [MemoryItem(content="kept")])
    other = _hold_write_lock(path)
    release = threading.Timer(0.2, other.execute, ["COMMIT"])
    release.start()
    found = with_store(path, lambda store: store.search(MemoryQuery()))
    release.join()
    other.close()
    assert [i.content for i in found] == ["kept"]
    assert connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_switching_to_wal_gives_up_after_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    _version_one(path, [MemoryItem(content="kept")])
    other = _hold_write_lock(path)
    try:
        with pytest.raises(sqlite3.OperationalError, match="database is locked"):
            with_store(path, lambda store: store.search(MemoryQuery()), busy_timeout=0.05)
    finally:
        other.execute("COMMIT")
        other.close()
    db = connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("delete",)
    assert db.execute("PRAGMA user_version").fetchone() == (1,)


def _open_files(path: Path) -> list[str]:
    """The files of the database at `path` (with its log) this process holds open."""
    held = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):  # closed since it was listed
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(str(path)):
                held.append(target)
    return held


def test_an_open_cancelled_while_it_waits_leaves_nothing_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.db"
    _version_one(path, [MemoryItem(content="kept")])
    opened: list[sqlite3.Connection] = []  # held here, so that only the store closes them
    connect_and_migrate = sqlite_connect._connect_and_migrate

    def recorded(*args: Any) -> sqlite3.Connection:
        db = connect_and_migrate(*args)
        opened.append(db)
        return db

    monkeypatch.setattr(sqlite_connect, "_connect_and_migrate", recorded)
    other = _hold_write_lock(path)

    async def cancelled_open() -> None:
        async def opening() -> SQLiteMemoryStore:
            return await SQLiteMemoryStore.open(path)

        task = asyncio.create_task(opening())
        await asyncio.sleep(0.2)  # the open waits to switch the file to WAL
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(cancelled_open())
    other.execute("COMMIT")
    other.close()
    # The worker thread finishes opening after the cancellation, then closes it.
    deadline = time.monotonic() + 10
    while (not opened or _open_files(path)) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert len(opened) == 1 and _open_files(path) == []
    assert connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_write_waits_for_another_writer_up_to_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def scenario() -> None:
        async with (
            SQLiteMemoryStore.open(path, busy_timeout=0.05) as impatient,
            SQLiteMemoryStore.open(path) as patient,
        ):
            other = _hold_write_lock(path)
            release = threading.Timer(0.5, other.execute, ["COMMIT"])
            release.start()
            try:
                # Released after 0.5 s: a 0.05 s timeout gives up before, the default waits.
                with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                    await impatient.store(MemoryItem(content="gave up"))
                await patient.store(MemoryItem(content="waited"))
            finally:
                release.join()
                other.close()

    run(scenario())
    found = with_store(path, lambda store: store.search(MemoryQuery()))
    assert [i.content for i in found] == ["waited"]


def test_switching_to_wal_does_not_retry_other_errors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    real_connect = sqlite3.connect
    tries: list[str] = []

    class DiskFails(sqlite3.Connection):
        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            if sql == "PRAGMA journal_mode = WAL":
                tries.append(sql)
                error = sqlite3.OperationalError("disk I/O error")
                error.sqlite_errorcode = sqlite3.SQLITE_IOERR
                raise error
            return super().execute(sql, parameters)

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real_connect(*args, factory=DiskFails, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        with_store(path, lambda store: store.search(MemoryQuery()))
    assert len(tries) == 1


def test_a_schema_committed_while_the_file_is_checked_is_not_taken_as_foreign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process finishes creating lionmem's schema while this one checks the new
    # file. Checking with two statements could read the id from before that commit and
    # the tables from after it, and refuse the file as another application's (seen
    # once in CI with four processes opening at once).
    path = tmp_path / "m.db"
    path.touch()
    real_connect = sqlite3.connect
    steps: list[str] = []

    class CommitsAfterTheIdIsRead(sqlite3.Connection):
        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            if steps == ["id read"]:  # the other process commits before the next statement
                other = real_connect(path, isolation_level=None)
                sqlite_schema.migrate(other, path)
                other.close()
                steps.append("committed")
            if "application_id" in sql and not steps:
                steps.append("id read")
            return super().execute(sql, parameters)

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real_connect(*args, factory=CommitsAfterTheIdIsRead, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    with_store(path, lambda store: store.store(MemoryItem(content="opened")))
    monkeypatch.undo()
    assert steps == ["id read", "committed"]
    assert [i.content for i in with_store(path, lambda store: store.search(MemoryQuery()))] == ["opened"]


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
def test_a_file_that_is_not_a_regular_file_is_refused_and_nothing_is_made_beside_it(
    tmp_path: Path, kind: str
) -> None:
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
    # file". The directory is made here, not in tmp_path, which only root can enter.
    directory = Path(tempfile.mkdtemp())
    path = directory / "m.db"
    try:
        if file_mode is not None:
            with_store(path, lambda store: store.store(MemoryItem(content="kept")))
            path.chmod(file_mode)
        directory.chmod(directory_mode)
        before = sorted(directory.iterdir())
        place = directory if unwritable == "directory" else path
        message = (
            f"PermissionError: cannot open {path}: {place} is not writable here, and the store "
            "writes the database file and keeps its write-ahead log beside it, even to read"
        )
        assert _opened_without_root(path, create=file_mode is None) == message
        assert sorted(directory.iterdir()) == before
        directory.chmod(0o777)
        if file_mode is not None:
            path.chmod(0o666)
        assert _opened_without_root(path, create=True) == f"found {0 if file_mode is None else 1}"
    finally:
        directory.chmod(0o700)
        shutil.rmtree(directory)


def test_which_place_is_named_follows_what_the_system_allows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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
    with pytest.raises(PermissionError, match=f"^cannot open {re.escape(str(path))}: {re.escape(str(tmp_path))} is not") as caught:
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
        message = f"^{re.escape(str(path))} holds no lionmem schema; nothing was created \\(create=False\\)$"
        with pytest.raises(IncompatibleDatabaseError, match=message):
            with_store(path, lambda store: store.search(MemoryQuery()), create=False)
    assert sorted(tmp_path.iterdir()) == [bare, empty]
    assert empty.stat().st_size == 0 and digest(bare) == before
    item = MemoryItem(content="kept")
    with_store(empty, lambda store: store.store(item))  # with create, it is a new store
    assert with_store(empty, lambda store: store.retrieve(item.id), create=False) == item


@pytest.mark.parametrize("name", ["file:notes.db", "file:notes.db?mode=memory", "notes #1?.db", "%41.db"])
def test_the_file_opened_is_the_path_as_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
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


def test_one_pending_open_holds_one_store_at_a_time(tmp_path: Path) -> None:
    async def scenario() -> None:
        pending = SQLiteMemoryStore.open(tmp_path / "m.db")

        async def enter_again() -> None:
            async with pending:
                raise AssertionError("entered twice")

        def closed(store: SQLiteMemoryStore) -> bool:
            return store.closed  # a call, so that mypy does not narrow the property

        async with pending as first:
            with pytest.raises(RuntimeError, match="already entered"):
                await enter_again()
            assert not closed(first)
        assert closed(first)
        async with pending as again:  # left, so it may be entered again
            assert again is not first and not closed(again)
        assert closed(again)
        await pending.__aexit__(None, None, None)  # an extra exit has nothing to close
        awaited = [await pending, await pending]  # each await is its own store
        assert awaited[0] is not awaited[1]
        for store in awaited:
            await store.close()

    asyncio.run(scenario())


# -- semantics ----------------------------------------------------------------------


# One search of each kind of plan: a scan, each driving index (a tag, several tags, a
# filter value, the trigram index), predicates checked row by row, a recheck in
# Python (a list value), and limits.
EVERY_PLAN = [
    MemoryQuery(),
    MemoryQuery(text="apple"),
    MemoryQuery(text="ap"),
    MemoryQuery(tags=["a"]),
    MemoryQuery(tags=["t0", "t1"]),
    MemoryQuery(filters={"k": 1}),
    MemoryQuery(filters={"k": 1.0, "n": 0}),
    MemoryQuery(filters={"l": [1]}),
    MemoryQuery(text="note", tags=["a", "t1"], filters={"k": True}),
    MemoryQuery(tags=["a"], limit=3),
    MemoryQuery(filters={"l": [1]}, limit=2),
    MemoryQuery(text="apple", limit=-2),
]


def test_every_plan_returns_insertion_order_when_sqlite_may_return_rows_in_any_order(tmp_path: Path) -> None:
    """`PRAGMA reverse_unordered_selects` makes SQLite return the rows of any query
    without an ORDER BY in reverse, to find code that relies on the order a plan
    happens to give."""
    items = [
        MemoryItem(content=f"note {i} apple", tags=["a", f"t{i % 2}"], metadata={"k": 1, "n": i % 2, "l": [1]})
        for i in range(6)
    ]
    replaced = items[2].model_copy(update={"content": "note 2 apple again", "tags": ["t1", "a"]})
    reference = InMemoryStore()
    for item in [*items, replaced]:
        run(reference.store(item))

    async def body(store: SQLiteMemoryStore) -> None:
        await store._on_writer(
            lambda: store._writer.execute("PRAGMA reverse_unordered_selects = 1")
        )
        await store.store_many(items)
        await store.store(replaced)
        for query in EVERY_PLAN:
            found = [i.id for i in await store.search(query)]
            assert found == [i.id for i in await reference.search(query)], query
            assert len(found) > 1, query

    with_store(tmp_path / "s.db", body)


def search_contents(path: Path, items: list[MemoryItem], **query: Any) -> list[Any]:
    async def body(store: SQLiteMemoryStore) -> list[Any]:
        await store.store_many(items)
        return [i.content for i in await store.search(MemoryQuery(**query))]

    result: list[Any] = with_store(path, body)
    return result


@pytest.mark.parametrize(
    ("needle", "expected"),
    [
        ("%", ["100% sure"]),
        ("_", ["snake_case"]),
        ("\\", ["back\\slash"]),
        ("0% S", ["100% sure"]),
        ("e_c", ["snake_case"]),
        ("k\\s", ["back\\slash"]),
        ("É", ["Écran", "ÉCOLE"]),
        ("école", ["ÉCOLE"]),
        ("'k'", [{"k": 1}]),
        ("", ["100% sure", "snake_case", "back\\slash", "Écran", "ÉCOLE", {"k": 1}, "plain"]),
    ],
)
def test_text_wildcards_are_literal_and_case_follows_python(
    tmp_path: Path, needle: str, expected: list[Any]
) -> None:
    contents: list[Any] = ["100% sure", "snake_case", "back\\slash", "Écran", "ÉCOLE", {"k": 1}, "plain"]
    items = [MemoryItem(content=c) for c in contents]
    assert search_contents(tmp_path / "m.db", items, text=needle) == expected


def test_long_needles_ask_the_index_for_their_opening_and_match_whole(tmp_path: Path) -> None:
    opening = "the same opening words, long enough to fill the index's phrase " * 2
    contents = [opening + "then one ending", opening + "then another ending", "unrelated " * 40]
    items = [MemoryItem(content=c) for c in contents]
    for needle, expected in [
        (opening + "THEN ONE", [contents[0]]),
        (opening + "then", contents[:2]),
        (opening * 3, []),
        ("unrelated " * 40, [contents[2]]),
    ]:
        assert search_contents(tmp_path / f"{len(needle)}.db", items, text=needle) == expected
    (driver,) = sqlite_planner._drivers(MemoryQuery(text="xyz" * 100_000), [], {})
    assert driver.params == ['"xyz" "yzx"']  # at 0, 3, ... 60, and the last, at 61


def test_the_index_is_asked_for_the_covering_trigrams_and_instr_decides(tmp_path: Path) -> None:
    """Rows that hold every trigram of a needle, but not the needle, are candidates
    only: a run of one letter holds the single trigram of a longer run."""
    contents = ["x" * 5_000 + "y", "x" * 4_999, "yxx" + "x" * 60, "xyxy"]
    items = [MemoryItem(content=c) for c in contents]
    for number, (needle, expected) in enumerate([
        ("x" * 100 + "y", [contents[0]]),
        ("x" * 4_999, contents[:2]),
        ("x" * 5_000, [contents[0]]),
        ("yxxx", [contents[2]]),
        ("xyx", [contents[3]]),
    ]):
        assert search_contents(tmp_path / f"{number}.db", items, text=needle) == expected
    (driver,) = sqlite_planner._drivers(MemoryQuery(text="X" * 64), [], {})
    assert driver.params == ['"xxx"']


def test_quotes_in_a_needle_are_text_for_the_trigram_index(tmp_path: Path) -> None:
    """The index is asked for a quoted FTS5 phrase; a needle's own quotes and FTS5
    operators must reach it as characters."""
    contents = ['say "hi" now', "a AND b", "x OR y*", "abc bcd"]
    items = [MemoryItem(content=c) for c in contents]
    for number, (needle, expected) in enumerate([
        ('"hi"', ['say "hi" now']),
        ('y "', ['say "hi" now']),
        ('"', ['say "hi" now']),
        ("a and b", ["a AND b"]),
        ("or y*", ["x OR y*"]),
        ("abcd", []),
    ]):
        assert search_contents(tmp_path / f"{number}.db", items, text=needle) == expected


def test_tags_any_of_case_sensitive(tmp_path: Path) -> None:
    items = [MemoryItem(content=n, tags=t) for n, t in ((1, ["a", "b"]), (2, ["A"]), (3, []), (4, ["b", "b"]))]
    assert search_contents(tmp_path / "m.db", items, tags=["b", "zzz"]) == [1, 4]
    assert search_contents(tmp_path / "n.db", items, tags=["A"]) == [2]


def test_filters_python_equality_and_none_for_missing(tmp_path: Path) -> None:
    metadata: list[dict[str, Any]] = [
        {"n": 1}, {"n": 1.0}, {"n": True}, {"n": "1"}, {}, {"n": None}, {"n": [1, 2]}, {"n": {"a": [1]}},
        {"n": 2**60}, {"n": 0}, {"n": False},
    ]
    items = [MemoryItem(content=i, metadata=m) for i, m in enumerate(metadata)]
    path = tmp_path / "m.db"

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many(items)

        async def ids(**filters: Any) -> list[Any]:
            return [i.content for i in await store.search(MemoryQuery(filters=filters, limit=100))]

        assert await ids(n=1) == [0, 1, 2]
        assert await ids(n=True) == [0, 1, 2]
        assert await ids(n="1") == [3]
        assert await ids(n=None) == [4, 5]
        assert await ids(n=[1, 2]) == [6] and await ids(n=[1.0, True + 1]) == [6]
        assert await ids(n={"a": [1]}) == [7]
        assert await ids(n=2**60) == [8] and await ids(n=2**60 + 1) == []
        assert await ids(n=float(2**60)) == [8]
        assert await ids(n=0) == [9, 10] and await ids(n=-0.0) == [9, 10]
        assert await ids(n=2**70) == []
        assert await ids(n=(1, 2)) == []  # a tuple never equals a JSON list
        assert await ids(missing=None, n=1) == [0, 1, 2]

    with_store(path, body)


def test_searches_agree_with_the_reference_on_awkward_values(tmp_path: Path) -> None:
    with_store(tmp_path / "m.db", lambda store: assert_searches_agree(store, seed=96, rounds=1500))


def _version_two(path: Path, items: list[MemoryItem]) -> None:
    """A database as version 2 wrote it: integers beyond 64 bits indexed as rounded floats."""
    db = connect(path, isolation_level=None)
    MIGRATIONS[1](db)
    MIGRATIONS[2](db)
    db.execute("DROP INDEX item_meta_by_value")
    db.execute("CREATE INDEX item_meta_by_value ON item_meta (key, value, seq)")
    for item in items:
        row = encode_item(item)
        seq = db.execute("INSERT INTO items (id, created_at, body, folded) VALUES (?, ?, ?, ?)", row).lastrowid
        for key, value in item.metadata.items():
            db.execute(
                "INSERT INTO item_meta (seq, key, kind, value) VALUES (?, ?, ?, ?)",
                (seq, key, "integer", value if -(2**63) <= value < 2**63 else float(value)),
            )
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 2")
    db.close()


def test_version_two_is_migrated_to_exact_big_integers(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    big = MemoryItem(content="big", metadata={"n": -(2**63) - 1})
    small = MemoryItem(content="small", metadata={"n": 5})
    _version_two(path, [big, small])
    # Version 2's index holds -(2**63) for both -(2**63) - 1 and -(2**63).
    old = connect(path).execute("SELECT value FROM item_meta ORDER BY seq").fetchall()
    assert old == [(-(2.0**63),), (5,)]

    async def body(store: SQLiteMemoryStore) -> None:
        assert await store.search(MemoryQuery(filters={"n": -(2**63)})) == []
        assert [i.id for i in await store.search(MemoryQuery(filters={"n": -(2**63) - 1}))] == [big.id]
        assert [i.id for i in await store.search(MemoryQuery(filters={"n": 5.0}))] == [small.id]

    with_store(path, body)
    db = connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    new = db.execute("SELECT kind, value FROM item_meta ORDER BY seq").fetchall()
    assert new == [("bigint", None), ("integer", 5)]
    columns = [row[2] for row in db.execute("PRAGMA index_info(item_meta_by_value)")]
    assert columns == ["key", "value", "seq", "kind"]


def test_version_three_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    item = MemoryItem(content="three", tags=["t"], metadata={"n": 1}, created_at=-1.5)
    db = connect(path, isolation_level=None)
    for step in (1, 2, 3):
        MIGRATIONS[step](db)
    row = encode_item(item)
    seq = db.execute("INSERT INTO items (id, created_at, body, folded) VALUES (?, ?, ?, ?)", row).lastrowid
    db.execute("INSERT INTO item_tags (seq, tag) VALUES (?, 't')", (seq,))
    db.execute("INSERT INTO item_meta (seq, key, kind, value) VALUES (?, 'n', 'integer', 1)", (seq,))
    db.execute("INSERT INTO items_text (rowid, indexed) VALUES (?, ?)", (seq, row.folded))
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 3")
    db.close()

    async def body(store: SQLiteMemoryStore) -> None:
        for query in (MemoryQuery(text="THREE"), MemoryQuery(tags=["t"]), MemoryQuery(filters={"n": 1.0})):
            found = await store.search(query)
            assert [(i.id, i.created_at) for i in found] == [(item.id, -1.5)], query

    with_store(path, body)
    assert connect(path).execute("PRAGMA user_version").fetchone() == (4,) == (SCHEMA_VERSION,)


def test_searches_read_only_rows_an_index_leads_to(tmp_path: Path) -> None:
    """One index drives each search in order and the other predicates are looked up per
    row, so no search scans the items table, and none but a several-tags-only search
    collects rows before returning the first (a LIST SUBQUERY or TEMP B-TREE)."""
    path = tmp_path / "m.db"
    queries = [
        MemoryQuery(text="abc", tags=["t", "u"], filters={"k": 1, "s": "v", "gone": None}),
        MemoryQuery(tags=["t"], filters={"k": 1, "l": [1]}),
        MemoryQuery(filters={"s": "v", "k": True}),
        MemoryQuery(tags=["t", "u"], filters={"gone": None}),
    ]

    async def body(store: SQLiteMemoryStore) -> list[str]:
        await store.store(MemoryItem(content="abcd", tags=["t", "u"], metadata={"k": 1, "s": "v", "l": [1]}))
        statements: list[str] = []
        for query in queries:
            found, read = await traced_search(store, query)
            assert len(found) == 1
            statements += read

        def plans() -> list[str]:
            db = store._writer
            return [" / ".join(row[-1] for row in db.execute("EXPLAIN QUERY PLAN " + sql)) for sql in statements]

        explained: list[str] = await store._on_writer(plans)
        return explained

    plans = with_store(path, body)
    assert len(plans) == len(queries)
    for plan in plans:
        assert "SCAN items " not in plan + " " and "TEMP B-TREE" not in plan, plan
    for plan in plans[:3]:
        assert "LIST SUBQUERY" not in plan and "CORRELATED SCALAR SUBQUERY" in plan, plan
    assert "LIST SUBQUERY" in plans[3] and "SEARCH items USING INTEGER PRIMARY KEY" in plans[3]


def test_the_narrowest_index_drives(tmp_path: Path) -> None:
    """Of several usable indexes, the one with the fewest entries leads the search."""
    common = [
        MemoryItem(content=f"common note {n}", tags=["all"], metadata={"kind": 1, "owner": "many"})
        for n in range(400)
    ]
    rare = MemoryItem(content="common note rare", tags=["all", "few"], metadata={"kind": 1, "owner": "one"})
    cases = [
        (MemoryQuery(filters={"kind": 1, "owner": "one"}), "d.key = 'owner'"),
        (MemoryQuery(filters={"owner": "one", "kind": 1}), "d.key = 'owner'"),
        (MemoryQuery(text="common", tags=["few"]), "d.tag = 'few'"),
        (MemoryQuery(text="rare", tags=["all"], filters={"kind": 1}), "items_text MATCH"),
        (MemoryQuery(tags=["all", "few"], filters={"owner": "one"}), "d.key = 'owner'"),
        (MemoryQuery(tags=["few", "nothing"], filters={"kind": 1}), "items.seq IN"),
        (MemoryQuery(text="RAR"), "items_text MATCH"),  # three characters are one trigram
    ]

    async def body(store: SQLiteMemoryStore) -> list[str]:
        await store.store_many([*common[:200], rare, *common[200:]])
        statements: list[str] = []
        for query, _ in cases:
            found, read = await traced_search(store, query)
            assert [i.id for i in found] == [rare.id], query
            statements += read
        return statements

    for sql, (query, lead) in zip(with_store(tmp_path / "m.db", body), cases, strict=True):
        where = sql.split(" WHERE ", 1)[1]
        assert where.startswith(lead), (query, sql)
        # What the leading index settles is not looked up again.
        settles_tags = lead.startswith(("d.tag", "items.seq IN"))
        assert ("t.tag IN" in where) is (bool(query.tags) and not settles_tags), (query, sql)
        assert where.count("'owner'") == (1 if "owner" in (query.filters or {}) else 0), (query, sql)


@pytest.mark.parametrize(
    ("limit", "lead"), [(1000, "d.key = 'owner'"), (-1, "d.key = 'owner'"), (4, "d.key = 'kind'")]
)
def test_ties_at_the_count_cap_are_counted_further_for_long_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int, lead: str
) -> None:
    """With a cap of 4, kind (60 items) and owner (30) tie; a search wanting more than
    4 rows counts them to 64 and is led by owner, a shorter one keeps the first."""
    monkeypatch.setattr(sqlite_planner, "_PROBE", 4)
    items = [
        MemoryItem(content=n, metadata={"kind": 1, "owner": "half" if n % 2 else "other"}) for n in range(60)
    ]
    query = MemoryQuery(filters={"kind": 1, "owner": "half"}, limit=limit)

    async def body(store: SQLiteMemoryStore) -> tuple[list[MemoryItem], list[str]]:
        await store.store_many(items)
        return await traced_search(store, query)

    found, statements = with_store(tmp_path / "m.db", body)
    assert [i.content for i in found] == list(range(1, 60, 2))[:limit]
    assert statements[0].split(" WHERE ")[1].startswith(lead), statements


@pytest.mark.parametrize(
    ("value", "decided_in_sql"),
    [("v", True), (7, True), (True, True), (2.5, True), (None, True),
     (2**70, False), (2.0**70, False), ([1], False), ({"a": 1}, False)],
)
def test_a_limit_goes_into_the_sql_when_the_sql_decides_the_filter(
    tmp_path: Path, value: Any, decided_in_sql: bool
) -> None:
    """Values SQL compares exactly are settled there, with the limit; the others are
    narrowed by kind and checked in Python, which must read every candidate. The
    filter on `j` leads (the first of equal counts), so `k` is a condition of its own."""
    match = MemoryItem(content="m", metadata={"j": "only", "k": value})
    other = MemoryItem(content="o", metadata={"k": "other"})

    async def body(store: SQLiteMemoryStore) -> tuple[list[MemoryItem], list[str]]:
        await store.store_many([other, match])
        return await traced_search(store, MemoryQuery(filters={"j": "only", "k": value}, limit=5))

    found, (statement,) = with_store(tmp_path / "m.db", body)
    assert [i.id for i in found] == [match.id]
    assert statement.split(" WHERE ")[1].startswith("d.key = 'j'"), statement
    assert "m.key = 'k'" in statement, statement  # narrowed in SQL either way
    assert statement.endswith(" LIMIT 5") is decided_in_sql, statement


def test_a_metadata_key_named_like_a_predicate_is_still_checked(tmp_path: Path) -> None:
    both = MemoryItem(content="a", tags=["t"], metadata={"tags": "t", "text": 1})
    tag_only = MemoryItem(content="b", tags=["t"])

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many([both, tag_only])
        for query in (
            MemoryQuery(tags=["t"], filters={"tags": "t"}),
            MemoryQuery(tags=["t", "u"], filters={"tags": "t"}),
            MemoryQuery(text="a", filters={"text": 1}),
        ):
            assert [i.id for i in await store.search(query)] == [both.id], query

    with_store(tmp_path / "m.db", body)


def test_limits_follow_the_reference(tmp_path: Path) -> None:
    items = [MemoryItem(content=f"n{i}", tags=["t", "u"], metadata={"k": 1, "s": "v"}) for i in range(5)]
    decoy = MemoryItem(content="other", tags=["x"], metadata={"k": 2})

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many([*items[:2], decoy, *items[2:]])
        for limit in (0, 2, 5, 9, -1, -4, -5, -9):
            want = [i.content for i in items][:limit]
            for query in (
                MemoryQuery(tags=["t"], limit=limit),
                MemoryQuery(text="N", limit=limit),
                MemoryQuery(text="n", tags=["t"], limit=limit),
                MemoryQuery(filters={"k": 1.0}, limit=limit),
                MemoryQuery(tags=["t"], filters={"k": True, "s": "v"}, limit=limit),
                MemoryQuery(tags=["u", "t"], filters={"s": "v", "gone": None}, limit=limit),
            ):
                assert [i.content for i in await store.search(query)] == want, query

    with_store(tmp_path / "m.db", body)


def test_replace_keeps_position_and_returns_copies(tmp_path: Path) -> None:
    a, b = MemoryItem(content="a", tags=["t"]), MemoryItem(content="b")

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store(a)
        await store.store(b)
        await store.store(MemoryItem(id=a.id, content="A", tags=["u"]))
        found = await store.search(MemoryQuery())
        assert [i.content for i in found] == ["A", "b"]
        assert await store.search(MemoryQuery(tags=["t"])) == []
        assert await store.search(MemoryQuery(text="a")) == [a]
        found[0].tags.append("local")
        again = await store.retrieve(a.id)
        assert again is not None and again.tags == ["u"] and again is not found[0]

    with_store(tmp_path / "m.db", body)


def test_a_replaced_item_leaves_nothing_of_its_old_text_in_the_index(tmp_path: Path) -> None:
    # Results would stay right without it (instr() on the stored text decides), but each
    # replacement would leave the old text's trigrams for later searches to read.
    item = MemoryItem(content="first words")
    path = tmp_path / "m.db"

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store(item)
        await store.store(MemoryItem(id=item.id, content="other words"))
        await store.store_many([MemoryItem(id=item.id, content="final words")])

    with_store(path, body)
    db = connect(path)

    def indexed(trigram: str) -> int:
        query = "SELECT count(*) FROM items_text WHERE items_text MATCH ?"
        counted: int = db.execute(query, (f'"{trigram}"',)).fetchone()[0]
        return counted

    assert (indexed("fir"), indexed("oth"), indexed("fin"), indexed("wor")) == (0, 0, 1, 1)


def test_round_trip_is_exact(tmp_path: Path) -> None:
    big = "ü✓ 𝄞 " * 200_000
    item = MemoryItem(
        content={"text": big, "nested": [1, 2.5, -0.0, None, True, {"deep": ["x", {}]}], "n": 2**62},
        tags=["b", "a", "a", "ü"],
        metadata={"quote'\"": {"list": [1, 1.0, True]}, "": None, "emoji": "🙂"},
        created_at=1767225600.123456789,
    )

    async def body(store: SQLiteMemoryStore) -> MemoryItem | None:
        await store.store(item)
        return await store.retrieve(item.id)

    got = with_store(tmp_path / "m.db", body)
    assert got is not None
    assert got.created_at.hex() == item.created_at.hex()
    assert got.content == item.content and got.tags == item.tags and got.metadata == item.metadata
    assert type(got.content["nested"][1]) is float and type(got.content["nested"][4]) is bool
    assert math.copysign(1, got.content["nested"][2]) == -1
    assert type(got.metadata["quote'\""]["list"][1]) is float


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"content": {1, 2}}, "content is a set, not a JSON value"),
        ({"content": object()}, "content is an object, not a JSON value"),
        ({"content": math.nan}, "content is nan; NaN and infinity"),
        ({"content": [1, math.inf]}, r"content\[1\] is inf"),
        ({"content": (1, 2)}, "content is a tuple"),
        ({"content": {1: "x"}}, "content has a key 1"),
        ({"metadata": {"k": {3}}}, r"metadata\['k'\] is a set"),
        ({"content": "a\ud800"}, "content holds the lone surrogate U\\+D800"),
        ({"tags": ["\udc00"]}, r"tags\[0\] holds the lone surrogate"),
    ],
)
def test_non_json_values_are_refused_and_nothing_is_written(
    tmp_path: Path, fields: dict[str, Any], problem: str
) -> None:
    good = MemoryItem(content="good")
    bad = MemoryItem(**fields)

    async def body(store: SQLiteMemoryStore) -> None:
        with pytest.raises(TypeError, match=problem):
            await store.store(bad)
        with pytest.raises(TypeError, match=problem):
            await store.store_many([good, bad])
        assert await store.retrieve(bad.id) is None
        assert await store.search(MemoryQuery()) == []

    with_store(tmp_path / "m.db", body)


@pytest.mark.parametrize(
    ("tags", "problem"), [([1], r"tags\[0\] is an int, not a str"), ("ab", "tags is a str, not a list")]
)
def test_tags_that_skipped_validation_are_refused(tmp_path: Path, tags: object, problem: str) -> None:
    bad = MemoryItem.model_construct(tags=tags)

    async def body(store: SQLiteMemoryStore) -> None:
        with pytest.raises(TypeError, match=problem):
            await store.store(bad)
        assert await store.search(MemoryQuery(tags=["1", "a"])) == []

    with_store(tmp_path / "m.db", body)


HOSTILE = ["it's", 'say "hi"', "a.b", "$.a", "$", "[0]", "'; DROP TABLE items; --", "\\", "%", "k\x00z"]


@pytest.mark.parametrize("key", HOSTILE)
def test_hostile_keys_and_values_are_plain_data(tmp_path: Path, key: str) -> None:
    item = MemoryItem(content=key, tags=[key], metadata={key: key, "other": 1})
    decoy = MemoryItem(content="decoy", metadata={"other": 1})

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many([item, decoy])
        assert await store.search(MemoryQuery(filters={key: key})) == [item]
        assert await store.search(MemoryQuery(filters={key: None})) == [decoy]
        assert await store.search(MemoryQuery(tags=[key])) == [item]
        assert item in await store.search(MemoryQuery(text=key))
        assert len(await store.search(MemoryQuery(limit=100))) == 2

    with_store(tmp_path / "m.db", body)


def test_store_many_is_all_or_nothing_and_replaces(tmp_path: Path) -> None:
    first = MemoryItem(content="1")

    async def body(store: SQLiteMemoryStore) -> None:
        assert await store.store_many([first, MemoryItem(id=first.id, content="2")]) == [first.id] * 2
        got = await store.retrieve(first.id)
        assert got is not None and got.content == "2"
        assert len(await store.search(MemoryQuery())) == 1

    with_store(tmp_path / "m.db", body)


def index_rows(path: Path) -> list[tuple[Any, ...]]:
    db = connect(path)
    return db.execute("SELECT * FROM item_meta").fetchall() + db.execute("SELECT * FROM item_tags").fetchall()


def test_a_write_failing_in_the_database_leaves_everything_as_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    kept = MemoryItem(content="kept", tags=["t"], metadata={"k": 1})
    replaced = MemoryItem(id=kept.id, content="replaced", tags=["u"], metadata={"k": 2})
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store(kept))
    before = index_rows(path)
    real_index = sqlite_writes.index

    def failing(db: sqlite3.Connection, seq: int, *args: Any) -> None:
        real_index(db, seq, *args)
        if seq > 1:
            raise sqlite3.OperationalError("disk I/O error")

    monkeypatch.setattr(sqlite_writes, "index", failing)

    async def body(store: SQLiteMemoryStore) -> None:
        with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
            await store.store_many([replaced, MemoryItem(content="new")])
        assert [i.content for i in await store.search(MemoryQuery(text="e"))] == ["kept"]
        assert [i.content for i in await store.search(MemoryQuery(tags=["t"], filters={"k": 1}))] == ["kept"]
        monkeypatch.setattr(sqlite_writes, "index", real_index)
        await store.store(MemoryItem(content="later"))  # the store still writes
        assert [i.content for i in await store.search(MemoryQuery())] == ["kept", "later"]

    with_store(path, body)
    assert index_rows(path) == before  # the later item has no tags and no metadata


def test_writes_the_file_system_refuses_leave_the_store_as_it_was(tmp_path: Path) -> None:
    """A real failure, not a simulated one: past a file size limit (RLIMIT_FSIZE) the
    file system refuses to grow the log, as a full disk would. Batches are written
    until one is refused, then single items until one is."""
    path = tmp_path / "m.db"
    script = textwrap.dedent(f"""
        import asyncio, json, resource, signal, sqlite3, sys, uuid
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem, MemoryQuery
        from lionmem.adapters.sqlite import SQLiteMemoryStore
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # refuse the write, not the process
        def note(n):
            return MemoryItem(id=uuid.UUID(int=n + 1), content="note " + "x" * 200, tags=[str(n)])
        async def main():
            stored, refused = [], []
            async def fill(write, size):
                while len(stored) < 2_000:
                    batch = [note(len(stored) + k) for k in range(size)]
                    try:
                        await write(batch)
                    except sqlite3.OperationalError as error:
                        refused.append(str(error))
                        return
                    stored.extend(batch)
            async with SQLiteMemoryStore.open({str(path)!r}) as store:
                resource.setrlimit(resource.RLIMIT_FSIZE, (400_000, resource.RLIM_INFINITY))
                await fill(store.store_many, 20)
                await fill(lambda batch: store.store(batch[0]), 1)
                found = await store.search(MemoryQuery(limit=10_000))
                last = await store.retrieve(stored[-1].id)
            print(json.dumps({{"stored": len(stored), "refused": refused,
                              "search": found == stored, "retrieve": last == stored[-1]}}))
        asyncio.run(main())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(done.stdout)
    assert report["refused"] == ["disk I/O error", "disk I/O error"]
    assert report["stored"] >= 20 and report["search"] and report["retrieve"]
    assert connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        await store.store(MemoryItem(id=UUID(int=0), content="room again"))
        return await store.search(MemoryQuery(limit=10_000))

    found = with_store(path, body)
    assert [i.id for i in found] == [UUID(int=n + 1) for n in range(report["stored"])] + [UUID(int=0)]
    assert all(i.content == "note " + "x" * 200 and i.tags == [str(n)] for n, i in enumerate(found[:-1]))


# -- durability -----------------------------------------------------------------------


def test_items_survive_close_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    items = [MemoryItem(content=f"item {i}", tags=["t"], metadata={"i": i}) for i in range(50)]
    with_store(path, lambda store: store.store_many(items))

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        return await store.search(MemoryQuery(limit=1000))

    again = with_store(path, body)
    assert [(i.id, i.content, i.metadata) for i in again] == [(i.id, i.content, i.metadata) for i in items]


def test_sigkill_in_a_stream_of_writes_loses_no_acknowledged_item(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    script = textwrap.dedent(f"""
        import asyncio, sys, uuid
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem
        from lionmem.adapters.sqlite import SQLiteMemoryStore
        async def main():
            store = await SQLiteMemoryStore.open({str(path)!r})
            n = 0
            while True:
                item = MemoryItem(id=uuid.UUID(int=n + 1), content={{"n": n, "pad": "x" * (n % 5000)}}, tags=[str(n)])
                await store.store(item)
                print(n, flush=True)
                n += 1
        asyncio.run(main())
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acknowledged = []
    for line in proc.stdout:
        acknowledged.append(int(line))
        if len(acknowledged) >= 400:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    acknowledged += [int(line) for line in proc.stdout.read().split()]
    proc.stdout.close()
    assert connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        return await store.search(MemoryQuery(limit=1_000_000))

    found = with_store(path, body)
    by_number = {i.content["n"]: i for i in found}
    assert set(acknowledged) <= set(by_number)
    for n, item in by_number.items():  # no half-written item: every field is whole
        assert item.id == UUID(int=n + 1) and item.tags == [str(n)]
        assert item.content == {"n": n, "pad": "x" * (n % 5000)}
    assert sorted(by_number) == list(range(len(by_number)))


# -- checkpoints ------------------------------------------------------------------------


@pytest.mark.parametrize(("synchronous", "level"), [("NORMAL", 1), ("FULL", 2)])
def test_the_checkpoint_thread_copies_the_log_beside_the_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synchronous: Literal["NORMAL", "FULL"], level: int
) -> None:
    """Too few writes for the writer's own checkpoint (4,000 pages of log), enough for
    the checkpoint thread's: the database file holds items while the store is open,
    synced as hard as the writer syncs."""
    path = tmp_path / "m.db"
    ran_on: list[str] = []
    run_checkpoint = SQLiteMemoryStore._run_checkpoint

    def recorded(store: SQLiteMemoryStore) -> None:
        ran_on.append(threading.current_thread().name)
        run_checkpoint(store)

    monkeypatch.setattr(SQLiteMemoryStore, "_run_checkpoint", recorded)
    every = sqlite_module._CHECKPOINT_AFTER
    writes = 3 * every

    async def body(store: SQLiteMemoryStore) -> int:
        for n in range(writes):
            await store.store(MemoryItem(content=f"note {n}", tags=["t"], metadata={"n": n}))
        assert store._checkpointer is not None

        def checkpoint_sync() -> int:
            assert store._checkpoint_db is not None
            found: int = store._checkpoint_db.execute("PRAGMA synchronous").fetchone()[0]
            return found

        assert await asyncio.get_running_loop().run_in_executor(store._checkpointer, checkpoint_sync) == level
        log_pages = await store._on_writer(
            lambda: store._writer.execute("PRAGMA wal_autocheckpoint").fetchone()[0]
        )
        assert log_pages == sqlite_connect._WRITER_CHECKPOINT_PAGES
        # The file alone, without the log: what the checkpoints have copied so far.
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)) as only_file:
            in_file: int = only_file.execute("SELECT count(*) FROM items").fetchone()[0]
        return in_file

    in_file = with_store(path, body, synchronous=synchronous)
    assert every <= in_file <= writes
    # One checkpoint at most is queued at a time, so a fast stream of writes may ask
    # for fewer than one per 32 items, but never for more.
    assert 1 <= len(ran_on) <= writes // every
    assert all(name.startswith("lionmem-sqlite-checkpoint") for name in ran_on), ran_on


def test_checkpoints_reach_the_open_file_after_a_change_of_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint thread connects on its first checkpoint, by then perhaps in
    another working directory; it must reach the file the store opened and create none."""
    (tmp_path / "first").mkdir()
    (tmp_path / "second #1?").mkdir()
    monkeypatch.chdir(tmp_path / "first")
    every = sqlite_module._CHECKPOINT_AFTER

    async def body(store: SQLiteMemoryStore) -> int:
        monkeypatch.chdir(tmp_path / "second #1?")
        for n in range(every):
            await store.store(MemoryItem(content=n))
        assert store._checkpointer is not None
        await asyncio.get_running_loop().run_in_executor(store._checkpointer, lambda: None)
        opened = tmp_path / "first" / "m.db"
        with contextlib.closing(sqlite3.connect(f"file:{opened}?mode=ro&immutable=1", uri=True)) as only_file:
            in_file: int = only_file.execute("SELECT count(*) FROM items").fetchone()[0]
        return in_file

    assert with_store(Path("m.db"), body) == every
    assert list((tmp_path / "second #1?").iterdir()) == []


def test_the_checkpoint_thread_creates_no_file_where_the_database_was_removed(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store(MemoryItem())
        path.unlink()  # the store's connections keep the removed file open
        for n in range(sqlite_module._CHECKPOINT_AFTER):
            await store.store(MemoryItem(content=n))
        assert store._checkpointer is not None
        await asyncio.get_running_loop().run_in_executor(store._checkpointer, lambda: None)
        assert not path.exists()

    with_store(path, body)


def test_a_store_that_only_reads_starts_no_checkpoint_thread(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store_many([MemoryItem(content=n) for n in range(100)]))
    before = set(threading.enumerate())

    async def body(store: SQLiteMemoryStore) -> None:
        assert len(await store.search(MemoryQuery(limit=1000))) == 100
        await store.store(MemoryItem(content="one write, too few to ask for a checkpoint"))
        assert store._checkpointer is None
        # Checked while the store is open: closing would end such a thread anyway.
        assert not [t for t in set(threading.enumerate()) - before if "checkpoint" in t.name]

    with_store(path, body)


def test_closing_copies_the_rest_of_the_log_and_removes_it(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    items = [MemoryItem(content=f"note {n}") for n in range(10 * sqlite_module._CHECKPOINT_AFTER)]

    async def body(store: SQLiteMemoryStore) -> None:
        for item in items:
            await store.store(item)
        assert store._checkpointer is not None

    with_store(path, body)
    assert not path.with_name("m.db-wal").exists()
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)) as only_file:
        assert only_file.execute("SELECT count(*) FROM items").fetchone() == (len(items),)  # no log read


@pytest.mark.parametrize(
    ("writes", "threads"),
    [(0, ["lionmem-sqlite"]), (sqlite_module._CHECKPOINT_AFTER, ["lionmem-sqlite", "lionmem-sqlite-checkpoint"])],
    ids=["reader", "writer"],
)
def test_closing_ends_the_store_threads(tmp_path: Path, writes: int, threads: list[str]) -> None:
    """`close()` returns after the store's threads have ended (the checkpoint's, once a
    write started it), so a program that closes its stores leaves no lionmem thread."""
    before = set(threading.enumerate())

    async def scenario() -> tuple[list[str], list[str]]:
        store = await SQLiteMemoryStore.open(tmp_path / "m.db")
        for n in range(writes):
            await store.store(MemoryItem(content=n))
        started = set(threading.enumerate()) - before
        await store.close()
        # Read at once: a thread told to stop but not waited for is still ending here.
        alive = [t.name for t in started if t.is_alive()]
        return sorted(t.name.rsplit("_", 1)[0] for t in started), alive

    assert run(scenario()) == (threads, [])


def test_a_closed_store_the_caller_drops_is_freed(tmp_path: Path) -> None:
    # Enough single writes to start the checkpoint thread, whose work holds the store too.
    opener = functools.partial(SQLiteMemoryStore.open, tmp_path / "m.db")
    run(assert_freed_once_dropped(opener, sqlite_module._CHECKPOINT_AFTER))


def test_close_waits_for_the_store_thread_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread ends a few microseconds after it closes the connections, which is
    rarely seen; work it queues for itself first widens that gap to 200 ms."""

    async def scenario() -> bool:
        before = set(threading.enumerate())
        store = await SQLiteMemoryStore.open(tmp_path / "m.db")
        (worker,) = set(threading.enumerate()) - before
        close_on_worker = store._close_on_worker

        def close_then_linger() -> None:
            store._executor.submit(time.sleep, 0.2)  # runs after this call
            close_on_worker()

        monkeypatch.setattr(store, "_close_on_worker", close_then_linger)
        await store.close()
        return worker.is_alive()

    assert run(scenario()) is False


def test_a_cancelled_close_still_closes_everything(tmp_path: Path) -> None:
    """Cancelling a `close()` that waits behind a long call stops the caller's wait,
    not the closing: once the call ends, the connections close and the threads end
    with no second `close()`, and one made meanwhile waits for the first."""
    path = tmp_path / "m.db"
    before = set(threading.enumerate())

    def store_threads() -> list[str]:
        return sorted(t.name.rsplit("_", 1)[0] for t in set(threading.enumerate()) - before if t.is_alive())

    async def scenario() -> None:
        store = await SQLiteMemoryStore.open(path)
        for n in range(sqlite_module._CHECKPOINT_AFTER):  # starts the checkpoint thread
            await store.store(MemoryItem(content=n))
        assert store_threads() == ["lionmem-sqlite", "lionmem-sqlite-checkpoint"]
        release = threading.Event()
        long_call = asyncio.ensure_future(store._on_writer(release.wait, 30))
        await asyncio.sleep(0.05)
        cancelled = asyncio.ensure_future(store.close())
        await asyncio.sleep(0.05)
        cancelled.cancel()
        with pytest.raises(asyncio.CancelledError):
            await cancelled
        assert store.closed
        second = asyncio.ensure_future(store.close())
        await asyncio.sleep(0.05)
        assert not second.done()  # it waits for the closing the first one started
        release.set()
        assert await long_call is True
        await second
        assert store_threads() == []

    run(scenario())
    assert not path.with_name("m.db-wal").exists()


def test_a_cancelled_write_is_dropped_before_it_starts_and_finished_whole_after(tmp_path: Path) -> None:
    """Cancelling a write waiting for the store's thread drops it; once the thread
    runs it, it commits whole, though its caller was cancelled."""

    async def body(store: SQLiteMemoryStore) -> None:
        release = threading.Event()
        long_call = asyncio.ensure_future(store._on_writer(release.wait, 30))
        queued = [MemoryItem(content="queued one"), *(MemoryItem(content=f"queued {n}") for n in range(50))]
        calls = [asyncio.ensure_future(store.store(queued[0])), asyncio.ensure_future(store.store_many(queued[1:]))]
        await asyncio.sleep(0.05)
        for call in calls:
            call.cancel()
        # The cancellation reaches the thread's queue a loop turn later; a write the
        # thread took up meanwhile would commit whole instead.
        await asyncio.sleep(0.01)
        release.set()
        assert await long_call is True
        for call in calls:
            with pytest.raises(asyncio.CancelledError):
                await call
        assert [await store.retrieve(i.id) for i in queued] == [None] * len(queued)

        started, go = threading.Event(), threading.Event()
        write = store._write

        def held_write(rows: Any) -> None:
            started.set()
            go.wait(30)
            write(rows)

        store._write = held_write  # type: ignore[method-assign,assignment]
        running = [MemoryItem(content=f"running {n}") for n in range(50)]
        call = asyncio.ensure_future(store.store_many(running))
        while not started.is_set():
            await asyncio.sleep(0.005)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call
        go.set()
        await store.search(MemoryQuery(limit=0))  # queued behind the write: it has ended
        assert [await store.retrieve(i.id) for i in running] == running

    with_store(tmp_path / "m.db", body)


def test_a_cancelled_close_finishes_on_its_own(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    before = set(threading.enumerate())

    async def scenario() -> list[str]:
        store = await SQLiteMemoryStore.open(path)
        await store.store(MemoryItem(content="kept"))
        release = threading.Event()
        long_call = asyncio.ensure_future(store._on_writer(release.wait, 30))
        await asyncio.sleep(0.05)
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(store.close(), 0.05)
        release.set()
        await long_call
        deadline = time.monotonic() + 5
        while (alive := [t.name for t in set(threading.enumerate()) - before if t.is_alive()]) and (
            time.monotonic() < deadline
        ):
            await asyncio.sleep(0.01)
        return alive

    assert run(scenario()) == []
    assert not path.with_name("m.db-wal").exists()


def test_a_failed_checkpoint_loses_nothing_and_writes_go_on(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    writes = 2 * sqlite_module._CHECKPOINT_AFTER

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        broken = connect(tmp_path / "elsewhere.db", check_same_thread=False)
        broken.close()
        store._checkpoint_db = broken
        for n in range(writes):
            await store.store(MemoryItem(content=n))
        checkpoint = store._checkpoint
        assert checkpoint is not None
        await asyncio.wrap_future(checkpoint)  # it raised nothing
        store._checkpoint_db = None
        return await store.search(MemoryQuery(limit=1000))

    found = with_store(path, body)
    assert [i.content for i in found] == list(range(writes))


# -- optimize ----------------------------------------------------------------------------


def _text_segments(path: Path) -> int:
    """How many segments the trigram index holds: FTS5 keeps one or more rows for each
    in its `_idx` shadow table."""
    with contextlib.closing(sqlite3.connect(path)) as db:
        (segments,) = db.execute("SELECT count(DISTINCT segid) FROM items_text_idx").fetchone()
    return int(segments)


def _every_kind_of_search(store: SQLiteMemoryStore) -> Awaitable[list[list[MemoryItem]]]:
    queries = [
        MemoryQuery(limit=1_000),
        MemoryQuery(text="NOTE 1", limit=1_000),
        MemoryQuery(text="e 3", limit=5),
        MemoryQuery(tags=["t2"], limit=1_000),
        MemoryQuery(filters={"k": 1}, limit=1_000),
    ]
    return asyncio.gather(*(store.search(q) for q in queries))


def test_optimize_merges_the_text_index_into_one_segment_and_changes_no_result(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    batches = [
        [MemoryItem(content=f"note {b}-{n}", tags=[f"t{n % 3}"], metadata={"k": n % 4}) for n in range(40)]
        for b in range(6)
    ]

    async def load(store: SQLiteMemoryStore) -> list[list[MemoryItem]]:
        for batch in batches:
            await store.store_many(batch)
        return await _every_kind_of_search(store)

    before = with_store(path, load)
    assert _text_segments(path) > 1

    async def optimize(store: SQLiteMemoryStore) -> list[list[MemoryItem]]:
        await store.optimize()
        return await _every_kind_of_search(store)

    after = with_store(path, optimize)
    assert _text_segments(path) == 1
    assert [[i.model_dump() for i in found] for found in after] == [
        [i.model_dump() for i in found] for found in before
    ]
    assert [len(found) for found in after] == [240, 40, 5, 78, 60]
    with contextlib.closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("INSERT INTO items_text (items_text) VALUES ('integrity-check')")
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)


def test_optimize_between_writes_of_two_stores_loses_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def scenario() -> list[MemoryItem]:
        async with SQLiteMemoryStore.open(path) as one, SQLiteMemoryStore.open(path) as two:
            for n in range(5):
                await one.store_many([MemoryItem(content=f"old {n}-{m}") for m in range(50)])
            await asyncio.gather(
                *(one.store(MemoryItem(content=f"one {n}")) for n in range(100)),
                *(two.store(MemoryItem(content=f"two {n}")) for n in range(100)),
                one.optimize(),
                two.optimize(),
            )
            # Needles of three characters or more: the trigram index finds them.
            found = [await two.search(MemoryQuery(text=t, limit=1_000)) for t in ("OLD ", "ONE ", "TWO ")]
            return [item for items in found for item in items]

    found = sorted(str(i.content) for i in run(scenario()))
    assert found == sorted(
        [f"old {n}-{m}" for n in range(5) for m in range(50)]
        + [f"one {n}" for n in range(100)]
        + [f"two {n}" for n in range(100)]
    )


def test_an_optimize_that_cannot_take_the_write_lock_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def load(store: SQLiteMemoryStore) -> None:
        for n in range(4):
            await store.store_many([MemoryItem(content=f"note {n}-{m}") for m in range(20)])

    with_store(path, load)
    segments = _text_segments(path)

    async def impatient(store: SQLiteMemoryStore) -> list[MemoryItem]:
        other = _hold_write_lock(path)
        try:
            with pytest.raises(sqlite3.OperationalError, match="database is locked"):
                await store.optimize()
        finally:
            other.execute("ROLLBACK")
            other.close()
        await store.store(MemoryItem(content="note after"))  # the store goes on working
        return await store.search(MemoryQuery(text="note", limit=1_000))

    assert len(with_store(path, impatient, busy_timeout=0.05)) == 81
    assert _text_segments(path) >= segments > 1


# -- concurrency --------------------------------------------------------------------------


def test_hundreds_of_concurrent_tasks_lose_nothing(tmp_path: Path) -> None:
    items = [MemoryItem(content=i, tags=[f"t{i % 7}"]) for i in range(500)]

    async def body(store: SQLiteMemoryStore) -> None:
        await asyncio.gather(*(store.store(i) for i in items))
        searches = await asyncio.gather(*(store.search(MemoryQuery(tags=["t3"], limit=1000)) for _ in range(20)))
        assert all(len(s) == len([i for i in items if i.tags == ["t3"]]) for s in searches)
        assert sorted(i.content for i in await store.search(MemoryQuery(limit=1000))) == list(range(500))

    with_store(tmp_path / "m.db", body)


def test_two_processes_writing_one_file_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.search(MemoryQuery()))
    script = textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem
        from lionmem.adapters.sqlite import SQLiteMemoryStore
        async def main(who):
            async with SQLiteMemoryStore.open({str(path)!r}) as store:
                for i in range(300):
                    await store.store(MemoryItem(content=f"{{who}}-{{i}}", tags=[who]))
        wait_for_go()
        asyncio.run(main(sys.argv[1]))
    """)
    procs = start_together(script, ["a", "b"], tmp_path / "barrier")
    assert [p.wait(timeout=120) for p in procs] == [0, 0]

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        return await store.search(MemoryQuery(limit=10_000))

    found = sorted(i.content for i in with_store(path, body))
    assert found == sorted([f"a-{i}" for i in range(300)] + [f"b-{i}" for i in range(300)])


def test_a_long_search_does_not_hold_the_event_loop(tmp_path: Path) -> None:
    items = [MemoryItem(content=f"row {i} " + "x" * 50, metadata={"k": i % 3}) for i in range(20_000)]

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many(items)
        async with ticking() as turns:
            before = turns()
            found = await store.search(MemoryQuery(filters={"k": 1.0}, limit=-1))
            after = turns()
        assert len(found) == len([i for i in items if i.metadata["k"] == 1]) - 1
        assert after - before > 10  # the loop kept running while the thread searched

    with_store(tmp_path / "m.db", body)
