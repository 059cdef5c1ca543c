"""Namespaces alike in the three stores (ADR-0105 D1): `in_namespace` shares the
store's embedder and connections, recall keeps to its namespace, names are checked,
and URLs and the command line reach a SQLite file's namespaces."""

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
from lionmem.adapters.urls import open_store
from lionmem.cli import main
from lionmem.embedders import HashingEmbedder
from lionmem.errors import StoreClosedError
from lionmem.protocols.namespaces import DEFAULT_NAMESPACE, NamespacedStore, check_namespace
from tests.support.postgres_support import fresh_namespace

Store = InMemoryStore | SQLiteMemoryStore | PostgresMemoryStore
Opener = Callable[[], contextlib.AbstractAsyncContextManager[Store]]


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def opener(request: pytest.FixtureRequest, tmp_path: Path) -> Opener:
    embedder = HashingEmbedder(64)
    if request.param == "memory":

        @contextlib.asynccontextmanager
        async def memory() -> AsyncIterator[InMemoryStore]:
            yield InMemoryStore(embedder=embedder, namespace="home")

        return memory
    if request.param == "sqlite":
        return lambda: SQLiteMemoryStore.open(tmp_path / "m.db", embedder=embedder, namespace="home")
    url: str = request.getfixturevalue("pgvector_server_url")
    return lambda: PostgresMemoryStore.open(url, embedder=embedder, namespace=fresh_namespace())


def test_a_namespace_of_the_same_database_shares_the_embedder_and_keeps_apart(opener: Opener) -> None:
    async def body() -> None:
        async with opener() as store:
            assert isinstance(store, NamespacedStore)
            name = fresh_namespace()
            other = store.in_namespace(name)
            assert type(other) is type(store) and other.namespace == name != store.namespace
            assert other.embedder is store.embedder
            item = MemoryItem(content="The invoice 4471 is overdue", tags=["bills"])
            await store.store(item)
            await other.store(item.model_copy(update={"content": "The garden needs water"}))
            (mine,) = await store.recall("invoice overdue", 5, tags=["bills"])
            (theirs,) = await other.recall("invoice overdue", 5, tags=["bills"])
            assert (mine.item.content, theirs.item.content) == (item.content, "The garden needs water")
            again = store.in_namespace(name)
            assert [i.content for i in await again.search(MemoryQuery())] == ["The garden needs water"]
            assert {store.namespace, name} <= set(await again.namespaces())
            assert await other.delete(item.id) is True
            assert name not in await store.namespaces()

    asyncio.run(body())


def test_a_namespace_shares_the_stores_lifetime(tmp_path: Path, pg_url: str) -> None:
    async def body() -> None:
        for opened in (
            SQLiteMemoryStore.open(tmp_path / "m.db"),
            PostgresMemoryStore.open(pg_url, namespace=fresh_namespace()),
        ):
            store = await opened
            other = store.in_namespace("other")
            await other.close()
            assert store.closed
            with pytest.raises(StoreClosedError):
                await store.search(MemoryQuery())

    asyncio.run(body())


@pytest.mark.parametrize(
    ("name", "error"),
    [
        (".hidden", ValueError),
        ("-dash", ValueError),
        ("", ValueError),
        ("x" * 64, ValueError),
        ("sp ace", ValueError),
        ("naïve", ValueError),
        (b"bytes", TypeError),
        (None, TypeError),
    ],
)
def test_a_namespace_is_a_short_plain_name(name: Any, error: type[Exception]) -> None:
    with pytest.raises(error, match="namespace"):
        check_namespace(name)
    with pytest.raises(error, match="namespace"):
        InMemoryStore(namespace=name)
    with pytest.raises(error, match="namespace"):
        InMemoryStore().in_namespace(name)


def test_names_that_are_namespaces() -> None:
    for name in ("a", "_", "0", "user.42", "team-a_b", "x" * 63):
        assert check_namespace(name) == name
    assert InMemoryStore().namespace == DEFAULT_NAMESPACE == "default"


def test_the_in_memory_database_lists_the_namespaces_holding_items() -> None:
    async def body() -> None:
        store = InMemoryStore()
        assert await store.namespaces() == []
        second, first = store.in_namespace("zeta"), store.in_namespace("alpha")
        await second.store(MemoryItem(content="z"))
        await first.store(MemoryItem(content="a"))
        assert await store.namespaces() == await first.namespaces() == ["alpha", "zeta"]
        await store.store(MemoryItem(content="home"))
        assert await second.namespaces() == ["alpha", "default", "zeta"]
        assert store.in_namespace("default") is not store
        assert [i.content for i in await store.in_namespace("default").search(MemoryQuery())] == ["home"]

    asyncio.run(body())


def test_a_sqlite_url_names_a_namespace_and_copy_moves_between_two(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    url = f"sqlite:///{tmp_path / 'm.db'}"

    async def write() -> None:
        async with open_store(f"{url}?namespace=ana") as store:
            await store.store(MemoryItem(content="ana's note"))
        async with open_store(url) as store:
            assert isinstance(store, NamespacedStore) and store.namespace == "default"
            assert await store.search(MemoryQuery()) == []

    asyncio.run(write())
    assert main(["copy", f"{url}?namespace=ana", f"{url}?namespace=bob"]) == 0
    capsys.readouterr()
    assert main(["namespaces", url]) == 0
    assert capsys.readouterr().out == "ana\nbob\n"
    assert main(["search", f"{url}?namespace=bob"]) == 0
    assert "ana's note" in capsys.readouterr().out
    assert main(["namespaces", "memory:"]) == 1
    assert "namespaces reads a durable store" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["put", f"{url}?namespace=.bad", "x"])
    assert exited.value.code == 2
    assert "namespace '.bad' must be 1-63 letters" in capsys.readouterr().err


def test_the_command_line_lists_a_postgres_databases_namespaces(
    pg_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    name = fresh_namespace()
    assert main(["put", f"{pg_url}?namespace={name}" if "?" not in pg_url else f"{pg_url}&namespace={name}", "x"]) == 0
    capsys.readouterr()
    assert main(["namespaces", f"{pg_url}?namespace=any" if "?" not in pg_url else f"{pg_url}&namespace=any"]) == 0
    listed = capsys.readouterr().out.splitlines()
    assert name in listed and listed == sorted(listed)


def test_export_forget_and_import_keep_to_the_namespace_the_url_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    assert main(["put", f"{url}?namespace=ana", "ana's note", "--tag", "t"]) == 0
    assert main(["put", f"{url}?namespace=bob", "bob's note", "--tag", "t"]) == 0
    exported = tmp_path / "ana.jsonl"
    assert main(["export", f"{url}?namespace=ana", "--output", str(exported)]) == 0
    lines = exported.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and "ana's note" in lines[1]  # the header, then ana's one item
    assert main(["import", f"{url}?namespace=carol", str(exported)]) == 0
    assert main(["forget", f"{url}?namespace=bob", "--tag", "t"]) == 0
    capsys.readouterr()
    assert main(["namespaces", url]) == 0
    assert capsys.readouterr().out == "ana\ncarol\n"
    assert main(["stats", f"{url}?namespace=carol"]) == 0
    assert "items           1\n" in capsys.readouterr().out
