"""`PostgresMemoryStore`: one store shared by many processes and machines.

Governed by [ADR-0097][adr-0097]. Needs the `postgres` extra (psycopg 3 and
psycopg_pool); `import lionmem` never imports this module.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import re
from functools import partial
from collections.abc import AsyncGenerator, Callable, Generator, Iterable
from typing import Any, Final, LiteralString, NamedTuple, cast
from uuid import UUID

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool, PoolTimeout

from lionmem.adapters._encoding import (
    MAX_SQL_LIMIT,
    SHARE_EVERY,
    SQL_FILTERS,
    EncodedItem,
    Row,
    as_batch,
    decode_in_slices,
    decode_item,
    dumps,
    encode_batch,
    encode_item,
    matching,
    settle_unstorable,
)
from lionmem.adapters.errors import IncompatibleDatabaseError, StoreClosedError
from lionmem.adapters.lifecycle import ClosesOnExit, PendingOpen, milliseconds, process_id, refuse_forked
from lionmem.protocols._arguments import as_uuid, require_type
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.testing.profile import ContentKind, Durability, FidelityProfile, ReturnedObjects

__all__ = [
    "POSTGRES_PROFILE",
    "SCHEMA_VERSION",
    "PostgresMemoryStore",
    "StoreUnavailableError",
]

SCHEMA_VERSION: Final = 2
"""The schema this code writes, recorded in `lionmem_schema.version`."""

POSTGRES_PROFILE: Final = FidelityProfile(
    returned_objects=ReturnedObjects.COPIES,
    durability=Durability.RESTART,
    content=ContentKind.JSON_VALUES,
)
"""What `PostgresMemoryStore` promises: the same as the SQLite store."""

_NAMESPACE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}")
# A server switch in libpq's `options`: `-c name=value` or `--name=value`, where the
# server reads the name case-insensitively and a '-' in it as '_'.
_SETS_STATEMENT_TIMEOUT = re.compile(r"(?:^|\s)(?:-c\s*|--)(?i:statement[-_]timeout)=")
_EXACT_NUMBER = 2**53
_FIRST_WINDOW = 64
_LOCK_KEY = 0x4C4D454D  # "LMEM": serialises schema work across every process
# Two int4 keys: a space apart from the single bigint key of the schema lock.
_BATCH_LOCK: LiteralString = "SELECT pg_advisory_xact_lock(%s, hashtext(%s))"

# A GIN index queues new entries in a pending list that every search reads in full
# until it is merged; capping the list at 256 kB instead of 4 MB made selective
# searches 4-7 times faster after a load, for 35-42% more time per batched item.
_GIN_OPTIONS: LiteralString = " WITH (gin_pending_list_limit = 256)"

_SCHEMA: list[LiteralString] = [
    """CREATE TABLE lionmem_items (
        namespace text NOT NULL,
        id uuid NOT NULL,
        seq bigint GENERATED ALWAYS AS IDENTITY,
        created_at double precision NOT NULL,
        body text NOT NULL,
        folded text NOT NULL,
        tags text[] NOT NULL,
        metadata jsonb NOT NULL,
        PRIMARY KEY (namespace, id)
    )""",
    "CREATE INDEX lionmem_items_order ON lionmem_items (namespace, seq)",
    "CREATE INDEX lionmem_items_tags ON lionmem_items USING gin (tags)" + _GIN_OPTIONS,
    "CREATE INDEX lionmem_items_metadata ON lionmem_items USING gin (metadata jsonb_path_ops)"
    + _GIN_OPTIONS,
]
_TRIGRAM_INDEX: LiteralString = (
    "CREATE INDEX lionmem_items_text ON lionmem_items USING gin (folded gin_trgm_ops)" + _GIN_OPTIONS
)

_UPSERT: LiteralString = """
    INSERT INTO lionmem_items (namespace, id, created_at, body, folded, tags, metadata)
    VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb)
    ON CONFLICT (namespace, id) DO UPDATE SET
        created_at = excluded.created_at, body = excluded.body, folded = excluded.folded,
        tags = excluded.tags, metadata = excluded.metadata
