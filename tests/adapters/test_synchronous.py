"""`SyncStore` (ADR-0107): every store called without `await`, from threads, notebooks
and scripts, with the store's own answers and errors, and nothing left open."""

from __future__ import annotations

import asyncio
import gc
import signal
import subprocess
import sys
import threading
import weakref
from collections.abc import Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.synchronous import SyncStore, _close_at_exit
from lionmem.embedders import HashingEmbedder
from lionmem.filters import Ge
from tests.support.pg_server import fresh_database
from tests.support.postgres_support import fresh_namespace

Opened = Callable[[], SyncStore[Any]]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opened(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opened]:
    """Opens a `SyncStore` on a store of the parameter's kind, with an embedder; each
    one opened is closed after the test."""
    made: list[SyncStore[Any]] = []
    embedder = HashingEmbedder(32)

    def memory() -> SyncStore[Any]:
        return SyncStore.open(InMemoryStore(embedder=embedder))

    def sqlite() -> SyncStore[Any]:
        return SyncStore.open(SQLiteMemoryStore.open(tmp_path / "m.db", embedder=embedder))

    def postgres() -> SyncStore[Any]:
        return SyncStore.open(PostgresMemoryStore.open(database, namespace=namespace, embedder=embedder))

    namespace = fresh_namespace()
    # A database of its own: a database records one embedder for all its namespaces.
    database = fresh_database(request.getfixturevalue("pgvector_server_url")) if request.param == "postgres" else ""
    chosen = {"memory": memory, "sqlite": sqlite, "postgres": postgres}[request.param]

    def opening() -> SyncStore[Any]:
        made.append(chosen())
        return made[-1]

    yield opening
    for store in made:
        store.close()


def _notes(count: int) -> list[MemoryItem]:
    return [MemoryItem(content=f"note {n}", tags=[f"t{n % 3}"], metadata={"n": n}) for n in range(count)]


def test_every_method_answers_as_the_async_store_does(opened: Opened) -> None:
    notes = _notes(30)
    with opened() as store:
        assert store.store(notes[0]) == notes[0].id
        assert store.store_many(notes[1:]) == [n.id for n in notes[1:]]
        retrieved = store.retrieve(notes[3].id)
        assert retrieved is not None and retrieved.content == "note 3"
        assert store.retrieve(UUID(int=1)) is None
        query = MemoryQuery(tags=["t1"], filters={"n": Ge(10)}, limit=100)
        assert [i.id for i in store.search(query)] == [
            n.id for n in notes if n.metadata["n"] >= 10 and n.tags == ["t1"]
        ]
        assert store.count(MemoryQuery(tags=["t0"])) == 10
        assert [i.id for i in store.search_newest(MemoryQuery(limit=2))] == [notes[29].id, notes[28].id]
        page = store.search_page(MemoryQuery(limit=25))
        assert len(page.items) == 25 and page.next is not None
        assert [i.id for i in store.search_page(MemoryQuery(limit=25), page.next).items] == [n.id for n in notes[25:]]
        assert [len(batch) for batch in store.scan(12)] == [12, 12, 6]
        (best,) = store.recall("note 7", k=1)
        assert best.item.id == notes[7].id
        assert [[r.item.id for r in found] for found in store.recall_many(["note 7", "note 8"], k=1)] == [
            [notes[7].id],
            [notes[8].id],
        ]
        assert store.recall_hybrid("note 9", k=1)[0].item.id == notes[9].id
        assert store.expire([notes[0].id], ttl=3_600) == 1 and store.persist([notes[0].id]) == 1
        assert store.expire([notes[1].id], at=1.0) == 1 and store.sweep() == 1
        assert store.delete(notes[2].id) and not store.delete(notes[2].id)
        assert store.delete_many([notes[3].id, notes[4].id]) == 2
        assert store.delete_matching(MemoryQuery(tags=["t2"], limit=100)) == 9
        assert store.delete_created_before(notes[6].created_at) == 1  # note 0: 1 to 5 are gone
        assert store.namespaces() == [store.store_of.namespace]
        assert store.run(lambda s: s.count(MemoryQuery())) == 30 - 1 - 1 - 2 - 9 - 1
        assert store.store_of.namespace == store.run(lambda s: asyncio.sleep(0, s.namespace))


