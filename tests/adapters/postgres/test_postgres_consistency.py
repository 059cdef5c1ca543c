"""Reads and writes across connections and processes."""

from __future__ import annotations

import asyncio
import random
import subprocess
import sys
import textwrap
from decimal import Decimal
from typing import Any
from uuid import UUID

import psycopg

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.postgres import (
    PostgresMemoryStore,
)
from lionmem.filters import Ge, Lt
from tests.support.postgres_support import SRC, fresh_namespace, run, with_store


def _process(url: str, namespace: str, code: str, *args: str) -> subprocess.Popen[str]:
    script = textwrap.dedent(f"""
        import asyncio, sys, uuid
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem, MemoryQuery
        from lionmem.adapters.postgres import PostgresMemoryStore
        async def main():
            async with PostgresMemoryStore.open({url!r}, namespace={namespace!r}) as store:
        {textwrap.indent(textwrap.dedent(code), " " * 16)}
        asyncio.run(main())
    """)
    return subprocess.Popen([sys.executable, "-c", script, *args], stdout=subprocess.PIPE, text=True)


def test_read_after_write_across_connections_and_processes(pg_url: str) -> None:
    namespace = fresh_namespace()
    item = MemoryItem(id=UUID(int=7), content="written by the parent")

    async def scenario() -> None:
        async with (
            PostgresMemoryStore.open(pg_url, namespace=namespace) as writer,
            PostgresMemoryStore.open(pg_url, namespace=namespace) as reader,
        ):
            await writer.store(item)
            got = await reader.retrieve(item.id)
            assert got is not None and got.content == item.content
            assert await reader.search(MemoryQuery(text="parent")) == [item]

    run(scenario())
    child = _process(
        pg_url,
        namespace,
        """
        got = await store.retrieve(uuid.UUID(int=7))
        await store.store(MemoryItem(id=uuid.UUID(int=8), content="written by the child"))
        print(got.content)
    """,
    )
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0 and out.strip() == "written by the parent"
    got = with_store(pg_url, lambda store: store.retrieve(UUID(int=8)), namespace=namespace)
    assert got is not None and got.content == "written by the child"


def test_several_processes_writing_lose_nothing(pg_url: str) -> None:
    namespace = fresh_namespace()
    procs = [
        _process(
            pg_url,
            namespace,
            """
            await asyncio.gather(*(store.store(MemoryItem(content=f"{sys.argv[1]}-{i}")) for i in range(150)))
        """,
            who,
        )
        for who in "abcd"
    ]
    assert [p.wait(timeout=120) for p in procs] == [0] * 4
    for p in procs:
        assert p.stdout is not None
        p.stdout.close()
    found = with_store(pg_url, lambda store: store.search(MemoryQuery(limit=10_000)), namespace=namespace)
    assert sorted(i.content for i in found) == sorted(f"{w}-{i}" for w in "abcd" for i in range(150))


