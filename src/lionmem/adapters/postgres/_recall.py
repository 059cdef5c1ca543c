"""Semantic recall in the PostgreSQL store, with pgvector: an exact ranking of a filter's
matches when they are few, and the HNSW index's candidates, ranked again exactly,
when they are many; items left without a vector embedded before a recall ranks, and a
vector found made from another text made again.

Governed by [ADR-0103][adr-0103].

Seam for tests: `_recall`, whose `_execute` a test wraps to record the
`hnsw.ef_search` each statement runs with.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final, LiteralString

import psycopg
from psycopg import sql

from lionmem.adapters._codec import decode_rows
from lionmem.adapters.postgres._backfill import FILL, fill
from lionmem.adapters.postgres._conditions import Where, where_of
from lionmem.adapters.postgres._pgvector import PgVector, pg_vectors
from lionmem.adapters.postgres.schema import adopt_vectors
from lionmem.errors import NoEmbedderError
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.recall import (
    Embedder,
    Recalled,
    TextOf,
    check_k,
    check_min_score,
    embed_items,
    recall_query,
    recalled,
    text_digest,
    text_to_embed,
)
from lionmem.protocols.rules import matches

__all__ = [
    "CANDIDATES",
    "EXACT_MOST",
    "MOST_CANDIDATES",
    "PgVectors",
    "recalling",
]

EXACT_MOST: Final = 2_000
"""The most matches a recall ranks exactly by reading them all; past it, the index
serves it."""

CANDIDATES: Final = 400
"""How many candidates a recall asks the HNSW index for, by default: the
`hnsw.ef_search` at which recall@10 on everyday notes met the declared floor of 0.98
([ADR-0103][adr-0103-d3])."""

MOST_CANDIDATES: Final = 1_000
"""pgvector's largest `hnsw.ef_search`, which a filtered recall through the index asks
for: a filter keeping a small share of the candidates still keeps `k`."""

# `1 - distance`, with the distance to or from a zero vector (NaN) taken as 1, so
# that it scores 0 as in the other stores. The server computes each row's distance
# alone, so equal vectors (as equal texts' are: see `VECTOR_UPSERT`) score alike.
_EXACT_SCORE: LiteralString = "1 - coalesce(nullif(v.embedding <=> %b::vector, 'NaN'), 1)"
_INDEX_SCORE: LiteralString = "1 - coalesce(nullif(c.distance, 'NaN'), 1)"

# The statements' parts, each with a `{}` for what differs between them.
_MATCHES: LiteralString = "SELECT namespace, id, seq, created_at, body FROM lionmem_items WHERE {}"
"""The rows the SQL predicates keep: `{}` is their clause."""
_SCORED: LiteralString = (
    "SELECT i.id, i.created_at, i.body, " + _EXACT_SCORE + " AS score, i.seq, v.digest"
    " FROM {} AS i JOIN lionmem_vectors AS v ON v.namespace = i.namespace AND v.id = i.id"
)
"""Every row of `{}` scored by its vector."""
_CANDIDATES: LiteralString = (
    "SELECT v.namespace, v.id, v.digest, v.embedding <=> %b::vector AS distance FROM lionmem_vectors AS v{}"
    " ORDER BY v.embedding <=> %b::vector LIMIT %s"
)
"""The HNSW index's candidates, `{}` a condition on them or nothing."""
_COUNT: LiteralString = (
    "n AS (SELECT ({}) AS matched, EXISTS (SELECT FROM lionmem_unembedded WHERE namespace = %s) AS missing)"
)
"""How many items the predicates keep, counted by `{}` up to `EXACT_MOST + 1`, and
whether the namespace has items waiting for a vector."""


@dataclass(frozen=True)
class _Recall:
    """One recall's arguments, checked."""

    namespace: str
    vector: PgVector
    k: int
    where: Where
    query: MemoryQuery
    candidates: int
    exact: bool
    min_score: float | None
    now: float
    """The call's reading of the clock."""
    expiring: bool = False
    """Whether an item has expired by `now`: `where` then passes over it."""

    @property
    def filtered(self) -> bool:
        """Whether the recall has tags or filters, or must pass over expired items: then
        each candidate's row is checked."""
        return bool(self.query.tags or self.query.filters or self.expiring)

    @property
    def rechecked(self) -> bool:
        """Whether Python decides some predicate on the rows, so SQL cannot cut at `k`."""
        return bool(self.where.recheck or self.where.any_tag)