"""


class StoreUnavailableError(ConnectionError):
    """The server could not be reached, or did not answer, within the timeout; or
    every connection of the store's pool stayed in use by its other calls for that
    long, which the message says.

    A call the server answers with an error of its own, such as a deadlock with
    another client or a `lock_timeout` the application set, raises psycopg's error
    for it instead, and writes nothing.
    """


_INDEXED_TAG_BYTES = 2_000
_TAG_DIGEST = "\x01sha256:"


def _tag_key(tag: str) -> str:
    """What the `tags` column, and so its GIN index, holds for `tag`: the tag itself,
    or for a tag over `_INDEXED_TAG_BYTES` in UTF-8, `_TAG_DIGEST` and its SHA-256.
    A GIN entry holds at most about 2,700 bytes; a longer tag failed the whole write
    ("index row size exceeds maximum"). The item's tags themselves are in its body."""
    if len(tag) <= _INDEXED_TAG_BYTES // 4:  # 4 bytes a character at most
        return tag
    encoded = tag.encode()
    if len(encoded) <= _INDEXED_TAG_BYTES:
        return tag
    return _TAG_DIGEST + hashlib.sha256(encoded).hexdigest()


def _row(namespace: str, item: MemoryItem) -> tuple[object, ...]:
    """The parameters of `_UPSERT`, taken whole now: the metadata is written out here
    rather than wrapped, so a change to the item before the statement runs reaches
    neither the body nor the indexed metadata."""
    # PostgreSQL text cannot hold U+0000, so such strings are refused up front.
    encoded: EncodedItem = encode_item(item, allow_nul=False)
    return (
        namespace, item.id, encoded.created_at, encoded.body, encoded.folded,
        [_tag_key(tag) for tag in item.tags], dumps(item.metadata),
    )


def _filter_clause(key: str, value: object) -> tuple[LiteralString, list[object], bool] | None:
    """`(SQL, parameters, exact)` narrowing one filter without dropping a match, where
    `exact` says the SQL also drops every non-match; `None` to leave it to Python.

    JSON containment compares numbers as decimals, which agrees with Python's `==`
    (1 == 1.0, -0.0 == 0) up to 2**53; beyond that a float's shortest decimal form
    need not equal the integer it is equal to.
    """
    if value is None:
        return "(NOT metadata ? %s OR metadata -> %s = 'null'::jsonb)", [key, key], True
    kind = type(value)
    if kind is str:
        return "metadata @> %s", [Jsonb({key: value})], True
    if kind in (bool, int, float) and abs(cast(float, value)) <= _EXACT_NUMBER:
        # Python equality: True == 1 == 1.0, but JSON true is not the number 1.
        number = Jsonb({key: int(cast(bool, value)) if kind is bool else value})
        if value in (0, 1):
            return "(metadata @> %s OR metadata @> %s)", [number, Jsonb({key: bool(value)})], True
        return "metadata @> %s", [number], True
    if kind is list:
        return "jsonb_typeof(metadata -> %s) = 'array'", [key], False
    if kind is dict:
        return "jsonb_typeof(metadata -> %s) = 'object'", [key], False
    return None


_OUTAGES = frozenset({"57014", "57P01", "57P02", "57P03"})
"""SQLSTATEs besides connection exceptions (class 08) that mean the server did not
answer in time (a statement timeout) or went away (shut down, restarting)."""


def _is_outage(error: Exception) -> bool:
    """Whether a failed call means the server could not be reached or did not answer:
    no connection in time, a connection lost or refused (no SQLSTATE, or class 08),
    or one of `_OUTAGES`. Any other error is the server's answer, such as a deadlock
    or a full disk, and is raised as psycopg reports it."""
    state = getattr(error, "sqlstate", None)
    return state is None or state.startswith("08") or state in _OUTAGES