def test_two_processes_replacing_one_id_leave_one_complete_version(pg_url: str) -> None:
    namespace = fresh_namespace()
    first = MemoryItem(id=UUID(int=1), content="first")
    with_store(pg_url, lambda store: store.store(first), namespace=namespace)
    procs = [
        _process(
            pg_url,
            namespace,
            """
            who = sys.argv[1]
            for n in range(200):
                await store.store(MemoryItem(
                    id=uuid.UUID(int=1), content={"who": who, "n": n}, tags=[who], metadata={"who": who, "n": n}
                ))
        """,
            who,
        )
        for who in ("left", "right")
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    for p in procs:
        assert p.stdout is not None
        p.stdout.close()

    async def body(store: PostgresMemoryStore) -> list[MemoryItem]:
        return await store.search(MemoryQuery(limit=10))

    (final,) = with_store(pg_url, body, namespace=namespace)
    who = final.content["who"]
    assert final.tags == [who] and final.metadata == final.content and final.content["n"] == 199
    assert _values_kept(pg_url, namespace) == _values_of_the_items(pg_url, namespace)

    async def ranges(store: PostgresMemoryStore) -> list[int]:
        return [len(await store.search(MemoryQuery(filters=f))) for f in ({"n": Ge(199)}, {"n": Lt(199)})]

    assert with_store(pg_url, ranges, namespace=namespace) == [1, 0]


def _values_kept(url: str, namespace: str) -> list[tuple[Any, ...]]:
    """The rows of `lionmem_meta` in `namespace`, as the triggers left them."""
    with psycopg.connect(url) as conn:
        return conn.execute(
            'SELECT seq, key, num, txt FROM lionmem_meta WHERE namespace = %s ORDER BY seq, key COLLATE "C"',
            [namespace],
        ).fetchall()


def _values_of_the_items(url: str, namespace: str) -> list[tuple[Any, ...]]:
    """The rows `lionmem_meta` should hold for the items of `namespace`, worked out
    in Python from the items themselves (ADR-0099 D5)."""
    with psycopg.connect(url) as conn:
        items = conn.execute("SELECT seq, metadata FROM lionmem_items WHERE namespace = %s", [namespace]).fetchall()
    rows: list[tuple[Any, ...]] = []
    for seq, metadata in items:
        for key, value in metadata.items():
            if isinstance(value, str):
                rows.append((seq, key, None, value[:200]))
            elif isinstance(value, bool | int | float):
                rows.append((seq, key, Decimal(repr(value) if isinstance(value, float) else int(value)), None))
    return sorted(rows, key=lambda row: (row[0], row[1].encode()))


def test_concurrent_writes_and_deletes_keep_the_metadata_values_whole(pg_url: str) -> None:
    """Two stores replace, delete and batch-write the same ids at once; the rows that
    order comparisons read are then exactly those of the items left."""
    namespace = fresh_namespace()
    ids = [UUID(int=n) for n in range(1, 25)]

    def metadata(rng: random.Random) -> dict[str, Any]:
        choices: list[Any] = [rng.randrange(-5, 5), rng.random(), "x" * rng.randrange(0, 300), True, [1], None]
        return {key: rng.choice(choices) for key in rng.sample(["a", "b", "c", "é"], rng.randrange(0, 4))}

    async def writer(store: PostgresMemoryStore, seed: int) -> None:
        rng = random.Random(seed)
        for step in range(150):
            roll = rng.random()
            if roll < 0.5:
                await store.store(MemoryItem(id=rng.choice(ids), content=step, metadata=metadata(rng)))
            elif roll < 0.7:
                await store.delete(rng.choice(ids))
            else:
                batch = [MemoryItem(id=i, content=step, metadata=metadata(rng)) for i in rng.sample(ids, 5)]
                await store.store_many(batch)

    async def scenario() -> None:
        async with (
            PostgresMemoryStore.open(pg_url, namespace=namespace) as one,
            PostgresMemoryStore.open(pg_url, namespace=namespace) as other,
        ):
            await asyncio.gather(writer(one, 1), writer(other, 2), writer(one, 3))

    run(scenario())
    expected = _values_of_the_items(pg_url, namespace)
    assert len(expected) > 10
    assert _values_kept(pg_url, namespace) == expected


def test_concurrent_batches_sharing_ids_in_any_order_all_succeed(pg_url: str) -> None:
    # Half the batches write the items in reverse order: without care, two
    # transactions lock the same rows in opposite orders and one is aborted as a
    # deadlock.
    namespace = fresh_namespace()
    items = [MemoryItem(content=f"shared {i}", metadata={"i": i}) for i in range(300)]
    orders = [items[::-1] if k % 2 else items for k in range(8)]

    async def scenario() -> list[MemoryItem]:
        async with (
            PostgresMemoryStore.open(pg_url, namespace=namespace, max_size=4) as one,
            PostgresMemoryStore.open(pg_url, namespace=namespace, max_size=4) as other,
        ):
            for _ in range(5):
                written = await asyncio.gather(
                    *(store.store_many(batch) for store, batch in zip([one, other] * 4, orders, strict=True))
                )
                assert written == [[i.id for i in batch] for batch in orders]
            return await one.search(MemoryQuery(limit=1000))

    found = run(scenario())
    assert sorted(i.metadata["i"] for i in found) == list(range(300))
