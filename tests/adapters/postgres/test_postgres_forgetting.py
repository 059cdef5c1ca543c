"""Forgetting on PostgreSQL: what a delete leaves on the server and what `VACUUM FULL`
removes, as ADR-0100 D4 states it. The server's files are read through
`pg_read_binary_file`, which needs a superuser or the pg_read_server_files role."""

from __future__ import annotations

import psycopg

from lionmem import MemoryItem
from lionmem.adapters.postgres import PostgresMemoryStore
from tests.support.pg_server import fresh_database
from tests.support.postgres_support import with_store

MARKER = "qzqzxjxjwvwv-erased"


def _files_holding_the_marker(conn: psycopg.Connection) -> list[str]:
    """Which of the tables' files (their heaps, TOAST tables and indexes) hold the marker."""
    conn.execute("CHECKPOINT")  # the pages in the files, not only in shared buffers
    tables = "oid IN ('lionmem_items'::regclass, 'lionmem_meta'::regclass)"
    relations = conn.execute(
        "SELECT oid FROM pg_class WHERE "
        + tables
        + " UNION ALL SELECT reltoastrelid FROM pg_class WHERE "
        + tables
        + " AND reltoastrelid <> 0"
        " UNION ALL SELECT indexrelid FROM pg_index WHERE indrelid IN ('lionmem_items'::regclass, 'lionmem_meta'::regclass)"
    ).fetchall()
    holding = []
    for (oid,) in relations:
        (path,) = conn.execute("SELECT pg_relation_filepath(%s::oid)", [oid]).fetchone() or (None,)
        (data,) = conn.execute("SELECT pg_read_binary_file(%s)", [path]).fetchone() or (b"",)
        if MARKER.encode() in bytes(data):
            ((name,),) = conn.execute("SELECT %s::oid::regclass::text", [oid]).fetchall()
            holding.append(name)
    return holding


def test_a_delete_hides_the_row_and_vacuum_full_removes_its_bytes(pg_url: str) -> None:
    url = fresh_database(pg_url)
    others = [MemoryItem(content=f"item {n}", tags=["kept"]) for n in range(200)]
    secret = MemoryItem(content=f"contact {MARKER}", tags=[MARKER], metadata={"email": MARKER})

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many(others)
        await store.store(secret)
        assert await store.delete(secret.id) is True
        assert await store.retrieve(secret.id) is None

    with_store(url, body)
    with psycopg.connect(url, autocommit=True) as conn:
        # Committed, the delete hides the row from every query, but its bytes stay in
        # the table's pages as a dead row version: the server's to remove.
        holding = _files_holding_the_marker(conn)
        assert "lionmem_items" in holding and "lionmem_meta" in holding, holding
        conn.execute("VACUUM FULL lionmem_items, lionmem_meta")
        assert _files_holding_the_marker(conn) == []
        assert conn.execute("SELECT count(*) FROM lionmem_items").fetchone() == (200,)
