"""Reads and writes across connections and processes."""

from __future__ import annotations

import asyncio
import subprocess
import sys
import textwrap
from uuid import UUID

from postgres_support import SRC, fresh_namespace, run, with_store

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.postgres import (
    PostgresMemoryStore,
)


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
    child = _process(pg_url, namespace, """
        got = await store.retrieve(uuid.UUID(int=7))
        await store.store(MemoryItem(id=uuid.UUID(int=8), content="written by the child"))
        print(got.content)
    """)
    out, _ = child.communicate(timeout=60)
    assert child.returncode == 0 and out.strip() == "written by the parent"
    got = with_store(pg_url, lambda store: store.retrieve(UUID(int=8)), namespace=namespace)
    assert got is not None and got.content == "written by the child"


def test_several_processes_writing_lose_nothing(pg_url: str) -> None:
    namespace = fresh_namespace()
    procs = [
        _process(pg_url, namespace, """
            await asyncio.gather(*(store.store(MemoryItem(content=f"{sys.argv[1]}-{i}")) for i in range(150)))
        """, who)
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
        _process(pg_url, namespace, """
            who = sys.argv[1]
            for n in range(200):
                await store.store(MemoryItem(
                    id=uuid.UUID(int=1), content={"who": who, "n": n}, tags=[who], metadata={"who": who, "n": n}
                ))
        """, who)
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
