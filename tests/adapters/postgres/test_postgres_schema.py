"""The PostgreSQL schema: created once, checked, migrated, refused when newer or foreign."""

from __future__ import annotations

import asyncio
import textwrap
import time
from decimal import Decimal
from pathlib import Path
from typing import Any
from uuid import UUID, uuid4

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import make_conninfo

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.errors import IncompatibleDatabaseError, MissingSchemaError
from lionmem.adapters.postgres import (
    SCHEMA_VERSION,
    PostgresMemoryStore,
    StoreUnavailableError,
)
from lionmem.adapters.postgres import _writes as postgres_writes
from lionmem.adapters.postgres import schema as postgres_schema
from lionmem.embedders import HashingEmbedder
from lionmem.filters import Ge, Gt, In, Le, Lt
from tests.support.pg_server import fresh_database, lionmem_tables
from tests.support.postgres_support import SRC, fresh_namespace, open_only, run, with_store
from tests.support.store_contract import (
    assert_searches_agree,
)
from tests.support.together import start_together


def test_without_pg_trgm_text_search_scans_with_the_same_results(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server without the pg_trgm extension (or without the right to create it)
    still opens; text search reads every row of the namespace instead."""
    url = fresh_database(pg_url)
    missing = "CREATE INDEX lionmem_items_text ON lionmem_items USING gin (folded no_such_ops)"
    monkeypatch.setattr(postgres_schema, "_TRIGRAM_INDEX", missing)

    async def body(store: PostgresMemoryStore) -> None:
        assert not store.trigram
        assert "lionmem_items_text" not in await store.explain(MemoryQuery(text="red"))
        await assert_searches_agree(store, seed=5, rounds=200)

    with_store(url, body)
    with psycopg.connect(url, autocommit=True) as conn:
        extensions = conn.execute("SELECT extname FROM pg_extension").fetchall()
    assert ("pg_trgm",) not in extensions  # the failed attempt left nothing behind


def test_opening_behind_another_process_schema_work_ends_at_the_statement_timeout(pg_url: str) -> None:
    """The schema is checked under a lock every opening process takes; the wait for
    it is a statement like any other, so it ends with `statement_timeout`."""
    with psycopg.connect(pg_url, autocommit=True) as other:
        other.execute("SELECT pg_advisory_lock(%s)", [postgres_schema.LOCK_KEY])
        started = time.perf_counter()
        with pytest.raises(StoreUnavailableError, match="canceling statement due to statement timeout"):
            run(asyncio.wait_for(open_only(pg_url, namespace="n", statement_timeout=0.3), 20))
        assert time.perf_counter() - started < 10


def test_many_processes_creating_the_schema_at_once(pg_url: str, tmp_path: Path) -> None:
    url = fresh_database(pg_url)
    script = textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem
        from lionmem.adapters.postgres import PostgresMemoryStore
        async def main():
            async with PostgresMemoryStore.open({url!r}, namespace="race") as store:
                await store.store(MemoryItem(content=sys.argv[1]))
        wait_for_go()
        asyncio.run(main())
    """)
    procs = start_together(script, [str(n) for n in range(6)], tmp_path / "barrier")
    assert [p.wait(timeout=120) for p in procs] == [0] * 6
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM lionmem_schema").fetchall() == [(SCHEMA_VERSION,)]
        assert conn.execute("SELECT count(*) FROM lionmem_items").fetchone() == (6,)


def test_without_create_a_database_without_the_schema_is_refused_and_left_alone(pg_url: str) -> None:
    url = fresh_database(pg_url)
    with pytest.raises(MissingSchemaError, match="^this database has no lionmem schema; nothing was created$"):
        with_store(url, lambda store: store.search(MemoryQuery()), create=False)
    assert lionmem_tables(url) == []
    item = MemoryItem(content="kept")
    namespace = fresh_namespace()
    with_store(url, lambda store: store.store(item), namespace=namespace)
    assert with_store(url, lambda store: store.retrieve(item.id), namespace=namespace, create=False) == item
    with pytest.raises(TypeError, match="create must be a bool, got str"):
        PostgresMemoryStore.open(url, namespace="n", create="no")  # type: ignore[arg-type]


@pytest.mark.parametrize("encoding", ["LATIN1", "SQL_ASCII"])
def test_a_database_not_in_utf8_is_refused_and_left_alone(pg_url: str, encoding: str) -> None:
    # LATIN1 cannot hold "€"; SQL_ASCII holds any bytes, and psycopg reads them as bytes.
    url = fresh_database(pg_url, encoding)
    message = f"^this database's encoding is {encoding}; lionmem stores Unicode text and needs a UTF8 database"
    for create in (True, False):
        with pytest.raises(IncompatibleDatabaseError, match=message):
            with_store(url, lambda store: store.search(MemoryQuery()), create=create)
    assert lionmem_tables(url) == []


