"""A page damaged in the middle of a database, found after the store opened: every
path names the file and the recovery steps as `DatabaseCorruptError`, and the store
refuses to write once it has met the damage (issue of ADR-0096 D6)."""

from __future__ import annotations

import asyncio
import random
from pathlib import Path

import pytest

from lionmem import LionmemError, MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.cli import main
from lionmem.errors import DatabaseCorruptError, IncompatibleDatabaseError
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
