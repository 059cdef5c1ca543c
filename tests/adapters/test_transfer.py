"""Export and import from Python (ADR-0100): the command line's format and checks,
a file whole or not at all, nothing written from a file with a bad line, and the
store's own rules checked before the first write."""

from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.transfer import (
    BATCH,
    FORMAT,
    VERSION,
    export_items,
    header,
    import_items,
    rules_of,
    write_export,
)
from lionmem.errors import ImportFileError
from tests.support.cli_support import run_cli
from tests.support.pg_server import fresh_database


def run(body: Any) -> Any:
    return asyncio.run(body)


def notes(count: int) -> list[MemoryItem]:
    return [MemoryItem(content=f"note {n}", tags=[f"t{n % 3}"], metadata={"n": n}) for n in range(count)]


def test_an_export_from_python_is_the_command_lines_and_imports_back_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = notes(2 * BATCH + 200)
    written: list[int] = []
    imported: list[int] = []

    async def body() -> None:
        memory = InMemoryStore()
        await memory.store_many(items)
        assert await export_items(memory, tmp_path / "all.jsonl", progress=written.append) == len(items)
        async with SQLiteMemoryStore.open(tmp_path / "m.db") as durable:
            assert await import_items(durable, str(tmp_path / "all.jsonl"), progress=imported.append) == len(items)
            assert await import_items(durable, tmp_path / "all.jsonl") == len(items)  # by id: no second copy
            assert await durable.search(MemoryQuery(limit=10_000)) == items
            query = MemoryQuery(tags=["t1"], limit=5)
            found: list[int] = []
            assert await export_items(durable, tmp_path / "some.jsonl", query=query, progress=found.append) == 5
            assert found == [5]

    run(body())
    assert written == imported == [BATCH, BATCH, 200]
    lines = (tmp_path / "all.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(lines[0]) == {"format": FORMAT, "version": VERSION} and lines[0] == header()
    status, out, _ = run_cli(capsys, "export", "memory:")
    assert status == 0 and out.splitlines()[0] == header()
    some = (tmp_path / "some.jsonl").read_text(encoding="utf-8").splitlines()[1:]
    assert [json.loads(line)["metadata"]["n"] for line in some] == [1, 4, 7, 10, 13]


def test_a_file_with_a_bad_line_anywhere_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "bad.jsonl"
    good = _lines(notes(BATCH + 3))
    path.write_text("\n".join([header(), *good, '{"id": "not an item"}']) + "\n", encoding="utf-8")

    async def body() -> None:
        store = InMemoryStore()
        with pytest.raises(ImportFileError, match=f"line {BATCH + 5}: not an item"):
            await import_items(store, path)
        assert await store.count(MemoryQuery()) == 0

    run(body())


def test_a_headerless_file_is_refused_with_the_line_to_add(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "plain.jsonl"
    path.write_text("\n".join(_lines(notes(2))) + "\n", encoding="utf-8")
    with pytest.raises(ImportFileError) as refused:
        run(import_items(InMemoryStore(), path))
    assert str(refused.value).endswith(
        f"line 1: not a lionmem export (its first line is no export header); an export begins with the line {header()}"
    )
    with pytest.raises(SystemExit) as exit_info:  # the file is checked before a store is opened
        run_cli(capsys, "import", "memory:", str(path))
    assert exit_info.value.code == 2 and f"an export begins with the line {header()}" in capsys.readouterr().err


def test_told_there_is_no_header_every_line_is_an_item(tmp_path: Path) -> None:
    path = tmp_path / "plain.jsonl"
    items = notes(3)
    path.write_text("\n".join(_lines(items)) + "\n", encoding="utf-8")
    store = InMemoryStore()
    assert run(import_items(store, path, header=False)) == 3
    assert [i.id for i in run(store.search(MemoryQuery(limit=10)))] == [i.id for i in items]
    with pytest.raises(TypeError, match="header must be a bool"):
        run(import_items(store, path, header="no"))  # type: ignore[arg-type]


def test_an_export_by_search_writes_what_the_search_finds(tmp_path: Path) -> None:
    store = InMemoryStore()
    run(store.store_many(notes(5)))
    out = io.StringIO()
    assert run(write_export(store, MemoryQuery(limit=2), out)) == 2
    header_line, *lines = out.getvalue().splitlines()
    assert header_line == header() and len(lines) == 2


def test_the_stores_own_rules_are_checked_before_the_first_write(tmp_path: Path, pgvector_server_url: str) -> None:
    """PostgreSQL's text cannot hold U+0000: the item on the file's last line is refused
    by that store's rules before the first batch is written; SQLite keeps it."""
    path = tmp_path / "nul.jsonl"
    items = [*notes(BATCH + 1), MemoryItem(content="a\x00b")]
    path.write_text("\n".join([header(), *_lines(items)]) + "\n", encoding="utf-8")
    url = fresh_database(pgvector_server_url)

    async def body() -> None:
        async with PostgresMemoryStore.open(url, namespace="t") as postgres:
            assert rules_of(postgres) is not None
            with pytest.raises(ImportFileError, match=f"line {len(items) + 1}: item .*: the store refuses it"):
                await import_items(postgres, path)
            assert await postgres.count(MemoryQuery()) == 0
        async with SQLiteMemoryStore.open(tmp_path / "m.db") as sqlite:
            assert await import_items(sqlite, path) == len(items)
            assert (await sqlite.retrieve(items[-1].id)) == items[-1]

    run(body())


class Elsewhere:
    """A store of another library: the three methods, scan, count, delete and batches."""

    def __init__(self) -> None:
        self.inner = InMemoryStore()

    async def store(self, item: MemoryItem) -> UUID:
        return await self.inner.store(item)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return await self.inner.retrieve(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return await self.inner.search(query)

    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]:
        return await self.inner.store_many(items)


def test_a_store_of_another_library_imports_unchecked_and_what_cannot_be_used_is_named(tmp_path: Path) -> None:
    path = tmp_path / "all.jsonl"

    async def body() -> None:
        memory = InMemoryStore()
        await memory.store_many(notes(3))
        await export_items(memory, path)
        other = Elsewhere()
        assert rules_of(other) is None
        assert await import_items(other, path) == 3
        with pytest.raises(TypeError, match="the store must scan its items in batches, as a ForgettingStore does"):
            await export_items(other, path)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"the store must store a batch \(store_many\), as a BatchingStore does"):
            await import_items(object(), path)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="check must be callable, got an int"):
            await import_items(memory, path, check=3)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="query must be a MemoryQuery"):
            await export_items(memory, path, query={"tags": ["t0"]})  # type: ignore[arg-type]
        refused: list[str] = []

        def no_odd_numbers(item: MemoryItem) -> None:
            if item.metadata["n"] % 2:
                refused.append(str(item.content))
                raise ValueError("odd")

        with pytest.raises(ImportFileError, match="line 3: item .*: the store refuses it: odd"):
            await import_items(InMemoryStore(), path, check=no_odd_numbers)
        assert refused == ["note 1"]

    run(body())


def test_an_export_that_fails_leaves_no_file(tmp_path: Path) -> None:
    class Failing(InMemoryStore):
        async def scan(self, batch_size: int = 1000, *, after: str | None = None) -> AsyncIterator[list[MemoryItem]]:
            yield notes(1)
            raise OSError("the disk is gone")

    path = tmp_path / "out.jsonl"
    path.write_text("an older export\n", encoding="utf-8")
    with pytest.raises(OSError, match="the disk is gone"):
        run(export_items(Failing(), path))
    assert path.read_text(encoding="utf-8") == "an older export\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.jsonl"]


def _lines(items: list[MemoryItem]) -> list[str]:
    from lionmem.adapters.transfer import item_line

    return [item_line(item) for item in items]
