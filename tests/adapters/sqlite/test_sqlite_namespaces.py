"""Namespaces in one SQLite file (ADR-0105 D1): each owns a range of sequence numbers,
every read stays inside it, a file of schema version 7 becomes the namespace `default`,
and the numbers a namespace takes are its own."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION, SQLiteMemoryStore
from lionmem.adapters.sqlite import _planner as sqlite_planner
from lionmem.adapters.sqlite import _writes as sqlite_writes
from lionmem.adapters.sqlite._namespaces import SPAN_BITS, span_of
from lionmem.adapters.sqlite._writes import Write, index
from lionmem.embedders import HashingEmbedder
from lionmem.filters import Ge, In, Lt
from lionmem.protocols.namespaces import NamespacedStore
from tests.support.sqlite_support import connect, run, with_store


def _notes(prefix: str, count: int) -> list[MemoryItem]:
    return [
        MemoryItem(
            content=f"{prefix} note {n} about the {'river' if n % 3 else 'stone'}",
            tags=[f"t{n % 4}", "all"],
            metadata={"n": n, "kind": "odd" if n % 2 else "even", "big": 2**70 if n == 5 else n},
            created_at=1000.0 + n,
        )
        for n in range(count)
    ]


QUERIES = [
    MemoryQuery(limit=10_000),
    MemoryQuery(limit=3),
    MemoryQuery(limit=0),
    MemoryQuery(text="RIVER", limit=10_000),
    MemoryQuery(text="ri", limit=10_000),
    MemoryQuery(tags=["t1"], limit=10_000),
    MemoryQuery(tags=["t1", "t2"], limit=10_000),
    MemoryQuery(tags=["t1", "t2"], limit=2),
    MemoryQuery(filters={"kind": "odd"}, limit=10_000),
    MemoryQuery(filters={"n": 7}, limit=10_000),
    MemoryQuery(filters={"n": Ge(20)}, limit=10_000),
    MemoryQuery(filters={"big": Ge(30)}, limit=10_000),
    MemoryQuery(filters={"n": In([1, 2, 40])}, limit=10_000),
    MemoryQuery(filters={"n": In([1, 2, 40])}, limit=2),
    MemoryQuery(filters={"n": Lt(10)}, limit=3),
    MemoryQuery(text="stone", tags=["t0", "t3"], filters={"kind": "even"}, limit=10_000),
]


@pytest.mark.parametrize("walk", [False, True], ids=["as planned", "walking in order"])
def test_every_search_reads_its_own_namespace_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, walk: bool
) -> None:
    """Two namespaces written in turns, so that their items interleave in time: each
    search of either finds what the reference finds holding that namespace's items
    alone, through every driving index, newest first too."""
    if walk:  # a walk in order is tried from the smallest gathers up
        monkeypatch.setattr(sqlite_planner, "_GATHER_MOST", 1)
    home, other = _notes("home", 60), _notes("other", 45)

    async def body(store: SQLiteMemoryStore) -> None:
        elsewhere = store.in_namespace("other")
        references = {"default": InMemoryStore(), "other": InMemoryStore()}
        for start in range(0, 60, 15):
            for each, items in ((store, home), (elsewhere, other)):
                batch = items[start : start + 15]
                await each.store_many(batch)
                await references[each.namespace].store_many(batch)
        for each in (store, elsewhere):
            reference = references[each.namespace]
            for query in QUERIES:
                assert await each.search(query) == await reference.search(query), (each.namespace, query)
                newest = await each.search_newest(query)
                assert newest == await reference.search_newest(query), (each.namespace, query)
                assert await each.count(query) == await reference.count(query), (each.namespace, query)

    with_store(tmp_path / "m.db", body)


def test_the_same_id_is_two_items_in_two_namespaces_and_each_call_keeps_to_its_own(tmp_path: Path) -> None:
    item = MemoryItem(content="home copy", tags=["t"], metadata={"k": 1}, created_at=5.0)
    twin = item.model_copy(update={"content": "their copy"})

    async def body(store: SQLiteMemoryStore) -> None:
        theirs = store.in_namespace("theirs")
        assert theirs.namespace == "theirs"
        assert isinstance(theirs, NamespacedStore)
        assert store.namespace == "default"
        await store.store(item)
        await theirs.store_many([twin, MemoryItem(content="their other", created_at=1.0)])
        assert (await store.retrieve(item.id)) == item
        assert (await theirs.retrieve(item.id)) == twin
        assert [i.content async for batch in store.scan(1) for i in batch] == ["home copy"]
        assert (await store.stats()).items == 1 and (await theirs.stats()).items == 2
        assert (await theirs.stats()).oldest == 1.0 and (await store.stats()).oldest == 5.0
        assert await store.count_up_to(10) == 1 and await theirs.count_up_to(10) == 2
        assert await store.namespaces() == await theirs.namespaces() == ["default", "theirs"]
        assert await theirs.delete_created_before(3.0) == 1
        assert await theirs.delete(item.id) is True
        assert await store.retrieve(item.id) == item
        assert await store.namespaces() == ["default"]  # an emptied namespace is not listed
        assert await store.delete_many([item.id]) == 1 and await theirs.delete_many([item.id]) == 0
        await theirs.store(twin)
        assert await store.delete_matching(MemoryQuery(tags=["t"])) == 0
        assert await theirs.retrieve(item.id) == twin

    with_store(tmp_path / "m.db", body)


def test_recall_and_the_words_of_hybrid_recall_keep_to_the_namespace(tmp_path: Path) -> None:
    texts = ["Invoice 4471 is overdue", "The garden needs water", "Invoice 4471 was paid"]

    async def body(store: SQLiteMemoryStore) -> None:
        theirs = store.in_namespace("theirs")
        assert theirs.embedder is store.embedder
        mine = [MemoryItem(content=text, tags=["mine"]) for text in texts]
        others = [MemoryItem(content=text, tags=["theirs"]) for text in texts]
        await store.store_many(mine)
        await theirs.store_many(others)
        for each, items in ((store, mine), (theirs, others)):
            recalled = await each.recall("Invoice 4471 is overdue", 10)
            assert sorted(r.item.id for r in recalled) == sorted(i.id for i in items)
            narrowed = await each.recall("Invoice 4471", 10, tags=["mine", "theirs"])
            assert sorted(r.item.id for r in narrowed) == sorted(i.id for i in items)
            filtered = await each.recall("Invoice 4471", 10, filters={"absent": None})
            assert sorted(r.item.id for r in filtered) == sorted(i.id for i in items)
            (held,) = await each.holding(["4471"], 10)
            assert sorted(found.id for found, _ in held) == sorted(i.id for i in items[::2])
            hybrid = await each.recall_hybrid("What about invoice 4471?", 10)
            assert {r.item.id for r in hybrid} <= {i.id for i in items}

    with_store(tmp_path / "m.db", body, embedder=HashingEmbedder(64))


def test_a_namespace_enters_the_file_with_its_first_item_and_reading_it_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store(MemoryItem(content="home")))
    before = path.read_bytes()

    async def read(store: SQLiteMemoryStore) -> None:
        assert await store.search(MemoryQuery()) == []
        assert await store.retrieve(MemoryItem().id) is None
        assert [batch async for batch in store.scan()] == []
        assert await store.count(MemoryQuery()) == 0 and await store.delete_matching(MemoryQuery()) == 0
        assert (await store.stats()).items == 0
        assert await store.namespaces() == ["default"]

    with_store(path, read, namespace="later", create=False)
    assert path.read_bytes() == before
    rows = connect(path).execute("SELECT number, name FROM lionmem_namespaces").fetchall()
    assert rows == [(0, "default")]


def test_a_store_sees_its_namespace_once_another_process_writes_it_first(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    item = MemoryItem(content="written elsewhere")

    async def body() -> None:
        async with (
            SQLiteMemoryStore.open(path, namespace="shared") as reader,
            SQLiteMemoryStore.open(path, namespace="shared") as writer,
        ):
            assert await reader.retrieve(item.id) is None
            assert await reader.search(MemoryQuery()) == []
            await writer.store(item)
            assert await reader.retrieve(item.id) == item
            assert await reader.search(MemoryQuery()) == [item]

    run(body())


def test_stores_entering_new_namespaces_at_once_each_get_one_number(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    names = [f"n{k % 3}" for k in range(9)]

    async def body() -> None:
        stores = [await SQLiteMemoryStore.open(path, namespace=name) for name in names]
        try:
            await asyncio.gather(*(store.store(MemoryItem(content=store.namespace)) for store in stores))
            for store in stores:
                assert [i.content for i in await store.search(MemoryQuery())] == [store.namespace] * 3
        finally:
            for store in stores:
                await store.close()

    run(body())
    rows = connect(path).execute("SELECT name FROM lionmem_namespaces ORDER BY number").fetchall()
    assert sorted(rows) == [("default",), ("n0",), ("n1",), ("n2",)]


def test_a_write_that_fails_takes_no_number_for_its_namespace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The number a failed first write took is rolled back with it; the store must not
    keep it, or it would read the namespace that takes the number next."""
    path = tmp_path / "m.db"
    item = MemoryItem(content="mine")
    failing = MemoryItem(content="fails")

    async def body() -> None:
        async with (
            SQLiteMemoryStore.open(path, namespace="late") as late,
            SQLiteMemoryStore.open(path, namespace="early") as early,
        ):
            real_index = sqlite_writes.index

            def broken(*args: Any, **kwargs: Any) -> None:
                raise sqlite3.OperationalError("disk I/O error")

            monkeypatch.setattr(sqlite_writes, "index", broken)
            with pytest.raises(sqlite3.OperationalError):
                await late.store(failing)
            monkeypatch.setattr(sqlite_writes, "index", real_index)
            await early.store(MemoryItem(content="early"))
            assert await late.search(MemoryQuery()) == []
            await late.store(item)
            assert await late.search(MemoryQuery()) == [item]
            assert [i.content for i in await early.search(MemoryQuery())] == ["early"]

    run(body())
    rows = connect(path).execute("SELECT number, name FROM lionmem_namespaces ORDER BY number").fetchall()
    assert rows == [(0, "default"), (1, "early"), (2, "late")]


