"""The SQLite store's checkpoint thread, and closing: every thread and connection ends."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Literal

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import (
    SQLiteMemoryStore,
    _checkpoint,
)
from lionmem.adapters.sqlite import _connect as sqlite_connect
from lionmem.adapters.sqlite._checkpoint import Checkpoints
from tests.support.sqlite_support import (
    CHECKPOINT_AFTER,
    connect,
    on_worker,
    on_writer,
    run,
    with_store,
)
from tests.support.store_contract import (
    assert_freed_once_dropped,
)


@pytest.mark.parametrize(("synchronous", "level"), [("NORMAL", 1), ("FULL", 2)])
def test_the_checkpoint_thread_copies_the_log_beside_the_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, synchronous: Literal["NORMAL", "FULL"], level: int
) -> None:
    """Too few writes for the writer's own checkpoint (4,000 pages of log), enough for
    the checkpoint thread's: the database file holds items while the store is open,
    synced as hard as the writer syncs."""
    path = tmp_path / "m.db"
    ran_on: list[str] = []
    run_checkpoint = Checkpoints.run

    def recorded(checkpoints: Checkpoints) -> None:
        ran_on.append(threading.current_thread().name)
        run_checkpoint(checkpoints)

    monkeypatch.setattr(Checkpoints, "run", recorded)
    every = CHECKPOINT_AFTER
    writes = 3 * every

    async def body(store: SQLiteMemoryStore) -> int:
        for n in range(writes):
            await store.store(MemoryItem(content=f"note {n}", tags=["t"], metadata={"n": n}))
        assert store._connections.worker.checkpoints.thread is not None

        def checkpoint_sync() -> int:
            assert store._connections.worker.checkpoints.db is not None
            found: int = store._connections.worker.checkpoints.db.execute("PRAGMA synchronous").fetchone()[0]
            return found

        assert (
            await asyncio.get_running_loop().run_in_executor(
                store._connections.worker.checkpoints.thread, checkpoint_sync
            )
            == level
        )
        log_pages = await on_writer(store, lambda db: db.execute("PRAGMA wal_autocheckpoint").fetchone()[0])
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
    every = CHECKPOINT_AFTER

    async def body(store: SQLiteMemoryStore) -> int:
        monkeypatch.chdir(tmp_path / "second #1?")
        for n in range(every):
            await store.store(MemoryItem(content=n))
        assert store._connections.worker.checkpoints.thread is not None
        await asyncio.get_running_loop().run_in_executor(store._connections.worker.checkpoints.thread, lambda: None)
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
        path.unlink()  # the store's connections keep the removed files open
        path.with_name("m.db-wal").unlink()
        for n in range(CHECKPOINT_AFTER):
            await store.store(MemoryItem(content=n))
        assert store._connections.worker.checkpoints.thread is not None
        await asyncio.get_running_loop().run_in_executor(store._connections.worker.checkpoints.thread, lambda: None)
        assert not path.exists() and not path.with_name("m.db-wal").exists()

    with_store(path, body)


def test_a_store_that_only_reads_starts_no_checkpoint_thread(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store_many([MemoryItem(content=n) for n in range(100)]))
    before = set(threading.enumerate())

    async def body(store: SQLiteMemoryStore) -> None:
        assert len(await store.search(MemoryQuery(limit=1000))) == 100
        await store.store(MemoryItem(content="one write, too few to ask for a checkpoint"))
        assert store._connections.worker.checkpoints.thread is None
        # Checked while the store is open: closing would end such a thread anyway.
        assert not [t for t in set(threading.enumerate()) - before if "checkpoint" in t.name]

    with_store(path, body)


def test_closing_copies_the_rest_of_the_log_and_removes_it(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    items = [MemoryItem(content=f"note {n}") for n in range(10 * CHECKPOINT_AFTER)]

    async def body(store: SQLiteMemoryStore) -> None:
        for item in items:
            await store.store(item)
        assert store._connections.worker.checkpoints.thread is not None

    with_store(path, body)
    assert not path.with_name("m.db-wal").exists()
    with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro&immutable=1", uri=True)) as only_file:
        assert only_file.execute("SELECT count(*) FROM items").fetchone() == (len(items),)  # no log read


@pytest.mark.parametrize(
    ("writes", "threads"),
    [(0, ["lionmem-sqlite"]), (CHECKPOINT_AFTER, ["lionmem-sqlite", "lionmem-sqlite-checkpoint"])],
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
    run(assert_freed_once_dropped(opener, CHECKPOINT_AFTER))


def test_close_waits_for_the_store_thread_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The thread ends a few microseconds after it closes the connections, which is
    rarely seen; work it queues for itself first widens that gap to 200 ms."""

    async def scenario() -> bool:
        before = set(threading.enumerate())
        store = await SQLiteMemoryStore.open(tmp_path / "m.db")
        (worker,) = set(threading.enumerate()) - before
        close_on_worker = store._connections._close_on_worker

        def close_then_linger() -> None:
            store._connections.executor.submit(time.sleep, 0.2)  # runs after this call
            close_on_worker()

        monkeypatch.setattr(store._connections, "_close_on_worker", close_then_linger)
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
        for n in range(CHECKPOINT_AFTER):  # starts the checkpoint thread
            await store.store(MemoryItem(content=n))
        assert store_threads() == ["lionmem-sqlite", "lionmem-sqlite-checkpoint"]
        release = threading.Event()
        long_call = asyncio.ensure_future(on_worker(store, release.wait, 30))
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
        long_call = asyncio.ensure_future(on_worker(store, release.wait, 30))
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
        write = store._connections.worker.write

        def held_write(space: Any, rows: Any, vectors: Any = (), expires: Any = None) -> None:
            started.set()
            go.wait(30)
            write(space, rows, vectors, expires)

        store._connections.worker.write = held_write  # type: ignore[method-assign,assignment]
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
        long_call = asyncio.ensure_future(on_worker(store, release.wait, 30))
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
    writes = 2 * CHECKPOINT_AFTER

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        broken = connect(tmp_path / "elsewhere.db", check_same_thread=False)
        broken.close()
        store._connections.worker.checkpoints.db = broken
        for n in range(writes):
            await store.store(MemoryItem(content=n))
        checkpoint = store._connections.worker.checkpoints.running
        assert checkpoint is not None
        await asyncio.wrap_future(checkpoint)  # it raised nothing
        store._connections.worker.checkpoints.db = None
        return await store.search(MemoryQuery(limit=1000))

    found = with_store(path, body)
    assert [i.content for i in found] == list(range(writes))


