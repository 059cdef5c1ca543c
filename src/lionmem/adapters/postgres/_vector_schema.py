"""The tables of recall in PostgreSQL: pgvector installed where the role may, each
item's vector with the digest of its text, the HNSW index, the queue of items that
have no vector, and the triggers that keep both true for every client's writes.

They need pgvector and the embedder's dimensions, so the first store opened with an
embedder makes them; the record of the embedder itself is in the schema proper
(`schema.py`). Governed by [ADR-0103][adr-0103-d1].
"""

from __future__ import annotations

from typing import Any, Final, LiteralString

import psycopg
from psycopg import sql

from lionmem.adapters._embedding import refuse_another_embedder
from lionmem.adapters.postgres.schema import LOCK_KEY
from lionmem.errors import VectorExtensionMissingError
from lionmem.protocols.recall import Embedder

__all__ = ["GRAPH", "adopt"]

GRAPH: Final = (16, 128)
"""The HNSW index's `m` and `ef_construction`: a graph built with 128 candidates a step
finds on everyday notes what one built with pgvector's default of 64 finds with twice
the candidates asked ([ADR-0103][adr-0103-d3])."""

_TABLE: LiteralString = """CREATE TABLE lionmem_vectors (
    namespace text NOT NULL,
    id uuid NOT NULL,
    embedding vector({dimensions}) NOT NULL,
    digest bytea,
    PRIMARY KEY (namespace, id),
    FOREIGN KEY (namespace, id) REFERENCES lionmem_items (namespace, id) ON DELETE CASCADE
)"""
_INDEX: LiteralString = (
    "CREATE INDEX lionmem_vectors_hnsw ON lionmem_vectors USING hnsw (embedding vector_cosine_ops)"
    " WITH (m = {m}, ef_construction = {construction})"
)
# The items of one text, whose vector a write copies (`_backfill.VECTOR_UPSERT`).
_TWINS: LiteralString = "CREATE INDEX lionmem_vectors_digest ON lionmem_vectors (namespace, digest)"
# A replacement by any client, with an embedder or without, drops the item's vector
# in its own transaction; a writer with an embedder then writes the new one. At
# commit, an item the transaction wrote that has no vector joins the queue, which a
# recall reads in one index probe and embeds before it ranks.
_STALE: list[LiteralString] = [
    "CREATE OR REPLACE FUNCTION lionmem_vectors_stale() RETURNS trigger LANGUAGE plpgsql AS $body$ BEGIN"
    " DELETE FROM lionmem_vectors WHERE namespace = OLD.namespace AND id = OLD.id; RETURN NULL; END $body$",
    "DROP TRIGGER IF EXISTS lionmem_items_vector_stale ON lionmem_items",
    "CREATE TRIGGER lionmem_items_vector_stale AFTER UPDATE ON lionmem_items"
    " FOR EACH ROW EXECUTE FUNCTION lionmem_vectors_stale()",
]
_QUEUE: list[LiteralString] = [
    "DROP TRIGGER IF EXISTS lionmem_items_vector_missing ON lionmem_items",
    "CREATE TABLE lionmem_unembedded (namespace text NOT NULL, id uuid NOT NULL, PRIMARY KEY (namespace, id),"
    " FOREIGN KEY (namespace, id) REFERENCES lionmem_items (namespace, id) ON DELETE CASCADE)",
    "CREATE OR REPLACE FUNCTION lionmem_vector_missing() RETURNS trigger LANGUAGE plpgsql AS $body$ BEGIN"
    " IF EXISTS (SELECT FROM lionmem_items WHERE namespace = NEW.namespace AND id = NEW.id)"
    " AND NOT EXISTS (SELECT FROM lionmem_vectors WHERE namespace = NEW.namespace AND id = NEW.id) THEN"
    " INSERT INTO lionmem_unembedded (namespace, id) VALUES (NEW.namespace, NEW.id) ON CONFLICT DO NOTHING;"
    " END IF; RETURN NULL; END $body$",
    "CREATE CONSTRAINT TRIGGER lionmem_items_vector_missing AFTER INSERT OR UPDATE ON lionmem_items"
    " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION lionmem_vector_missing()",
    # The items no vector was made for, or none whose text is known: vectors of
    # version 4 kept no digest, and are made again.
    "INSERT INTO lionmem_unembedded (namespace, id) SELECT namespace, id FROM lionmem_items AS i"
    " WHERE NOT EXISTS (SELECT FROM lionmem_vectors AS v"
    " WHERE v.namespace = i.namespace AND v.id = i.id AND v.digest IS NOT NULL)",
]


