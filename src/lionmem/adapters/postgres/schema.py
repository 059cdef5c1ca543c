"""The PostgreSQL store's schema: its version, its tables and indexes, the migration
of an older database, and the tables of recall.

Recall's tables need pgvector and the embedder's dimensions, so the first store
opened with an embedder makes them (`adopt_vectors`): pgvector installed where the
role may, each item's vector with the digest of its text, the HNSW index, the queue
of items that have no vector, and the triggers that keep both true for every
client's writes.

Governed by [ADR-0097][adr-0097]; the table of metadata values that order
comparisons read, by [ADR-0099][adr-0099-d5]; recall's tables and the record of the
embedder, by [ADR-0103][adr-0103-d1].
"""

from __future__ import annotations

from typing import Any, Final, LiteralString

import psycopg
from psycopg import sql

from lionmem.adapters._embedding import refuse_another_embedder
from lionmem.adapters.postgres._writes import INDEXED_KEY_BYTES, INDEXED_TAG_BYTES, INDEXED_TEXT, tag_key
from lionmem.errors import IncompatibleDatabaseError, MissingSchemaError, VectorExtensionMissingError
from lionmem.protocols.hybrid import term_counts
from lionmem.protocols.recall import Embedder

__all__ = ["SCHEMA_VERSION"]

SCHEMA_VERSION: Final = 6
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
    "CREATE INDEX lionmem_items_metadata ON lionmem_items USING gin (metadata jsonb_path_ops)" + _GIN_OPTIONS,
]
# Version 3: each number, bool and string of an item's metadata as a row that a
# B-tree orders, for order comparisons (ADR-0099 D5). Triggers keep the rows, so that
# every write and delete, by any client, keeps them alike. A string is kept to its
# first INDEXED_TEXT characters and a key over INDEXED_KEY_BYTES is left out, so that
# an index entry stays under PostgreSQL's limit of about 2,700 bytes.
_VALUES = sql.SQL(
    "SELECT {item}.namespace, {item}.seq, e.key,"
    " CASE jsonb_typeof(e.value) WHEN 'number' THEN e.value::numeric"
    " WHEN 'boolean' THEN e.value::boolean::int END,"
    " CASE jsonb_typeof(e.value) WHEN 'string' THEN left(e.value #>> '{{}}', {text}) END"
    " FROM {rows}jsonb_each({item}.metadata) AS e"
    " WHERE jsonb_typeof(e.value) IN ('number', 'boolean', 'string') AND octet_length(e.key) <= {key}"
)


def values_of(item: LiteralString, rows: LiteralString = "", *, namespace: bool = False) -> sql.Composed:
    """The `lionmem_meta` rows of the `lionmem_items` row called `item`, joined
    laterally to `rows` when given; with `namespace`, of the items of the namespace a
    parameter names."""
    values = _VALUES.format(
        item=sql.SQL(item), rows=sql.SQL(rows), text=sql.Literal(INDEXED_TEXT), key=sql.Literal(INDEXED_KEY_BYTES)
    )
    return values + sql.SQL(" AND {}.namespace = %s").format(sql.SQL(item)) if namespace else values


_META: list[sql.SQL | sql.Composed] = [
    sql.SQL(
        """CREATE TABLE lionmem_meta (
        namespace text NOT NULL,
        seq bigint NOT NULL,
        key text NOT NULL,
        num numeric,
        txt text COLLATE "C",
        PRIMARY KEY (namespace, seq, key)
    )"""
    ),
    sql.SQL("CREATE INDEX lionmem_meta_numbers ON lionmem_meta (namespace, key, num, seq) WHERE num IS NOT NULL"),
    sql.SQL("CREATE INDEX lionmem_meta_strings ON lionmem_meta (namespace, key, txt, seq) WHERE txt IS NOT NULL"),
    sql.SQL(
        "CREATE FUNCTION lionmem_meta_write() RETURNS trigger LANGUAGE plpgsql AS $body$ BEGIN"
        " IF TG_OP <> 'INSERT' THEN"
        " DELETE FROM lionmem_meta WHERE namespace = OLD.namespace AND seq = OLD.seq; END IF;"
        " IF TG_OP <> 'DELETE' THEN INSERT INTO lionmem_meta (namespace, seq, key, num, txt) {values}; END IF;"
        " RETURN NULL; END $body$"
    ).format(values=values_of("NEW")),
    sql.SQL(
        "CREATE TRIGGER lionmem_items_meta AFTER INSERT OR DELETE ON lionmem_items"
        " FOR EACH ROW EXECUTE FUNCTION lionmem_meta_write()"
    ),
    sql.SQL(
        "CREATE TRIGGER lionmem_items_meta_changed AFTER UPDATE OF metadata ON lionmem_items"
        " FOR EACH ROW WHEN (OLD.metadata IS DISTINCT FROM NEW.metadata) EXECUTE FUNCTION lionmem_meta_write()"
    ),
]