@contextlib.contextmanager
def _outages_unavailable(
    conninfo: str, busy: Callable[[], StoreUnavailableError | None]
) -> Generator[None, None, None]:
    """Raise an outage (see `_is_outage`) on an open store as `StoreUnavailableError`,
    or, for the pool's timeout, what `busy()` gives if anything, and any other error
    as psycopg reports it."""
    try:
        yield
    except PoolTimeout as exc:
        raise busy() or _unavailable(conninfo, exc) from None
    except psycopg.OperationalError as exc:
        if not _is_outage(exc):
            raise
        raise _unavailable(conninfo, exc) from None


def _url_parts(dsn: str) -> tuple[str, str]:
    """The authority (user info, hosts and ports) and the path of a URL `dsn`, as
    written; two empty strings for a `key=value` string."""
    authority, _, path = dsn.partition("://")[2].partition("?")[0].partition("/")
    return authority, path


def _refuse_bare_at(dsn: str) -> None:
    """Refuse a URL with an '@' libpq would not read as the end of the user name and
    password: a second one before the path, or one in it. It comes from a password's
    '@' or '/' left unescaped; libpq would read the rest of the password as the host,
    port or database name, which its errors then show."""
    authority, path = _url_parts(dsn)
    if authority.count("@") > 1 or "@" in path:
        raise ValueError(
            "the dsn has an '@' that is not the one before the host; write an '@' or '/' "
            "in a user name or password (or an '@' in a database name) as %40 or %2F"
        )


_QUOTED = re.compile(r'"([^"]*)"')
_APART = r"""\s"'=:@/,()"""
"""What may stand beside a password where a message shows it whole: its URL's
userinfo, a quoted word or a `key=value` pair."""


def _masked(message: str, password: str) -> str:
    """`message` with `password` masked where it stands apart, not inside a longer
    word: a password of `1` or `pass` masked everywhere would make "127.0.0.1" and
    "password authentication failed" unreadable."""
    return re.sub(rf"(?<![^{_APART}]){re.escape(password)}(?![^{_APART}])", "***", message)


def _without_password(message: str, dsn: str) -> str:
    """libpq's complaint about `dsn`, with what may be (part of) its password masked:
    a URL's password as written (libpq quotes a malformed URL whole), or in a
    `key=value` string holding one, each quoted word that the string does not use as
    a key (libpq quotes the word after a space in an unquoted password)."""
    if "://" in dsn:
        userinfo, at, _ = _url_parts(dsn)[0].rpartition("@")
        password = userinfo.partition(":")[2] if at else ""
        return _masked(message, password) if password else message
    if "password" not in dsn:
        return message

    def masked(word: re.Match[str]) -> str:
        text = word.group(1)
        is_key = re.search(rf"(^|\s){re.escape(text)}\s*=", dsn) is not None
        return word.group() if is_key or text == "=" else '"***"'

    return _QUOTED.sub(masked, message)


def _unavailable(conninfo: str, error: Exception) -> StoreUnavailableError:
    message = str(error)
    password = conninfo_to_dict(conninfo).get("password")
    if password:
        message = _masked(message, str(password))
    return StoreUnavailableError(f"PostgreSQL at {_redacted(conninfo)} is unavailable: {message}")


def _redacted(conninfo: str) -> str:
    parts = conninfo_to_dict(conninfo)
    if "password" in parts:
        parts["password"] = "***"
    return make_conninfo("", **parts)


