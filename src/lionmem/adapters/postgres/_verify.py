"""Checking a PostgreSQL store's namespace whole, on demand: the schema this lionmem
writes, the indexes the server marks valid, the table of metadata values against the
items it was made from, and every vector against its item's text.

Governed by [ADR-0096][adr-0096-damage].
"""

from __future__ import annotations

from typing import Any, LiteralString

import psycopg
from psycopg import sql

from lionmem.adapters._codec import decode_rows
from lionmem.adapters.postgres.schema import values_of
from lionmem.protocols.recall import TextOf, text_digest, text_to_embed

__all__ = ["problems"]

_SCHEMA = {
    "table": ("lionmem_schema", "lionmem_items", "lionmem_meta", "lionmem_recall"),
    "index": (
        "lionmem_items_pkey",
        "lionmem_items_order",
        "lionmem_items_tags",
        "lionmem_items_metadata",
        "lionmem_meta_pkey",
        "lionmem_meta_numbers",
        "lionmem_meta_strings",
    ),
    "trigger": ("lionmem_items_meta", "lionmem_items_meta_changed"),
}
_RECALL = {
    "table": ("lionmem_unembedded",),
    "index": ("lionmem_vectors_pkey", "lionmem_vectors_hnsw", "lionmem_vectors_digest", "lionmem_unembedded_pkey"),
    "trigger": ("lionmem_items_vector_stale", "lionmem_items_vector_missing"),
}
_PRESENT: LiteralString = (
    "SELECT 'table', relname FROM pg_class WHERE relkind = 'r' AND relname LIKE 'lionmem%'"
    " UNION ALL SELECT 'index', relname FROM pg_class WHERE relkind = 'i' AND relname LIKE 'lionmem%'"
    " UNION ALL SELECT 'trigger', tgname FROM pg_trigger WHERE NOT tgisinternal AND tgname LIKE 'lionmem%'"
)
_READ = 2_000


async def problems(
    conn: psycopg.AsyncConnection[Any], namespace: str, text_of: TextOf | None
) -> tuple[list[str], list[str]]:
    """What is wrong with `namespace` and the schema it lives in, each named: the
    damage, and the vectors made from another text than their item's (by `text_of`,
    `str(item.content)` by default), which a recall makes again."""
    present = set(await (await conn.execute(_PRESENT)).fetchall())
    vectors = ("table", "lionmem_vectors") in present
    expected = [
        (kind, name) for part in (_SCHEMA, _RECALL if vectors else {}) for kind, names in part.items() for name in names
    ]
    found = [f"the {kind} {name} is missing" for kind, name in expected if (kind, name) not in present]
    invalid = await conn.execute(
        "SELECT c.relname FROM pg_index AS x JOIN pg_class AS c ON c.oid = x.indexrelid"
        " WHERE c.relname LIKE 'lionmem%' AND NOT x.indisvalid ORDER BY 1"
    )
    found += [
        f"the index {name} is not valid (a failed CREATE INDEX CONCURRENTLY?)" for (name,) in await invalid.fetchall()
    ]
    if found:
        return found, []
    found += await _meta_rows(conn, namespace)
    if not vectors:
        return found, []
    broken, stale = await _vectors(conn, namespace, text_of)
    return found + broken, stale


async def _meta_rows(conn: psycopg.AsyncConnection[Any], namespace: str) -> list[str]:
    """The items whose rows of `lionmem_meta` are not those their metadata makes."""
    differing = sql.SQL(
        "WITH made AS ({values}), kept AS (SELECT namespace, seq, key, num, txt FROM lionmem_meta WHERE namespace = %s)"
        " SELECT DISTINCT i.id::text FROM ((SELECT * FROM made EXCEPT ALL SELECT * FROM kept)"
        " UNION ALL (SELECT * FROM kept EXCEPT ALL SELECT * FROM made)) AS d"
        " LEFT JOIN lionmem_items AS i ON i.namespace = d.namespace AND i.seq = d.seq ORDER BY 1 LIMIT 100"
    ).format(values=values_of("i", "lionmem_items AS i, ", namespace=True))
    rows = await (await conn.execute(differing, [namespace, namespace])).fetchall()
    return [
        f"item {item_id}: its rows of metadata values are not its metadata"
        if item_id
        else "rows of metadata values belong to no item"
        for (item_id,) in rows
    ]


async def _vectors(
    conn: psycopg.AsyncConnection[Any], namespace: str, text_of: TextOf | None
) -> tuple[list[str], list[str]]:
    """Each item with no vector that no queue holds, and each vector made from another
    text than its item's."""
    lost = await conn.execute(
        "SELECT i.id::text FROM lionmem_items AS i WHERE i.namespace = %s"
        " AND NOT EXISTS (SELECT FROM lionmem_vectors AS v WHERE v.namespace = i.namespace AND v.id = i.id)"
        " AND NOT EXISTS (SELECT FROM lionmem_unembedded AS u WHERE u.namespace = i.namespace AND u.id = i.id)"
        " ORDER BY i.seq LIMIT 100",
        [namespace],
    )
    broken = [f"item {item_id}: it has no vector, and waits for none" for (item_id,) in await lost.fetchall()]
    stale: list[str] = []
    after = 0
    while rows := await (
        await conn.execute(
            "SELECT i.seq, i.id::text, i.created_at, i.body, v.digest FROM lionmem_items AS i"
            " JOIN lionmem_vectors AS v ON v.namespace = i.namespace AND v.id = i.id"
            " WHERE i.namespace = %s AND i.seq > %s ORDER BY i.seq LIMIT %s",
            [namespace, after, _READ],
        )
    ).fetchall():
        after = rows[-1][0]
        for row, item in zip(rows, decode_rows([row[1:4] for row in rows]), strict=True):
            if row[4] is not None and bytes(row[4]) != text_digest(text_to_embed(item, text_of)):
                stale.append(f"item {item.id}: its vector was made from another text than its item's")
    return broken, stale