_Row = tuple[Any, ...]
"""A ranked row: id, creation time, body, score, and the digest of its vector's text."""


@dataclass(frozen=True)
class PgVectors:
    """A store's embedder, what it embeds of an item, and how many candidates it asks
    the index for."""

    embedder: Embedder
    text_of: TextOf | None
    candidates: int = CANDIDATES

    async def rows(self, namespace: str, items: Sequence[MemoryItem]) -> list[dict[str, object]]:
        """The `VECTOR_UPSERT` parameters of `items`.

        Raises:
            TypeError: `text_of` gave something other than a str.
            ValueError: the embedder gave vectors of another count, length, or with
                NaN or infinity.
        """
        vectors, digests = await embed_items(self.embedder, self.text_of, items)
        return [
            {"namespace": namespace, "id": item.id, "vector": vector, "digest": digest}
            for vector, digest, item in zip(pg_vectors(vectors), digests, items, strict=True)
        ]

    async def adopt(self, conn: psycopg.AsyncConnection[Any], reembed: bool) -> None:
        """Make the vectors' tables, and record or check this embedder; see `adopt_vectors`."""
        await adopt_vectors(conn, self.embedder, reembed)

    async def fill(self, conn: psycopg.AsyncConnection[Any], namespace: str) -> None:
        """Embed every item of `namespace` waiting for a vector."""
        await fill(conn, namespace, self.embedder, self.text_of)

    async def asked(
        self,
        namespace: str,
        query: object,
        k: object,
        tags: object,
        filters: object,
        exact: object,
        now: float,
        min_score: object = None,
    ) -> _Recall:
        """A recall's arguments, checked, with the query's vector and the clock's reading.

        Raises:
            TypeError, ValueError: as `InMemoryStore.recall` raises them; `exact` is
                not a bool.
        """
        from lionmem._internal.arguments import require_type
        from lionmem._internal.vectors import query_vector

        count = check_k(k)
        checked = recall_query(tags, filters)
        require_type(exact, "exact", bool)
        floor = check_min_score(min_score)
        vector = await query_vector(self.embedder, query)
        where = where_of(namespace, checked)
        return _Recall(
            namespace, pg_vectors(vector)[0], count, where, checked, self.candidates, bool(exact), floor, now
        )

    async def recall(self, conn: psycopg.AsyncConnection[Any], asked: _Recall) -> list[Recalled]:
        """The top `asked.k` ([ADR-0103][adr-0103-d2]): exactly when at most
        `EXACT_MOST` items match or `exact` was asked, else through the index, and
        exactly over every match if the index kept fewer than `k`. Items waiting for a
        vector are embedded first; a result whose vector was made from another text
        has it made again, and the recall runs again."""
        asked = await _expiring(conn, asked)
        filled = False
        while True:
            path, rows, missing = await _first(conn, asked)
            if missing and not filled:
                await self.fill(conn, asked.namespace)
                filled = True
                continue
            if path == "index" and asked.filtered:
                rows = await _more_candidates(conn, asked, rows)
            found = _found(asked, rows)
            if path == "index" and len(found) < asked.k:
                found = _found(asked, await (await _execute(conn, *_statement(asked, "every", 0), None)).fetchall())
            if not await self._made_again(conn, asked, found):
                return recalled(((item, score) for item, score, _ in found), asked.min_score)

    async def _made_again(
        self, conn: psycopg.AsyncConnection[Any], asked: _Recall, found: list[tuple[MemoryItem, float, bytes]]
    ) -> bool:
        """Make again the vectors of `found` made from another text than their
        item's now, each written only while its item still holds the text embedded;
        return whether there were any."""
        stale = [item.id for item, _, made in found if text_digest(text_to_embed(item, self.text_of)) != made]
        if not stale:
            return False
        cursor = await conn.execute(
            "SELECT id::text, created_at, body FROM lionmem_items WHERE namespace = %s AND id = ANY(%s)",
            [asked.namespace, stale],
        )
        rows = await cursor.fetchall()
        items = decode_rows(rows)
        vectors, digests = await embed_items(self.embedder, self.text_of, items)
        written = [
            {"vector": vector, "digest": digest, "namespace": asked.namespace, "id": item.id, "body": row[2]}
            for vector, digest, item, row in zip(pg_vectors(vectors), digests, items, rows, strict=True)
        ]
        async with conn.transaction(), conn.cursor() as writing:
            await writing.executemany(FILL, written)
        return True

    async def explain(self, conn: psycopg.AsyncConnection[Any], asked: _Recall) -> str:
        """The path a recall takes first, and the server's plan for the statement
        that ranks, as run: a branch not taken is marked "never executed"."""
        asked = await _expiring(conn, asked)
        path, _, _ = await _first(conn, asked)
        shape = "every" if asked.exact else "filtered" if asked.filtered else "whole"
        statement, params = _statement(asked, shape, _ef_search(asked))
        analyzed = sql.SQL("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) ") + statement
        ef = None if shape == "every" else _ef_search(asked)
        rows = await (await _execute(conn, analyzed, params, ef)).fetchall()
        return f"path: {path}\n" + "\n".join(str(row[0]) for row in rows)


