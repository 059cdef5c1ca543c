"""Semantic recall in the PostgreSQL store, with pgvector: each item's unit vector in
`lionmem_vectors` beside its row, an exact ranking of a filter's matches when they are
few, and the HNSW index, checked again, when they are many.

numpy loads only when a store is opened with an embedder. Governed by
[ADR-0103][adr-0103].

Seam for benchmarks: `_ef_search`, replaced by `bench_recall_pg` to time the index
asked for fewer candidates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, LiteralString

import psycopg
from psycopg import sql
from psycopg.adapt import Dumper
from psycopg.pq import Format

from lionmem.adapters._codec import decode_rows
from lionmem.adapters._embedding import refuse_another_embedder
from lionmem.adapters.postgres._planner import Where, where_of
from lionmem.adapters.postgres.schema import LOCK_KEY
from lionmem.errors import VectorExtensionMissingError
from lionmem.protocols.memory import MemoryItem, MemoryQuery, recall_query
from lionmem.protocols.recall import Embedder, Recalled, TextOf, check_k, unit_vectors
from lionmem.protocols.rules import matches

if TYPE_CHECKING:
    from lionmem._internal.vectors import Matrix

__all__ = ["EXACT_MOST", "VECTOR_UPSERT", "PgVectors", "send_vectors_binary"]

EXACT_MOST: Final = 2_000
"""The most matches a recall ranks exactly by reading them all; past it, the index
serves it."""

_BACKFILL = 500
"""Items read, embedded and written at a time when vectors are missing."""

_FILTERED_EF = 1_000
"""`hnsw.ef_search` for a filtered recall through the index: pgvector's largest, so
that a filter keeping a small share of the candidates still keeps `k`."""

_EF_PER_RESULT = 10
"""`hnsw.ef_search` for an unfiltered recall: this many candidates a result asked
for, at least 100 and at most `_FILTERED_EF`."""

VECTOR_UPSERT: LiteralString = (
    "INSERT INTO lionmem_vectors (namespace, id, embedding) VALUES (%s, %s, %b::vector)"
    " ON CONFLICT (namespace, id) DO UPDATE SET embedding = excluded.embedding"
)
"""Write one item's vector: `(namespace, id, PgVector)`."""

_TABLE: LiteralString = """CREATE TABLE lionmem_vectors (
    namespace text NOT NULL,
    id uuid NOT NULL,
    embedding vector({dimensions}) NOT NULL,
    PRIMARY KEY (namespace, id),
    FOREIGN KEY (namespace, id) REFERENCES lionmem_items (namespace, id) ON DELETE CASCADE
)"""
# The table's HNSW index, built with 40 candidates a step where pgvector's default is
# 64: writes cost about half as much, and the top 10 found stayed the same (ADR-0103
# D3 has the measurements). Then its trigger: a replacement by any client, with an
# embedder or without, drops the old vector in its own transaction; a writer with an
# embedder then writes the new one. So no vector outlives the text it was made from.
_WITH_THE_TABLE: list[LiteralString] = [
    "CREATE INDEX lionmem_vectors_hnsw ON lionmem_vectors USING hnsw (embedding vector_cosine_ops)"
    " WITH (m = 16, ef_construction = 40)",
    "CREATE OR REPLACE FUNCTION lionmem_vectors_stale() RETURNS trigger LANGUAGE plpgsql AS $body$ BEGIN"
    " DELETE FROM lionmem_vectors WHERE namespace = OLD.namespace AND id = OLD.id; RETURN NULL; END $body$",
    "DROP TRIGGER IF EXISTS lionmem_items_vector_stale ON lionmem_items",
    "CREATE TRIGGER lionmem_items_vector_stale AFTER UPDATE ON lionmem_items"
    " FOR EACH ROW EXECUTE FUNCTION lionmem_vectors_stale()",
]

