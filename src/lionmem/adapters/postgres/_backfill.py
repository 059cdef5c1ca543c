"""Embedding what has no vector: the items of a namespace in the queue that the
triggers keep (written by a client without an embedder, or before any vector was
made), embedded a batch at a time and written only while the item still holds the
text that was embedded.

Governed by [ADR-0103][adr-0103-d1].
"""

from __future__ import annotations

from typing import Any, LiteralString

import psycopg

from lionmem.adapters._codec import decode_rows
from lionmem.adapters.postgres._pgvector import pg_vectors
from lionmem.protocols.recall import Embedder, TextOf, embed_items

__all__ = ["FILL", "VECTOR_UPSERT", "fill"]

BATCH = 500
"""Items read, embedded and written at a time."""

# An item whose text another item of the namespace already holds takes that item's
# vector, bit for bit, so that equal texts score exactly alike: an embedder need not
# give one text the same floats twice (a hosted model may not).
_TWIN: LiteralString = (
    "coalesce((SELECT t.embedding FROM lionmem_vectors AS t"
    " WHERE t.namespace = %(namespace)s AND t.digest = %(digest)s AND t.id <> %(id)s LIMIT 1), %(vector)b::vector)"
)

VECTOR_UPSERT: LiteralString = (
    "INSERT INTO lionmem_vectors (namespace, id, embedding, digest) VALUES (%(namespace)s, %(id)s, "
    + _TWIN
    + ", %(digest)s) ON CONFLICT (namespace, id) DO UPDATE SET embedding = excluded.embedding, digest = excluded.digest"
)
"""Write one item's vector: `{namespace, id, vector, digest}`, the vector a `PgVector`."""

_QUEUED: LiteralString = (
    "SELECT i.seq, i.id::text, i.created_at, i.body FROM lionmem_unembedded AS u"
    " JOIN lionmem_items AS i ON i.namespace = u.namespace AND i.id = u.id"
    " WHERE u.namespace = %s AND i.seq > %s ORDER BY i.seq LIMIT %s"
)
FILL: LiteralString = (
    "INSERT INTO lionmem_vectors (namespace, id, embedding, digest) SELECT namespace, id, "
    + _TWIN
    + ", %(digest)s FROM lionmem_items WHERE namespace = %(namespace)s AND id = %(id)s AND body = %(body)s"
    " FOR SHARE ON CONFLICT (namespace, id) DO UPDATE SET embedding = excluded.embedding, digest = excluded.digest"
)
"""Write a vector `{vector, digest, namespace, id, body}` made apart from the item's
write, only while the item still has the text that was embedded, and with its row
locked, so that a replacement waits and then drops this vector."""
# Out of the queue go the items that now have a vector of a known text: one replaced
# since it was read stays, for the next recall.
_DEQUEUE: LiteralString = (
    "DELETE FROM lionmem_unembedded AS u WHERE u.namespace = %s AND u.id = ANY(%s::uuid[])"
    " AND EXISTS (SELECT FROM lionmem_vectors AS v"
    " WHERE v.namespace = u.namespace AND v.id = u.id AND v.digest IS NOT NULL)"
)


async def fill(conn: psycopg.AsyncConnection[Any], namespace: str, embedder: Embedder, text_of: TextOf | None) -> None:
    """Embed every item of `namespace` in the queue."""
    after = 0
    while True:
        rows = await (await conn.execute(_QUEUED, [namespace, after, BATCH])).fetchall()
        if not rows:
            return
        after = rows[-1][0]
        items = decode_rows([row[1:] for row in rows])
        vectors, digests = await embed_items(embedder, text_of, items)
        written = [
            {"vector": vector, "digest": digest, "namespace": namespace, "id": item.id, "body": row[3]}
            for vector, digest, item, row in zip(pg_vectors(vectors), digests, items, rows, strict=True)
        ]
        async with conn.transaction(), conn.cursor() as cursor:
            await cursor.executemany(FILL, written)
            await cursor.execute(_DEQUEUE, [namespace, [row[1] for row in rows]])