def test_a_read_only_connection_opens_a_current_schema(pg_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # As on a replica: opening wrote to the schema table even when it was current.
    url = fresh_database(pg_url)
    item = MemoryItem(content="kept", tags=["t"])
    namespace = fresh_namespace()
    with_store(url, lambda store: store.store(item), namespace=namespace)
    empty = fresh_database(pg_url)
    monkeypatch.setenv("PGOPTIONS", "-c default_transaction_read_only=on")
    for create in (True, False):
        found = with_store(url, lambda store: store.search(MemoryQuery(tags=["t"])), namespace=namespace, create=create)
        assert found == [item]
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match="cannot execute INSERT"):
        with_store(url, lambda store: store.store(MemoryItem(content="refused")), namespace=namespace)
    with pytest.raises(psycopg.errors.ReadOnlySqlTransaction, match="cannot execute CREATE TABLE"):
        with_store(empty, lambda store: store.search(MemoryQuery()))
    assert lionmem_tables(empty) == []


def test_a_role_that_may_only_use_the_tables_opens_the_store(pg_url: str) -> None:
    # Since PostgreSQL 15 only the owner may create in the public schema, and opening
    # created the schema table IF NOT EXISTS: "permission denied for schema public".
    url = fresh_database(pg_url)
    namespace = fresh_namespace()
    first, second = MemoryItem(content="first", tags=["t"]), MemoryItem(content="second", tags=["t"])
    with_store(url, lambda store: store.store(first), namespace=namespace)
    role = f"app_{uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as conn:
        grants = [
            "CREATE ROLE {} LOGIN PASSWORD 'app-pw'",
            "GRANT SELECT, INSERT, UPDATE, DELETE ON lionmem_items TO {}",
            "GRANT SELECT, INSERT, DELETE ON lionmem_meta, lionmem_terms TO {}",
            "GRANT SELECT ON lionmem_schema TO {}",
        ]
        for grant in grants:
            conn.execute(sql.SQL(grant).format(sql.Identifier(role)))

    async def body(store: PostgresMemoryStore) -> tuple[list[MemoryItem], list[MemoryItem], bool]:
        await store.store(second)
        await store.store(second.model_copy(update={"metadata": {"rank": 2}}))
        found = await store.search(MemoryQuery(tags=["t"]))
        ranked = await store.search(MemoryQuery(filters={"rank": Ge(1)}))
        return found, ranked, await store.delete(second.id)

    app_url = make_conninfo(url, user=role, password="app-pw")
    ranked = second.model_copy(update={"metadata": {"rank": 2}})
    assert with_store(app_url, body, namespace=namespace) == ([first, ranked], [ranked], True)


def test_a_newer_schema_is_refused(pg_url: str) -> None:
    url = fresh_database(pg_url)
    with_store(url, lambda store: store.search(MemoryQuery()))
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE lionmem_schema SET version = %s", [SCHEMA_VERSION + 1])
    with pytest.raises(IncompatibleDatabaseError, match="newer than this lionmem"):
        with_store(url, lambda store: store.search(MemoryQuery()))


def test_version_1_is_migrated_to_index_long_tags_by_digest(pg_url: str) -> None:
    """Version 1 kept a long tag whole where the index could compress it."""
    url = fresh_database(pg_url)
    long, short = "ab" * 5_000, "short"
    items = [MemoryItem(content="long", tags=[long, short]), MemoryItem(content="plain", tags=[short])]

    async def write(store: PostgresMemoryStore) -> None:
        for item in items:
            await store.store(item)

    with_store(url, write, namespace="n")
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("UPDATE lionmem_items SET tags = %s WHERE id = %s", [[long, short], items[0].id])
        _undo_version_3(conn)
        conn.execute("UPDATE lionmem_schema SET version = 1")

    async def read(store: PostgresMemoryStore) -> list[list[UUID]]:
        return [[i.id for i in await store.search(MemoryQuery(tags=[tag]))] for tag in (long, short)]

    assert with_store(url, read, namespace="n") == [[items[0].id], [items[0].id, items[1].id]]
    with psycopg.connect(url) as conn:
        assert conn.execute("SELECT version FROM lionmem_schema").fetchall() == [(SCHEMA_VERSION,)]
        stored = conn.execute("SELECT tags FROM lionmem_items ORDER BY seq").fetchall()
    assert stored == [([postgres_writes.tag_key(long), short],), ([short],)]


