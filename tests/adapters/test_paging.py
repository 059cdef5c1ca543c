"""Paging alike in the three stores (ADR-0105 D3): pages join into the search's
matches, a cursor survives the writes and deletes around it, bad pages and cursors
are refused by name, and `scan` resumes after a cursor."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.filters import Ge
from lionmem.protocols.paging import Page, PagingStore, check_page, position_of
from tests.support.postgres_support import fresh_namespace

Store = InMemoryStore | SQLiteMemoryStore | PostgresMemoryStore
Opener = Callable[[], contextlib.AbstractAsyncContextManager[Store]]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    if request.param == "memory":

        @contextlib.asynccontextmanager
        async def memory() -> AsyncIterator[InMemoryStore]:
            yield InMemoryStore()

        return memory
    if request.param == "sqlite":
        return lambda: SQLiteMemoryStore.open(tmp_path / "m.db")
    pg_url: str = request.getfixturevalue("pg_url")
    return lambda: PostgresMemoryStore.open(pg_url, namespace=fresh_namespace())


def _notes(count: int, start: int = 0) -> list[MemoryItem]:
    return [
        MemoryItem(content=f"note {n} {'even' if n % 2 == 0 else 'odd'}", tags=[f"t{n % 3}"], metadata={"n": n})
        for n in range(start, start + count)
    ]


async def _every_page(store: PagingStore, query: MemoryQuery, after: str | None = None) -> list[list[MemoryItem]]:
    pages: list[list[MemoryItem]] = []
    while True:
        page = await store.search_page(query, after)
        pages.append(page.items)
        if page.next is None:
            return pages
        after = page.next


QUERIES = [
    MemoryQuery(limit=4),
    MemoryQuery(limit=1),
    MemoryQuery(limit=50),
    MemoryQuery(text="EVEN", limit=3),
    MemoryQuery(tags=["t1"], limit=2),
    MemoryQuery(tags=["t1", "t2"], limit=5),
    MemoryQuery(filters={"n": Ge(7)}, limit=4),
    MemoryQuery(filters={"n": 7}, limit=1),
    MemoryQuery(text="no such note", limit=3),
]


def test_the_pages_of_a_search_are_its_matches_in_order(opener: Opener) -> None:
    async def body() -> None:
        async with opener() as store:
            assert isinstance(store, PagingStore)
            await store.store_many(_notes(23))
            for query in QUERIES:
                pages = await _every_page(store, query)
                everything = await store.search(query.model_copy(update={"limit": 10_000}))
                assert [i for page in pages for i in page] == everything, query
                assert all(len(page) == query.limit for page in pages[:-1]), query
                assert 0 < len(pages[-1]) <= query.limit or everything == [], query

    asyncio.run(body())


def test_a_cursor_survives_writes_and_deletes_around_it(opener: Opener) -> None:
    """Deleting the last item of a page leaves its cursor good; a replacement keeps its
    place and comes as it is; an item stored meanwhile comes at the end; a deleted one
    does not come; an id deleted and stored again comes last."""

    async def body() -> None:
        async with opener() as store:
            items = _notes(10)
            await store.store_many(items)
            first = await store.search_page(MemoryQuery(limit=3))
            assert first.items == items[:3] and first.next is not None
            await store.delete(items[2].id)  # the cursor's own item
            await store.store(items[4].model_copy(update={"content": "note 4 replaced"}))
            await store.delete(items[5].id)
            await store.delete(items[0].id)
            await store.store(items[0])  # now the newest
            late = MemoryItem(content="late")
            await store.store(late)
            rest = await _every_page(store, MemoryQuery(limit=3), first.next)
            contents = [str(i.content) for page in rest for i in page]
            assert contents == [
                "note 3 odd",
                "note 4 replaced",
                "note 6 even",
                "note 7 odd",
                "note 8 even",
                "note 9 odd",
                "note 0 even",
                "late",
            ]
            assert await store.search_page(MemoryQuery(limit=3), "999999999999999") == Page([], None)

    asyncio.run(body())


def test_scan_resumes_after_a_cursor(opener: Opener) -> None:
    async def body() -> None:
        async with opener() as store:
            items = _notes(12)
            await store.store_many(items)
            page = await store.search_page(MemoryQuery(text="odd", limit=2))
            assert page.items == [items[1], items[3]] and page.next is not None
            batches = [batch async for batch in store.scan(4, after=page.next)]
            assert [len(batch) for batch in batches] == [4, 4]
            assert [i for batch in batches for i in batch] == items[4:]
            assert [i for batch in [b async for b in store.scan(5)] for i in batch] == items

    asyncio.run(body())


def test_a_page_needs_a_limit_and_a_cursor_a_store_gave(opener: Opener) -> None:
    async def body() -> None:
        async with opener() as store:
            for limit in (0, -1):
                with pytest.raises(ValueError, match=f"the query's limit must be at least 1, got {limit}"):
                    await store.search_page(MemoryQuery(limit=limit))
            for after in ("", "-1", "1.5", "12a", "٣", str(2**63)):
                with pytest.raises(ValueError, match=r"after must be a cursor a page gave \(its next\)"):
                    await store.search_page(MemoryQuery(), after)
                with pytest.raises(ValueError, match="after must be a cursor"):
                    store.scan(after=after)
            with pytest.raises(TypeError, match="after must be a str, got int"):
                await store.search_page(MemoryQuery(), 3)  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="query must be a MemoryQuery"):
                await store.search_page({"limit": 3})  # type: ignore[arg-type]

    asyncio.run(body())


def test_cursors_are_positions() -> None:
    assert position_of(None) == 0 and position_of("0") == 0 and position_of(str(2**63 - 1)) == 2**63 - 1
    assert check_page(MemoryQuery(limit=7), "12") == (7, 12)


def test_the_in_memory_store_keeps_positions_only_once_paged(monkeypatch: pytest.MonkeyPatch) -> None:
    async def body() -> None:
        store = InMemoryStore()
        await store.store_many(_notes(3))
        assert store._order.positions is None  # storing pays nothing until someone pages
        page = await store.search_page(MemoryQuery(limit=2))
        assert page.next == "2"
        sibling = store.in_namespace("default")
        await sibling.store(MemoryItem(content="through a sibling"))
        await store.store_many([MemoryItem(content="in a batch"), MemoryItem(content="and another")])
        rest = await store.search_page(MemoryQuery(limit=5), page.next)
        assert [i.content for i in rest.items] == ["note 2 even", "through a sibling", "in a batch", "and another"]

    asyncio.run(body())


def test_a_page_of_sqlite_reads_its_items_and_cursor_in_one_snapshot(tmp_path: Path) -> None:
    """The position of a page's last item is read in the page's own snapshot: another
    connection deleting that item between the two reads cannot lose the cursor."""
    from tests.support.sqlite_support import connect

    path = tmp_path / "m.db"

    async def body() -> None:
        async with SQLiteMemoryStore.open(path) as store:
            items = _notes(5)
            await store.store_many(items)
            worker = store._connections.worker
            real = worker.db.execute
            other = connect(path, isolation_level=None, check_same_thread=False)

            def meddling(sql: str, *args: Any) -> Any:
                if sql.startswith("SELECT seq FROM items WHERE id = ?"):
                    other.execute("DELETE FROM items WHERE seq = 2")
                return real(sql, *args)

            worker.db = _Wrapped(worker.db, meddling)  # type: ignore[assignment]
            try:
                page = await store.search_page(MemoryQuery(limit=2))
            finally:
                worker.db = worker.db.inner  # type: ignore[attr-defined]
            assert page == Page(items[:2], "2")

    asyncio.run(body())


class _Wrapped:
    """A connection whose `execute` another function takes over."""

    def __init__(self, db: Any, execute: Callable[..., Any]) -> None:
        self.inner, self.execute = db, execute

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_the_command_line_reads_a_page_after_a_cursor(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from lionmem.cli import main

    url = f"sqlite:///{tmp_path / 'm.db'}"
    for n in range(5):
        assert main(["put", url, f"note {n}"]) == 0
    capsys.readouterr()
    assert main(["search", url, "--limit", "2"]) == 0
    first = capsys.readouterr()
    assert first.err == "next page: --after 2\n" and first.out.count("\n") == 2
    assert main(["search", url, "--limit", "2", "--after", "4"]) == 0
    last = capsys.readouterr()
    assert last.err == "" and '"note 4"' in last.out and last.out.count("\n") == 1
    assert main(["search", url, "--after", "5"]) == 0  # past the end: no note that the store is empty
    assert capsys.readouterr() == ("", "")
    assert main(["search", url, "--limit", "-2"]) == 0  # a slice, as before: no page
    sliced = capsys.readouterr()
    assert sliced.err == "" and sliced.out.count("\n") == 3
    for argv, message in (
        (["--after", "x"], "after must be a cursor a page gave"),
        (["--after", "2", "--limit", "0"], "--after reads a page, which needs a --limit of at least 1, got 0"),
    ):
        with pytest.raises(SystemExit) as exited:
            main(["search", url, *argv])
        assert exited.value.code == 2 and message in capsys.readouterr().err


def test_a_page_of_postgresql_reads_its_items_and_cursor_in_one_snapshot(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in SQLite: another client deleting the page's last item between the page's
    read and its cursor's cannot lose the cursor."""
    import psycopg

    from lionmem.adapters.postgres import _reads
    from lionmem.adapters.postgres._pool import fetch as real

    namespace = fresh_namespace()

    async def meddling(conn: Any, query: Any, params: list[object], prepare: bool | None) -> Any:
        if isinstance(query, str) and query.startswith("SELECT seq FROM lionmem_items WHERE namespace"):
            async with await psycopg.AsyncConnection.connect(pg_url, autocommit=True) as other:
                await other.execute("DELETE FROM lionmem_items WHERE namespace = %s AND id = %s", params)
        return await real(conn, query, params, prepare)

    async def body() -> None:
        async with PostgresMemoryStore.open(pg_url, namespace=namespace) as store:
            items = _notes(5)
            await store.store_many(items)
            monkeypatch.setattr(_reads, "fetch", meddling)
            page = await store.search_page(MemoryQuery(limit=2))
            assert page.items == items[:2] and page.next is not None
            assert await store.retrieve(items[1].id) is None  # deleted, after the page was read
            rest = await store.search_page(MemoryQuery(limit=5), page.next)
            assert rest.items == items[2:]

    asyncio.run(body())
