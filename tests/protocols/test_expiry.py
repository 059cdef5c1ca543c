"""`Sweeper`, the background sweeper a long-running process may start (ADR-0105 D2), and
the in-memory store's record of expiries."""

from __future__ import annotations

import asyncio
from uuid import uuid4

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery, Sweeper
from lionmem.protocols._expiries import Expiries


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def test_a_sweeper_sweeps_on_entering_and_then_every_interval() -> None:
    async def body() -> None:
        clock = Clock()
        store = InMemoryStore(clock=clock, ttl=10)
        await store.store_many([MemoryItem(content=f"note {n}") for n in range(3)])
        clock.now += 10
        async with Sweeper(store, every=0.01) as sweeper:
            await asyncio.sleep(0)
            assert sweeper.swept == 3 and await store.count(MemoryQuery()) == 0
            await store.store(MemoryItem(content="later"))
            clock.now += 10
            for _ in range(200):
                if sweeper.swept == 4:
                    break
                await asyncio.sleep(0.01)
            assert sweeper.swept == 4
        swept = sweeper.swept
        await store.store(MemoryItem(content="after"))
        clock.now += 10
        await asyncio.sleep(0.05)
        assert sweeper.swept == swept  # leaving the block stopped it
        assert await store.sweep() == 1

    asyncio.run(body())


class Failing(InMemoryStore):
    async def sweep(self) -> int:
        raise OSError("the disk is full")


def test_a_failed_sweep_stops_sweeping_and_is_raised_when_the_block_exits() -> None:
    async def body() -> None:
        with pytest.raises(OSError, match="the disk is full"):
            async with Sweeper(Failing(), every=60):
                await asyncio.sleep(0.01)

    asyncio.run(body())


def test_a_sweeper_is_checked_and_runs_once_at_a_time() -> None:
    async def body() -> None:
        sweeper = Sweeper(InMemoryStore(), every=60)
        async with sweeper:
            with pytest.raises(RuntimeError, match="this Sweeper is already running"):
                await sweeper.__aenter__()
        async with sweeper:  # again, once it stopped
            pass

    asyncio.run(body())
    with pytest.raises(TypeError, match="store must be an ExpiringStore, got a dict"):
        Sweeper({}, every=1)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="every must be a finite number of seconds above 0, got 0"):
        Sweeper(InMemoryStore(), every=0)


def test_a_cancelled_block_cancels_the_sweeper_and_stays_cancelled() -> None:
    async def body() -> None:
        store = InMemoryStore()
        entered = asyncio.Event()

        async def using() -> None:
            async with Sweeper(store, every=60):
                entered.set()
                await asyncio.sleep(60)

        task = asyncio.ensure_future(using())
        await entered.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(body())


def test_expiries_keep_their_times_small_and_their_soonest_on_top() -> None:
    expiries = Expiries()
    ids = [uuid4() for _ in range(10)]
    for round_ in range(100):  # each set leaves a stale entry behind
        expiries.set(ids, 2_000.0 + round_)
    assert len(expiries._times) <= 2 * len(ids) + 64
    assert not expiries.expired(2_098.0)
    assert set(expiries.expired(2_099.0).values()) == set(ids)
    assert not expiries.expired(2_098.5)  # a clock that goes back sees them unexpired
    assert set(expiries.expired(2_099.0).values()) == set(ids)
    expiries.set(ids[:3], None)
    expiries.drop(ids[3:5])
    assert set(expiries.expired(3_000.0).values()) == set(ids[5:])
    expiries.set(ids[5:6], 5_000.0)  # an expired item given a later expiry, as storing it again does
    assert set(expiries.expired(3_000.0).values()) == set(ids[6:])
    assert not Expiries() and expiries and expiries.at(ids[0]) is None and expiries.at(ids[9]) == 2_099.0


def test_the_first_items_pass_over_those_expired_wherever_they_are() -> None:
    """With the expired items all at the front, a search without predicates reads a
    growing prefix until it holds its limit; with them spread, one prefix a few longer."""

    async def body() -> None:
        clock = Clock()
        store = InMemoryStore(clock=clock)
        items = [MemoryItem(content=f"note {n}") for n in range(300)]
        await store.store_many(items)
        await store.expire([i.id for i in items[:200]], at=clock.now)
        assert await store.search(MemoryQuery(limit=10)) == items[200:210]
        assert await store.search(MemoryQuery(limit=-95)) == items[200:205]
        assert await store.search(MemoryQuery(limit=1_000)) == items[200:]
        assert await store.search(MemoryQuery(limit=0)) == []

    asyncio.run(body())


def test_expiry_adds_no_import_to_the_in_memory_store() -> None:
    """Making an InMemoryStore, with expiry or without, loads no asyncio: a sweeper
    imports it when it runs, on a loop that already has."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom lionmem import InMemoryStore, Sweeper\n"
        "InMemoryStore(ttl=60, refresh_on_read=True)\nassert 'asyncio' not in sys.modules, 'asyncio'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
