"""The SQLite store's connections: switching to WAL, waiting for other writers, and cancelled opens."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import (
    SQLiteMemoryStore,
)
from lionmem.adapters.sqlite import _connect as sqlite_connect
from tests.support.sqlite_support import connect, hold_write_lock, run, version_one_file, with_store


def test_switching_to_wal_waits_for_another_writer(tmp_path: Path) -> None:
    # SQLite answers the switch to WAL with "database is locked" at once, without its
    # busy handler, while another connection holds a write lock; seen in CI with four
    # processes opening one new file.
    path = tmp_path / "old.db"
    version_one_file(path, [MemoryItem(content="kept")])
    other = hold_write_lock(path)
    release = threading.Timer(0.2, other.execute, ["COMMIT"])
    release.start()
    found = with_store(path, lambda store: store.search(MemoryQuery()))
    release.join()
    other.close()
    assert [i.content for i in found] == ["kept"]
    assert connect(path).execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_switching_to_wal_gives_up_after_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    version_one_file(path, [MemoryItem(content="kept")])
    other = hold_write_lock(path)
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


def test_an_open_cancelled_while_it_waits_leaves_nothing_open(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "old.db"
    version_one_file(path, [MemoryItem(content="kept")])
    opened: list[sqlite3.Connection] = []  # held here, so that only the store closes them
    connect_and_migrate = sqlite_connect._connect_and_migrate

    def recorded(*args: Any) -> sqlite3.Connection:
        db = connect_and_migrate(*args)
        opened.append(db)
        return db

    monkeypatch.setattr(sqlite_connect, "_connect_and_migrate", recorded)
    other = hold_write_lock(path)

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
            other = hold_write_lock(path)
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


def test_switching_to_wal_does_not_retry_other_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
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


def test_a_current_file_opens_and_reads_while_another_process_writes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    item = MemoryItem(content="kept while another process writes")
    with_store(path, lambda store: store.store(item))
    holding = textwrap.dedent(f"""
        import sqlite3, sys
        db = sqlite3.connect({str(path)!r}, isolation_level=None)
        db.execute("BEGIN IMMEDIATE")
        db.execute("CREATE TABLE scratch (x)")
        print("writing", flush=True)
        sys.stdin.read()
        db.execute("ROLLBACK")
    """)
    with subprocess.Popen(
        [sys.executable, "-c", holding], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    ) as writer:
        assert writer.stdin is not None and writer.stdout is not None
        assert writer.stdout.readline() == "writing\n"

        async def read(store: SQLiteMemoryStore) -> tuple[MemoryItem | None, list[MemoryItem]]:
            return await store.retrieve(item.id), await store.search(MemoryQuery(text="another"))

        # A busy timeout far shorter than the write: opening must not wait for it.
        assert with_store(path, read, busy_timeout=0.2, create=False) == (item, [item])
        for command in (["get", f"sqlite:///{path}", str(item.id)], ["search", f"sqlite:///{path}"]):
            done = subprocess.run(
                [sys.executable, "-m", "lionmem", *command], capture_output=True, text=True, timeout=120
            )
            assert (done.returncode, done.stderr) == (0, ""), command
            assert json.loads(done.stdout)["content"] == item.content
        writer.stdin.close()
        assert writer.wait(timeout=60) == 0


def test_opening_a_current_file_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store(MemoryItem(content="x")))
    db = connect(path, isolation_level=None)
    (changes,) = db.execute("PRAGMA data_version").fetchone()
    with_store(path, lambda store: store.search(MemoryQuery()))
    # data_version moves when another connection commits a change to the file.
    assert db.execute("PRAGMA data_version").fetchone() == (changes,)
