"""Paging through 100,000 items while another process writes (ADR-0105 D3): every item
that exists throughout comes exactly once, whatever the other process stores,
replaces and deletes meanwhile, in the SQLite and the PostgreSQL store."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from uuid import UUID

import pytest

from lionmem import BatchingStore, MemoryItem, MemoryQuery
from lionmem.adapters.urls import open_store
from lionmem.protocols.paging import PagingStore
from tests.support.postgres_support import fresh_namespace
from tests.support.sqlite_support import SRC

ITEMS = 100_000

# The other process: until told to stop, it stores new items, replaces items of the
# first 100,000 in place (their kind stays as it was), deletes items it stored itself,
# and deletes, in no order, the tenth of the first 100,000 whose kind is 'doomed',
# which a pager counting an offset would then skip past others for.
WRITER = """
import asyncio, random, sys
from pathlib import Path
from lionmem import BatchingStore, MemoryItem, MemoryQuery
from lionmem.adapters.urls import open_store

async def main(url, stop):
    rng = random.Random(5)
    async with open_store(url) as store:
        base = [i async for batch in store.scan(5000) for i in batch]
        doomed = [i.id for i in base if i.metadata["kind"] == "doomed"]
        rng.shuffle(doomed)
        kept = [i for i in base if i.metadata["kind"] == "base"]  # never deleted, so replaced in place
        mine = []
        rounds = 0
        while not Path(stop).exists():
            new = [MemoryItem(content=f"new {rounds} {n}", metadata={"kind": "new"}) for n in range(20)]
            await store.store_many(new)
            mine += new
            chosen = rng.sample(kept, 20)
            await store.store_many([i.model_copy(update={"content": f"replaced in round {rounds}"}) for i in chosen])
            await store.delete_many([i.id for i in mine[:10]] + doomed[:20])
            mine, doomed = mine[10:], doomed[20:]
            rounds += 1
            if rounds == 1:
                Path(stop + ".started").touch()
        print(rounds)

asyncio.run(main(sys.argv[1], sys.argv[2]))
"""


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'm.db'}"
    pg_url: str = request.getfixturevalue("pg_url")
    return f"{pg_url}{'&' if '?' in pg_url else '?'}namespace={fresh_namespace()}"


def test_paging_through_100000_items_while_another_process_writes(url: str, tmp_path: Path) -> None:
    base = [
        MemoryItem(content=f"base {n}", metadata={"kind": "doomed" if n % 10 == 9 else "base", "n": n})
        for n in range(ITEMS)
    ]

    # Neither the load nor a page's speed is what is tested: time to spare on a busy
    # machine, where a loaded run once spent more than 30 s on one statement of each.
    patient = f"{url}&statement_timeout=300" if url.startswith("postgresql") else url

    async def fill() -> None:
        # Small batches, as well.
        async with open_store(patient) as store:
            assert isinstance(store, BatchingStore)
            for start in range(0, ITEMS, 1_000):
                await store.store_many(base[start : start + 1_000])

    asyncio.run(fill())
    stop = str(tmp_path / "stop")
    writer = subprocess.Popen(
        [sys.executable, "-c", WRITER, url, stop],
        env={"PYTHONPATH": SRC, "PATH": "/usr/bin:/bin"},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not Path(stop + ".started").exists():
            assert writer.poll() is None, writer.communicate()
            assert time.monotonic() < deadline, "the writer did not start"
            time.sleep(0.05)

        async def page_through(query: MemoryQuery) -> list[UUID]:
            seen: list[UUID] = []
            async with open_store(patient) as store:
                assert isinstance(store, PagingStore)
                after = None
                while True:
                    page = await store.search_page(query, after)
                    seen += [item.id for item in page.items]
                    if page.next is None:
                        return seen
                    after = page.next

        of_base = asyncio.run(page_through(MemoryQuery(filters={"kind": "base"}, limit=700)))
        everything = asyncio.run(page_through(MemoryQuery(limit=1_000)))
    finally:
        Path(stop).touch()
        out, err = writer.communicate(timeout=60)
    assert writer.returncode == 0, err
    rounds = int(out)
    assert rounds > 2, f"the writer wrote only {rounds} rounds while the pages were read"
    kept = [item.id for item in base if item.metadata["kind"] == "base"]
    assert of_base == kept  # each once, in insertion order, the replaced ones in their place
    assert max(Counter(everything).values()) == 1  # nothing twice
    first, held = {item.id for item in base}, set(kept)
    assert [i for i in everything if i in held] == kept  # every kept item, in order
    assert ITEMS - rounds * 20 <= sum(i in first for i in everything) < ITEMS  # some doomed ones gone
