"""SQLite writes: exact round trips, replacement in place, refusals, and failed writes that change nothing."""

from __future__ import annotations

import contextlib
import json
import math
import random
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import (
    SQLiteMemoryStore,
)
from tests.support.sqlite_support import SRC, connect, with_store
from tests.support.store_contract import (
    assert_writes_keep_the_item_as_called,
)

HOSTILE = ["it's", 'say "hi"', "a.b", "$.a", "$", "[0]", "'; DROP TABLE items; --", "\\", "%", "k\x00z"]


def test_an_item_changed_during_its_write_is_stored_as_called(tmp_path: Path) -> None:
    async def body(store: SQLiteMemoryStore) -> None:
        @contextlib.asynccontextmanager
        async def paused() -> AsyncIterator[None]:
            # White-box: occupy the store's one worker thread until the block ends.
            release = threading.Event()
            store._connections.executor.submit(release.wait)
            try:
                yield
            finally:
                release.set()

        await assert_writes_keep_the_item_as_called(store, paused)

    with_store(tmp_path / "m.db", body)


def test_replace_keeps_position_and_returns_copies(tmp_path: Path) -> None:
    a, b = MemoryItem(content="a", tags=["t"]), MemoryItem(content="b")

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store(a)
        await store.store(b)
        await store.store(MemoryItem(id=a.id, content="A", tags=["u"]))
        found = await store.search(MemoryQuery())
        assert [i.content for i in found] == ["A", "b"]
        assert await store.search(MemoryQuery(tags=["t"])) == []
        assert await store.search(MemoryQuery(text="a")) == [a]
        found[0].tags.append("local")
        again = await store.retrieve(a.id)
        assert again is not None and again.tags == ["u"] and again is not found[0]

    with_store(tmp_path / "m.db", body)


def test_a_replaced_item_leaves_nothing_of_its_old_text_in_the_index(tmp_path: Path) -> None:
    # Results would stay right without it (instr() on the stored text decides), but each
    # replacement would leave the old text's trigrams for later searches to read.
    item = MemoryItem(content="first words")
    path = tmp_path / "m.db"

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store(item)
        await store.store(MemoryItem(id=item.id, content="other words"))
        await store.store_many([MemoryItem(id=item.id, content="final words")])

    with_store(path, body)
    db = connect(path)

    def indexed(trigram: str) -> int:
        query = "SELECT count(*) FROM items_text WHERE items_text MATCH ?"
        counted: int = db.execute(query, (f'"{trigram}"',)).fetchone()[0]
        return counted

    assert (indexed("fir"), indexed("oth"), indexed("fin"), indexed("wor")) == (0, 0, 1, 1)


def test_round_trip_is_exact(tmp_path: Path) -> None:
    big = "ü✓ 𝄞 " * 200_000
    item = MemoryItem(
        content={"text": big, "nested": [1, 2.5, -0.0, None, True, {"deep": ["x", {}]}], "n": 2**62},
        tags=["b", "a", "a", "ü"],
        metadata={"quote'\"": {"list": [1, 1.0, True]}, "": None, "emoji": "🙂"},
        created_at=1767225600.123456789,
    )

    async def body(store: SQLiteMemoryStore) -> MemoryItem | None:
        await store.store(item)
        return await store.retrieve(item.id)

    got = with_store(tmp_path / "m.db", body)
    assert got is not None
    assert got.created_at.hex() == item.created_at.hex()
    assert got.content == item.content and got.tags == item.tags and got.metadata == item.metadata
    assert type(got.content["nested"][1]) is float and type(got.content["nested"][4]) is bool
    assert math.copysign(1, got.content["nested"][2]) == -1
    assert type(got.metadata["quote'\""]["list"][1]) is float


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"content": {1, 2}}, "content is a set, not a JSON value"),
        ({"content": object()}, "content is an object, not a JSON value"),
        ({"content": math.nan}, "content is nan; NaN and infinity"),
        ({"content": [1, math.inf]}, r"content\[1\] is inf"),
        ({"content": (1, 2)}, "content is a tuple"),
        ({"content": {1: "x"}}, "content has a key 1"),
        ({"metadata": {"k": {3}}}, r"metadata\['k'\] is a set"),
        ({"content": "a\ud800"}, "content holds the lone surrogate U\\+D800"),
        ({"tags": ["\udc00"]}, r"tags\[0\] holds the lone surrogate"),
    ],
)
def test_non_json_values_are_refused_and_nothing_is_written(
    tmp_path: Path, fields: dict[str, Any], problem: str
) -> None:
    good = MemoryItem(content="good")
    bad = MemoryItem(**fields)

    async def body(store: SQLiteMemoryStore) -> None:
        with pytest.raises(TypeError, match=problem):
            await store.store(bad)
        with pytest.raises(TypeError, match=problem):
            await store.store_many([good, bad])
        assert await store.retrieve(bad.id) is None
        assert await store.search(MemoryQuery()) == []

    with_store(tmp_path / "m.db", body)


