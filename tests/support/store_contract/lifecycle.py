"""A store's life: refused in a forked child, closed by `async with`, and freed once
dropped."""

from __future__ import annotations

import gc
import json
import os
import re
import warnings
import weakref
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, cast

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.errors import StoreClosedError
from tests.support.store_contract.writes import Batching


def _outcomes_in_a_forked_child(calls: dict[str, Callable[[], Coroutine[Any, Any, object]]]) -> dict[str, str]:
    """Fork, start each call in the child and report how it ended there: the child
    has no event loop of its own, so a call is started by hand and stopped at its
    first suspension ("waited")."""
    read, write = os.pipe()
    with warnings.catch_warnings():
        # From Python 3.12 fork() warns when threads are running, as the stores' are.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: its outcomes go back through the pipe
        try:
            outcomes: dict[str, str] = {}
            for name, call in calls.items():
                coroutine = call()
                try:
                    coroutine.send(None)
                    outcomes[name] = "waited"
                except StopIteration:
                    outcomes[name] = "returned"
                except BaseException as exc:
                    outcomes[name] = f"{type(exc).__name__}: {exc}"
                finally:
                    coroutine.close()
            os.write(write, json.dumps({"pid": os.getpid(), "outcomes": outcomes}).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        report = json.loads(pipe.read())
    os.waitpid(pid, 0)
    assert report["pid"] == pid
    return cast("dict[str, str]", report["outcomes"])


async def assert_forked_child_refused(store: Batching) -> None:
    """In a process forked after the store was opened, every call raises RuntimeError
    at once, before touching the parent's connections (SQLite's waited for ever on
    a worker thread the child does not have); the parent's store goes on. Once the
    store is closed, a child finds it closed, as the parent does, in both stores."""
    item = MemoryItem(content="the parent's")
    await store.store(item)
    calls: dict[str, Callable[[], Coroutine[Any, Any, object]]] = {
        "store": lambda: store.store(MemoryItem(content="the child's")),
        "store_many": lambda: store.store_many([MemoryItem(content="the child's")]),
        "retrieve": lambda: store.retrieve(item.id),
        "search": lambda: store.search(MemoryQuery()),
        "close": lambda: store.close(),  # type: ignore[attr-defined]
    }
    outcomes = _outcomes_in_a_forked_child(calls)
    refused = re.compile(
        rf"^RuntimeError: the {type(store).__name__} .* was opened in process {os.getpid()}, "
        r"and this is process \d+, forked from it: .* open another store in this process$"
    )
    assert {name: bool(refused.match(outcomes[name])) for name in calls} == dict.fromkeys(calls, True), outcomes
    assert [i.content for i in await store.search(MemoryQuery())] == ["the parent's"]
    assert await store.retrieve(item.id) == item
    await store.close()  # type: ignore[attr-defined]
    del calls["close"]  # which would wait on the loop the child does not run
    outcomes = _outcomes_in_a_forked_child(calls)
    assert all(outcome.startswith("StoreClosedError: ") for outcome in outcomes.values()), outcomes


async def assert_async_with_closes_it(store: Any) -> None:
    """`async with` on an opened store gives the store itself and closes it on the
    way out, also when the block raises."""
    item = MemoryItem(content="kept")
    with pytest.raises(LookupError):  # noqa: PT012 (the block is what is tested)
        async with store as entered:
            assert entered is store
            await store.store(item)
            raise LookupError
    with pytest.raises(StoreClosedError):
        await store.retrieve(item.id)


async def assert_freed_once_dropped(opener: Callable[[], Awaitable[Any]], writes: int) -> None:
    """Nothing of lionmem's (a thread, its queue, a pool, a per-process registry) keeps
    a closed store alive: once its caller lets go of it, after `writes` single
    writes, a batch, a search and a retrieve, it is freed."""
    store = await opener()
    for n in range(writes):
        await store.store(MemoryItem(content=n))
    await store.store_many([MemoryItem(content="batch")])
    assert len(await store.search(MemoryQuery(text="batch"))) == 1
    assert await store.retrieve(MemoryItem().id) is None
    freed = weakref.ref(store)
    await store.close()
    del store
    gc.collect()
    assert freed() is None, "a closed store is still referenced"
