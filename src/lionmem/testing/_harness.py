"""Opening stores for the kit, and recording calls as a reproduction."""

from __future__ import annotations

import inspect
import tempfile
from collections.abc import AsyncGenerator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TypeAlias
from uuid import UUID

from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore

__all__ = ["Recorder", "StoreFactory", "open_store", "show"]

StoreFactory: TypeAlias = Callable[
    ..., MemoryStore | Awaitable[MemoryStore] | AbstractAsyncContextManager[MemoryStore]
]
"""Builds a store. Called with a workspace directory if it has a required positional
parameter, else with none; may return a store, an awaitable of one, or an async
context manager. A store returned as it is gets its `close()` awaited afterwards, if
that is a coroutine method."""


def _takes_workspace(factory: StoreFactory) -> bool:
    try:
        parameters = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):  # a class written in C may have no signature
        return False
    return any(
        p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
        for p in parameters
    )


@asynccontextmanager
async def open_store(
    factory: StoreFactory, workspace: Path
) -> AsyncGenerator[MemoryStore, None]:
    """Open a store from `factory` on `workspace`, and close it afterwards."""
    made = factory(workspace) if _takes_workspace(factory) else factory()
    if inspect.isawaitable(made):
        made = await made
    if isinstance(made, AbstractAsyncContextManager):
        async with made as store:
            yield store
        return
    yield made
    close = getattr(made, "close", None)
    if close is not None and inspect.iscoroutinefunction(close):
        await close()


@asynccontextmanager
async def workspace() -> AsyncGenerator[Path, None]:
    """A fresh, empty directory, removed afterwards."""
    with tempfile.TemporaryDirectory(prefix="lionmem-kit-") as path:
        yield Path(path)


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
    return repr(value)


class Recorder:
    """Wraps a store and writes each call as a line of a reproduction."""

    def __init__(self, store: MemoryStore) -> None:
        self.inner = store
        self.lines: list[str] = []

    def note(self, line: str) -> None:
        self.lines.append(line)

    async def store(self, item: MemoryItem) -> UUID:
        self.lines.append(f"await store.store({show(item)})")
        return await self.inner.store(item)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        self.lines.append(f"await store.retrieve({show(item_id)})")
        return await self.inner.retrieve(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        self.lines.append(f"await store.search({show(query)})")
        return await self.inner.search(query)

    def reproduction(self) -> str:
        return "\n".join(self.lines)