_TRIGGERS_OF_VERSION_5 = [
    "DROP TRIGGER lionmem_items_vector_stale ON lionmem_items",
    "CREATE TRIGGER lionmem_items_vector_stale AFTER UPDATE ON lionmem_items"
    " FOR EACH ROW EXECUTE FUNCTION lionmem_vectors_stale()",
    "DROP TRIGGER lionmem_items_vector_missing ON lionmem_items",
    "CREATE CONSTRAINT TRIGGER lionmem_items_vector_missing AFTER INSERT OR UPDATE ON lionmem_items"
    " DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION lionmem_vector_missing()",
]


def _undo_version_6(conn: psycopg.Connection[Any]) -> None:
    """Leave a current database as version 5 left it: no expiry, and recall's triggers
    firing on any change of an item."""
    conn.execute("ALTER TABLE lionmem_items DROP COLUMN expires_at")  # and its index
    if conn.execute("SELECT to_regclass('lionmem_unembedded')").fetchone() != (None,):
        for statement in _TRIGGERS_OF_VERSION_5:
            conn.execute(statement)
    conn.execute("UPDATE lionmem_schema SET version = 5")


def _undo_version_5(conn: psycopg.Connection[Any]) -> None:
    """Leave a current database as version 4 left it."""
    _undo_version_6(conn)
    conn.execute("DROP FUNCTION lionmem_terms_drop() CASCADE")  # and its trigger
    conn.execute("DROP TABLE lionmem_terms")
    conn.execute("UPDATE lionmem_schema SET version = 4")


def _undo_version_4(conn: psycopg.Connection[Any]) -> None:
    """Leave a current database as version 3 left it."""
    _undo_version_5(conn)
    conn.execute("DROP TABLE lionmem_recall")
    conn.execute("UPDATE lionmem_schema SET version = 3")


def _undo_version_3(conn: psycopg.Connection[Any]) -> None:
    """Leave a current database as version 2 left it."""
    _undo_version_4(conn)
    conn.execute("DROP FUNCTION lionmem_meta_write() CASCADE")  # and its triggers
    conn.execute("DROP TABLE lionmem_meta")
    conn.execute("UPDATE lionmem_schema SET version = 2")


def test_version_3_is_migrated_to_record_the_embedder(pg_url: str) -> None:
    """Version 4 adds the table recording which embedder made the vectors; the
    items stay as they were."""
    url = fresh_database(pg_url)
    item = MemoryItem(content="kept", tags=["t"], metadata={"n": 1})
    with_store(url, lambda store: store.store(item), namespace="n")
    with psycopg.connect(url, autocommit=True) as conn:
        _undo_version_4(conn)
        assert conn.execute("SELECT to_regclass('lionmem_recall')").fetchone() == (None,)
    assert with_store(url, lambda store: store.search(MemoryQuery(filters={"n": 1})), namespace="n") == [item]
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM lionmem_schema").fetchall() == [(SCHEMA_VERSION,)] == [(6,)]
        assert conn.execute("SELECT count(*) FROM lionmem_recall").fetchall() == [(0,)]


def test_version_4_is_migrated_to_index_the_terms_of_every_item(pg_url: str) -> None:
    """Version 5 adds hybrid recall's term index, filled from the items already there."""
    url = fresh_database(pg_url)
    items = [MemoryItem(content="Ticket 4410 waits, ticket 4410!"), MemoryItem(content="Ëlan vital")]
    with_store(url, lambda store: store.store_many(items), namespace="n")
    with psycopg.connect(url, autocommit=True) as conn:
        _undo_version_5(conn)
    assert with_store(url, lambda store: store.retrieve(items[1].id), namespace="n") == items[1]
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM lionmem_schema").fetchall() == [(6,)]
        rows = conn.execute("SELECT term, tf FROM lionmem_terms ORDER BY seq, term").fetchall()
    assert rows == [("4410", 2), ("ticket", 2), ("waits", 1), ("vital", 1), ("ëlan", 1)]


def _values(conn: psycopg.Connection[Any]) -> list[tuple[Any, ...]]:
    return conn.execute(
        "SELECT i.id, m.key, m.num, m.txt FROM lionmem_meta AS m JOIN lionmem_items AS i"
        ' ON i.namespace = m.namespace AND i.seq = m.seq ORDER BY m.seq, m.key COLLATE "C"'
    ).fetchall()