async def adopt(conn: psycopg.AsyncConnection[Any], embedder: Embedder, reembed: bool) -> None:
    """Make sure pgvector and the vectors' tables are there, and record `embedder` for
    the database, or check that it is the one recorded (`reembed`: drop every vector,
    to be made again by this one).

    Raises:
        VectorExtensionMissingError: pgvector is not installed in the database and
            this role may not install it.
        EmbedderMismatchError: the database's vectors are another embedder's.
    """
    identity, dimensions = embedder.identity, embedder.dimensions
    async with conn.transaction():
        await conn.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
        await _install_extension(conn)
        recorded = await (await conn.execute("SELECT identity, dimensions FROM lionmem_recall")).fetchone()
        if not reembed:
            refuse_another_embedder(recorded, embedder, "this database")
        made = await (
            await conn.execute("SELECT to_regclass('lionmem_vectors') IS NOT NULL, to_regclass('lionmem_unembedded')")
        ).fetchone()
        assert made is not None  # a SELECT without FROM gives one row
        exists, queued = bool(made[0]), made[1] is not None
        if reembed and exists:
            await conn.execute("DROP TABLE IF EXISTS lionmem_vectors, lionmem_unembedded")
        if reembed or not exists:
            await conn.execute(sql.SQL(_TABLE).format(dimensions=sql.Literal(dimensions)))
            m, construction = GRAPH
            await conn.execute(sql.SQL(_INDEX).format(m=sql.Literal(m), construction=sql.Literal(construction)))
        elif not queued:  # made by a store of schema 4: no digests, no queue
            await conn.execute("ALTER TABLE lionmem_vectors ADD COLUMN digest bytea")
        if reembed or not queued or not exists:
            await conn.execute(_TWINS)
            for statement in (*_STALE, *_QUEUE):
                await conn.execute(statement)
        if recorded != (identity, dimensions):
            await conn.execute(
                "INSERT INTO lionmem_recall (identity, dimensions) VALUES (%s, %s) ON CONFLICT (singleton)"
                " DO UPDATE SET identity = excluded.identity, dimensions = excluded.dimensions",
                [identity, dimensions],
            )


async def _install_extension(conn: psycopg.AsyncConnection[Any]) -> None:
    installed = await (await conn.execute("SELECT FROM pg_extension WHERE extname = 'vector'")).fetchone()
    if installed is not None:
        return
    available = await (await conn.execute("SELECT FROM pg_available_extensions WHERE name = 'vector'")).fetchone()
    if available is None:
        raise VectorExtensionMissingError(
            "this PostgreSQL server has no pgvector (no 'vector' among its available extensions): install "
            "pgvector on the server, such as the postgresql-NN-pgvector package, then have an administrator "
            "run CREATE EXTENSION vector in this database once; every other method works without it"
        )
    try:
        async with conn.transaction():
            await conn.execute("CREATE EXTENSION IF NOT EXISTS vector")
    except psycopg.errors.InsufficientPrivilege:
        found = await (await conn.execute("SELECT current_database(), current_user")).fetchone()
        database, role = found or ("?", "?")
        raise VectorExtensionMissingError(
            f"pgvector is on this server but not installed in database {database!r}, and role {role!r} may "
            f"not install it: an administrator runs CREATE EXTENSION vector in {database!r} once, then "
            "opens the store with the embedder once and grants the role the vectors table"
        ) from None
