"""Concurrent LangGraph batches run together (ADR-0106 D6): the batches that queue while
one runs run as one, each caller still answered alone."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, cast
from uuid import UUID

import pytest
from langgraph.store.base import GetOp, Item, Op, PutOp, Result

from lionmem import InMemoryStore, MemoryItem
from lionmem.integrations._langgraph_batches import Batches
from lionmem.integrations.langgraph import StoreForLangGraph
from tests.integrations.conftest import Opening


class Held(InMemoryStore):
    """Holds each `store_many` while `hold` is set; counts the calls begun and the items
    of each call that went on."""

    def __init__(self) -> None:
        super().__init__()
        self.begun, self.batches = 0, list[int]()
        self.hold, self.held = asyncio.Event(), asyncio.Event()

    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]:
        listed = list(items)
        self.begun += 1
        if self.hold.is_set():
            self.held.set()
            while self.hold.is_set():
                await asyncio.sleep(0.001)
        self.batches.append(len(listed))
        return await super().store_many(listed)


@asynccontextmanager
async def a_write_under_way() -> AsyncIterator[tuple[Held, StoreForLangGraph, asyncio.Future[None]]]:
    """A bridge on this loop, over a `Held` store holding its put of "first"."""
    lion = Held()
    async with StoreForLangGraph.open(lion) as store:
        lion.hold.set()
        first = asyncio.ensure_future(store.aput(("n",), "first", {"v": 1}))
        await lion.held.wait()
        yield lion, store, first


def keys(store: StoreForLangGraph) -> set[str]:
    return {item.key for item in store.search(("n",), limit=100)}


@pytest.mark.parametrize("opening", ["sqlite", "postgres"], indirect=True)
def test_puts_that_queue_behind_one_under_way_go_to_the_store_as_one_batch(opening: Opening) -> None:
    """Fifty concurrent puts: the first runs alone and the 49 that queued behind it, as
    its store's calls gave way to the loop, run as one `store_many`."""
    lion = opening()
    counted: list[int] = []

    async def body() -> None:
        async with StoreForLangGraph.open(lion) as store:
            opened: Any = store.store_of
            given = opened.store_many

            async def counting(items: Iterable[MemoryItem]) -> list[UUID]:
                listed = list(items)
                counted.append(len(listed))
                ids: list[UUID] = await given(listed)
                return ids

            opened.store_many = counting
            await asyncio.gather(*(store.aput(("n",), f"k{i}", {"i": i}) for i in range(50)))
            found = await store.asearch(("n",), limit=100)
            assert sorted(item.value["i"] for item in found) == list(range(50))

    asyncio.run(body())
    assert counted == [1, 49]


def test_in_memory_where_no_call_gives_way_each_put_runs_at_once() -> None:
    async def body() -> list[int]:
        lion = Held()
        async with StoreForLangGraph.open(lion) as store:
            await asyncio.gather(*(store.aput(("n",), f"k{i}", {"i": i}) for i in range(5)))
        return lion.batches

    assert asyncio.run(body()) == [1] * 5


def test_each_caller_of_a_failed_run_together_is_answered_alone() -> None:
    async def body() -> None:
        async with a_write_under_way() as (lion, store, first):
            queued = [
                asyncio.ensure_future(store.aput(("n",), "second", {"v": 2})),
                asyncio.ensure_future(store.aput(("n",), "bad", {"tags": {"a", "b"}})),
                asyncio.ensure_future(store.abatch([])),  # asks nothing: answered at once
            ]
            await asyncio.sleep(0.01)
            assert [task.done() for task in queued] == [False, False, True] and lion.begun == 1
            lion.hold.clear()
            await first
            assert await queued[0] is None
            with pytest.raises(TypeError, match="not JSON serializable"):
                await queued[1]
            assert {item.key for item in await store.asearch(("n",))} == {"first", "second"}
            assert lion.batches == [1, 1]  # the two together failed; then "second" alone

    asyncio.run(body())


def test_reads_that_come_while_a_write_runs_wait_and_run_after_it() -> None:
    """However many callers there are, the store is asked one thing at a time: a read
    waits for the write under way, so it sees what that write wrote."""

    async def body() -> None:
        async with a_write_under_way() as (lion, store, first):
            reading = asyncio.ensure_future(store.aget(("n",), "first"))
            searching = asyncio.ensure_future(store.asearch(("n",)))
            await asyncio.sleep(0.01)
            assert not reading.done() and not searching.done()
            lion.hold.clear()
            await first
            found = await reading
            assert found is not None and found.value == {"v": 1}
            assert [item.key for item in await searching] == ["first"]

    asyncio.run(body())