def test_version_2_is_migrated_to_keep_metadata_values_in_order(pg_url: str) -> None:
    """Version 3 keeps each number, bool and string of the metadata as a row that a
    B-tree orders; opening a version 2 database writes the rows of every item."""
    url = fresh_database(pg_url)
    long_key = "k" * 1_001
    items = [
        MemoryItem(content="a", metadata={"n": 3, "b": True, "s": "x" * 300, "none": None, "list": [1], "é": 1e23}),
        MemoryItem(content="b", metadata={"n": 2**70, long_key: 1, "obj": {"n": 1}}),
        MemoryItem(content="c"),
    ]
    with_store(url, lambda store: store.store_many(items), namespace="n")
    with psycopg.connect(url, autocommit=True) as conn:
        written = _values(conn)
        _undo_version_3(conn)
    # What the triggers wrote is what the migration writes.
    assert written == [
        (items[0].id, "b", Decimal(1), None),
        (items[0].id, "n", Decimal(3), None),
        (items[0].id, "s", None, "x" * 200),
        (items[0].id, "é", Decimal("1E+23"), None),
        (items[1].id, "n", Decimal(2**70), None),
    ]

    async def read(store: PostgresMemoryStore) -> list[list[UUID]]:
        return [
            [i.id for i in await store.search(MemoryQuery(filters=filters))]
            for filters in ({"n": Gt(3)}, {"n": Le(3)}, {"s": Ge("x")}, {"é": Lt(10**23)})
        ]

    assert with_store(url, read, namespace="n") == [[items[1].id], [items[0].id], [items[0].id], [items[0].id]]
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM lionmem_schema").fetchall() == [(SCHEMA_VERSION,)]
        assert _values(conn) == written
    # The triggers are back: a replacement and a delete keep the rows.

    async def change(store: PostgresMemoryStore) -> None:
        await store.store(items[0].model_copy(update={"metadata": {"n": -1}}))
        await store.delete(items[1].id)

    with_store(url, change, namespace="n")
    with psycopg.connect(url, autocommit=True) as conn:
        assert _values(conn) == [(items[0].id, "n", Decimal(-1), None)]


def test_the_gin_indexes_keep_a_short_pending_list(pg_url: str) -> None:
    # Every search reads a GIN index's pending list in full; the server's default
    # lets it grow to 4 MB between merges.
    url = fresh_database(pg_url)
    with_store(url, lambda store: store.search(MemoryQuery()))
    with psycopg.connect(url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT c.relname, c.reloptions FROM pg_class AS c JOIN pg_am AS a ON a.oid = c.relam"
            " WHERE a.amname = 'gin' AND c.relname LIKE 'lionmem%' ORDER BY 1"
        ).fetchall()
    assert rows == [
        (name, ["gin_pending_list_limit=256"])
        for name in ("lionmem_items_metadata", "lionmem_items_tags", "lionmem_items_text")
    ]