def test_a_durable_store_reports_its_stats_and_verifies(opened: Opened) -> None:
    with opened() as store:
        if isinstance(store.store_of, InMemoryStore):
            with pytest.raises(
                TypeError, match="stats needs a store that implements StatsStore; InMemoryStore does not"
            ):
                store.stats()
            with pytest.raises(TypeError, match="verify needs a store that implements VerifyingStore"):
                store.verify()
            return
        store.store_many(_notes(3))
        assert store.stats().items == 3
        assert store.verify().whole


def test_the_stores_errors_reach_the_caller_as_they_are(opened: Opened) -> None:
    with opened() as store:
        with pytest.raises(ValueError, match="k must be at least 1, got 0"):
            store.recall("x", k=0)
        with pytest.raises(ValueError, match="item_id 'not an id' is not a UUID"):
            store.retrieve("not an id")  # type: ignore[arg-type]
        with pytest.raises(ValueError):
            list(store.scan(0))
        assert store.search(MemoryQuery()) == []  # still working


def test_many_threads_write_through_one_store_and_lose_nothing(opened: Opened) -> None:
    notes = _notes(200)
    with opened() as store, ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(store.store, notes))
        assert sorted(i.id.int for i in store.search(MemoryQuery(limit=1_000))) == sorted(n.id.int for n in notes)


def test_it_works_inside_a_running_event_loop_as_a_notebook_cell_does(opened: Opened) -> None:
    async def cell() -> list[str]:
        with opened() as store:
            store.store(MemoryItem(content="from a notebook"))
            return [str(i.content) for i in store.search(MemoryQuery())]

    assert asyncio.run(cell()) == ["from a notebook"]


def test_leaving_a_scan_early_closes_it_and_the_store_goes_on(opened: Opened) -> None:
    with opened() as store:
        store.store_many(_notes(50))
        for batch in store.scan(10):
            assert len(batch) == 10
            break
        assert store.count(MemoryQuery()) == 50


def test_closed_it_refuses_calls_and_closing_again_does_nothing(tmp_path: Path) -> None:
    store = SyncStore.open(SQLiteMemoryStore.open(tmp_path / "m.db"))
    loop = store._loop
    assert loop is not None
    store.store(MemoryItem(content="kept"))
    store.close()
    store.close()
    assert not loop.thread.is_alive()
    with pytest.raises(RuntimeError, match="the SyncStore is closed"):
        store.search(MemoryQuery())
    with SyncStore.open(f"sqlite:///{tmp_path / 'm.db'}") as again:
        assert [i.content for i in again.search(MemoryQuery())] == ["kept"]


LEFT_OPEN = """
import asyncio, contextlib, sys
from pathlib import Path
from lionmem import InMemoryStore, MemoryItem
from lionmem.adapters.synchronous import SyncStore, _close_at_exit

@contextlib.asynccontextmanager
async def opening():
    yield InMemoryStore()
    # As a durable store closes: work handed to the loop's thread pool.
    await asyncio.to_thread(Path(sys.argv[1]).write_text, "closed")

store = SyncStore.open(opening())
store.store(MemoryItem(content="written"))
"""


def test_a_store_left_open_is_closed_as_python_exits(tmp_path: Path) -> None:
    """Closed by threading's exit hook, while the loop's thread pool still takes work:
    `atexit` runs after Python has shut its pools, and the close failed there."""
    done = subprocess.run(
        [sys.executable, "-c", LEFT_OPEN, str(tmp_path / "closed")], capture_output=True, text=True, timeout=60
    )
    assert (done.returncode, done.stderr) == (0, "")
    assert (tmp_path / "closed").read_text() == "closed"


class BareStore:
    """The three methods and nothing else."""

    async def store(self, item: MemoryItem) -> UUID:
        return item.id

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return None

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return []


