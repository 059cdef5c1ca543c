"""How the PostgreSQL store writes an item: the row, the tags its index holds, and
the statements that write a batch or delete.

Governed by [ADR-0097][adr-0097].

Seam for tests: `_writes`, whose tag keys the tests compute to read the column.
"""

from __future__ import annotations

import hashlib
from typing import Any, LiteralString

import psycopg

from lionmem._internal.json_values import dumps
from lionmem.adapters._codec import EncodedItem, encode_item
from lionmem.protocols.hybrid import term_counts
from lionmem.protocols.memory import MemoryItem

# Two int4 keys: a space apart from the single bigint key of the schema lock.
BATCH_LOCK: LiteralString = "SELECT pg_advisory_xact_lock(%s, hashtext(%s))"

UPSERT: LiteralString = """
    INSERT INTO lionmem_items (namespace, id, created_at, body, folded, tags, metadata, expires_at)
    VALUES (%s, %s, %s, %s, %s, %s, %s::jsonb, %s)
    ON CONFLICT (namespace, id) DO UPDATE SET
        created_at = excluded.created_at, body = excluded.body, folded = excluded.folded,
        tags = excluded.tags, metadata = excluded.metadata, expires_at = excluded.expires_at
"""


INDEXED_TAG_BYTES = 2_000
TAG_DIGEST = "\x01sha256:"
INDEXED_KEY_BYTES = 1_000
"""The longest metadata key, in UTF-8, whose values `lionmem_meta` holds."""
INDEXED_TEXT = 200
"""How many characters of a string value `lionmem_meta` holds."""


def tag_key(tag: str) -> str:
    """What the `tags` column, and so its GIN index, holds for `tag`: the tag itself,
    or for a tag over `INDEXED_TAG_BYTES` in UTF-8, `TAG_DIGEST` and its SHA-256.
    A GIN entry holds at most about 2,700 bytes; a longer tag failed the whole write
    ("index row size exceeds maximum"). The item's tags themselves are in its body."""
    if len(tag) <= INDEXED_TAG_BYTES // 4:  # 4 bytes a character at most
        return tag
    encoded = tag.encode()
    if len(encoded) <= INDEXED_TAG_BYTES:
        return tag
    return TAG_DIGEST + hashlib.sha256(encoded).hexdigest()


def item_row(namespace: str, item: MemoryItem) -> tuple[object, ...]:
    """The parameters of `UPSERT` but the expiry, taken whole now: the metadata is
    written out here rather than wrapped, so a change to the item before the statement
    runs reaches neither the body nor the indexed metadata."""
    # PostgreSQL text cannot hold U+0000, so such strings are refused up front.
    encoded: EncodedItem = encode_item(item, allow_nul=False)
    return (
        namespace,
        item.id,
        encoded.created_at,
        encoded.body,
        encoded.folded,
        [tag_key(tag) for tag in item.tags],
        dumps(item.metadata),
    )


async def write_batch(
    conn: psycopg.AsyncConnection[Any],
    *,
    namespace: str,
    rows: list[tuple[object, ...]],
    lock_key: int,
    expires: float | None = None,
    vectors: tuple[LiteralString, list[dict[str, object]]] | None = None,
) -> None:
    """Insert or replace `rows` (`item_row`'s) in one transaction on `conn`, each
    expiring at `expires` (never, for `None`), holding the namespace's batch lock, the
    advisory lock `(lock_key, hashtext(namespace))`; with `vectors`, a statement and
    its rows, the items' vectors after them."""
    async with conn.transaction(), conn.cursor() as cursor:
        # Two batches sharing ids could lock those rows in opposite orders and
        # deadlock; one batch per namespace at a time cannot.
        await cursor.execute(BATCH_LOCK, [lock_key, namespace])
        await cursor.executemany(UPSERT, [(*row, expires) for row in rows])
        await write_terms(cursor, namespace, rows)
        if vectors is not None:
            await cursor.executemany(*vectors)


_UNTERM: LiteralString = (
    "DELETE FROM lionmem_terms AS t USING lionmem_items AS i"
    " WHERE i.namespace = %s AND i.id = ANY(%s) AND t.namespace = i.namespace AND t.seq = i.seq"
)
_TERM: LiteralString = (
    "INSERT INTO lionmem_terms (namespace, term, seq, tf)"
    " SELECT i.namespace, x.term, i.seq, x.tf FROM unnest(%s::uuid[], %s::text[], %s::int[]) AS x (id, term, tf)"
    " JOIN lionmem_items AS i ON i.namespace = %s AND i.id = x.id"
)


async def write_terms(cursor: psycopg.AsyncCursor[Any], namespace: str, rows: list[tuple[object, ...]]) -> None:
    """Replace the term index rows of the items `rows` wrote (`item_row`'s), two
    statements a batch ([ADR-0104][adr-0104]); an item written twice holds its last
    text's terms."""
    last = {row[1]: str(row[4]) for row in rows}
    await cursor.execute(_UNTERM, [namespace, list(last)])
    made = [(item_id, term, tf) for item_id, folded in last.items() for term, tf in term_counts(folded).items()]
    await cursor.execute(_TERM, [[m[0] for m in made], [m[1] for m in made], [m[2] for m in made], namespace])