def test_the_plan_uses_the_indexes(pg_url: str) -> None:
    url = fresh_database(pg_url)
    items = [
        MemoryItem(
            content=f"note {i} about w{i % 2000:04d} " + "lorem ipsum dolor sit amet " * 20,
            tags=[f"t{i % 2000}"],
            metadata={"owner": f"u{i % 2000}", "n": i % 2000},
        )
        for i in range(20_000)
    ]

    async def body(store: PostgresMemoryStore) -> dict[str, str]:
        for start in range(0, len(items), 5000):
            await store.store_many(items[start : start + 5000])
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("ANALYZE lionmem_items, lionmem_meta")
        assert store.trigram
        return {
            "tags": await store.explain(MemoryQuery(tags=["t7"])),
            "filter": await store.explain(MemoryQuery(filters={"owner": "u7"})),
            "number": await store.explain(MemoryQuery(filters={"n": 7})),
            "text": await store.explain(MemoryQuery(text="W0007")),
            "list": await store.explain(MemoryQuery(filters={"n": [7]})),
            "one": await store.explain(MemoryQuery(filters={"n": 1})),
            "none": await store.explain(MemoryQuery(filters={"owner": None})),
            "nul value": await store.explain(MemoryQuery(filters={"owner": "u\x00"})),
            "nul key": await store.explain(MemoryQuery(filters={"own\x00er": None})),
            "newest": await store.explain(MemoryQuery(), newest_first=True),
            "in": await store.explain(MemoryQuery(filters={"owner": In(["u7", "u8"]), "n": In([7, 8])})),
            "newest tag": await store.explain(MemoryQuery(tags=["t7"], limit=5), newest_first=True),
            "range": await store.explain(MemoryQuery(filters={"n": Ge(1995)})),
            "text range": await store.explain(MemoryQuery(filters={"owner": Gt("u998")})),
            "broad range": await store.explain(MemoryQuery(filters={"n": Ge(5)})),
            "big range": await store.explain(MemoryQuery(filters={"n": Gt(2**60)})),
        }

    plans = with_store(url, body)
    assert "lionmem_items_tags" in plans["tags"]
    # An equality alone: the first rows of its value, read from the values' B-tree in
    # order, not every match from the metadata index.
    assert "Index Only Scan using lionmem_meta_strings" in plans["filter"], plans["filter"]
    assert "Index Only Scan using lionmem_meta_numbers" in plans["number"], plans["number"]
    assert "lionmem_items_metadata" not in plans["filter"] + plans["number"]
    assert "lionmem_items_text" in plans["text"], plans["text"]
    # Numbers up to 2**53 are decided exactly, so the limit goes to the server;
    # a list is re-checked in Python, which reads growing prefixes instead.
    # So do 1 (or true), a None filter and filters no stored key or string can match.
    limited = ("tags", "filter", "number", "text", "one", "none", "nul value", "nul key")
    assert all(plans[kind].startswith("Limit") for kind in limited), plans
    assert not plans["list"].startswith("Limit"), plans["list"]
    # The newest first: the order index read backwards, stopped by the limit, unsorted.
    assert "Index Scan Backward using lionmem_items_order" in plans["newest"], plans["newest"]
    assert plans["newest"].startswith("Limit") and "Sort" not in plans["newest"], plans["newest"]
    assert plans["newest tag"].startswith("Limit"), plans["newest tag"]
    # Sets of values on two keys: each member a containment the metadata index
    # answers, exactly.
    assert "BitmapOr" in plans["in"] and "lionmem_items_metadata" in plans["in"], plans["in"]
    assert plans["in"].startswith("Limit"), plans["in"]
    # An order comparison: a narrow range read from the values' B-tree, a broad one
    # checked along the order index, each exact in SQL and so limited there; past
    # 2**53 the range is widened and Python decides.
    assert "Index Only Scan using lionmem_meta_numbers" in plans["range"], plans["range"]
    assert "Index Only Scan using lionmem_meta_strings" in plans["text range"], plans["text range"]
    assert "lionmem_items_order" in plans["broad range"] and "Sort" not in plans["broad range"], plans["broad range"]
    assert all(plans[kind].startswith("Limit") for kind in ("range", "text range", "broad range")), plans
    assert "lionmem_meta_numbers" in plans["big range"] and not plans["big range"].startswith("Limit"), plans


def test_version_5_is_migrated_to_keep_expiries_and_a_vector_through_a_change_of_expiry(
    pgvector_server_url: str,
) -> None:
    """Version 6 adds each item's expiry, and makes recall's triggers fire on the columns
    a replacement writes: a change of expiry alone keeps the item's vector, which
    version 5's triggers dropped, to be made again."""
    url = fresh_database(pgvector_server_url)
    embedder = HashingEmbedder(16)
    items = [MemoryItem(content="kept"), MemoryItem(content="changed")]
    with_store(url, lambda store: store.store_many(items), namespace="n", embedder=embedder)
    with psycopg.connect(url, autocommit=True) as conn:
        _undo_version_6(conn)
        assert conn.execute("SELECT to_regclass('lionmem_items_expiring')").fetchone() == (None,)

    async def expiring(store: PostgresMemoryStore) -> list[Any]:
        assert await store.expire([items[0].id], at=time.time() + 3_600) == 1
        assert await store.persist([items[1].id]) == 1
        await store.store(items[1].model_copy(update={"content": "changed again"}))
        return await store.search(MemoryQuery())

    found = with_store(url, expiring, namespace="n", embedder=embedder)
    assert [i.content for i in found] == ["kept", "changed again"]
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute("SELECT version FROM lionmem_schema").fetchall() == [(SCHEMA_VERSION,)] == [(6,)]
        held = conn.execute("SELECT i.id FROM lionmem_vectors AS v JOIN lionmem_items AS i USING (namespace, id)")
        assert sorted(row[0] for row in held.fetchall()) == sorted(i.id for i in items)
        # An expiry changed drops no vector, so none waits to be made again; the
        # replacement wrote its own new vector in its own transaction.
        assert conn.execute("SELECT id FROM lionmem_unembedded").fetchall() == []
        assert conn.execute("SELECT expires_at IS NOT NULL FROM lionmem_items ORDER BY seq").fetchall() == [
            (True,),
            (False,),
        ]
