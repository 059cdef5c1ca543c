"""Opening stores for the kit, and recording calls as a reproduction."""

from __future__ import annotations

import asyncio
import inspect
import tempfile
from collections.abc import AsyncGenerator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol, TypeAlias, TypeVar, cast
from uuid import UUID

from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore

__all__ = [
    "LionagiStore",
    "LionagiStoreFactory",
    "Recorder",
    "StoreFactory",
    "StoreHung",
    "first_difference",
    "outside_a_loop",
    "same_values",
    "show",
    "store_from_factory",
    "through_lionagi",
    "within",
]

T = TypeVar("T")

StoreFactory: TypeAlias = Callable[..., MemoryStore | Awaitable[MemoryStore] | AbstractAsyncContextManager[MemoryStore]]
"""Builds a store. Called with a workspace directory if it has a required positional
parameter, else with none; may return a store, an awaitable of one, or an async
context manager. A store returned as it is gets its `close()` awaited afterwards, if
that is a coroutine method."""


class LionagiStore(Protocol):
    """A store written against lionagi's types, as the kit sees it: lionagi's three
    methods, whose item and query are lionagi's classes.

    Declared here, so that the kit's types are whole without lionagi installed; a
    store that fits lionagi's `MemoryStore` fits this ([ADR-0101][adr-0101]).
    """

    async def store(self, item: Any) -> UUID:
        """Store lionagi's `MemoryItem` and return its id."""
        ...

    async def retrieve(self, item_id: UUID) -> Any:
        """lionagi's `MemoryItem` with `item_id`, or `None`."""
        ...

    async def search(self, query: Any) -> list[Any]:
        """The lionagi `MemoryItem`s matching lionagi's `MemoryQuery`."""
        ...


LionagiStoreFactory: TypeAlias = Callable[
    ..., LionagiStore | Awaitable[LionagiStore] | AbstractAsyncContextManager[LionagiStore]
]
"""Builds a store written against lionagi's types, as a `StoreFactory` builds one of
lionmem's; the kit checks it with `lionagi=True` ([ADR-0101][adr-0101])."""


def _takes_workspace(factory: StoreFactory) -> bool:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a class written in C may have no signature
        return False
    return any(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty for p in parameters)


class StoreHung(BaseException):
    """A store did not finish opening, closing or a call within the kit's timeout.

    Not an `Exception`, so that hypothesis stops at the first one instead of
    shrinking: each replay would wait the whole timeout again.
    """


@asynccontextmanager
async def within(seconds: float | None, what: str) -> AsyncGenerator[None, None]:
    """Cancel the block after `seconds` (never, for `None`) and raise `StoreHung`
    saying that `what` did not finish. A block that swallows its cancellation, or
    blocks the thread, cannot be stopped."""
    scope = asyncio.timeout(seconds)
    try:
        async with scope:
            yield
    except TimeoutError:
        if not scope.expired():
            raise  # the store's own TimeoutError
        raise StoreHung(f"{what} did not finish within {seconds:g} s") from None


@asynccontextmanager
async def store_from_factory(
    factory: StoreFactory, workspace: Path, timeout: float | None = None
) -> AsyncGenerator[MemoryStore, None]:
    """Open a store from `factory` on `workspace`, and close it afterwards, even
    when the block raises; each of the two may take up to `timeout` seconds."""
    async with AsyncExitStack() as stack:
        async with within(timeout, "opening the store"):
            made = factory(workspace) if _takes_workspace(factory) else factory()
            if inspect.isawaitable(made):
                made = await made
            if isinstance(made, AbstractAsyncContextManager):
                store = await stack.enter_async_context(made)
            else:
                store = made
                close = getattr(made, "close", None)
                if close is not None and inspect.iscoroutinefunction(close):
                    stack.push_async_callback(close)
        try:
            yield store
        finally:
            async with within(timeout, "closing the store"):
                await stack.aclose()


def through_lionagi(factory: LionagiStoreFactory) -> StoreFactory:
    """`factory`, whose stores take lionagi's types, as a factory of lionmem stores:
    each opened as `factory` asks and handed over through `from_lionagi`.

    Raises:
        ImportError: lionagi is not installed.
    """
    from lionmem.integrations.lionagi import from_lionagi  # lionagi loads for such a kit alone

    @asynccontextmanager
    async def bridged(workspace: Path) -> AsyncGenerator[MemoryStore, None]:
        # store_from_factory opens any factory's store alike; this one's takes lionagi's types.
        async with store_from_factory(cast(StoreFactory, factory), workspace) as store:
            yield from_lionagi(cast(Any, store))

    return bridged


@asynccontextmanager
async def workspace() -> AsyncGenerator[Path, None]:
    """A fresh, empty directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="lionmem-kit-") as path:
        yield Path(path)


def same_values(a: object, b: object) -> bool:
    """Equal, and of the same types all the way down (so `True` is not `1`)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        left, right = cast("dict[object, object]", a), cast("dict[object, object]", b)
        return left.keys() == right.keys() and all(same_values(left[k], right[k]) for k in left)
    if isinstance(a, list | tuple):
        xs, ys = cast("Sequence[object]", a), cast("Sequence[object]", b)
        return len(xs) == len(ys) and all(same_values(x, y) for x, y in zip(xs, ys, strict=True))
    if isinstance(a, float):
        return a.hex() == cast(float, b).hex()
    return bool(a == b)


