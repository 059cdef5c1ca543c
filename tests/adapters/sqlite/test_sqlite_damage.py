"""A page damaged in the middle of a database, found after the store opened: every
path names the file and the recovery steps as `DatabaseCorruptError`, and the store
refuses to write once it has met the damage (issue of ADR-0096 D6)."""

from __future__ import annotations

import asyncio
import random
import sqlite3
from pathlib import Path

import pytest

from lionmem import LionmemError, MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.cli import main
from lionmem.embedders import HashingEmbedder
from lionmem.errors import DatabaseCorruptError, IncompatibleDatabaseError
from lionmem.protocols.verifying import Verification
from tests.support.sqlite_support import with_store

MARKER = "marker-in-the-middle-qzx"
PAGE = 4096


def damaged_file(path: Path) -> MemoryItem:
    """A store of 3,000 items whose page holding one of them, in the middle of the
    file, is overwritten with noise; returns that item."""
    items = [MemoryItem(content=f"note {n} " + "pad " * 20, tags=["t"], metadata={"n": n}) for n in range(3000)]
    items[1500] = MemoryItem(content=MARKER, metadata={"n": 1500})
    with_store(path, lambda store: store.store_many(items))
    data = bytearray(path.read_bytes())
    page = data.find(MARKER.encode()) // PAGE
    assert 0 < page < len(data) // PAGE - 1
    noise = random.Random(7)
    data[page * PAGE : (page + 1) * PAGE] = bytes(noise.randrange(256) for _ in range(PAGE))
    path.write_bytes(bytes(data))
    return items[1500]


