"""`PostgresMemoryStore`: a durable store in PostgreSQL, shared by many processes.

The store is here; its schema is in [`lionmem.adapters.postgres.schema`][lionmem.adapters.postgres.schema],
and the private modules beside it hold the writes, the reads, the planner, the connection
string and the pool. Governed by [ADR-0097][adr-0097].
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from functools import partial
from typing import Any, TypeVar
from uuid import UUID

from psycopg import sql

from lionmem._internal.arguments import as_batch, as_uuid
from lionmem._internal.tracebacks import without_locals_on_refusal
from lionmem.adapters._codec import decode_item, encode_batch
from lionmem.adapters._expiring import NEVER, ExpiringRows, Lifetime
from lionmem.adapters._profiles import PGVECTOR_PROFILE, POSTGRES_PROFILE
from lionmem.adapters.lifecycle import ClosesOnExit, PendingOpen
from lionmem.adapters.postgres._backfill import VECTOR_UPSERT
from lionmem.adapters.postgres._conditions import UNEXPIRED
from lionmem.adapters.postgres._dsn import redacted
from lionmem.adapters.postgres._forgetting import Forgetting
from lionmem.adapters.postgres._opening import opened
from lionmem.adapters.postgres._planner import plan_search
from lionmem.adapters.postgres._pool import Connections
from lionmem.adapters.postgres._reads import NAMESPACES, STATS, read_page, read_search, stats_of
from lionmem.adapters.postgres._recall import CANDIDATES, PgVectors, recalling
from lionmem.adapters.postgres._settings import open_settings
from lionmem.adapters.postgres._terms import TermReads
from lionmem.adapters.postgres._verify import problems
from lionmem.adapters.postgres._writes import UPSERT, item_row, write_batch
from lionmem.adapters.postgres.schema import LOCK_KEY
from lionmem.protocols.expiry import Clock
from lionmem.protocols.hybrid import HybridRecall
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.namespaces import check_namespace
from lionmem.protocols.paging import Page, check_page, cursor_of
from lionmem.protocols.recall import Embedder, Recalled, TextOf
from lionmem.protocols.stats import StoreStats
from lionmem.protocols.verifying import Verification

__all__ = ["PGVECTOR_PROFILE", "POSTGRES_PROFILE", "PostgresMemoryStore"]

T = TypeVar("T")


class PostgresMemoryStore(HybridRecall, TermReads, Forgetting, ExpiringRows, ClosesOnExit):
    """A `MemoryStore` in PostgreSQL, bound to one namespace of one database.

    Every process that opens the same database and namespace shares the items; two
    namespaces never see each other, and the same id may live in both. The rules are
    the reference's, as in the SQLite store: insertion order by a sequence assigned at
    first store, replacement in place, the case-insensitive substring of
    `str(content)` (computed when written), any-of tags, Python-equality filters with
    `None` matching a missing key, slice limits. See [ADR-0097][adr-0097].

    Every method but `close` raises `StoreClosedError` once the store is closed,
    `RuntimeError` when called from an event loop other than the one that opened the
    store or in a process forked from the one that opened it, and
    `StoreUnavailableError` when the server does not answer in time. A write or delete
    the server refuses (a deadlock with another client, say) raises `psycopg.Error` and
    changes nothing; one after `verify` found damage raises `DatabaseCorruptError`.
    An item the store cannot keep is refused before anything is written: a
    `TypeError` for a value that is not JSON or a U+0000 character, a `ValueError` for
    lists and objects nested more than 500 levels deep, an integer of more digits than
    Python writes as text, or an item over 100 MB (the UTF-8 of its JSON, or of
    `str(content).lower()`). Each method's own errors are listed with it.

    Examples:
        With `dsn` the URL of your server:

        ```python
        from uuid import uuid4

        from lionmem import MemoryItem
        from lionmem.adapters.postgres import PostgresMemoryStore

        namespace = f"support-{uuid4().hex[:8]}"
        async with PostgresMemoryStore.open(dsn, namespace=namespace) as store:
            item = MemoryItem(content="kept")
            await store.store(item)
            assert await store.retrieve(item.id) == item
        ```
    """

    def __init__(
        self,
        connections: Connections,
        namespace: str,
        trigram: bool,
        vectors: PgVectors | None,
        lifetime: Lifetime = NEVER,
    ) -> None:
        """Use [`open`][lionmem.adapters.postgres.PostgresMemoryStore.open] instead."""
        # Seam for tests: `_connections`, whose pool the tests hold and run statements on.
        self._connections = connections
        self.namespace = namespace
        """The namespace this store reads and writes."""
        self.trigram = trigram
        """Whether text search can use a `pg_trgm` index (else it scans)."""
        self._vectors = vectors
        self._lifetime = lifetime

    @classmethod
    @without_locals_on_refusal
    def open(
        cls,
        dsn: str,
        *,
        namespace: str,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
        statement_timeout: float = 30.0,
        create: bool = True,
        embedder: Embedder | None = None,
        text_of: TextOf | None = None,
        reembed: bool = False,
        candidates: int = CANDIDATES,
        ttl: float | None = None,
        refresh_on_read: bool = False,
        clock: Clock = time.time,
    ) -> PendingOpen[PostgresMemoryStore]:
        """Connect, create or check the schema, and bind the store to `namespace`.

        `timeout` (seconds) bounds waiting for a connection, each connection attempt,
        and a frozen server: past half of it a call asks the server on a new
        connection, and fails unless it answers within the other half; a merely slow
        call goes on, each statement bounded by `statement_timeout`. They replace
        libpq's `connect_timeout` and the server's `statement_timeout`, which `dsn`
        may not set; the database must be in UTF8 ([ADR-0097][adr-0097]). With
        `create=False`, a database without lionmem's schema is an error. With an
        `embedder`, the store embeds what it writes (`text_of(item)`, or
        `str(item.content)`) and what the namespace holds without a vector, and can
        recall, asking the HNSW index for `candidates` ([ADR-0103][adr-0103-d3]).
        With a `ttl`, each item stored expires `ttl` seconds after, by `clock`; with
        `refresh_on_read` too, a read moves the expiry of what it returns to `ttl` from
        then ([ADR-0105][adr-0105-d2]).

        Raises:
            ValueError: an invalid namespace, pool size or connection string (a
                value libpq refuses, such as `sslmode=bogus`, included), a
                connection string that sets either timeout, or `candidates` not from
                1 to 1,000.
            TypeError: an argument of the wrong type; for the expiry settings, see
                [`check_expiring`][lionmem.protocols.expiry.check_expiring].
            IncompatibleDatabaseError: the database's encoding is not UTF8, or its
                schema is newer than this lionmem.
            MissingSchemaError: with `create=False`, the database has no schema.
            StoreUnavailableError: the server cannot be reached in time.
            VectorExtensionMissingError: with an embedder, pgvector is not installed
                in the database and the role may not install it.
            EmbedderMismatchError: the database's vectors are another embedder's.
            ImportError: an embedder was given and numpy is not installed.
        """
        settings = open_settings(
            dsn,
            namespace,
            (min_size, max_size),
            (timeout, statement_timeout),
            create,
            embedder,
            text_of,
            candidates,
            reembed,
        )
        lifetime = Lifetime.of(ttl, refresh_on_read, clock)
        return PendingOpen(partial(opened, partial(cls, lifetime=lifetime), settings), "PostgresMemoryStore")

    def __repr__(self) -> str:
        state = "closed" if self.closed else "open"
        return f"<PostgresMemoryStore {redacted(self._connections.conninfo)!r} namespace={self.namespace!r} {state}>"

    # -- namespaces: the optional extension of ADR-0105 --------------------------------

    def in_namespace(self, namespace: str) -> PostgresMemoryStore:
        """The store of `namespace` in this database, on this store's pool, embedder and
        expiry settings.

        Raises:
            TypeError, ValueError: as [`check_namespace`][lionmem.protocols.namespaces.check_namespace].
        """
        name = check_namespace(namespace)
        return PostgresMemoryStore(self._connections, name, self.trigram, self._vectors, self._lifetime)

    async def namespaces(self) -> list[str]:
        """The namespaces of this database that hold an item, by name ([ADR-0105][adr-0105-d1])."""
        return sorted(row[0] for row in await self._connections.execute(NAMESPACES))

    # -- lifecycle ----------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether `close()` has been called."""
        return self._connections.pool is None

    async def close(self) -> None:
        """Close every connection; later calls raise `StoreClosedError`. Idempotent.

        Raises:
            RuntimeError: called from an event loop other than the one that opened
                the store, or in a process forked from the one that opened it;
                nothing is closed.
        """
        await self._connections.close()

    # -- the protocol ------------------------------------------------------------------

    async def store(self, item: MemoryItem) -> UUID:
        """Write `item`, replacing in place an item with its id in this namespace.

        A cancelled write is rolled back, unless it was cancelled while the server
        committed it: `retrieve` tells which.

        Raises:
            TypeError: not a `MemoryItem`, or an item the store cannot keep.
            ValueError: an item the store cannot keep.
        """
        row = item_row(self.namespace, item)
        self._connections.writable()
        if self._vectors is None:
            await self._connections.execute(UPSERT, (*row, self._lifetime.expires(self._lifetime.clock())))
        else:
            await self._write([row], [item])
        return item.id

    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]:
        """Write several items in one transaction: all of them or, on error, none.

        A large batch is read 200 items at a time, letting other tasks run between
        slices; nothing is written until every item has been read and checked. A
        cancelled call writes all of the items or none, as `store` does one.

        Raises:
            TypeError: `items` is not an iterable, or one `MemoryItem` alone, or an
                item the store cannot keep; nothing is written.
            ValueError: an item the store cannot keep; nothing is written.
        """
        batch = as_batch(items, MemoryItem)
        rows = await encode_batch(batch, partial(item_row, self.namespace))
        await self._write(rows, batch)
        return [item.id for item in batch]

    async def _write(self, rows: list[tuple[object, ...]], items: list[MemoryItem]) -> None:
        """Write `rows` in one transaction, and the vectors of `items` with them."""
        self._connections.writable()
        vectors = None if self._vectors is None else (VECTOR_UPSERT, await self._vectors.rows(self.namespace, items))
        expires = self._lifetime.expires(self._lifetime.clock())
        write = partial(
            write_batch, namespace=self.namespace, rows=rows, lock_key=LOCK_KEY, expires=expires, vectors=vectors
        )
        await self._connections.on_connection(write)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        """Return a copy of the item with `item_id` in this namespace, or `None`.

        A string in UUID form is taken as that UUID ([ADR-0095][adr-0095]).

        Raises:
            ValueError: `item_id` is a string that is not a UUID.
            TypeError: `item_id` is neither a UUID nor a string.
        """
        item_id = as_uuid(item_id, "item_id")
        now = self._lifetime.clock()
        rows = await self._connections.execute(
            "SELECT id::text, created_at, body FROM lionmem_items WHERE namespace = %s AND id = %s AND " + UNEXPIRED,
            (self.namespace, item_id, now),
        )
        return (await self._refreshed(now, [decode_item(*rows[0])]))[0] if rows else None

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """Return copies of the items matching `query`, in insertion order.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        now = self._lifetime.clock()
        return await self._refreshed(now, await read_search(self.namespace, query, self._connections.select, now))

    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        """Copies of the first `query.limit` items of this namespace matching `query`
        after the cursor `after`, and the cursor after them, read in one snapshot
        ([ADR-0105][adr-0105-d3]).

        Raises:
            TypeError, ValueError: as [`check_page`][lionmem.protocols.paging.check_page].
        """
        _, start = check_page(query, after)
        now = self._lifetime.clock()
        reading = partial(read_page, namespace=self.namespace, query=query, after=start, now=now)
        found, last = await self._connections.on_connection(reading)
        return Page(await self._refreshed(now, found), None if last is None else cursor_of(last))

    async def search_newest(self, query: MemoryQuery) -> list[MemoryItem]:
        """Copies of the items matching `query`, the last in insertion order first, cut
        by `limit` ([ADR-0099][adr-0099-d7]): the order index is read backwards, so a
        limit stops the read early.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        now = self._lifetime.clock()
        found = await read_search(self.namespace, query, self._connections.select, now, newest_first=True)
        return await self._refreshed(now, found)

    # -- expiry: the optional extension of ADR-0105, its writes --------------------------

    async def _set_expiry(self, now: float, keys: list[str], at: float | None, *, refresh: bool) -> int:
        self._connections.writable()
        unexpired = "expires_at > %s" if refresh else UNEXPIRED
        rows = await self._connections.execute(
            "WITH changed AS (UPDATE lionmem_items SET expires_at = %s WHERE namespace = %s AND id = ANY(%s::uuid[])"
            " AND " + unexpired + " RETURNING 1) SELECT count(*) FROM changed",
            [at, self.namespace, keys, now],
        )
        return int(rows[0][0])

    async def _sweep(self, now: float) -> int:
        return await self._delete("expires_at <= %s", [now])

    # -- checks and sizes: the optional extensions of ADR-0096 and ADR-0100 ----------------

    async def verify(self) -> Verification:
        """Check this namespace whole: the schema and its indexes, the metadata values
        order comparisons read, and every vector ([ADR-0096][adr-0096-damage]). Damage
        found makes the store refuse writes from then on.
        """
        text_of = None if self._vectors is None else self._vectors.text_of
        damage, stale = await self._connections.on_connection(
            partial(problems, namespace=self.namespace, text_of=text_of)
        )
        self._connections.note_damage(damage)
        return Verification(tuple(damage), tuple(stale))

    async def stats(self) -> StoreStats:
        """The number of items in this namespace, the size of the items table and of
        the metadata values it indexes, the schema version and the span of
        `created_at`, read in one statement ([ADR-0100][adr-0100-d9]). The tables,
        and so their size, are every namespace's.
        """
        return stats_of(await self._connections.execute(STATS, [self.namespace, self._lifetime.clock()]))

    # -- recall: the optional extension of ADR-0102, with pgvector (ADR-0103) ------------

    @property
    def embedder(self) -> Embedder | None:
        """The embedder the store was opened with, or `None`: then it cannot recall."""
        return None if self._vectors is None else self._vectors.embedder

    async def recall(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
        exact: bool = False,
    ) -> list[Recalled]:
        """The `k` items of this namespace most like `query`, highest cosine similarity
        first, among those `tags` and `filters` match as in `search`; equal scores in
        insertion order; none scoring below `min_score`. Exact when at most 2,000
        items match, or with `exact`; otherwise through the HNSW index, its
        candidates (the store's `candidates`) filtered and ranked again exactly, and
        every match ranked exactly when they hold fewer than `k`
        ([ADR-0103][adr-0103]). Items another client wrote without an embedder are
        embedded first.

        Raises:
            NoEmbedderError: the store was opened without an embedder.
            TypeError, ValueError: as `InMemoryStore.recall` raises them; `exact`
                is not a bool.
        """
        vectors = recalling(self._vectors)
        now = self._lifetime.clock()
        asked = await vectors.asked(self.namespace, query, k, tags, filters, exact, now, min_score)
        found = await self._connections.on_connection(partial(vectors.recall, asked=asked))
        await self._refreshed(now, [hit.item for hit in found])
        return found

    async def explain_recall(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        exact: bool = False,
    ) -> str:
        """The path `recall` takes first ("exact" or "index") and the server's plan, as
        run, for the statement that ranks, as `EXPLAIN ANALYZE` prints it; without
        tags or filters, the branch not taken is marked "never executed"
        ([ADR-0103][adr-0103-d2])."""
        vectors = recalling(self._vectors)
        asked = await vectors.asked(self.namespace, query, k, tags, filters, exact, self._lifetime.clock())
        return await self._connections.on_connection(partial(vectors.explain, asked=asked))

    async def explain(self, query: MemoryQuery, *, newest_first: bool = False) -> str:
        """The server's plan for `query`, as `EXPLAIN` prints it: for `search`, or with
        `newest_first` for `search_newest`."""
        plan = plan_search(self.namespace, query, newest_first=newest_first, now=self._lifetime.clock())
        rows = await self._connections.select(sql.SQL("EXPLAIN ") + plan.statement, plan.params)
        return "\n".join(str(row[0]) for row in rows)