def test_numbers_are_never_taken_twice_and_a_full_namespace_or_file_says_so(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    first = MemoryItem(content="first")

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many([first, MemoryItem(content="second")])
        await store.delete_many([i.id for i in await store.search(MemoryQuery())][1:])
        await store.store(MemoryItem(content="third"))  # not the deleted item's number

    with_store(path, body)
    db = connect(path, isolation_level=None)
    assert [row[0] for row in db.execute("SELECT seq FROM items ORDER BY seq")] == [1, 3]
    db.execute("UPDATE lionmem_namespaces SET deleted_up_to = ? WHERE number = 0", (span_of(0).last - 1,))
    with pytest.raises(ValueError, match="this namespace has used every sequence number it owns"):
        with_store(path, lambda store: store.store_many([MemoryItem(), MemoryItem()]))
    with_store(path, lambda store: store.store(MemoryItem()))  # the last number it owns
    assert db.execute("SELECT max(seq) FROM items").fetchone() == (span_of(0).last,)
    with pytest.raises(ValueError, match="this namespace has used every sequence number it owns"):
        with_store(path, lambda store: store.store(MemoryItem()))
    most = 2 ** (63 - SPAN_BITS)
    db.execute("INSERT INTO lionmem_namespaces (number, name, deleted_up_to) VALUES (?, 'last', 0)", (most - 1,))
    with pytest.raises(ValueError, match=f"the file holds {most:,} namespaces, the most it has room for"):
        with_store(path, lambda store: store.store(MemoryItem()), namespace="one-too-many")
    assert with_store(path, lambda store: store.retrieve(first.id)) == first


def test_verify_names_an_item_in_no_namespace(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store_many([MemoryItem(content="a"), MemoryItem(content="b")]))
    db = connect(path, isolation_level=None)
    assert with_store(path, lambda store: store.verify()).whole
    stray = 5 << SPAN_BITS
    db.execute("UPDATE items SET seq = ? WHERE seq = 1", (stray,))
    damage = with_store(path, lambda store: store.verify()).damage
    assert damage[0].endswith(f"its position {stray} is in no namespace")


def test_a_bad_namespace_is_refused_before_anything_opens(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"namespace '\.hidden' must be 1-63 letters"):
        SQLiteMemoryStore.open(tmp_path / "m.db", namespace=".hidden")
    with pytest.raises(TypeError, match="namespace must be a str, got int"):
        SQLiteMemoryStore.open(tmp_path / "m.db", namespace=3)  # type: ignore[arg-type]
    assert not (tmp_path / "m.db").exists()

    async def body(store: SQLiteMemoryStore) -> None:
        with pytest.raises(ValueError, match="must be 1-63 letters"):
            store.in_namespace("x" * 64)

    with_store(tmp_path / "m.db", body)


def _version_seven(path: Path, items: list[MemoryItem], vectors: bool) -> None:
    """Write `items` to a new file of schema version 7, as lionmem 0.2 did, with
    AUTOINCREMENT's counter past the largest number held, as a deletion leaves it."""
    db = connect(path, isolation_level=None)
    for step in range(1, 8):
        MIGRATIONS[step](db)
    for item in items:
        write = Write.of(item)
        seq = db.execute(
            "INSERT INTO items (id, created_at, body, folded) VALUES (?, ?, ?, ?)", write.columns
        ).lastrowid
        assert seq is not None
        index(db, [(seq, write.columns[3], write.tags, write.meta)])
        if vectors:
            db.execute("INSERT INTO item_vectors (seq, vector, digest) VALUES (?, x'00', x'00')", (seq,))
    # An item stored and deleted after them took the next number.
    db.execute("UPDATE sqlite_sequence SET seq = seq + 1 WHERE name = 'items'")
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 7")
    db.close()


def test_a_version_7_file_becomes_the_namespace_default_with_every_item_and_index(tmp_path: Path) -> None:
    path = tmp_path / "v7.db"
    kept = _notes("old", 11)
    _version_seven(path, kept, vectors=False)

    async def body(store: SQLiteMemoryStore) -> None:
        reference = InMemoryStore()
        await reference.store_many(kept)
        for query in QUERIES:
            assert await store.search(query) == await reference.search(query), query
        assert await store.retrieve(kept[3].id) == kept[3]
        (held,) = await store.holding(["stone"], 100)
        assert [i.id for i, _ in held] == [i.id for i in kept if "stone" in str(i.content)]
        assert await store.namespaces() == ["default"]
        new = MemoryItem(content="after the migration")
        await store.store(new)
        assert (await store.search(MemoryQuery(limit=100)))[-1] == new
        assert (await store.verify()).whole
        await store.in_namespace("other").store(kept[0])  # the same id, in another namespace

    with_store(path, body)
    db = connect(path, isolation_level=None)
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,) == (9,)
    # The number of the 12th item, deleted, is not taken again.
    assert db.execute("SELECT max(seq) FROM items WHERE seq < ?", (1 << SPAN_BITS,)).fetchone() == (13,)
    assert db.execute("SELECT number, name, deleted_up_to FROM lionmem_namespaces ORDER BY number").fetchall() == [
        (0, "default", 12),
        (1, "other", 1 << SPAN_BITS),
    ]
    with pytest.raises(sqlite3.IntegrityError, match="UNIQUE constraint failed"):
        db.execute(
            "INSERT INTO items (seq, id, created_at, body, folded) SELECT 99, id, 0, body, folded FROM items LIMIT 1"
        )


def test_the_migration_keeps_the_vector_triggers(tmp_path: Path) -> None:
    """Version 8 rebuilds the items table, which drops its triggers: both are made again."""
    path = tmp_path / "v7.db"
    _version_seven(path, _notes("old", 3), vectors=True)
    with_store(path, lambda store: store.search(MemoryQuery()))
    db = connect(path, isolation_level=None)
    assert db.execute("SELECT count(*) FROM item_vectors").fetchone() == (3,)
    db.execute("UPDATE items SET body = body || ' ' WHERE seq = 1")
    db.execute("DELETE FROM items WHERE seq = 2")
    assert db.execute("SELECT seq FROM item_vectors").fetchall() == [(3,)]
