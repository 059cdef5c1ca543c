"""The lock that serialises every change of branch ownership across sessions, and
the lazy creation of a branch's or a session's store.

One process-wide lock, not one per session: two sessions claiming the same branch
from two threads must see each other's claim. See [ADR-0092][adr-0092-d4].
"""

from __future__ import annotations

import threading
from typing import Any, Protocol, cast

from lionmem.protocols.memory import InMemoryStore, MemoryStore

OWNERSHIP_LOCK = threading.RLock()


class HoldsStore(Protocol):
    """A `Branch` or a `Session`: a pydantic model whose private `_memory` is its store,
    or `None` until one is created."""

    @property
    def __pydantic_private__(self) -> dict[str, Any] | None: ...


def store_of(holder: HoldsStore) -> MemoryStore:
    """`holder`'s store, created on first read when none was given.

    Creation holds the ownership lock, so that two first reads, or a first read and
    a session taking the branch in, settle on one store.
    """
    # pydantic's dict of private values, read directly: `holder._memory` is found
    # only after the normal lookup fails, 1.6 µs a read instead of 35 ns.
    private = cast("dict[str, Any]", holder.__pydantic_private__)
    store: MemoryStore | None = private["_memory"]
    if store is None:
        with OWNERSHIP_LOCK:
            store = private["_memory"]
            if store is None:
                store = private["_memory"] = InMemoryStore()
    return store
