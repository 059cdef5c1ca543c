"""Handing a coroutine to an event loop that runs on another thread, and waiting for it.

Both forms make the future before handing the work over, so an interrupt (Ctrl-C) or
a cancellation that lands at any point after the hand-over finds a future to cancel,
and the work is cancelled on its loop, or never started.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
from collections.abc import Coroutine
from contextlib import suppress
from typing import Any, TypeVar

__all__ = ["await_on", "call_on"]

T = TypeVar("T")


def call_on(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, T]) -> T:
    """Run `work` on `loop`, which runs on another thread, and block until it is done;
    an interrupt of the wait cancels it there."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    try:
        loop.call_soon_threadsafe(_start, loop, work, future)
        return future.result()
    except BaseException:
        future.cancel()
        raise


async def await_on(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, T]) -> T:
    """Run `work` on `loop`, which runs on another thread, and await it from this one;
    cancelling the await cancels it there."""
    future: concurrent.futures.Future[T] = concurrent.futures.Future()
    try:
        loop.call_soon_threadsafe(_start, loop, work, future)
        return await asyncio.wrap_future(future)
    except BaseException:
        future.cancel()
        raise


def _start(loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, T], future: concurrent.futures.Future[T]) -> None:
    """On `loop`: run `work` for `future`, unless its caller has given up already."""
    if future.cancelled():
        work.close()
        return
    task = loop.create_task(work)

    def given_up(_: object) -> None:
        if future.cancelled():
            loop.call_soon_threadsafe(task.cancel)

    future.add_done_callback(given_up)
    task.add_done_callback(lambda _: _settle(future, task))


def _settle(future: concurrent.futures.Future[T], task: asyncio.Task[T]) -> None:
    """Give `future` the outcome of `task`, unless its caller cancelled it meanwhile."""
    with suppress(concurrent.futures.InvalidStateError):
        if task.cancelled():
            future.cancel()
        elif (error := task.exception()) is not None:
            future.set_exception(error)
        else:
            future.set_result(task.result())
