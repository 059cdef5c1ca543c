"""Opening, closing and naming an SQLite store, and the arguments `open` takes."""

from __future__ import annotations

import asyncio
import math
import re
import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.errors import StoreClosedError
from lionmem.adapters.lifecycle import MAX_TIMEOUT
from lionmem.adapters.sqlite import (
    APPLICATION_ID,
    SCHEMA_VERSION,
    SQLiteMemoryStore,
)
from tests.support.sqlite_support import connect, on_writer, run, with_store


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


@pytest.mark.parametrize(("busy_timeout", "pragma"), [(0, 0), (0.0004, 1), (1.0001, 1001), (MAX_TIMEOUT, 2**31 - 1)])
def test_busy_timeout_reaches_sqlite_in_milliseconds_rounded_up(
    tmp_path: Path, busy_timeout: float, pragma: int
) -> None:
    """0 is a timeout SQLite takes (fail at once), unlike PostgreSQL; the longest is
    what SQLite holds."""

    async def body(store: SQLiteMemoryStore) -> tuple[int, int]:
        (reader,) = store._connections.live_reader().execute("PRAGMA busy_timeout").fetchone()
        (writer,) = await on_writer(store, lambda db: db.execute("PRAGMA busy_timeout").fetchone())
        return reader, writer

    assert with_store(tmp_path / "m.db", body, busy_timeout=busy_timeout) == (pragma, pragma)


def test_the_event_loop_reader_cannot_write(tmp_path: Path) -> None:
    """`retrieve` reads on the event loop's thread; only the store's own thread may
    write, so the loop never waits for a write lock."""

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        await store.store(MemoryItem(content="kept"))
        with pytest.raises(sqlite3.OperationalError, match="attempt to write a readonly database"):
            store._connections.live_reader().execute("DELETE FROM items")
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
        assert repr(store) == f"<SQLiteMemoryStore {str(tmp_path / 'r.db')!r} namespace='default' open>"
        await store.close()
        assert repr(store) == f"<SQLiteMemoryStore {str(tmp_path / 'r.db')!r} namespace='default' closed>"

    run(body())


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