@pytest.mark.parametrize(
    ("call", "extension"),
    [
        (lambda s: s.store_many([]), "BatchingStore"),
        (lambda s: s.delete(UUID(int=1)), "ForgettingStore"),
        (lambda s: s.delete_many([]), "ForgettingStore"),
        (lambda s: s.delete_matching(MemoryQuery()), "ForgettingStore"),
        (lambda s: s.delete_created_before(0.0), "ForgettingStore"),
        (lambda s: s.count(MemoryQuery()), "ForgettingStore"),
        (lambda s: s.scan(), "ForgettingStore"),
        (lambda s: s.search_page(MemoryQuery()), "PagingStore"),
        (lambda s: s.search_newest(MemoryQuery()), "RecentStore"),
        (lambda s: s.recall("x"), "RecallStore"),
        (lambda s: s.recall_many(["x"]), "RecallStore"),
        (lambda s: s.recall_hybrid("x"), "HybridStore"),
        (lambda s: s.expire([], ttl=1), "ExpiringStore"),
        (lambda s: s.persist([]), "ExpiringStore"),
        (lambda s: s.sweep(), "ExpiringStore"),
        (lambda s: s.namespaces(), "NamespacedStore"),
        (lambda s: s.stats(), "StatsStore"),
        (lambda s: s.verify(), "VerifyingStore"),
    ],
)
def test_an_extension_the_store_lacks_is_named_before_anything_runs(
    call: Callable[[SyncStore[Any]], object], extension: str
) -> None:
    with SyncStore.open(BareStore()) as store:
        with pytest.raises(TypeError) as refused:
            call(store)
        assert str(refused.value).endswith(f"needs a store that implements {extension}; BareStore does not")
        assert store.search(MemoryQuery()) == []


class OneBatch:
    """An iterator of batches with no `aclose`, as a store of another library may scan."""

    def __init__(self) -> None:
        self.given = False

    def __aiter__(self) -> OneBatch:
        return self

    async def __anext__(self) -> list[MemoryItem]:
        if self.given:
            raise StopAsyncIteration
        self.given = True
        return [MemoryItem(content="only")]


class ScansWithoutClose(BareStore):
    async def delete(self, item_id: UUID) -> bool:
        return False

    async def delete_many(self, item_ids: Any) -> int:
        return 0

    async def delete_matching(self, query: MemoryQuery) -> int:
        return 0

    async def count(self, query: MemoryQuery) -> int:
        return 1

    async def delete_created_before(self, cutoff: Any) -> int:
        return 0

    def scan(self, batch_size: int = 500) -> OneBatch:
        return OneBatch()


def test_a_scan_without_aclose_and_one_left_open_past_the_close_end_quietly() -> None:
    with SyncStore.open(ScansWithoutClose()) as store:
        assert [[i.content for i in batch] for batch in store.scan()] == [["only"]]
        for _ in store.scan():
            break  # closed early: there is no aclose to call
    with SyncStore.open(InMemoryStore()) as memory:
        memory.store_many(_notes(4))
        batches = memory.scan(2)
        assert len(next(batches)) == 2
    batches.close()  # the store closed first: nothing left to close the scan on


def test_the_exit_hook_closes_a_store_still_open_and_passes_over_one_gone() -> None:
    left_open = SyncStore.open(InMemoryStore())
    loop = left_open._loop
    assert loop is not None
    _close_at_exit(weakref.ref(left_open))
    assert left_open._loop is None and not loop.thread.is_alive()
    with SyncStore.open(InMemoryStore()) as closed:
        gone = weakref.ref(closed)
    del closed
    gc.collect()
    assert gone() is None
    _close_at_exit(gone)  # nothing to close


