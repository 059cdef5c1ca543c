"""The lock that serialises every change of branch ownership across sessions, and
the lazy creation of a branch's or a session's store.

One process-wide lock, not one per session: two sessions claiming the same branch
from two threads must see each other's claim. See [ADR-0092][adr-0092-d4].

Seam for tests: `_ownership`, whose `InMemoryStore` a test slows to race two first
reads.
"""

from __future__ import annotations

import threading

from pydantic import BaseModel

from lionmem._internal.pydantic_state import private_values
from lionmem.protocols.in_memory import InMemoryStore
from lionmem.protocols.memory import MemoryStore

OWNERSHIP_LOCK = threading.RLock()


def store_of(holder: BaseModel) -> MemoryStore:
    """`holder`'s store, created on first read when none was given.

    Creation holds the ownership lock, so that two first reads, or a first read and
    a session taking the branch in, settle on one store.

    `holder` is a `Branch` or a `Session`, whose private `_memory` is its store, or
    `None` until one is created. It is read through `private_values`, not as
    `holder._memory`, which pydantic finds only after the ordinary lookup fails: a
    cost on every `memory` read ([ADR-0092][adr-0092-d4] records it).
    """
    private = private_values(holder)
    store: MemoryStore | None = private["_memory"]
    if store is None:
        with OWNERSHIP_LOCK:
            store = private["_memory"]
            if store is None:
                store = private["_memory"] = InMemoryStore()
    return store