# Version 4: which embedder made the database's vectors (ADR-0103). The vectors'
# own table needs pgvector and the embedder's dimensions, so the first store opened
# with an embedder creates it (lionmem.adapters.postgres._recall).
_RECALL: LiteralString = """CREATE TABLE lionmem_recall (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    identity text NOT NULL,
    dimensions integer NOT NULL
)"""


# Version 5: hybrid recall's term index (ADR-0104), a row for each distinct term of
# each item's text. Its terms are Python's, so the writes make its rows; a trigger
# drops them with their item, whoever deletes it.
_TERMS: list[LiteralString] = [
    """CREATE TABLE lionmem_terms (
        namespace text NOT NULL,
        term text NOT NULL,
        seq bigint NOT NULL,
        tf integer NOT NULL,
        PRIMARY KEY (namespace, term, seq)
    )""",
    "CREATE INDEX lionmem_terms_items ON lionmem_terms (namespace, seq)",
    "CREATE FUNCTION lionmem_terms_drop() RETURNS trigger LANGUAGE plpgsql AS $body$ BEGIN"
    " DELETE FROM lionmem_terms WHERE namespace = OLD.namespace AND seq = OLD.seq; RETURN NULL; END $body$",
    "CREATE TRIGGER lionmem_items_terms AFTER DELETE ON lionmem_items"
    " FOR EACH ROW EXECUTE FUNCTION lionmem_terms_drop()",
]


async def _index_terms(conn: psycopg.AsyncConnection[Any]) -> None:
    """Version 5: the term index, and its rows for the items already stored."""
    for statement in _TERMS:
        await conn.execute(statement)
    after = 0
    while rows := await (
        await conn.execute(
            "SELECT namespace, seq, folded FROM lionmem_items WHERE seq > %s ORDER BY seq LIMIT 2000", [after]
        )
    ).fetchall():
        after = rows[-1][1]
        made = [(ns, seq, term, tf) for ns, seq, folded in rows for term, tf in term_counts(folded).items()]
        async with conn.cursor() as cursor:
            await cursor.executemany(
                "INSERT INTO lionmem_terms (namespace, seq, term, tf) VALUES (%s, %s, %s, %s)", made
            )


_EXPIRY: list[LiteralString] = [
    "ALTER TABLE lionmem_items ADD COLUMN expires_at double precision",
    "CREATE INDEX lionmem_items_expiring ON lionmem_items (namespace, expires_at) WHERE expires_at IS NOT NULL",
]
"""Version 6: an item's expiry, UTC seconds or NULL for none ([ADR-0105][adr-0105-d2]),
and the index a sweep finds what expired by. Adding a column rewrites no row."""


async def _expiry(conn: psycopg.AsyncConnection[Any]) -> None:
    """Version 6: the expiry column and its index and, where recall's tables are, its
    triggers made again to ignore a change of expiry alone, which leaves an item's
    vector as good as it was."""
    for statement in _EXPIRY:
        await conn.execute(statement)
    queued = await (await conn.execute("SELECT to_regclass('lionmem_unembedded') IS NOT NULL")).fetchone()
    if queued and queued[0]:
        for statement in (*_STALE, *_QUEUE_TRIGGER):
            await conn.execute(statement)