def test_what_it_cannot_open_is_refused_naming_what_to_give(tmp_path: Path) -> None:
    async def opened_elsewhere() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "m.db") as store:
            with pytest.raises(TypeError, match=r"give SyncStore.open its opening, SQLiteMemoryStore.open\(...\)"):
                SyncStore.open(store)

    asyncio.run(opened_elsewhere())
    with pytest.raises(TypeError, match="takes a store URL, a store's opening or a store, got an int"):
        SyncStore.open(3)  # type: ignore[call-overload]
    with pytest.raises(TypeError, match="embedder goes with a store URL"):
        SyncStore.open(InMemoryStore(), embedder=HashingEmbedder(8))  # type: ignore[call-overload]

    def loops() -> int:  # not every thread: asyncio's executor shutdown ends its helper a moment later
        return sum(thread.name == "lionmem-sync-store" for thread in threading.enumerate())

    before = loops()
    with pytest.raises(ValueError, match="a store URL starts with one of"):
        SyncStore.open("sqlit:///m.db")
    with pytest.raises(FileNotFoundError):
        SyncStore.open(SQLiteMemoryStore.open(tmp_path / "missing.db", create=False))
    assert loops() == before  # no loop left running


def test_a_call_from_its_own_loop_is_refused_instead_of_waiting_for_ever() -> None:
    with SyncStore.open(InMemoryStore()) as store:

        async def inside(_: InMemoryStore) -> None:
            store.search(MemoryQuery())

        with pytest.raises(RuntimeError, match="called from its own event loop"):
            store.run(inside)


def sleeping(started: threading.Event, cancelled: threading.Event) -> Callable[[InMemoryStore], Awaitable[None]]:
    """A call that sets `started`, sleeps a minute, and sets `cancelled` if cancelled."""

    async def slow(_: InMemoryStore) -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise

    return slow


def test_ctrl_c_while_waiting_cancels_the_call() -> None:
    assert threading.current_thread() is threading.main_thread()  # where Python runs its signal handlers
    started, cancelled = threading.Event(), threading.Event()
    slow = sleeping(started, cancelled)

    def press_ctrl_c() -> None:
        started.wait(10)
        signal.pthread_kill(threading.main_thread().ident or 0, signal.SIGINT)

    with SyncStore.open(InMemoryStore()) as store:
        threading.Thread(target=press_ctrl_c).start()
        with pytest.raises(KeyboardInterrupt):
            store.run(slow)
        assert cancelled.wait(10)
        assert store.search(MemoryQuery()) == []  # the loop goes on


def test_ctrl_c_just_after_the_call_is_handed_to_the_loop_still_cancels_it(monkeypatch: pytest.MonkeyPatch) -> None:
    ran = threading.Event()

    async def work(_: InMemoryStore) -> None:
        ran.set()
        await asyncio.sleep(60)

    with SyncStore.open(InMemoryStore()) as store:
        assert store._loop is not None
        loop = store._loop.loop
        held = threading.Event()
        loop.call_soon_threadsafe(held.wait, 10)  # the loop starts nothing until the interrupt has landed
        hand_over = loop.call_soon_threadsafe

        def hand_over_then_ctrl_c(*args: Any) -> asyncio.Handle:
            monkeypatch.undo()  # the one interrupt
            hand_over(*args)
            raise KeyboardInterrupt

        monkeypatch.setattr(loop, "call_soon_threadsafe", hand_over_then_ctrl_c)
        with pytest.raises(KeyboardInterrupt):
            store.run(work)
        held.set()
        assert store.search(MemoryQuery()) == []  # after the handed-over call, on the loop
        assert not ran.is_set()  # cancelled before it started


def test_arun_awaits_the_stores_loop_from_another_and_cancels_there() -> None:
    started, cancelled = threading.Event(), threading.Event()
    slow = sleeping(started, cancelled)

    with SyncStore.open(InMemoryStore()) as store:

        async def body() -> list[MemoryItem]:
            waiting = asyncio.ensure_future(store.arun(slow))
            while not started.is_set():
                await asyncio.sleep(0.001)
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            return await store.arun(lambda s: s.search(MemoryQuery()))

        assert asyncio.run(body()) == []
        assert cancelled.wait(10)

        async def nested(_: InMemoryStore) -> list[MemoryItem]:  # on the store's own loop: no hop
            return await store.arun(lambda s: s.search(MemoryQuery()))

        assert store.run(nested) == []
    with pytest.raises(RuntimeError, match="^the SyncStore is closed$"):
        asyncio.run(store.arun(lambda s: s.search(MemoryQuery())))