def show(value: Any) -> str:
    """Python source that rebuilds `value`, for MemoryItem and MemoryQuery readably."""
    if isinstance(value, MemoryItem):
        fields = value.model_dump(exclude_defaults=True, exclude={"id", "created_at"})
        parts = [f"id=UUID(int={value.id.int})"] if value.id.int < 1 << 32 else []
        parts += [f"{key}={val!r}" for key, val in fields.items()]
        if "created_at" in value.model_fields_set:
            parts.append(f"created_at={value.created_at!r}")
        return f"MemoryItem({', '.join(parts)})"
    if isinstance(value, MemoryQuery):
        fields = value.model_dump(exclude_defaults=True)
        return f"MemoryQuery({', '.join(f'{k}={v!r}' for k, v in fields.items())})"
    if isinstance(value, UUID) and value.int < 1 << 32:
        return f"UUID(int={value.int})"
    if isinstance(value, list):
        return "[" + ", ".join(show(v) for v in cast("list[object]", value)) + "]"
    return repr(value)


class Recorder:
    """Wraps a store, writes each call as a line of a reproduction, and raises
    `StoreHung` for a call that takes more than `timeout` seconds.

    `record=False` makes a call that the reproduction leaves out (a repeated call
    while an eventual store settles, or one of many concurrent ones).
    """

    def __init__(self, store: MemoryStore, timeout: float | None = None) -> None:
        self.inner = store
        self.timeout = timeout
        self.lines: list[str] = []

    def note(self, line: str) -> None:
        self.lines.append(line)

    async def _call(self, call: str, record: bool, awaitable: Awaitable[T]) -> T:
        if record:
            self.lines.append(f"await {call}")
        async with within(self.timeout, call):
            return await awaitable

    async def recorded(self, call: str, awaitable: Awaitable[T]) -> T:
        """`awaitable`, a call on some other object than the store, written as `call`."""
        return await self._call(call, True, awaitable)

    async def store(self, item: MemoryItem, *, record: bool = True) -> UUID:
        return await self._call(f"store.store({show(item)})", record, self.inner.store(item))

    async def retrieve(self, item_id: UUID, *, record: bool = True) -> MemoryItem | None:
        return await self._call(f"store.retrieve({show(item_id)})", record, self.inner.retrieve(item_id))

    async def search(self, query: MemoryQuery, *, record: bool = True) -> list[MemoryItem]:
        return await self._call(f"store.search({show(query)})", record, self.inner.search(query))

    # The calls of the ForgettingStore extension, made only on a store that is one.

    @property
    def forgetting(self) -> ForgettingStore:
        return cast(ForgettingStore, self.inner)

    async def delete(self, item_id: UUID, *, record: bool = True) -> bool:
        return await self._call(f"store.delete({show(item_id)})", record, self.forgetting.delete(item_id))

    async def delete_many(self, item_ids: list[Any]) -> int:
        return await self._call(f"store.delete_many({show(item_ids)})", True, self.forgetting.delete_many(item_ids))

    async def delete_matching(self, query: MemoryQuery) -> int:
        return await self._call(f"store.delete_matching({show(query)})", True, self.forgetting.delete_matching(query))

    async def count(self, query: MemoryQuery) -> int:
        return await self._call(f"store.count({show(query)})", True, self.forgetting.count(query))

    async def delete_created_before(self, cutoff: float | datetime) -> int:
        return await self._call(
            f"store.delete_created_before({cutoff!r})", True, self.forgetting.delete_created_before(cutoff)
        )

    async def scan(self, batch_size: int) -> list[list[MemoryItem]]:
        async def every_batch() -> list[list[MemoryItem]]:
            return [batch async for batch in self.forgetting.scan(batch_size)]

        call = f"[batch async for batch in store.scan({batch_size})]"
        self.lines.append(call)
        return await self._call(call, False, every_batch())

    def reproduction(self) -> str:
        return "\n".join(self.lines)


def first_difference(error: BaseException) -> str:
    """The first line of the first AssertionError within `error`, else of `error`."""
    pending = [error]
    while pending:
        current = pending.pop(0)
        if isinstance(current, AssertionError):
            return next(iter(str(current).splitlines()), "AssertionError")
        if isinstance(current, BaseExceptionGroup):
            pending[:0] = cast("BaseExceptionGroup[BaseException]", current).exceptions
    return next(iter(str(error).splitlines()), type(error).__name__)


def outside_a_loop(method: str, instead: str) -> None:
    """Refuse a synchronous run where `asyncio.run` would fail: in a thread that
    runs an event loop already, naming the awaitable form to use there."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError(
        f"ConformanceKit.{method}() runs its own event loop, and this thread runs one already "
        f"(a notebook, python -m asyncio, async code): use `await kit.{instead}(...)` here"
    )