@pytest.mark.parametrize(
    ("tags", "problem"), [([1], r"tags\[0\] is an int, not a str"), ("ab", "tags is a str, not a list")]
)
def test_tags_that_skipped_validation_are_refused(tmp_path: Path, tags: object, problem: str) -> None:
    bad = MemoryItem.model_construct(tags=tags)

    async def body(store: SQLiteMemoryStore) -> None:
        with pytest.raises(TypeError, match=problem):
            await store.store(bad)
        assert await store.search(MemoryQuery(tags=["1", "a"])) == []

    with_store(tmp_path / "m.db", body)


@pytest.mark.parametrize("key", HOSTILE)
def test_hostile_keys_and_values_are_plain_data(tmp_path: Path, key: str) -> None:
    item = MemoryItem(content=key, tags=[key], metadata={key: key, "other": 1})
    decoy = MemoryItem(content="decoy", metadata={"other": 1})

    async def body(store: SQLiteMemoryStore) -> None:
        await store.store_many([item, decoy])
        assert await store.search(MemoryQuery(filters={key: key})) == [item]
        assert await store.search(MemoryQuery(filters={key: None})) == [decoy]
        assert await store.search(MemoryQuery(tags=[key])) == [item]
        assert item in await store.search(MemoryQuery(text=key))
        assert len(await store.search(MemoryQuery(limit=100))) == 2

    with_store(tmp_path / "m.db", body)


def test_store_many_is_all_or_nothing_and_replaces(tmp_path: Path) -> None:
    first = MemoryItem(content="1")

    async def body(store: SQLiteMemoryStore) -> None:
        assert await store.store_many([first, MemoryItem(id=first.id, content="2")]) == [first.id] * 2
        got = await store.retrieve(first.id)
        assert got is not None and got.content == "2"
        assert len(await store.search(MemoryQuery())) == 1

    with_store(tmp_path / "m.db", body)


def index_rows(path: Path) -> list[tuple[Any, ...]]:
    db = connect(path)
    return db.execute("SELECT * FROM item_meta").fetchall() + db.execute("SELECT * FROM item_tags").fetchall()


def test_a_write_failing_in_the_database_leaves_everything_as_it_was(tmp_path: Path) -> None:
    # The database refuses the new item's tag row, after the replacement before it in
    # the batch was written: the whole batch is rolled back.
    kept = MemoryItem(content="kept", tags=["t"], metadata={"k": 1})
    replaced = MemoryItem(id=kept.id, content="replaced", tags=["u"], metadata={"k": 2})
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store(kept))
    before = index_rows(path)
    with connect(path, isolation_level=None) as db:
        db.execute(
            "CREATE TRIGGER refuse BEFORE INSERT ON item_tags WHEN NEW.seq > 1"
            " BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END"
        )

    async def body(store: SQLiteMemoryStore) -> None:
        with pytest.raises(sqlite3.DatabaseError, match="disk I/O"):
            await store.store_many([replaced, MemoryItem(content="new", tags=["n"])])
        assert [i.content for i in await store.search(MemoryQuery(text="e"))] == ["kept"]
        assert [i.content for i in await store.search(MemoryQuery(tags=["t"], filters={"k": 1}))] == ["kept"]
        with connect(path, isolation_level=None) as db:
            db.execute("DROP TRIGGER refuse")
        await store.store(MemoryItem(content="later"))  # the store still writes
        assert [i.content for i in await store.search(MemoryQuery())] == ["kept", "later"]

    with_store(path, body)
    assert index_rows(path) == before  # the later item has no tags and no metadata


