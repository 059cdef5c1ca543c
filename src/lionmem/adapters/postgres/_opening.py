"""Opening a PostgreSQL store: the pool, the schema and, with an embedder, the
namespace's missing vectors, closing all again if any of it fails.

Governed by [ADR-0097][adr-0097].
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

from lionmem.adapters.lifecycle import S, finished
from lionmem.adapters.postgres._connect import connect
from lionmem.adapters.postgres._pool import Connections
from lionmem.adapters.postgres._recall import PgVectors
from lionmem.adapters.postgres._settings import OpenSettings

__all__ = ["opened"]


async def opened(make: Callable[[Connections, str, bool, PgVectors | None], S], settings: OpenSettings) -> S:
    """The store `make` builds on a pool connected as `settings` say, the schema
    created or checked and, with an embedder, the namespace's missing vectors made."""
    conninfo, namespace, vectors = settings.conninfo, settings.namespace, settings.vectors
    pool, recent, trigram = await connect(
        conninfo, settings.min_size, settings.max_size, settings.timeout, settings.statement_ms, settings.create
    )
    connections = Connections(pool, recent, namespace, conninfo, settings.timeout / 2)
    store = make(connections, namespace, trigram, vectors)
    if vectors is None:
        return store

    async def made_vectors() -> None:
        await connections.on_connection(partial(vectors.adopt, reembed=settings.reembed))
        await connections.on_connection(partial(vectors.fill, namespace=namespace))

    return await finished(store, made_vectors)