_MISSING: LiteralString = (
    "SELECT i.seq, i.id::text, i.created_at, i.body FROM lionmem_items AS i"
    " WHERE i.namespace = %s AND i.seq > %s AND NOT EXISTS"
    " (SELECT FROM lionmem_vectors AS v WHERE v.namespace = i.namespace AND v.id = i.id)"
    " ORDER BY i.seq LIMIT %s"
)
# Written only while the item still has the text that was embedded, and with its row
# locked, so that a replacement waits and then drops this vector.
_FILL: LiteralString = (
    "INSERT INTO lionmem_vectors (namespace, id, embedding)"
    " SELECT namespace, id, %b::vector FROM lionmem_items WHERE namespace = %s AND id = %s AND body = %s"
    " FOR SHARE ON CONFLICT (namespace, id) DO NOTHING"
)

# `1 - distance`, with the distance to or from a zero vector (NaN) taken as 1, so
# that it scores 0 as in the other stores.
_EXACT_SCORE: LiteralString = "1 - coalesce(nullif(v.embedding <=> %b::vector, 'NaN'), 1)"
_INDEX_SCORE: LiteralString = "1 - coalesce(nullif(c.distance, 'NaN'), 1)"

# The statements' parts, each with a `{}` for what differs between them.
_MATCHES: LiteralString = "SELECT namespace, id, seq, created_at, body FROM lionmem_items WHERE {}"
"""The rows the SQL predicates keep: `{}` is their clause."""
_SCORED: LiteralString = (
    "SELECT i.id::text, i.created_at, i.body, " + _EXACT_SCORE + " AS score, i.seq"
    " FROM {} AS i JOIN lionmem_vectors AS v ON v.namespace = i.namespace AND v.id = i.id"
)
"""Every row of `{}` scored by its vector."""
_CANDIDATES: LiteralString = (
    "SELECT v.namespace, v.id, v.embedding <=> %b::vector AS distance FROM lionmem_vectors AS v{}"
    " ORDER BY v.embedding <=> %b::vector LIMIT %s"
)
"""The HNSW index's candidates, `{}` a condition on them or nothing."""


class PgVector:
    """A vector in pgvector's binary form: dimensions and a reserved zero as two
    big-endian 16-bit ints, then each float as a big-endian float32."""

    __slots__ = ("data",)

    data: bytes

    def __init__(self, data: bytes) -> None:
        self.data = data


class _PgVectorDumper(Dumper):
    # No oid: `vector`'s differs from database to database, so each statement casts
    # its parameter (`%b::vector`) and the server reads the bytes as that type.
    format = Format.BINARY

    def dump(self, obj: PgVector) -> bytes:
        return obj.data


def send_vectors_binary(conn: psycopg.AsyncConnection[Any]) -> None:
    """Let `conn` send `PgVector` parameters. Sent as text, a 256-float vector cost
    about 120 µs to write out in Python and more for the server to parse."""
    conn.adapters.register_dumper(PgVector, _PgVectorDumper)


def pg_vectors(matrix: Matrix) -> list[PgVector]:
    """Each float32 row of `matrix` as a `PgVector`."""
    import numpy as np

    head = np.array([matrix.shape[1], 0], dtype=">u2").tobytes()
    big_endian = matrix.astype(">f4")
    return [PgVector(head + row.tobytes()) for row in big_endian]


@dataclass(frozen=True)
class _Recall:
    """One recall's arguments, checked."""

    vector: PgVector
    k: int
    where: Where
    query: MemoryQuery

    @property
    def filtered(self) -> bool:
        """Whether the recall has tags or filters."""
        return bool(self.query.tags or self.query.filters)

    @property
    def rechecked(self) -> bool:
        """Whether Python decides some predicate on the rows, so SQL cannot cut at `k`."""
        return bool(self.where.recheck or self.where.any_tag)