class PostgresMemoryStore(ClosesOnExit):
    """A `MemoryStore` in PostgreSQL, bound to one namespace of one database.

    Every process that opens the same database and namespace shares the items; two
    namespaces never see each other, and the same id may live in both. The rules are
    the reference's, as in the SQLite store: insertion order by a sequence assigned at
    first store, replacement in place, the case-insensitive substring of
    `str(content)` (computed when written), any-of tags, Python-equality filters with
    `None` matching a missing key, slice limits. A store belongs to the event loop
    that opened it; a call from another raises `RuntimeError`. See [ADR-0097][adr-0097].

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
        pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]],
        namespace: str,
        conninfo: str,
        trigram: bool,
    ) -> None:
        """Use [`open`][lionmem.adapters.postgres.PostgresMemoryStore.open] instead."""
        self._pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] | None = pool
        # The pool's waiters and maintenance tasks belong to the loop that opened it.
        self._loop = asyncio.get_running_loop()
        self._pid = process_id()
        self._conninfo = conninfo
        self._in_use = 0
        self.namespace = namespace
        """The namespace this store reads and writes."""
        self.trigram = trigram
        """Whether text search can use a `pg_trgm` index (else it scans)."""

    @classmethod
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
    ) -> PendingOpen[PostgresMemoryStore]:
        """Connect, create or check the schema, and bind the store to `namespace`.

        `timeout` bounds waiting for a connection (and each connection attempt);
        `statement_timeout` bounds each statement on the server, in whole milliseconds
        rounded up. Both are in seconds, up to
        [`MAX_TIMEOUT`][lionmem.adapters.lifecycle.MAX_TIMEOUT]. They take the place
        of libpq's `connect_timeout` and the server's `statement_timeout`: a dsn that
        sets either is refused, and those of the environment or a service file give
        way to them. The client encoding (UTF8), float output (exact) and transaction
        isolation (read committed) are the store's own, whatever the dsn, the
        environment or the role asks for, and the database must be in UTF8. With
        `create=False`
        a database without lionmem's schema is an error instead of getting one, for
        readers that should not write tables into a database named by mistake.

        Raises:
            ValueError: an invalid namespace, pool setting or connection string, or
                a connection string that sets either timeout itself.
            IncompatibleDatabaseError: the database's encoding is not UTF8, or the
                schema is newer than this lionmem or, with `create=False`, missing.
            StoreUnavailableError: the server cannot be reached in time.
            TypeError: an argument of the wrong type: `dsn` and `namespace` are
                str, the pool sizes int, the timeouts numbers, `create` a bool.
        """
        require_type(dsn, "dsn", str)
        require_type(namespace, "namespace", str)
        require_type(min_size, "min_size", int)
        require_type(max_size, "max_size", int)
        require_type(create, "create", bool)
        if not _NAMESPACE.fullmatch(namespace):
            raise ValueError(
                f"namespace {namespace!r} must be 1-63 letters, digits, '_', '.' or '-', "
                "not starting with '.' or '-'"
            )
        if not 1 <= min_size <= max_size:
            raise ValueError(f"need 1 <= min_size <= max_size, got {min_size} and {max_size}")
        milliseconds("timeout", timeout, zero=False)
        statement_ms = milliseconds("statement_timeout", statement_timeout, zero=False)
        _refuse_bare_at(dsn)
        try:
            parsed = conninfo_to_dict(dsn)
        except psycopg.ProgrammingError as exc:
            raise ValueError(
                f"dsn is not a libpq connection string or URL: {_without_password(str(exc), dsn)}"
            ) from None
        # Both are set from the arguments, which would replace the dsn's own unseen.
        if "connect_timeout" in parsed:
            raise ValueError(
                "the dsn sets connect_timeout, which lionmem sets from timeout; give the seconds as timeout"
            )
        if _SETS_STATEMENT_TIMEOUT.search(str(parsed.get("options", ""))):
            raise ValueError(
                "the dsn's options set statement_timeout, which lionmem sets from "
                "statement_timeout; give the seconds as statement_timeout"
            )
        conninfo = make_conninfo(dsn, connect_timeout=max(1, round(timeout)))
        return PendingOpen(
            partial(_open, conninfo, namespace, min_size, max_size, timeout, statement_ms, create)
        )

    def __repr__(self) -> str:
        state = "closed" if self._pool is None else "open"
        return f"<PostgresMemoryStore {_redacted(self._conninfo)!r} namespace={self.namespace!r} {state}>"

    # -- lifecycle ----------------------------------------------------------------

    @property
    def closed(self) -> bool:
        """Whether `close()` has been called."""
        return self._pool is None

    async def close(self) -> None:
        """Close every connection; later calls raise `StoreClosedError`. Idempotent.

        Raises:
            RuntimeError: called from an event loop other than the one that opened
                the store, or in a process forked from the one that opened it;
                nothing is closed.
        """
        if self._pool is not None:
            self._check_loop()
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()

    def _check_loop(self) -> None:
        refuse_forked(self._pid, f"the PostgresMemoryStore for {self.namespace!r}")
        if asyncio.get_running_loop() is not self._loop:
            raise RuntimeError(
                f"the PostgresMemoryStore for {self.namespace!r} belongs to the event loop "
                "that opened it; open a store in each loop that needs one"
            )

    def _live_pool(self) -> AsyncConnectionPool[psycopg.AsyncConnection[Any]]:
        if self._pool is None:
            raise StoreClosedError(f"the PostgresMemoryStore for {self.namespace!r} is closed")
        self._check_loop()
        return self._pool

    def _busy(self, pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]]) -> StoreUnavailableError | None:
        """For the pool's timeout: the error saying the pool is busy, if this store's
        other calls hold every connection (the remedy differs from an outage's)."""
        if self._in_use < pool.max_size:
            return None
        return StoreUnavailableError(
            f"PostgreSQL at {_redacted(self._conninfo)} is busy: all {pool.max_size} "
            f"connections of the store's pool stayed in use for {pool.timeout:g} s; "
            "raise max_size or timeout, or make fewer calls at once"
        )

    @contextlib.asynccontextmanager
    async def _connection(self) -> AsyncGenerator[psycopg.AsyncConnection[Any], None]:
        """A connection of the pool for one call, counted as in use while held; a
        server or pool that does not answer raises `StoreUnavailableError`."""
        pool = self._live_pool()
        with _outages_unavailable(self._conninfo, lambda: self._busy(pool)):
            async with pool.connection() as conn:
                self._in_use += 1
                try:
                    yield conn
                finally:
                    self._in_use -= 1

    async def _execute(
        self,
        query: sql.Composed | LiteralString,
        params: Iterable[object] = (),
        *,
        prepare: bool | None = None,
    ) -> list[tuple[Any, ...]]:
        async with self._connection() as conn:
            cursor = await conn.execute(query, list(params), prepare=prepare)
            rows: list[tuple[Any, ...]] = []
            # psycopg builds rows on the loop's thread as they are fetched: a slice at
            # a time, letting other tasks run between slices of a long result.
            while cursor.description and (chunk := await cursor.fetchmany(SHARE_EVERY)):
                rows += chunk
                if len(chunk) < SHARE_EVERY:
                    break
                await asyncio.sleep(0)
            return rows

    # -- the protocol ------------------------------------------------------------------

    async def store(self, item: MemoryItem) -> UUID:
        """Write `item`, replacing in place an item with its id in this namespace.

        A cancelled write is rolled back, unless it was cancelled while the server
        committed it: `retrieve` tells which.

        Raises:
            TypeError: not a `MemoryItem`, a value that is not JSON, or a U+0000
                character; nothing is written.
            ValueError: content or metadata nesting lists and objects more than
                500 levels deep, or holding an integer with more digits than Python
                writes as text; or an item over 100 MB, counted as the UTF-8 of
                its content, tags and metadata in JSON or of the text search reads,
                `str(content).lower()`. Nothing is written.
            StoreUnavailableError: the server did not answer in time.
            psycopg.Error: the server refused the write, such as for a deadlock with
                another client; nothing is written.
            StoreClosedError: the store is closed.
            RuntimeError: called from an event loop other than the one that opened
                the store, or in a process forked from the one that opened it.
        """
        row = _row(self.namespace, item)
        await self._execute(_UPSERT, row)
        return item.id

    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]:
        """Write several items in one transaction: all of them or, on error, none.

        A large batch is read 200 items at a time, letting other tasks run between
        slices; nothing is written until every item has been read and checked. A
        cancelled call writes all of the items or none, as `store` does one.

        Raises:
            TypeError: `items` is not an iterable, or one `MemoryItem` alone; or
                as for [`store`][lionmem.adapters.postgres.PostgresMemoryStore.store],
                an item the store cannot keep. Nothing is written.
            ValueError: as for `store`; nothing is written.
            StoreUnavailableError: the server did not answer in time.
            psycopg.Error: the server refused the write; nothing is written.
            StoreClosedError: the store is closed.
            RuntimeError: called from an event loop other than the one that opened
                the store, or in a process forked from the one that opened it.
        """
        batch = as_batch(items)
        rows = await encode_batch(batch, partial(_row, self.namespace))
        async with self._connection() as conn, conn.transaction(), conn.cursor() as cursor:
            # Two batches sharing ids could lock those rows in opposite orders and
            # deadlock; one batch per namespace at a time cannot.
            await cursor.execute(_BATCH_LOCK, [_LOCK_KEY, self.namespace])
            await cursor.executemany(_UPSERT, rows)
        return [item.id for item in batch]

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        """Return a copy of the item with `item_id` in this namespace, or `None`.

        A string in UUID form is taken as that UUID ([ADR-0095][adr-0095]).

        Raises:
            ValueError: `item_id` is a string that is not a UUID.
            TypeError: `item_id` is neither a UUID nor a string.
            StoreUnavailableError: the server did not answer in time.
            StoreClosedError: the store is closed.
            RuntimeError: called from an event loop other than the one that opened
                the store, or in a process forked from the one that opened it.
        """
        item_id = as_uuid(item_id, "item_id")
        rows = await self._execute(
            "SELECT id::text, created_at, body FROM lionmem_items WHERE namespace = %s AND id = %s",
            (self.namespace, item_id),
        )
        return decode_item(*rows[0]) if rows else None

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """Return copies of the items matching `query`, in insertion order.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
            StoreUnavailableError: the server did not answer in time.
            StoreClosedError: the store is closed.
            RuntimeError: called from an event loop other than the one that opened
                the store, or in a process forked from the one that opened it.
        """
        plan = self._plan(query)
        statement, params, limit = plan.statement, plan.params, query.limit
        if plan.pushed:
            return await _decode(await self._select(statement, params), plan, limit)
        if limit < 0:
            rows = await self._select(statement, params)
            return (await _decode(rows, plan, limit))[:limit]
        # Python re-checks some rows, so SQL cannot stop at `limit` itself; read growing
        # prefixes of the ordered rows until they hold `limit` matches or run out.
        window = min(max(_FIRST_WINDOW, 4 * limit), MAX_SQL_LIMIT)
        while True:
            rows = await self._select(statement + sql.SQL(" LIMIT %s"), [*params, window])
            found = await _decode(rows, plan, limit)
            if len(found) >= limit or len(rows) < window:
                return found
            window = min(window * 4, MAX_SQL_LIMIT)

    async def explain(self, query: MemoryQuery) -> str:
        """The server's plan for `query`, as `EXPLAIN` prints it."""
        plan = self._plan(query)
        rows = await self._select(sql.SQL("EXPLAIN ") + plan.statement, plan.params)
        return "\n".join(str(row[0]) for row in rows)

    async def _select(self, statement: sql.Composed, params: list[object]) -> list[tuple[Any, ...]]:
        # psycopg prepares a statement after its fifth run, and the server may then
        # keep one plan for all values. A search's best plan depends on its values
        # (ADR-0097), so searches are planned afresh each time.
        return await self._execute(statement, params, prepare=False)

    def _plan(self, asked: MemoryQuery) -> _Plan:
        if not isinstance(asked, MemoryQuery):
            raise TypeError(f"query must be a MemoryQuery, got {type(asked).__name__}")
        clauses: list[sql.Composable] = [sql.SQL("namespace = %s")]
        params: list[object] = [self.namespace]
        # PostgreSQL text cannot hold U+0000, so neither can a stored string.
        query = settle_unstorable(asked, allow_nul=False)
        if query is None:
            clauses.append(sql.SQL("false"))
            query = asked.model_copy(update={"text": None, "tags": None, "filters": None})
        if query.text:
            needle = query.text.lower()
            escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
            # LIKE lets a pg_trgm index narrow; strpos() decides, wildcards and all.
            clauses.append(sql.SQL("folded LIKE %s AND strpos(folded, %s) > 0"))
            params += [f"%{escaped}%", needle]
        any_tag: frozenset[str] = frozenset()
        if query.tags:
            keys = [_tag_key(tag) for tag in query.tags]
            clauses.append(sql.SQL("tags && %s::text[]"))
            params.append(keys)
            # Keys equal for different tags need a digest on one side: a digest
            # collision, or a tag spelled like another's digest. Python decides those.
            if any(key.startswith(_TAG_DIGEST) for key in keys):
                any_tag = frozenset(query.tags)
        recheck: list[tuple[str, Any]] = []
        for n, (key, value) in enumerate((query.filters or {}).items()):
            narrowing = _filter_clause(key, value) if n < SQL_FILTERS else None
            if narrowing is not None:
                clauses.append(sql.SQL(narrowing[0]))
                params += narrowing[1]
            if narrowing is None or not narrowing[2]:
                recheck.append((key, value))
        statement = sql.SQL(
            "SELECT id::text, created_at, body FROM lionmem_items WHERE {} ORDER BY seq"
        ).format(sql.SQL(" AND ").join(clauses))
        pushed = not recheck and not any_tag and query.limit >= 0
        if pushed:
            statement += sql.SQL(" LIMIT %s")
            params.append(min(query.limit, MAX_SQL_LIMIT))
        return _Plan(statement, params, recheck, any_tag, pushed)