async def _index_values(conn: psycopg.AsyncConnection[Any]) -> None:
    """Version 3: the `lionmem_meta` table and its triggers, and its rows for the
    items already stored."""
    for statement in _META:
        await conn.execute(statement)
    await conn.execute(
        sql.SQL("INSERT INTO lionmem_meta (namespace, seq, key, num, txt) {}").format(
            values_of("i", "lionmem_items AS i, ")
        )
    )


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
            await _index_values(conn)
            await conn.execute(_RECALL)
            await _index_terms(conn)
            await _expiry(conn)
            try:
                async with conn.transaction():
                    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
                    await conn.execute(_TRIGRAM_INDEX)
            except psycopg.Error:
                pass  # no pg_trgm here: text search scans, with the same results
            await conn.execute("INSERT INTO lionmem_schema (version) VALUES (%s)", [SCHEMA_VERSION])
        elif version < SCHEMA_VERSION:
            if version < 2:
                await _digest_long_tags(conn)
            if version < 3:
                await _index_values(conn)
            if version < 4:
                await conn.execute(_RECALL)
            if version < 5:
                await _index_terms(conn)
            await _expiry(conn)
            await conn.execute("UPDATE lionmem_schema SET version = %s", [SCHEMA_VERSION])
        indexed = await (
            await conn.execute("SELECT count(*) FROM pg_indexes WHERE indexname = 'lionmem_items_text'")
        ).fetchone()
        return bool(indexed and indexed[0])


# -- recall's tables ---------------------------------------------------------------
_ITEM_COLUMNS: LiteralString = "created_at, body, folded, tags, metadata"
"""The columns a replacement writes: a change of them may change what is embedded.
An item's expiry is not among them (version 6)."""

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
    "CREATE TRIGGER lionmem_items_vector_stale AFTER UPDATE OF " + _ITEM_COLUMNS + " ON lionmem_items"
    " FOR EACH ROW EXECUTE FUNCTION lionmem_vectors_stale()",
]
_QUEUE_TRIGGER: list[LiteralString] = [
    "DROP TRIGGER IF EXISTS lionmem_items_vector_missing ON lionmem_items",
    "CREATE CONSTRAINT TRIGGER lionmem_items_vector_missing AFTER INSERT OR UPDATE OF " + _ITEM_COLUMNS + ""
    " ON lionmem_items DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION lionmem_vector_missing()",
]
_QUEUE: list[LiteralString] = [
    "CREATE TABLE lionmem_unembedded (namespace text NOT NULL, id uuid NOT NULL, PRIMARY KEY (namespace, id),"
    " FOREIGN KEY (namespace, id) REFERENCES lionmem_items (namespace, id) ON DELETE CASCADE)",
    "CREATE OR REPLACE FUNCTION lionmem_vector_missing() RETURNS trigger LANGUAGE plpgsql AS $body$ BEGIN"
    " IF EXISTS (SELECT FROM lionmem_items WHERE namespace = NEW.namespace AND id = NEW.id)"
    " AND NOT EXISTS (SELECT FROM lionmem_vectors WHERE namespace = NEW.namespace AND id = NEW.id) THEN"
    " INSERT INTO lionmem_unembedded (namespace, id) VALUES (NEW.namespace, NEW.id) ON CONFLICT DO NOTHING;"
    " END IF; RETURN NULL; END $body$",
    *_QUEUE_TRIGGER,
    # The items no vector was made for, or none whose text is known: vectors of
    # version 4 kept no digest, and are made again.
    "INSERT INTO lionmem_unembedded (namespace, id) SELECT namespace, id FROM lionmem_items AS i"
    " WHERE NOT EXISTS (SELECT FROM lionmem_vectors AS v"
    " WHERE v.namespace = i.namespace AND v.id = i.id AND v.digest IS NOT NULL)",
]


async def adopt_vectors(conn: psycopg.AsyncConnection[Any], embedder: Embedder, reembed: bool) -> None:
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