@dataclass(frozen=True)
class PgVectors:
    """A store's embedder and what it embeds of an item."""

    embedder: Embedder
    text_of: TextOf | None

    async def rows(self, namespace: str, items: Sequence[MemoryItem]) -> list[tuple[object, ...]]:
        """The `VECTOR_UPSERT` parameters of `items`.

        Raises:
            TypeError: `text_of` gave something other than a str.
            ValueError: the embedder gave vectors of another count, length, or with
                NaN or infinity.
        """
        matrix = await unit_vectors(self.embedder, self.text_of, items)
        return [(namespace, item.id, vector) for vector, item in zip(pg_vectors(matrix), items, strict=True)]

    # -- opening ------------------------------------------------------------------

    async def adopt(self, conn: psycopg.AsyncConnection[Any], reembed: bool) -> None:
        """Make sure pgvector and the vectors table are there, and record this embedder
        for the database, or check that it is the one recorded (`reembed`: drop every
        vector, to be made again by this one).

        Raises:
            VectorExtensionMissingError: pgvector is not installed in the database and
                this role may not install it.
            EmbedderMismatchError: the database's vectors are another embedder's.
        """
        identity, dimensions = self.embedder.identity, self.embedder.dimensions
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock(%s)", [LOCK_KEY])
            await _install_extension(conn)
            recorded = await (await conn.execute("SELECT identity, dimensions FROM lionmem_recall")).fetchone()
            if not reembed:
                refuse_another_embedder(recorded, self.embedder, "this database")
            made = await (await conn.execute("SELECT to_regclass('lionmem_vectors') IS NOT NULL")).fetchone()
            exists = bool(made and made[0])
            if reembed and exists:
                await conn.execute("DROP TABLE lionmem_vectors")
            if reembed or not exists:
                await conn.execute(sql.SQL(_TABLE).format(dimensions=sql.Literal(dimensions)))
                for statement in _WITH_THE_TABLE:
                    await conn.execute(statement)
            if recorded != (identity, dimensions):
                await conn.execute(
                    "INSERT INTO lionmem_recall (identity, dimensions) VALUES (%s, %s) ON CONFLICT (singleton)"
                    " DO UPDATE SET identity = excluded.identity, dimensions = excluded.dimensions",
                    [identity, dimensions],
                )

    async def fill(self, conn: psycopg.AsyncConnection[Any], namespace: str) -> None:
        """Embed every item of `namespace` that has no vector (stored without an
        embedder, or replaced by a client without one)."""
        after = 0
        while True:
            rows = await (await conn.execute(_MISSING, [namespace, after, _BACKFILL])).fetchall()
            if not rows:
                return
            after = rows[-1][0]
            items = decode_rows([row[1:] for row in rows])
            vectors = await unit_vectors(self.embedder, self.text_of, items)
            async with conn.transaction(), conn.cursor() as cursor:
                await cursor.executemany(
                    _FILL,
                    [(v, namespace, i.id, row[3]) for v, i, row in zip(pg_vectors(vectors), items, rows, strict=True)],
                )

    # -- recall -------------------------------------------------------------------

    async def asked(self, namespace: str, query: object, k: object, tags: object, filters: object) -> _Recall:
        """A recall's arguments, checked, with the query's vector.

        Raises:
            TypeError, ValueError: as `InMemoryStore.recall` raises them.
        """
        from lionmem._internal.vectors import query_vector

        count = check_k(k)
        checked = recall_query(tags, filters)
        vector = await query_vector(self.embedder, query)
        return _Recall(pg_vectors(vector)[0], count, where_of(namespace, checked), checked)

    async def recall(self, conn: psycopg.AsyncConnection[Any], asked: _Recall) -> list[Recalled]:
        """The top `asked.k`: exactly when at most `EXACT_MOST` items match, else
        through the index, and exactly over every match if the index kept fewer than
        `k` ([ADR-0103][adr-0103-d2])."""
        path, rows = await _first(conn, asked)
        if path == "index" and asked.filtered:
            rows = await (await _execute(conn, *_statement(asked, "index"), _ef_search(asked))).fetchall()
        found = _found(asked, rows)
        if path == "exact" or len(found) >= asked.k:
            return found
        return _found(asked, await (await _execute(conn, *_statement(asked, "every"), None)).fetchall())

    async def explain(self, conn: psycopg.AsyncConnection[Any], asked: _Recall) -> str:
        """The path a recall takes first, and the server's plan for the statement
        that ranks, as run: a branch not taken is marked "never executed"."""
        path, _ = await _first(conn, asked)
        shape = "whole" if not asked.filtered else path
        statement, params = _statement(asked, shape)
        analyzed = sql.SQL("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ") + statement
        ef = None if shape == "exact" else _ef_search(asked)
        rows = await (await _execute(conn, analyzed, params, ef)).fetchall()
        return f"path: {path}\n" + "\n".join(str(row[0]) for row in rows)


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