class _Plan(NamedTuple):
    """A search as SQL, and what Python decides on the rows it returns."""

    statement: sql.Composed
    params: list[object]
    recheck: list[tuple[str, Any]]
    """Filters that Python's `==` decides."""
    any_tag: frozenset[str]
    """When not empty, each row must hold one of these tags, checked in Python."""
    pushed: bool
    """Whether the statement ends with the query's own LIMIT."""


async def _decode(rows: list[Row], plan: _Plan, limit: int) -> list[MemoryItem]:
    """The items of `rows` that pass `plan.recheck` and hold one of `plan.any_tag`
    (when given), at most `limit` of them when it is not negative. psycopg hands rows over on the event loop's thread; up to `SHARE_EVERY`
    of them (about a millisecond) are decoded there, more on a worker thread that
    gives the GIL back between slices, so the loop never waits for a whole result."""

    def decode() -> list[MemoryItem]:
        if plan.recheck or plan.any_tag:
            return list(matching(rows, plan.recheck, limit, plan.any_tag))
        return decode_in_slices(rows)

    if len(rows) <= SHARE_EVERY:
        return decode()
    return await asyncio.to_thread(decode)


async def _open(
    conninfo: str,
    namespace: str,
    min_size: int,
    max_size: int,
    timeout: float,
    statement_ms: int,
    create: bool,
) -> PostgresMemoryStore:
    # The statement timeout is set on each connection rather than given to libpq as
    # `options`, which would replace the options a service file or PGOPTIONS gives.
    # So are the settings the store's rules depend on, which a role, a database or
    # the environment may set otherwise: with PGCLIENTENCODING=LATIN1 psycopg could
    # not send "€" (with SQL_ASCII it returned text as bytes); with extra_float_digits
    # at 0 created_at came back rounded to 15 digits; and under repeatable read or
    # serializable isolation, concurrent writes of one id failed to serialize.
    async def configure(conn: psycopg.AsyncConnection[Any]) -> None:
        await conn.execute(
            "SELECT set_config('statement_timeout', %s, false),"
            " set_config('client_encoding', 'UTF8', false),"
            " set_config('extra_float_digits', '3', false),"
            " set_config('default_transaction_isolation', 'read committed', false)",
            [f"{statement_ms}ms"],
        )

    # The schema is checked on a connection of its own before the pool opens: a pool
    # that cannot connect only reports that it timed out, while a direct attempt says
    # why (refused, unknown host, wrong password, no such database).
    try:
        async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
            await configure(conn)
            trigram = await _migrate(conn, create)
    except psycopg.OperationalError as exc:
        raise _unavailable(conninfo, exc) from None
    pool: AsyncConnectionPool[psycopg.AsyncConnection[Any]] = AsyncConnectionPool(
        conninfo,
        min_size=min_size,
        max_size=max_size,
        timeout=timeout,
        kwargs={"autocommit": True},
        configure=configure,
        check=AsyncConnectionPool.check_connection,
        open=False,
    )
    try:
        await pool.open(wait=True, timeout=timeout)
    except (PoolTimeout, psycopg.OperationalError) as exc:
        await pool.close()
        raise _unavailable(conninfo, exc) from None
    except BaseException:
        await pool.close()
        raise
    return PostgresMemoryStore(pool, namespace, conninfo, trigram=trigram)


