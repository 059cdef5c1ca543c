"""Opening a SQLite store: connecting, checking the schema and, with an embedder,
giving every item of the file a vector, closing all again if any of it fails.

Governed by [ADR-0096][adr-0096].
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from lionmem.adapters.lifecycle import S, finished
from lionmem.adapters.sqlite._connect import connect
from lionmem.adapters.sqlite._connections import Connections
from lionmem.adapters.sqlite._namespaces import Space
from lionmem.adapters.sqlite._recall import Vectors

__all__ = ["opened"]


async def opened(
    make: Callable[[Connections, Vectors | None, Space], S],
    path: Path,
    busy_ms: int,
    synchronous: str,
    create: bool,
    vectors: Vectors | None,
    reembed: bool,
    space: Space,
) -> S:
    """The store `make` builds on `path`'s connections: connected, its schema checked
    and, with `vectors`, every item of the file given a vector."""
    connections = Connections(path, *await connect(path, busy_ms, synchronous, create))
    store = make(connections, vectors, space)
    await connections.on_writer(connections.worker.check_schema)
    if vectors is None:
        return store
    return await finished(store, partial(vectors.adopt_all, connections, reembed))
