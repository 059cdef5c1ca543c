"""Opening and closing the durable stores, shared by every adapter.

Governed by [ADR-0096][adr-0096].
"""

from __future__ import annotations

import os
from collections.abc import Callable, Coroutine, Generator
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, NoReturn, Protocol, Self, SupportsIndex, TypeVar

from lionmem._internal.timeouts import MAX_TIMEOUT, milliseconds

__all__ = ["MAX_TIMEOUT", "ClosesOnExit", "PendingOpen", "milliseconds"]

_pid = os.getpid()


# Seam for tests: `_forked`, called in this process, since coverage does not follow a fork.
def _forked() -> None:
    global _pid
    _pid = os.getpid()


if hasattr(os, "register_at_fork"):  # pragma: no branch - Windows has neither it nor fork()
    os.register_at_fork(after_in_child=_forked)


def process_id() -> int:
    """`os.getpid()`, kept up to date by `os.fork()`, without a system call per use."""
    return _pid


def refuse_forked(opened_in: int, store: str) -> None:
    """Refuse to use, in a child forked from it, a store opened in process `opened_in`.

    The child has copies of the parent's connections but not its threads: SQLite's
    calls waited for ever for a worker thread that does not exist, and a connection
    used by both processes corrupts what each of them reads and writes. See
    [ADR-0097][adr-0097].

    Raises:
        RuntimeError: this is not process `opened_in`; the message names `store`.
    """
    if opened_in != _pid:
        raise RuntimeError(
            f"{store} was opened in process {opened_in}, and this is process {_pid}, forked "
            "from it: a store's connections and threads stay with the process that opened "
            "it; open another store in this process"
        )


class _Closable(Protocol):
    """What `PendingOpen` and `ClosesOnExit` need of a store: a way to close it."""

    async def close(self) -> None:
        """Release what the store holds."""


S = TypeVar("S", bound=_Closable)


async def finished(store: S, finish: Callable[[], Coroutine[Any, Any, object]]) -> S:
    """`store` once `finish()` is done: the last step of an adapter's opening. If it
    raises, the store is closed and the error raised, so that a failed open leaves no
    connection behind."""
    try:
        await finish()
    except BaseException:
        await store.close()
        raise
    return store


class PendingOpen(Generic[S]):
    """A store being opened: await it for the store, or use it as an async context
    manager that closes the store on exit.

    Each `await` opens another store. As a context manager it holds one store at a
    time: entering it again before leaving raises `RuntimeError`, since the second
    exit could close only one of the two.
    """

    def __init__(self, opener: Callable[[], Coroutine[Any, Any, S]], name: str = "the store") -> None:
        self._opener = opener
        self._name = name  # what `open` was called on, for the message below
        self._store: S | None = None

    if not TYPE_CHECKING:  # a type checker names the mistake already; this is for run time

        def __getattr__(self, name: str) -> NoReturn:
            """Say, for a store's method used on the open itself, how to get the store."""
            if name.startswith("_"):  # copy, pickle and asyncio look for names of their own
                raise AttributeError(name)
            opening = f"{self._name}.open(...)"
            raise AttributeError(
                f"{name!r} is the store's, and {opening} is not the store yet but its opening: "
                f"write `async with {opening} as store:` or `store = await {opening}`, then store.{name}"
            )

    def __await__(self) -> Generator[Any, None, S]:
        return self._opener().__await__()

    async def __aenter__(self) -> S:
        if self._store is not None:
            raise RuntimeError("this open() is already entered; call open() again for a second store")
        self._store = await self._opener()
        return self._store

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        store, self._store = self._store, None
        if store is not None:
            await store.close()


class ClosesOnExit:
    """What every durable store shares: `async with` closes it, and it refuses to
    be copied or pickled.

    A copy would share the store's open connections, so closing either would break
    the other, and a pickle could not carry them at all.
    """

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        # copy.copy, copy.deepcopy and pickle all end here.
        name = type(self).__name__
        raise TypeError(
            f"{name} cannot be copied or pickled: it holds open database connections; "
            f"share the store itself, or open another {name} on the same database"
        )

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self: _Closable,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()