async def _digest_long_tags(conn: psycopg.AsyncConnection[Any]) -> None:
    """Version 2: a tag over `_INDEXED_TAG_BYTES` is indexed by its digest
    (`_tag_key`). Version 1 kept such tags whole where the index could compress them."""
    # A character takes at most 4 bytes in UTF-8, so no shorter tag needs a digest.
    cursor = await conn.execute(
        "SELECT namespace, id, tags FROM lionmem_items"
        " WHERE EXISTS (SELECT FROM unnest(tags) AS tag WHERE length(tag) > %s)",
        [_INDEXED_TAG_BYTES // 4],
    )
    rows = await cursor.fetchall()
    async with conn.cursor() as updating:
        await updating.executemany(
            "UPDATE lionmem_items SET tags = %s WHERE namespace = %s AND id = %s",
            [([_tag_key(tag) for tag in tags], namespace, item_id) for namespace, item_id, tags in rows],
        )


async def _migrate(conn: psycopg.AsyncConnection[Any], create: bool) -> bool:
    """Create (when `create`) or check the schema; return whether a trigram index exists.

    An advisory lock taken inside the transaction serialises every process that
    opens the database at once, so the schema is created exactly once. A database
    whose encoding is not UTF8 is refused first, and left as it was: it cannot hold
    every string an item may (LATIN1 refused "€"), or does not check what it holds
    (SQL_ASCII).
    """
    found = await (await conn.execute("SELECT current_setting('server_encoding')")).fetchone()
    assert found is not None  # a SELECT without FROM gives one row
    if found[0] != "UTF8":
        raise IncompatibleDatabaseError(
            f"this database's encoding is {found[0]}; lionmem stores Unicode text and needs "
            "a UTF8 database (CREATE DATABASE ... ENCODING 'UTF8' TEMPLATE template0)"
        )
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", [_LOCK_KEY])
        # Nothing is written to a current schema, so that a read-only connection (to a
        # replica, or with default_transaction_read_only) can open the store.
        query = "SELECT to_regclass('lionmem_schema') IS NOT NULL"
        exists = await (await conn.execute(query)).fetchone()
        if exists and exists[0]:
            found = await (await conn.execute("SELECT version FROM lionmem_schema")).fetchone()
            version = found[0] if found else 0
        elif create:
            await conn.execute(
                "CREATE TABLE lionmem_schema ("
                " singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),"
                " version integer NOT NULL)"
            )
            version = 0
        else:
            raise IncompatibleDatabaseError(
                "this database has no lionmem schema; nothing was created (create=False)"
            )
        if version > SCHEMA_VERSION:
            raise IncompatibleDatabaseError(
                f"the lionmem schema in this database is version {version}, newer than this "
                f"lionmem's {SCHEMA_VERSION}; upgrade lionmem to use it"
            )
        if version < 1:
            for statement in _SCHEMA:
                await conn.execute(statement)
            try:
                async with conn.transaction():
                    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                    await conn.execute(_TRIGRAM_INDEX)
            except psycopg.Error:
                pass  # no pg_trgm here: text search scans, with the same results
            await conn.execute(
                "INSERT INTO lionmem_schema (version) VALUES (%s)", [SCHEMA_VERSION]
            )
        elif version < 2:
            await _digest_long_tags(conn)
            await conn.execute("UPDATE lionmem_schema SET version = 2")
        indexed = await (
            await conn.execute(
                "SELECT count(*) FROM pg_indexes WHERE indexname = 'lionmem_items_text'"
            )
        ).fetchone()
        return bool(indexed and indexed[0])