def test_a_writer_that_finds_the_log_past_twice_its_limit_waits_for_a_checkpoint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Below the limit a write returns while its checkpoint runs; past it, the next write
    waits for the checkpoint already running and then for one begun after it, which
    empties the log. Under a loaded disk the writers of three processes outran the
    thread and the log reached 130-340 MB."""
    release = threading.Event()
    finished: list[int] = []
    run_checkpoint = Checkpoints.run

    def held(checkpoints: Checkpoints) -> None:
        release.wait(10)
        run_checkpoint(checkpoints)
        finished.append(len(finished))

    monkeypatch.setattr(Checkpoints, "run", held)
    log = tmp_path / "m.db-wal"

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many([MemoryItem(content=n) for n in range(CHECKPOINT_AFTER)])
        assert finished == [] and log.stat().st_size > 0  # a checkpoint is held, the write returned
        monkeypatch.setattr(_checkpoint, "WAL_LIMIT", 0)
        write = asyncio.create_task(store.store(MemoryItem(content="past the limit")))
        await asyncio.sleep(0.2)
        assert not write.done()
        release.set()
        await write
        assert finished == [0, 1] and log.stat().st_size == 0

    with_store(tmp_path / "m.db", body)


def test_the_truncating_checkpoint_stops_once_another_connection_has_emptied_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader holds the log, so each restart is refused; once the log is no longer
    past twice its limit (another process truncated it), the thread stops trying
    rather than keep its writer waiting."""
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store(MemoryItem(content="in the log")))
    writer = connect(path, isolation_level=None)
    writer.execute("PRAGMA wal_autocheckpoint = 0")
    writer.execute("CREATE TABLE scratch (x)")
    reader = connect(path)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM items").fetchone()  # reads the log's frames
    checkpoints = Checkpoints(path)
    checkpoints.db = connect(path, isolation_level=None, check_same_thread=False)
    checkpoints.db.execute("PRAGMA busy_timeout = 0")  # refused at once, as by another checkpoint
    statements: list[str] = []
    checkpoints.db.set_trace_callback(statements.append)
    answers = iter([True, True, True, False])
    monkeypatch.setattr(Checkpoints, "_overgrown", lambda self: next(answers))
    checkpoints.run()
    assert statements.count("PRAGMA wal_checkpoint(TRUNCATE)") == 3
    assert next(answers, "all asked") == "all asked"