async def _first(conn: psycopg.AsyncConnection[Any], asked: _Recall) -> tuple[str, list[tuple[Any, ...]]]:
    """The path a recall takes, "exact" when at most `EXACT_MOST` items pass the SQL
    predicates, else "index", and the rows (id, creation time, body, score) of its
    first statement: the ranking, except for a filtered recall through the index,
    which a second statement ranks."""
    if asked.filtered:
        rows = await (await _execute(conn, *_statement(asked, "exact"), None)).fetchall()
    else:
        # Planned once a connection: no value changes its best plan, and planning it
        # took 0.7 ms. A filter's best plan depends on its values, as a search's
        # does (ADR-0097), so a filtered recall is planned afresh each time.
        rows = await (await _execute(conn, *_statement(asked, "whole"), _ef_search(asked), prepare=True)).fetchall()
    path = "exact" if rows[0][0] <= EXACT_MOST else "index"
    return path, [row[1:] for row in rows if row[1] is not None]


def _ef_search(asked: _Recall) -> int:
    """The `hnsw.ef_search` of the index's path."""
    if asked.filtered:
        return _FILTERED_EF
    return min(_FILTERED_EF, max(100, _EF_PER_RESULT * asked.k))


def _statement(asked: _Recall, path: str) -> tuple[sql.Composed, list[object]]:
    """The statement of a path, and its parameters.

    - "exact": the count of the matches up to `EXACT_MOST + 1` in the first column
      of every row; when there are at most `EXACT_MOST`, each is scored (in an order
      the index cannot serve) and the best follow, else one row of the count alone.
      The matches are read once, into `m`, and counted there.
    - "index": the index's candidates, kept by the predicates and ranked again.
    - "whole", for a recall without tags or filters: "exact" or "index" as the
      count decides, in one statement; see `_whole`.
    - "every": every match scored, however many.
    """
    where = asked.where
    cut = sql.SQL("") if asked.rechecked else sql.SQL(" LIMIT %s")
    tail: list[object] = [] if asked.rechecked else [asked.k]
    scored = sql.SQL(_SCORED)
    if path == "whole":
        return _whole(asked, scored)
    if path == "exact":
        statement = sql.SQL(
            "WITH m AS MATERIALIZED (" + _MATCHES + " LIMIT %s), n AS (SELECT count(*) AS matched FROM m)"
            " SELECT n.matched, r.id, r.created_at, r.body, r.score FROM n LEFT JOIN LATERAL"
            " ({} WHERE n.matched <= %s ORDER BY score DESC, i.seq{}) AS r ON true"
            " ORDER BY r.score DESC, r.seq"
        ).format(where.clause, scored.format(sql.SQL("m")), cut)
        return statement, [*where.params, EXACT_MOST + 1, asked.vector, EXACT_MOST, *tail]
    matches = sql.SQL("(" + _MATCHES + ")").format(where.clause)
    if path == "every":
        statement = sql.SQL("SELECT id, created_at, body, score FROM ({} ORDER BY score DESC, i.seq{}) AS r").format(
            scored.format(matches), cut
        )
        return statement, [asked.vector, *where.params, *tail]
    statement = sql.SQL(
        "SELECT i.id::text, i.created_at, i.body, " + _INDEX_SCORE + " AS score FROM (" + _CANDIDATES + ") AS c"
        " JOIN {} AS i ON i.namespace = c.namespace AND i.id = c.id ORDER BY score DESC, i.seq{}"
    ).format(sql.SQL(""), matches, cut)
    return statement, [asked.vector, asked.vector, _ef_search(asked), *where.params, *tail]


