"""The SQLite store's I/O: its worker thread with the writer's connection, the
read-only connection `retrieve` reads on, the fork guard, and closing them all.

Every read and write but `retrieve` runs on the worker thread, in the order asked;
`retrieve` reads on its own connection, which does not wait for writers. Governed by
[ADR-0096][adr-0096].

Seam for tests: `_connections`, whose `_close_on_worker` a test replaces to make
closing slow or fail.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import ParamSpec, TypeVar

from lionmem.adapters.lifecycle import process_id, refuse_forked
from lionmem.adapters.sqlite._worker import Worker
from lionmem.errors import StoreClosedError

__all__ = ["Connections"]

P = ParamSpec("P")
T = TypeVar("T")


class Connections:
    """One store's threads and connections, and the one way to each."""

    def __init__(
        self, path: Path, executor: ThreadPoolExecutor, writer: sqlite3.Connection, reader: sqlite3.Connection
    ) -> None:
        self.path: Path = path
        self.executor: ThreadPoolExecutor = executor
        """The worker thread, the only one that uses the writer's connection."""
        self.worker: Worker = Worker(path, writer)
        """The work done on the worker thread, on the writer's connection."""
        self._reader: sqlite3.Connection | None = reader
        # One read at a time: from Python 3.12, threads sharing a connection can share
        # one prepared statement, so that one thread's read returned the row another
        # thread asked for, or none.
        self._reading = threading.Lock()
        self._closing: Future[str | None] | None = None
        self._pid = process_id()

    @property
    def closed(self) -> bool:
        """Whether `close()` has been called."""
        return self._reader is None

    def live_reader(self) -> sqlite3.Connection:
        """The read-only connection.

        Raises:
            StoreClosedError: the store is closed.
        """
        if self._reader is None:
            raise StoreClosedError(f"the SQLiteMemoryStore on {self.path} is closed")
        return self._reader

    def refuse_forked(self) -> None:
        """Refuse a call in a process forked from the one that opened the store."""
        # Before any lock: one the parent held when it forked stays held in the child.
        # A closed store says so in any process, as a PostgreSQL store does.
        if self._reader is not None:
            refuse_forked(self._pid, f"the SQLiteMemoryStore on {self.path}")

    async def on_writer(self, function: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
        """What `function` returns, run on the worker thread; damage it meets is noted,
        so that every later write is refused.

        Raises:
            StoreClosedError: the store is closed.
        """
        self.live_reader()
        self.refuse_forked()
        with self.worker.noting_damage():
            return await asyncio.get_running_loop().run_in_executor(self.executor, partial(function, *args, **kwargs))

    def read(self, function: Callable[[sqlite3.Connection], T]) -> T:
        """What `function` returns, given the read-only connection, on this thread.

        Raises:
            StoreClosedError: the store is closed.
        """
        self.refuse_forked()
        with self._reading, self.worker.noting_damage():
            return function(self.live_reader())

    async def close(self) -> tuple[bool, str | None]:
        """Close both connections and end both threads, once the calls already waiting
        for the worker have run; whether this call closed them (not an earlier one),
        and why erasure is not proven, if it is not. A call cancelled while it waits
        still closes everything; a second call waits for that.

        Raises:
            RuntimeError: this process was forked from the one that opened the store;
                nothing is closed, the connections being the parent's.
        """
        self.refuse_forked()
        first = False
        with self._reading:
            if self._closing is None:
                self.live_reader().close()
                self._reader = None
                self._closing, first = self.executor.submit(self._close_on_worker), True
            closing = self._closing
        unproven = await asyncio.shield(asyncio.wrap_future(closing))
        self.executor.shutdown(wait=True)
        return first, unproven

    def _close_on_worker(self) -> str | None:
        unproven = self.worker.close()
        # Ends this thread once this call returns, should close() no longer be waiting.
        self.executor.shutdown(wait=False)
        return unproven
