"""The PostgreSQL store's schema: its version, its tables and indexes, and the
migration of an older database.

Governed by [ADR-0097][adr-0097].
"""

from __future__ import annotations

from typing import Any, Final, LiteralString

import psycopg

from lionmem.adapters.errors import IncompatibleDatabaseError, MissingSchemaError
from lionmem.adapters.postgres._writes import INDEXED_TAG_BYTES, tag_key

__all__ = ["SCHEMA_VERSION"]

SCHEMA_VERSION: Final = 2
"""The schema this code writes, recorded in `lionmem_schema.version`."""
LOCK_KEY = 0x4C4D454D  # "LMEM": serialises schema work across every process

# A GIN index queues new entries in a pending list that every search reads in full
# until it is merged. A small list keeps searches after a load fast, for some more
# time per batched item; ADR-0097 weighs the sizes it measured.
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
# Seam for tests: `_TRIGRAM_INDEX`, replaced to open a database where pg_trgm fails.
_TRIGRAM_INDEX: LiteralString = (
    "CREATE INDEX lionmem_items_text ON lionmem_items USING gin (folded gin_trgm_ops)" + _GIN_OPTIONS
)


async def _digest_long_tags(conn: psycopg.AsyncConnection[Any]) -> None:
    """Version 2: a tag over `INDEXED_TAG_BYTES` is indexed by its digest
    (`tag_key`). Version 1 kept such tags whole where the index could compress them."""
    # A character takes at most 4 bytes in UTF-8, so no shorter tag needs a digest.
    cursor = await conn.execute(
        "SELECT namespace, id, tags FROM lionmem_items"
        " WHERE EXISTS (SELECT FROM unnest(tags) AS tag WHERE length(tag) > %s)",
        [INDEXED_TAG_BYTES // 4],
    )
    rows = await cursor.fetchall()
    async with conn.cursor() as updating:
        await updating.executemany(
            "UPDATE lionmem_items SET tags = %s WHERE namespace = %s AND id = %s",
            [([tag_key(tag) for tag in tags], namespace, item_id) for namespace, item_id, tags in rows],
        )


async def migrate(conn: psycopg.AsyncConnection[Any], create: bool) -> bool:
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
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
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
            raise MissingSchemaError("this database has no lionmem schema; nothing was created")
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