def _whole(asked: _Recall, scored: sql.SQL) -> tuple[sql.Composed, list[object]]:
    """The one statement of a recall of the whole namespace, with the count of its
    items up to `EXACT_MOST + 1` in the first column of every row.

    A one-time filter on the count runs one branch: the exact one, which alone reads
    `m` and so fills it only when it runs, or the index's. The count reads the order
    index alone (counting 2,001 whole rows of `m` cost 0.9 ms of a 3.6 ms recall over
    100,000 items). The namespace is the candidates' one predicate, and it is in the
    vectors' own table: so only the best `k` of them, with any tied with the last,
    are joined to their items (joining all 100 cost 0.5 ms)."""
    where = asked.where
    indexed = sql.SQL(
        "SELECT i.id::text, i.created_at, i.body, " + _INDEX_SCORE + " AS score, i.seq"
        " FROM (SELECT c.namespace, c.id, c.distance, rank() OVER (ORDER BY " + _INDEX_SCORE + " DESC) AS place"
        " FROM (" + _CANDIDATES + ") AS c WHERE {}) AS c"
        " JOIN lionmem_items AS i ON i.namespace = c.namespace AND i.id = c.id WHERE c.place <= %s"
    ).format(sql.SQL(" WHERE n.matched > %s"), where.clause)
    statement = sql.SQL(
        "WITH m AS MATERIALIZED (" + _MATCHES + " LIMIT %s),"
        " n AS (SELECT count(*) AS matched FROM (SELECT FROM lionmem_items WHERE {} LIMIT %s) AS g)"
        " SELECT n.matched, r.id, r.created_at, r.body, r.score FROM n LEFT JOIN LATERAL"
        " (({} WHERE n.matched <= %s ORDER BY score DESC, i.seq LIMIT %s)"
        " UNION ALL ({} ORDER BY score DESC, i.seq LIMIT %s)) AS r ON true"
        " ORDER BY r.score DESC, r.seq"
    ).format(where.clause, where.clause, scored.format(sql.SQL("m")), indexed)
    params: list[object] = [*where.params, EXACT_MOST + 1, *where.params, EXACT_MOST + 1]
    params += [asked.vector, EXACT_MOST, asked.k]
    params += [asked.vector, EXACT_MOST, asked.vector, _ef_search(asked), *where.params, asked.k, asked.k]
    return statement, params


async def _execute(
    conn: psycopg.AsyncConnection[Any],
    statement: sql.Composed,
    params: list[object],
    ef: int | None,
    *,
    prepare: bool = False,
) -> psycopg.AsyncCursor[Any]:
    """Run `statement`, prepared or planned afresh; with `ef`, in a transaction that
    sets `hnsw.ef_search` first, the three sent together in one round trip."""
    if ef is None:
        return await conn.execute(statement, params, prepare=prepare)
    async with conn.pipeline(), conn.transaction():
        await conn.execute("SELECT set_config('hnsw.ef_search', %s, true)", [str(ef)])
        return await conn.execute(statement, params, prepare=prepare)


def _found(asked: _Recall, rows: list[tuple[Any, ...]]) -> list[Recalled]:
    """Rows of id, creation time, body and score as the top `asked.k`, rechecked by
    Python's rules where SQL could not decide a predicate."""
    items = decode_rows([row[:3] for row in rows])
    found = [Recalled(item, float(row[3])) for item, row in zip(items, rows, strict=True)]
    if asked.rechecked:
        found = [r for r in found if matches(r.item, asked.query)]
    return found[: asked.k]