@pytest.mark.parametrize("opening", ["sqlite", "postgres"], indirect=True)
def test_the_store_is_asked_one_thing_at_a_time_however_many_callers(opening: Opening) -> None:
    """Gets, searches, puts and namespace listings from 1,000 tasks at once, as
    LangGraph's own tests send them: without the queue, PostgreSQL's pool ran out of
    connections under load."""
    in_flight, most = [0], [0]

    async def body() -> None:
        async with StoreForLangGraph.open(opening()) as store:
            opened: Any = store.store_of
            for name in ("retrieve", "search", "store_many"):
                setattr(opened, name, partial(counted, getattr(opened, name)))
            calls: list[Awaitable[Any]] = []
            for i in range(250):
                calls += [
                    store.aput(("n", str(i % 2)), f"k{i}", {"i": i}),
                    store.aget(("n", str(i % 2)), f"k{i}"),
                    store.asearch(("n",), limit=5),
                    store.alist_namespaces(prefix=("n",)),
                ]
            answers = await asyncio.gather(*calls)
            assert [answer.value for answer in answers[1::4]] == [{"i": i} for i in range(250)]
            assert answers[-1] == [("n", "0"), ("n", "1")]

    async def counted(given: Callable[..., Awaitable[Any]], *args: Any, **kwargs: Any) -> Any:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        try:
            return await given(*args, **kwargs)
        finally:
            in_flight[0] -= 1

    asyncio.run(body())
    assert most[0] == 1


def test_a_writer_cancelled_while_it_waits_writes_nothing_and_the_others_go_on() -> None:
    async def body() -> None:
        async with a_write_under_way() as (lion, store, first):
            cancelled = asyncio.ensure_future(store.aput(("n",), "cancelled", {"v": 2}))
            kept = asyncio.ensure_future(store.aput(("n",), "kept", {"v": 3}))
            await asyncio.sleep(0.01)
            assert lion.begun == 1  # the two others wait
            cancelled.cancel()
            lion.hold.clear()
            await asyncio.gather(first, kept)
            assert cancelled.cancelled()
            assert {item.key for item in await store.asearch(("n",))} == {"first", "kept"}
            await store.aput(("n",), "after", {"v": 4})  # the queue is free again
            assert lion.batches == [1, 1, 1]

    asyncio.run(body())


def test_the_writes_queued_behind_a_cancelled_write_still_run() -> None:
    async def body() -> None:
        async with a_write_under_way() as (lion, store, first):
            queued = asyncio.ensure_future(store.aput(("n",), "queued", {"v": 2}))
            await asyncio.sleep(0.01)
            assert lion.begun == 1
            first.cancel()
            lion.hold.clear()
            await queued
            assert first.cancelled()
            assert {item.key for item in await store.asearch(("n",))} == {"queued"}

    asyncio.run(body())


def test_sync_puts_from_many_threads_all_land() -> None:
    with StoreForLangGraph(InMemoryStore()) as store:
        errors: list[BaseException] = []

        def put(i: int) -> None:
            try:
                store.put(("n",), f"k{i}", {"i": i})
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [threading.Thread(target=put, args=(i,)) for i in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == [] and keys(store) == {f"k{i}" for i in range(20)}


def test_a_batch_of_reads_and_writes_runs_in_its_order(opening: Opening) -> None:
    async def body() -> list[Any]:
        async with StoreForLangGraph.open(opening()) as store:
            other = store.aput(("n",), "k", {"v": "other"})
            mine = store.abatch([PutOp(("n",), "k", {"v": "mine"}), GetOp(("n",), "k"), PutOp(("n",), "k", None)])
            _, answered = await asyncio.gather(other, mine)
            return [item if item is None else cast(Item, item).value for item in answered]

    assert asyncio.run(body()) == [None, {"v": "mine"}, None]


def test_callers_cancelled_as_their_wave_runs_are_answered_no_more() -> None:
    """The queue alone, over a run that waits for each call to be let go and fails a
    batch holding the key "bad": two waiters stop waiting while the wave runs again
    batch by batch, one before its turn, one during it."""
    calls: list[list[str]] = []
    let_go: dict[int, asyncio.Event] = {}

    async def run(ops: list[Op]) -> list[Result]:
        calls.append([op.key for op in ops if isinstance(op, PutOp)])
        if "bad" in calls[-1]:
            raise ValueError("bad")
        await let_go.setdefault(len(calls), asyncio.Event()).wait()
        return [None] * len(ops)

    def put(key: str) -> list[Op]:
        return [PutOp(("n",), key, {"v": 1})]

    async def body() -> None:
        batches = Batches(run)
        first = asyncio.ensure_future(batches(put("first")))
        await asyncio.sleep(0)
        a, bad, c = (asyncio.ensure_future(batches(put(key))) for key in ("a", "bad", "c"))
        await asyncio.sleep(0)
        let_go.setdefault(1, asyncio.Event()).set()
        assert await first == [None]
        while len(calls) < 3:  # the wave failed together; "a" runs alone
            await asyncio.sleep(0)
        a.cancel()
        c.cancel()
        let_go.setdefault(3, asyncio.Event()).set()
        with pytest.raises(ValueError, match="^bad$"):
            await bad
        assert a.cancelled() and c.cancelled()
        assert calls == [["first"], ["a", "bad", "c"], ["a"], ["bad"]]

    asyncio.run(body())