def test_writes_the_file_system_refuses_leave_the_store_as_it_was(tmp_path: Path) -> None:
    """A real failure, not a simulated one: past a file size limit (RLIMIT_FSIZE) the
    file system refuses to grow the log, as a full disk would. Batches are written
    until one is refused, then single items until one is."""
    path = tmp_path / "m.db"
    script = textwrap.dedent(f"""
        import asyncio, json, resource, signal, sqlite3, sys, uuid
        sys.path.insert(0, {SRC!r})
        from lionmem import InMemoryStore, MemoryItem, MemoryQuery
        from lionmem.adapters.sqlite import SQLiteMemoryStore
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # refuse the write, not the process
        def note(n):
            return MemoryItem(id=uuid.UUID(int=n + 1), content="note " + "x" * 200, tags=[str(n)])
        async def main():
            stored, refused = [], []
            async def fill(write, size):
                while len(stored) < 2_000:
                    batch = [note(len(stored) + k) for k in range(size)]
                    try:
                        await write(batch)
                    except sqlite3.OperationalError as error:
                        refused.append(str(error))
                        return
                    stored.extend(batch)
            async with SQLiteMemoryStore.open({str(path)!r}) as store:
                resource.setrlimit(resource.RLIMIT_FSIZE, (400_000, resource.RLIM_INFINITY))
                await fill(store.store_many, 20)
                await fill(lambda batch: store.store(batch[0]), 1)
                found = await store.search(MemoryQuery(limit=10_000))
                last = await store.retrieve(stored[-1].id)
            print(json.dumps({{"stored": len(stored), "refused": refused,
                              "search": found == stored, "retrieve": last == stored[-1]}}))
        asyncio.run(main())
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    report = json.loads(done.stdout)
    assert report["refused"] == ["disk I/O error", "disk I/O error"]
    assert report["stored"] >= 20 and report["search"] and report["retrieve"]
    assert connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        await store.store(MemoryItem(id=UUID(int=0), content="room again"))
        return await store.search(MemoryQuery(limit=10_000))

    found = with_store(path, body)
    assert [i.id for i in found] == [UUID(int=n + 1) for n in range(report["stored"])] + [UUID(int=0)]
    assert all(i.content == "note " + "x" * 200 and i.tags == [str(n)] for n, i in enumerate(found[:-1]))


def test_batches_of_new_and_stored_ids_land_as_writes_one_by_one_would(tmp_path: Path) -> None:
    """A batch writes its new items with one statement a table; each new id takes its
    place at its first write and holds its last, stored ids are replaced in place,
    and a deleted id's number is never given again, whatever the mix."""
    rng = random.Random(41)
    ids = [UUID(int=n) for n in range(1, 30)]
    reference = InMemoryStore()

    async def body(store: SQLiteMemoryStore) -> None:
        for step in range(40):
            batch = [
                MemoryItem(id=rng.choice(ids), content=f"{step}-{n}", tags=[f"t{n % 3}"], metadata={"n": n})
                for n in range(rng.randrange(2, 9))
            ]
            await store.store_many(batch)
            for item in batch:
                await reference.store(item)
            if rng.random() < 0.4:
                gone = rng.sample(ids, 3)
                assert await store.delete_many(gone) == await reference.delete_many(gone)
            for query in (MemoryQuery(limit=100), MemoryQuery(tags=["t1"], limit=100), MemoryQuery(filters={"n": 2})):
                got = [(i.id, i.content) for i in await store.search(query)]
                assert got == [(i.id, i.content) for i in await reference.search(query)], (step, query)

    with_store(tmp_path / "m.db", body)


def test_a_batch_never_reuses_the_number_of_a_deleted_item(tmp_path: Path) -> None:
    """A scan goes on from the last number it handed over; a new item numbered as a
    deleted one before it would be skipped."""

    async def body(store: SQLiteMemoryStore) -> list[str]:
        await store.store_many([MemoryItem(content=name) for name in "abc"])
        pages = store.scan(3)
        first = await anext(pages)
        assert await store.delete(first[-1].id)
        await store.store_many([MemoryItem(content="d"), MemoryItem(content="e")])
        return [i.content for page in [first, *[p async for p in pages]] for i in page]

    assert with_store(tmp_path / "m.db", body) == ["a", "b", "c", "d", "e"]