async def _expiring(conn: psycopg.AsyncConnection[Any], asked: _Recall) -> _Recall:
    """`asked`, held to its items' expiry when an item of the namespace has expired by
    its time (one probe of the expiry index); else as before, planned once unfiltered."""
    cursor = await conn.execute(
        "SELECT EXISTS (SELECT FROM lionmem_items WHERE namespace = %s AND expires_at <= %s)",
        [asked.namespace, asked.now],
    )
    found = await cursor.fetchone()
    if not (found and found[0]):
        return asked
    return replace(asked, where=where_of(asked.namespace, asked.query, now=asked.now), expiring=True)


async def _first(conn: psycopg.AsyncConnection[Any], asked: _Recall) -> tuple[str, list[_Row], bool]:
    """The path a recall takes ("exact" when `exact` was asked or at most
    `EXACT_MOST` items pass the SQL predicates, else "index"), the rows of its first
    statement (the ranking, except for a filtered recall through the index, which a
    second statement ranks), and whether the namespace has items waiting for a
    vector."""
    if asked.exact:
        rows = await (await _execute(conn, *_statement(asked, "every", 0), None)).fetchall()
        waiting = await (
            await conn.execute("SELECT EXISTS (SELECT FROM lionmem_unembedded WHERE namespace = %s)", [asked.namespace])
        ).fetchone()
        return "exact", rows, bool(waiting and waiting[0])
    if asked.filtered:
        ef = _ef_search(asked)
        rows = await (await _execute(conn, *_statement(asked, "filtered", ef), ef)).fetchall()
    else:
        # Planned once a connection: no value changes its best plan, and planning it
        # took 0.7 ms. A filter's best plan depends on its values, as a search's
        # does (ADR-0097), so a filtered recall is planned afresh each time.
        rows = await (
            await _execute(conn, *_statement(asked, "whole", _ef_search(asked)), _ef_search(asked), prepare=True)
        ).fetchall()
    path = "exact" if rows[0][0] <= EXACT_MOST else "index"
    return path, [row[2:] for row in rows if row[2] is not None], bool(rows[0][1])


async def _more_candidates(conn: psycopg.AsyncConnection[Any], asked: _Recall, rows: list[_Row]) -> list[_Row]:
    """`rows`, ranked from the store's count of the index's candidates, or, when the
    filter kept fewer than `_KEPT_A_RESULT` of them for each result asked, the rows
    ranked from pgvector's largest count."""
    kept = rows[0][5] if rows else 0
    if kept >= _KEPT_A_RESULT * asked.k or _ef_search(asked) >= MOST_CANDIDATES:
        return rows
    return await (await _execute(conn, *_statement(asked, "index", MOST_CANDIDATES), MOST_CANDIDATES)).fetchall()


_KEPT_A_RESULT = 2
"""How many of the index's candidates a filter must keep for each result asked, for
their best to be taken as the filter's best: fewer, and the index is asked for more.
On 100,000 everyday notes, a filter keeping the newest twentieth: at 10, recall@10
0.995 in 53 ms (every question asked twice); at 2, 0.993 in 31 ms; never asking
twice, 0.987 in 21 ms."""