def test_every_call_names_the_damage_and_writes_are_refused_after(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    hurt = damaged_file(path)

    async def scenario() -> None:
        async with SQLiteMemoryStore.open(path) as store:  # the damage is past what open reads
            # Before the damage is met, a write into another page goes on.
            await store.store(MemoryItem(content="written before anyone knew"))
            with pytest.raises(DatabaseCorruptError) as searched:
                await store.search(MemoryQuery(limit=10_000))
            message = str(searched.value)
            assert message.startswith(f"{path} is damaged (SQLite: ")
            assert message.endswith(f"Restore it from a backup, or see what can be saved with: sqlite3 {path} .recover")
            assert isinstance(searched.value, IncompatibleDatabaseError | LionmemError)
            for write in (
                store.store(MemoryItem(content="after")),
                store.store_many([MemoryItem(), MemoryItem()]),
                store.delete(hurt.id),
                store.delete_matching(MemoryQuery(text="note 1")),
                store.delete_created_before(1e300),
                store.optimize(),
            ):
                with pytest.raises(DatabaseCorruptError, match=f"^refusing to write: {path} is damaged"):
                    await write
            with pytest.raises(DatabaseCorruptError):
                await store.retrieve(hurt.id)
            with pytest.raises(DatabaseCorruptError):
                await store.stats()
            with pytest.raises(DatabaseCorruptError):
                [batch async for batch in store.scan()]

    asyncio.run(scenario())


@pytest.mark.parametrize(
    "argv",
    [["search", "--limit", "10000"], ["stats"], ["export"], ["forget", "--text", "note"], ["get", "<hurt>"]],
    ids=["search", "stats", "export", "forget", "get"],
)
def test_the_command_line_names_the_damaged_file_and_how_to_recover(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    path = tmp_path / "m.db"
    hurt = damaged_file(path)
    command, *rest = [str(hurt.id) if a == "<hurt>" else a for a in argv]
    assert main([command, f"sqlite:///{path}", *rest]) == 1
    err = capsys.readouterr().err
    assert err.startswith(f"python -m lionmem: error: {path} is damaged (SQLite: "), err
    assert err.endswith(f"sqlite3 {path} .recover\n") and "Traceback" not in err


def test_verify_finds_a_page_of_noise_and_the_store_then_refuses_writes(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    damaged_file(path)

    async def body() -> None:
        async with SQLiteMemoryStore.open(path) as store:
            found = await store.verify()
            assert not found.whole and "is damaged (SQLite: database disk image is malformed)" in found.damage[0]
            with pytest.raises(DatabaseCorruptError, match="refusing to write: .*is damaged"):
                await store.store(MemoryItem(content="after"))

    asyncio.run(body())


def _meta_damaged(path: Path) -> list[MemoryItem]:
    """A store of 300 items and one without a term, two of whose metadata index rows hold another value, one
    without its tag row, one whose term row counts wrong, and term rows of no item,
    as flipped bytes inside a record that still reads would leave them."""
    items = [MemoryItem(content=f"note {n}", tags=["t"], metadata={"n": n}) for n in range(300)]
    items.append(MemoryItem(content="?!"))  # no term at all: no term row is right
    with_store(path, lambda store: store.store_many(items))
    with sqlite3.connect(path) as db:
        db.execute("UPDATE item_meta SET value = value + 1000 WHERE key = 'n' AND value IN (7, 70)")
        db.execute("DELETE FROM item_tags WHERE seq = (SELECT seq FROM items WHERE id = ?)", (str(items[9].id),))
        db.execute("UPDATE item_terms SET tf = 2 WHERE term = '200'")
        db.executemany("INSERT INTO item_terms (term, seq, tf) VALUES ('stray', ?, 1)", [(0,), (99999,)])
    return items


def test_verify_names_each_item_whose_index_rows_are_not_its_own(tmp_path: Path) -> None:
    """SQLite's own check passes such a file: each record still reads. Searches
    through the metadata index found the wrong items, and writes went on."""
    path = tmp_path / "m.db"
    items = _meta_damaged(path)

    async def body() -> None:
        async with SQLiteMemoryStore.open(path) as store:
            found = await store.verify()
            assert found.damage == (
                f"item {items[7].id}: its metadata index rows are not its metadata",
                f"item {items[9].id}: its tag index rows are not its tags",
                f"item {items[70].id}: its metadata index rows are not its metadata",
                f"item {items[200].id}: its term index rows are not its text's terms",
                "the term index holds rows of no item (position 0)",
                "the term index holds rows of no item (position 99999)",
            )
            with pytest.raises(DatabaseCorruptError, match="and 5 more"):
                await store.delete(items[0].id)
        async with SQLiteMemoryStore.open(path) as store:  # a store that has not verified writes
            assert (await store.verify()).damage

    asyncio.run(body())


def test_verify_names_a_missing_trigger_and_a_vector_of_another_text(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    item = MemoryItem(content="zebra stripes", metadata={"summary": "bananas"})

    async def body() -> None:
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(8)) as store:
            await store.store(item)
            assert await store.verify() == Verification((), ())
        summary = SQLiteMemoryStore.open(
            path, embedder=HashingEmbedder(8), text_of=lambda i: str(i.metadata["summary"])
        )
        async with summary as store:
            found = await store.verify()
            assert found.whole and found.stale == (
                f"item {item.id}: its vector was made from another text than its item's",
            )
        with sqlite3.connect(path) as db:
            db.execute("DROP TRIGGER item_vectors_stale")
        async with SQLiteMemoryStore.open(path) as store:  # the check on open finds it: no write
            with pytest.raises(DatabaseCorruptError, match="the trigger item_vectors_stale is missing"):
                await store.store(MemoryItem(content="after"))
            assert await store.retrieve(item.id) == item
            assert (await store.verify()).damage == ("the trigger item_vectors_stale is missing",)

    asyncio.run(body())


def test_the_verify_command_prints_what_it_found_and_its_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    whole, hurt = tmp_path / "whole.db", tmp_path / "hurt.db"
    with_store(whole, lambda store: store.store(MemoryItem(content="fine")))
    items = _meta_damaged(hurt)
    assert main(["verify", f"sqlite:///{whole}"]) == 0
    assert capsys.readouterr().out == "whole\n"
    assert main(["verify", f"sqlite:///{hurt}"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"damaged: item {items[7].id}: its metadata index rows are not its metadata"
    assert out[-1] == "6 problems: the store refuses writes until the damage is repaired (ADR-0096)"
    assert main(["verify", "memory:"]) == 1
    assert "verify checks a durable store" in capsys.readouterr().err


def test_verify_names_a_broken_text_index_and_a_vector_of_the_wrong_length(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    item = MemoryItem(content="words to find")

    async def write() -> None:
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(8)) as store:
            await store.store_many([item, MemoryItem(content="more words")])

    asyncio.run(write())
    with sqlite3.connect(path) as db:
        db.execute(
            "UPDATE item_vectors SET vector = zeroblob(8) WHERE seq = (SELECT seq FROM items WHERE id = ?)",
            (str(item.id),),
        )
        db.execute("DELETE FROM items_text_data WHERE id > 1")

    async def read() -> None:
        async with SQLiteMemoryStore.open(path) as store:
            found = await store.verify()
            assert found.damage[0].startswith("the text index: ")
            assert found.damage[1:] == (f"item {item.id}: its vector holds 2 dimensions, not 8",)

    asyncio.run(read())


def test_the_verify_command_names_stale_vectors_and_stays_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m.db"
    item = MemoryItem(content="zebra stripes", metadata={"summary": "bananas"})

    async def write() -> None:
        summary = SQLiteMemoryStore.open(
            path, embedder=HashingEmbedder(8), text_of=lambda i: str(i.metadata["summary"])
        )
        async with summary as store:
            await store.store(item)

    asyncio.run(write())
    assert main(["verify", f"sqlite:///{path}"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        f"stale: item {item.id}: its vector was made from another text than its item's (the next recall that "
        "meets it makes it again)",
        "whole, 1 stale vectors",
    ]
