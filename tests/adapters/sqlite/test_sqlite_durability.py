"""What an SQLite store keeps across a restart and a killed process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from uuid import UUID

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import (
    SQLiteMemoryStore,
)
from tests.support.sqlite_support import SRC, connect, with_store


def test_items_survive_close_and_reopen(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    items = [MemoryItem(content=f"item {i}", tags=["t"], metadata={"i": i}) for i in range(50)]
    with_store(path, lambda store: store.store_many(items))

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        return await store.search(MemoryQuery(limit=1000))

    again = with_store(path, body)
    assert [(i.id, i.content, i.metadata) for i in again] == [(i.id, i.content, i.metadata) for i in items]


def test_sigkill_in_a_stream_of_writes_loses_no_acknowledged_item(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    script = textwrap.dedent(f"""
        import asyncio, sys, uuid
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem
        from lionmem.adapters.sqlite import SQLiteMemoryStore
        async def main():
            store = await SQLiteMemoryStore.open({str(path)!r})
            n = 0
            while True:
                item = MemoryItem(id=uuid.UUID(int=n + 1), content={{"n": n, "pad": "x" * (n % 5000)}}, tags=[str(n)])
                await store.store(item)
                print(n, flush=True)
                n += 1
        asyncio.run(main())
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acknowledged = []
    for line in proc.stdout:
        acknowledged.append(int(line))
        if len(acknowledged) >= 400:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    acknowledged += [int(line) for line in proc.stdout.read().split()]
    proc.stdout.close()
    assert connect(path).execute("PRAGMA integrity_check").fetchone() == ("ok",)

    async def body(store: SQLiteMemoryStore) -> list[MemoryItem]:
        return await store.search(MemoryQuery(limit=1_000_000))

    found = with_store(path, body)
    by_number = {i.content["n"]: i for i in found}
    assert set(acknowledged) <= set(by_number)
    for n, item in by_number.items():  # no half-written item: every field is whole
        assert item.id == UUID(int=n + 1) and item.tags == [str(n)]
        assert item.content == {"n": n, "pad": "x" * (n % 5000)}
    assert sorted(by_number) == list(range(len(by_number)))
