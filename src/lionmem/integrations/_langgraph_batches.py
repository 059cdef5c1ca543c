"""Concurrent LangGraph batches, run together as one while another runs. Governed by
[ADR-0106][adr-0106-d6].
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from langgraph.store.base import Op, Result

__all__ = ["Batches"]

Run = Callable[[list[Op]], Awaitable[list[Result]]]
Waiting = tuple[list[Op], "asyncio.Future[list[Result]]"]


class Batches:
    """Runs batches of operations on one event loop, one run at a time, those that
    queue grouped.

    A batch runs at once when none runs; else it waits, and every batch that waited
    runs as one when the run under way ends, each batch's operations in its order, so
    that their consecutive puts are one `store_many` and the store is never asked more
    than one thing at a time, however many callers there are. If that one run fails,
    each batch of it runs again alone, so that each caller gets its own result or
    error. A caller cancelled while it waits is left out; once its batch runs, the
    batch runs on.
    """

    def __init__(self, run: Run) -> None:
        self._run = run
        self._waiting: list[Waiting] = []
        self._busy = False
        self._draining: asyncio.Task[None] | None = None  # held: the loop keeps only a weak reference

    async def __call__(self, ops: list[Op]) -> list[Result]:
        """The results of `ops`, run as the class says."""
        if not ops:
            return []
        if self._busy:
            waiting: asyncio.Future[list[Result]] = asyncio.get_running_loop().create_future()
            self._waiting.append((ops, waiting))
            return await waiting
        self._busy = True
        try:
            return await self._run(ops)
        finally:
            if self._waiting:
                self._draining = asyncio.get_running_loop().create_task(self._drain())
            else:
                self._busy = False

    async def _drain(self) -> None:
        wave: list[Waiting] = []
        try:
            while self._waiting:
                wave, self._waiting = [(ops, done) for ops, done in self._waiting if not done.done()], []
                await self._together(wave)
        finally:
            for _, done in [*wave, *self._waiting]:
                done.cancel()  # nothing, for those answered; the loop is closing for the others
            self._waiting, self._busy, self._draining = [], False, None

    async def _together(self, wave: list[Waiting]) -> None:
        if len(wave) > 1:
            results: list[Result] | None
            try:
                results = await self._run([op for ops, _ in wave for op in ops])
            except Exception:
                results = None  # each batch runs again alone, for its own answer
            if results is not None:
                for ops, done in wave:
                    _answer(done, results[: len(ops)])
                    results = results[len(ops) :]
                return
        for ops, done in wave:
            if done.done():  # cancelled while the wave ran together
                continue
            try:
                _answer(done, await self._run(ops))
            except Exception as error:
                _answer(done, error)


def _answer(done: asyncio.Future[list[Result]], answer: list[Result] | Exception) -> None:
    """Give a waiting caller its answer, unless it stopped waiting."""
    if done.done():
        return
    if isinstance(answer, Exception):
        done.set_exception(answer)
    else:
        done.set_result(answer)