def _ef_search(asked: _Recall) -> int:
    """The `hnsw.ef_search` a recall through the index asks first: the store's count of
    candidates, and at least `k`."""
    return min(MOST_CANDIDATES, max(asked.candidates, asked.k))


def _statement(asked: _Recall, path: str, ef: int) -> tuple[sql.Composed, list[object]]:
    """The statement of a path, and its parameters.

    - "filtered": the count of the matches up to `EXACT_MOST + 1` and whether items
      wait for a vector, in the first two columns of every row; when there are at
      most `EXACT_MOST` matches, each is scored (in an order the index cannot serve)
      and the best follow, else `ef` of the index's candidates that the predicates
      keep, as "index" ranks them. A one-time filter on the count runs one branch;
      the matches' keys are read once, into `m`, and only those ranked read whole.
    - "index": `ef` of the index's candidates, each checked against the predicates
      on its own row, ranked again, with how many the predicates kept.
    - "whole", for a recall without tags or filters: "exact" or "index" as the
      count decides, in one statement; see `_whole`.
    - "every": every match scored, however many.
    """
    where = asked.where
    cut = sql.SQL("") if asked.rechecked else sql.SQL(" LIMIT %s")
    tail: list[object] = [] if asked.rechecked else [asked.k]
    if path == "whole":
        return _whole(asked, sql.SQL(_SCORED))
    if path == "filtered":
        ranked = sql.SQL(
            "(SELECT i.namespace, i.id, i.seq, " + _EXACT_SCORE + " AS score, v.digest, NULL::bigint AS kept"
            " FROM m JOIN lionmem_items AS i ON i.namespace = m.namespace AND i.seq = m.seq"
            " JOIN lionmem_vectors AS v ON v.namespace = i.namespace AND v.id = i.id"
            " WHERE (SELECT matched FROM n) <= %s ORDER BY score DESC, i.seq{})"
        ).format(cut)
        indexed, index_params = _kept_candidates(asked, ef, sql.SQL(" WHERE (SELECT matched FROM n) > %s"))
        # The matches' positions alone: with their ids too, the planner read a filter on
        # the newest twentieth of 100,000 items by scanning every item (33 ms, not 3).
        statement = sql.SQL(
            "WITH m AS MATERIALIZED (SELECT namespace, seq FROM lionmem_items WHERE {} LIMIT %s), "
            + _COUNT.format("SELECT count(*) FROM m")
            + ", r AS ({} UNION ALL ({}))"
            " SELECT n.matched, n.missing, i.id::text, i.created_at, i.body, r.score, r.digest, r.kept FROM n"
            " LEFT JOIN (r JOIN lionmem_items AS i ON i.namespace = r.namespace AND i.id = r.id) ON true"
            " ORDER BY r.score DESC, r.seq"
        ).format(where.clause, ranked, indexed)
        params = [*where.params, EXACT_MOST + 1, asked.namespace, asked.vector, EXACT_MOST, *tail]
        return statement, [*params, *index_params[:1], EXACT_MOST, *index_params[1:]]
    if path == "every":
        matches = sql.SQL("(" + _MATCHES + ")").format(where.clause)
        statement = sql.SQL(
            "SELECT id::text, created_at, body, score, digest FROM ({} ORDER BY score DESC, seq{}) AS r"
        ).format(sql.SQL(_SCORED).format(matches), cut)
        return statement, [asked.vector, *where.params, *tail]
    indexed, params = _kept_candidates(asked, ef, sql.SQL(""))
    statement = sql.SQL(
        "SELECT i.id::text, i.created_at, i.body, r.score, r.digest, r.kept FROM ({}) AS r"
        " JOIN lionmem_items AS i ON i.namespace = r.namespace AND i.id = r.id ORDER BY r.score DESC, r.seq"
    ).format(indexed)
    return statement, params


