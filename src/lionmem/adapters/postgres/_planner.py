"""How the PostgreSQL store answers a search: which index reads it, and the statement;
the SQL of each predicate is `_conditions`'s. It only plans: the store runs the
`Plan` through `lionmem.adapters.postgres._reads`, as the SQLite store runs its own.

Governed by [ADR-0097][adr-0097]; the table of metadata values that order
comparisons read, by [ADR-0099][adr-0099-d5].
"""

from __future__ import annotations

from decimal import Decimal
from typing import LiteralString, cast

from psycopg import sql

from lionmem._internal.arguments import require_type
from lionmem.adapters._plan import Plan, sql_limit
from lionmem.adapters.postgres._conditions import Where, equal_rows, where_of
from lionmem.protocols.filters import In
from lionmem.protocols.memory import MemoryQuery

_MERGE_MOST = 1_000
"""The largest limit for which each value's first rows are read in order: past it, a
bitmap of the GIN index fetched 20,000 matches in half the time of one probe each
(`benchmarks/bench_operators.py`)."""


def _merged_reads(where: Where, limit: int | None) -> list[tuple[str, LiteralString, str | Decimal]] | None:
    """The ordered reads of `lionmem_meta` that answer a search alone: one for an
    equality filter, one for each member of an `In`, when that filter is the whole
    query and its limit, at most `_MERGE_MOST`, goes into the SQL; `None` otherwise."""
    query = where.query
    if not limit or limit > _MERGE_MOST or query.text or query.tags or where.recheck or len(query.filters or {}) != 1:
        return None
    ((key, value),) = (query.filters or {}).items()
    members = value.values if isinstance(value, In) else (value,)
    reads = [equal_rows(key, member) for member in members]
    if not reads or None in reads:
        return None
    # Members equal to each other (1, 1.0 and True) are one read.
    distinct = dict.fromkeys(cast("list[tuple[LiteralString, str | Decimal]]", reads))
    return [(key, *read) for read in distinct]


def plan_search(
    namespace: str, asked: MemoryQuery, *, newest_first: bool = False, after: int = 0, now: float | None = None
) -> Plan[sql.Composed]:
    """`asked` as SQL over `namespace`'s rows after position `after`, and with `now`
    unexpired at it ([ADR-0105][adr-0105-d2]), in insertion order or, `newest_first`,
    the reverse, and what Python decides on them.

    An equality or `In` filter that is the whole query reads the first `limit` rows
    of each value from `lionmem_meta`'s B-tree, in order, instead of every match from
    the GIN index, which lists them unordered ([ADR-0099][adr-0099-d5])."""
    require_type(asked, "query", MemoryQuery)
    where = where_of(namespace, asked, after, now)
    direction = sql.SQL(" DESC" if newest_first else "")
    params = list(where.params)
    limit = sql_limit(where.query.limit, where.recheck, where.any_tag)
    reads = None if after else _merged_reads(where, limit)
    if reads is not None:
        # Each item has one row a key, holding a number or a string, so distinct reads
        # list distinct items and the join needs no de-duplication.
        # With a time, each value's rows are held to their items' expiry before the
        # limit cuts them, so that an expired item takes no unexpired one's place.
        read = sql.SQL(
            "(SELECT m.seq FROM lionmem_meta AS m{expiry} WHERE m.namespace = %s AND m.key = %s AND m.{column} = %s"
            "{unexpired} ORDER BY m.seq{direction} LIMIT %s)"
        )
        expiry, unexpired = (
            (sql.SQL(""), sql.SQL(""))
            if now is None
            else (
                sql.SQL(" JOIN lionmem_items AS e ON e.namespace = m.namespace AND e.seq = m.seq"),
                sql.SQL(" AND (e.expires_at IS NULL OR e.expires_at > %s)"),
            )
        )
        firsts = [
            read.format(column=sql.Identifier(column), direction=direction, expiry=expiry, unexpired=unexpired)
            for _, column, _ in reads
        ]
        statement = sql.SQL(
            "SELECT i.id::text, i.created_at, i.body FROM ({}) AS m"
            " JOIN lionmem_items AS i ON i.namespace = %s AND i.seq = m.seq ORDER BY m.seq{} LIMIT %s"
        ).format(sql.SQL(" UNION ALL ").join(firsts), direction)
        values: list[object] = []
        for key, _, value in reads:
            values += [namespace, key, value, *([] if now is None else [now]), limit]
        return Plan(statement, [*values, namespace, limit], [], frozenset(), True)
    statement = sql.SQL("SELECT id::text, created_at, body FROM lionmem_items WHERE {} ORDER BY seq{}").format(
        where.clause, direction
    )
    pushed = limit is not None
    if pushed:
        statement += sql.SQL(" LIMIT %s")
        params.append(limit)
    return Plan(statement, params, where.recheck, where.any_tag, pushed)
