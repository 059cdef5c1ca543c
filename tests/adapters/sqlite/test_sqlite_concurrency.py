"""Many tasks and processes on one SQLite file lose nothing, and the event loop stays free."""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import sys
import textwrap
import threading
import time
from pathlib import Path

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import (
    SQLiteMemoryStore,
)
from lionmem.adapters.sqlite._connect import WAL_LIMIT
from lionmem.adapters.sqlite._namespaces import Space
from tests.support.sqlite_support import SRC, with_store
from tests.support.store_contract import (
    ticking,
)
from tests.support.together import start_together


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
    """The search waits, on the store's thread, until the event loop has turned ten
    times: it could not, were the search holding the loop. (Counting the turns a
    search lasted failed under load, where the loop turned less often.)"""
    items = [MemoryItem(content=f"row {i} " + "x" * 50, metadata={"k": i % 3}) for i in range(20_000)]
    turned = threading.Event()

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many(items)
        worker = store._connections.worker
        search = worker.search

        def after_ten_turns(space: Space, query: MemoryQuery, *, newest_first: bool = False) -> list[MemoryItem]:
            assert turned.wait(10), "the event loop did not turn while the store's thread searched"
            return search(space, query, newest_first=newest_first)

        worker.search = after_ten_turns  # type: ignore[method-assign]
        async with ticking(interval=0.001) as turns:

            async def count() -> None:
                start = turns()
                while turns() - start < 10:
                    await asyncio.sleep(0.001)
                turned.set()

            counting = asyncio.ensure_future(count())
            found = await store.search(MemoryQuery(filters={"k": 1.0}, limit=-1))
            await counting
        assert len(found) == len([i for i in items if i.metadata["k"] == 1]) - 1

    with_store(tmp_path / "m.db", body)


def test_a_second_store_opened_and_closed_on_the_file_keeps_every_process_write(tmp_path: Path) -> None:
    """Closing any descriptor of a file drops every POSIX lock this process holds on it,
    the first store's included; another process then writes as if nobody else did.
    Opening a second store, which checks the file before SQLite opens it, must take no
    descriptor of its own that closing could use so."""
    path = tmp_path / "m.db"
    url = f"sqlite:///{path}"

    async def scenario() -> tuple[list[str], int]:
        async with SQLiteMemoryStore.open(path) as first:
            await first.store(MemoryItem(content="first"))
            async with SQLiteMemoryStore.open(path) as second:
                await second.search(MemoryQuery(limit=1))
            assert all(log.exists() for log in (path.with_name("m.db-wal"), path.with_name("m.db-shm")))
            puts = [
                await asyncio.create_subprocess_exec(
                    sys.executable,
                    "-m",
                    "lionmem",
                    "put",
                    url,
                    f"other {n}",
                    stdout=asyncio.subprocess.PIPE,
                    stderr=asyncio.subprocess.PIPE,
                )
                for n in range(5)
            ]
            written = 1
            while any(put.returncode is None for put in puts):
                await first.store_many([MemoryItem(content=f"mine {written + n}") for n in range(20)])
                written += 20
                await asyncio.sleep(0.002)
            outputs = [await put.communicate() for put in puts]
            assert [put.returncode for put in puts] == [0] * 5, [err.decode() for _, err in outputs]
            ids = [out.decode().strip() for out, _ in outputs]
            assert all(log.exists() for log in (path.with_name("m.db-wal"), path.with_name("m.db-shm")))
            found = {str(item.id) for item in await first.search(MemoryQuery(limit=100_000))}
            assert set(ids) <= found, "a write another process acknowledged is gone"
            return ids, written

    ids, written = asyncio.run(scenario())
    with contextlib.closing(sqlite3.connect(path)) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        (count,) = db.execute("SELECT count(*) FROM items").fetchone()
        stored = {row[0] for row in db.execute("SELECT id FROM items")}
    assert count == written + 5 and set(ids) <= stored


def test_the_write_ahead_log_stays_bounded_under_writers_in_many_processes(tmp_path: Path) -> None:
    """Three processes write one item at a time while a fourth searches without pause:
    a log restarts only once no reader reads it, which under them was never, and the
    file grew to many times the database. It now stays within twice `WAL_LIMIT` and
    some frames, and after the writers close it is gone."""
    path = tmp_path / "m.db"
    log = path.with_name("m.db-wal")
    done = tmp_path / "written"
    with_store(path, lambda store: store.search(MemoryQuery()))
    script = textwrap.dedent(f"""
        import asyncio, pathlib, sys
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem, MemoryQuery
        from lionmem.adapters.sqlite import SQLiteMemoryStore
        async def main(who):
            async with SQLiteMemoryStore.open({str(path)!r}) as store:
                if who == "reader":
                    while len(list(pathlib.Path({str(done)!r}).glob("*"))) < 3:
                        await store.search(MemoryQuery(text="words", limit=5))
                    return
                for i in range(4_000):
                    await store.store(MemoryItem(content=f"{{who}}-{{i}} " + "words " * 120, tags=[who]))
            pathlib.Path({str(done)!r}, who).touch()
        wait_for_go()
        asyncio.run(main(sys.argv[1]))
    """)
    done.mkdir()
    procs = start_together(script, ["a", "b", "c", "reader"], tmp_path / "barrier")
    largest = 0
    while any(p.poll() is None for p in procs):
        with contextlib.suppress(FileNotFoundError):
            largest = max(largest, log.stat().st_size)
        time.sleep(0.02)
    assert [p.returncode for p in procs] == [0, 0, 0, 0]
    assert largest <= 2 * WAL_LIMIT + 16 * 1024 * 1024, f"the log reached {largest / 2**20:.1f} MiB"
    assert not log.exists()
    assert with_store(path, lambda store: store.count(MemoryQuery())) == 12_000