def _kept_candidates(asked: _Recall, ef: int, condition: sql.Composable) -> tuple[sql.Composed, list[object]]:
    """`ef` of the index's candidates (`condition` on their scan) that the predicates
    keep, each checked on its own row, ranked again: namespace, id, position, score,
    digest, and how many the predicates kept. Parameters: the vector, then any of
    `condition`'s, then the rest."""
    where = asked.where
    cut = sql.SQL("") if asked.rechecked else sql.SQL(" LIMIT %s")
    # Each candidate's own row is checked, by its key: `OFFSET 0` keeps the planner
    # from joining the candidates to every match instead, which read all 10,000 items
    # a filter keeping half of 20,000 matched.
    statement = sql.SQL(
        "SELECT c.namespace, c.id, i.seq, c.score, c.digest, count(*) OVER () AS kept"
        " FROM (SELECT c.namespace, c.id, c.digest, " + _INDEX_SCORE + " AS score FROM (" + _CANDIDATES + ") AS c) AS c"
        " CROSS JOIN LATERAL (SELECT seq FROM lionmem_items"
        " WHERE lionmem_items.namespace = c.namespace AND lionmem_items.id = c.id AND {} OFFSET 0) AS i"
        " ORDER BY c.score DESC, i.seq{}"
    ).format(condition, where.clause, cut)
    return statement, [asked.vector, asked.vector, ef, *where.params, *([] if asked.rechecked else [asked.k])]


def _whole(asked: _Recall, scored: sql.SQL) -> tuple[sql.Composed, list[object]]:
    """The one statement of a recall of the whole namespace, with the count of its
    items up to `EXACT_MOST + 1` and whether items wait for a vector in the first
    two columns of every row.

    A one-time filter on the count runs one branch: the exact one, which alone reads
    `m` and so fills it only when it runs, or the index's. The count reads the order
    index alone (counting 2,001 whole rows of `m` cost 0.9 ms of a 3.6 ms recall over
    100,000 items). The namespace is the candidates' one predicate, and it is in the
    vectors' own table: so only the best `k` of them, with any tied with the last,
    are joined to their items (joining all 100 cost 0.5 ms)."""
    where = asked.where
    indexed = sql.SQL(
        "SELECT i.id, i.created_at, i.body, c.score, i.seq, c.digest"
        " FROM (SELECT c.namespace, c.id, c.digest, c.score, rank() OVER (ORDER BY c.score DESC) AS place"
        " FROM (SELECT c.namespace, c.id, c.digest, " + _INDEX_SCORE + " AS score"
        " FROM (" + _CANDIDATES + ") AS c WHERE {}) AS c) AS c"
        " JOIN lionmem_items AS i ON i.namespace = c.namespace AND i.id = c.id WHERE c.place <= %s"
    ).format(sql.SQL(" WHERE (SELECT matched FROM n) > %s"), where.clause)
    counted = "SELECT count(*) FROM (SELECT FROM lionmem_items WHERE {} LIMIT %s) AS g"
    statement = sql.SQL(
        "WITH m AS MATERIALIZED (" + _MATCHES + " LIMIT %s), " + _COUNT.format(counted) + ","
        " r AS (({} WHERE (SELECT matched FROM n) <= %s ORDER BY score DESC, seq LIMIT %s)"
        " UNION ALL ({} ORDER BY score DESC, seq LIMIT %s))"
        " SELECT n.matched, n.missing, r.id::text, r.created_at, r.body, r.score, r.digest"
        " FROM n LEFT JOIN r ON true ORDER BY r.score DESC, r.seq"
    ).format(where.clause, where.clause, scored.format(sql.SQL("m")), indexed)
    params: list[object] = [*where.params, EXACT_MOST + 1, *where.params, EXACT_MOST + 1, asked.namespace]
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


def _found(asked: _Recall, rows: list[_Row]) -> list[tuple[MemoryItem, float, bytes]]:
    """Rows of id, creation time, body, score and digest as the top `asked.k`, each
    item with its score and its vector's digest, rechecked by Python's rules where SQL
    could not decide a predicate."""
    items = decode_rows([row[:3] for row in rows])
    found = [(item, float(row[3]), bytes(row[4] or b"")) for item, row in zip(items, rows, strict=True)]
    if asked.rechecked:
        found = [entry for entry in found if matches(entry[0], asked.query)]
    return found[: asked.k]


def recalling(vectors: PgVectors | None) -> PgVectors:
    """The recall of a store opened with an embedder.

    Raises:
        NoEmbedderError: the store was opened without one.
    """
    if vectors is None:
        raise NoEmbedderError(
            "this PostgresMemoryStore was opened without an embedder: PostgresMemoryStore.open(..., embedder=...)"
        )
    return vectors
