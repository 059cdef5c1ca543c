"""The SQLite schema: its version, migrations from each older version, and refusing a newer one."""

from __future__ import annotations

import sqlite3
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters import sqlite as sqlite_module
from lionmem.adapters._codec import encode_item
from lionmem.adapters.errors import IncompatibleDatabaseError
from lionmem.adapters.sqlite import (
    APPLICATION_ID,
    MIGRATIONS,
    SCHEMA_VERSION,
    SQLiteMemoryStore,
)
from lionmem.adapters.sqlite import schema as sqlite_schema
from lionmem.cli import main
from tests.support.sqlite_support import SRC, connect, digest, version_one_file, with_store
from tests.support.together import start_together


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with_store(path, lambda store: store.store(MemoryItem()))
    db = connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(IncompatibleDatabaseError, match="newer than this lionmem"):
        with_store(path, lambda store: store.search(MemoryQuery()))


def test_an_older_schema_is_migrated_with_its_data(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    items = [
        MemoryItem(content="Alpha Centauri", tags=["star"], metadata={"n": 1}),
        MemoryItem(content="beta", tags=["greek"], metadata={"n": 2}),
    ]
    version_one_file(path, items)

    async def body(store: SQLiteMemoryStore) -> None:
        assert [i.id for i in await store.search(MemoryQuery(text="centauri"))] == [items[0].id]
        assert [i.id for i in await store.search(MemoryQuery(tags=["greek"]))] == [items[1].id]
        assert [i.id for i in await store.search(MemoryQuery(filters={"n": 2.0}))] == [items[1].id]

    with_store(path, body)
    assert connect(path).execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)


@pytest.mark.parametrize(
    ("failure", "raised", "message"),
    [
        # SQL the step could not run: the tables are not what the version says.
        ("INSERT INTO no_such_table VALUES (1)", IncompatibleDatabaseError, "no such table: no_such_table"),
        # Anything else, such as a full disk, is raised as SQLite reports it.
        (None, sqlite3.OperationalError, "^database or disk is full$"),
    ],
)
def test_a_failed_migration_leaves_the_old_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str | None, raised: type[Exception], message: str
) -> None:
    path = tmp_path / "old.db"
    version_one_file(path, [MemoryItem(content="kept")])
    step_two = MIGRATIONS[2]

    def half_done(db: sqlite3.Connection) -> None:
        step_two(db)
        if failure is None:
            raise sqlite3.OperationalError("database or disk is full")
        db.execute(failure)

    monkeypatch.setitem(sqlite_module.MIGRATIONS, 2, half_done)
    with pytest.raises(raised, match=message):
        with_store(path, lambda store: store.search(MemoryQuery()))
    db = connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (1,)
    tables = {row[0] for row in db.execute("SELECT name FROM sqlite_schema WHERE type = 'table'")}
    assert "item_tags" not in tables
    assert db.execute("SELECT body FROM items").fetchall() == [('["kept",[],{}]',)]


def test_concurrent_first_opens_migrate_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    script = textwrap.dedent(f"""
        import asyncio, sys
        sys.path.insert(0, {SRC!r})
        from lionmem import MemoryItem
        from lionmem.adapters.sqlite import SQLiteMemoryStore
        async def main():
            async with SQLiteMemoryStore.open({str(path)!r}) as store:
                await store.store(MemoryItem(content=sys.argv[1]))
        wait_for_go()
        asyncio.run(main())
    """)
    procs = start_together(script, [str(n) for n in range(4)], tmp_path / "barrier")
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    found = with_store(path, lambda store: store.search(MemoryQuery(limit=100)))
    assert sorted(i.content for i in found) == ["0", "1", "2", "3"]


def test_a_schema_committed_while_the_file_is_checked_is_not_taken_as_foreign(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process finishes creating lionmem's schema while this one checks the new
    # file. Checking with two statements could read the id from before that commit and
    # the tables from after it, and refuse the file as another application's (seen
    # once in CI with four processes opening at once).
    path = tmp_path / "m.db"
    path.touch()
    real_connect = sqlite3.connect
    steps: list[str] = []

    class CommitsAfterTheIdIsRead(sqlite3.Connection):
        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            if steps == ["id read"]:  # the other process commits before the next statement
                other = real_connect(path, isolation_level=None)
                sqlite_schema.migrate(other, path)
                other.close()
                steps.append("committed")
            if "application_id" in sql and not steps:
                steps.append("id read")
            return super().execute(sql, parameters)

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        return real_connect(*args, factory=CommitsAfterTheIdIsRead, **kwargs)

    monkeypatch.setattr(sqlite3, "connect", connect)
    with_store(path, lambda store: store.store(MemoryItem(content="opened")))
    monkeypatch.undo()
    assert steps == ["id read", "committed"]
    assert [i.content for i in with_store(path, lambda store: store.search(MemoryQuery()))] == ["opened"]


def test_a_schema_migrated_while_this_open_waits_for_the_lock_is_not_migrated_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Deterministic form of the race the concurrent-open test runs into only sometimes:
    # this open finds the file new, and another process migrates it before this one
    # holds the write lock. Running the steps again would fail on tables that exist.
    path = tmp_path / "m.db"
    ran: list[int] = []

    def counted(step: int, migration: Callable[[sqlite3.Connection], None]) -> Callable[[sqlite3.Connection], None]:
        def run(db: sqlite3.Connection) -> None:
            ran.append(step)
            migration(db)

        return run

    for step, migration in MIGRATIONS.items():
        monkeypatch.setitem(MIGRATIONS, step, counted(step, migration))

    class OtherProcessMigratesFirst(sqlite3.Connection):
        def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
            if sql == "BEGIN IMMEDIATE" and not ran:
                other = sqlite3.connect(path, isolation_level=None)
                sqlite_schema.migrate(other, path)
                other.close()
            return super().execute(sql, parameters)

    db = sqlite3.connect(path, isolation_level=None, factory=OtherProcessMigratesFirst)
    sqlite_schema.migrate(db, path)
    assert ran == list(range(1, SCHEMA_VERSION + 1))  # each step once, by the other process
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    assert not db.in_transaction
    db.close()


def _version_two(path: Path, items: list[MemoryItem]) -> None:
    """A database as version 2 wrote it: integers beyond 64 bits indexed as rounded floats."""
    db = connect(path, isolation_level=None)
    MIGRATIONS[1](db)
    MIGRATIONS[2](db)
    db.execute("DROP INDEX item_meta_by_value")
    db.execute("CREATE INDEX item_meta_by_value ON item_meta (key, value, seq)")
    for item in items:
        row = encode_item(item)
        seq = db.execute("INSERT INTO items (id, created_at, body, folded) VALUES (?, ?, ?, ?)", row).lastrowid
        for key, value in item.metadata.items():
            db.execute(
                "INSERT INTO item_meta (seq, key, kind, value) VALUES (?, ?, ?, ?)",
                (seq, key, "integer", value if -(2**63) <= value < 2**63 else float(value)),
            )
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 2")
    db.close()


def test_version_two_is_migrated_to_exact_big_integers(tmp_path: Path) -> None:
    path = tmp_path / "v2.db"
    big = MemoryItem(content="big", metadata={"n": -(2**63) - 1})
    small = MemoryItem(content="small", metadata={"n": 5})
    _version_two(path, [big, small])
    # Version 2's index holds -(2**63) for both -(2**63) - 1 and -(2**63).
    old = connect(path).execute("SELECT value FROM item_meta ORDER BY seq").fetchall()
    assert old == [(-(2.0**63),), (5,)]

    async def body(store: SQLiteMemoryStore) -> None:
        assert await store.search(MemoryQuery(filters={"n": -(2**63)})) == []
        assert [i.id for i in await store.search(MemoryQuery(filters={"n": -(2**63) - 1}))] == [big.id]
        assert [i.id for i in await store.search(MemoryQuery(filters={"n": 5.0}))] == [small.id]

    with_store(path, body)
    db = connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
    new = db.execute("SELECT kind, value FROM item_meta ORDER BY seq").fetchall()
    assert new == [("bigint", None), ("integer", 5)]
    columns = [row[2] for row in db.execute("PRAGMA index_info(item_meta_by_value)")]
    assert columns == ["key", "value", "seq", "kind"]


def test_version_three_is_migrated_and_keeps_its_rows(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    item = MemoryItem(content="three", tags=["t"], metadata={"n": 1}, created_at=-1.5)
    db = connect(path, isolation_level=None)
    for step in (1, 2, 3):
        MIGRATIONS[step](db)
    row = encode_item(item)
    seq = db.execute("INSERT INTO items (id, created_at, body, folded) VALUES (?, ?, ?, ?)", row).lastrowid
    db.execute("INSERT INTO item_tags (seq, tag) VALUES (?, 't')", (seq,))
    db.execute("INSERT INTO item_meta (seq, key, kind, value) VALUES (?, 'n', 'integer', 1)", (seq,))
    db.execute("INSERT INTO items_text (rowid, indexed) VALUES (?, ?)", (seq, row.folded))
    db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
    db.execute("PRAGMA user_version = 3")
    db.close()

    async def body(store: SQLiteMemoryStore) -> None:
        for query in (MemoryQuery(text="THREE"), MemoryQuery(tags=["t"]), MemoryQuery(filters={"n": 1.0})):
            found = await store.search(query)
            assert [(i.id, i.created_at) for i in found] == [(item.id, -1.5)], query

    with_store(path, body)
    db = connect(path)
    assert db.execute("PRAGMA user_version").fetchone() == (9,) == (SCHEMA_VERSION,)
    # Version 7 filled the term index from the rows already there.
    assert db.execute("SELECT seq, term, tf FROM item_terms").fetchall() == [(seq, "three", 1)]


def test_an_opener_that_only_reads_leaves_an_older_schema_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file whose user_version was lowered by hand, or written by an older lionmem:
    the command line's reads (create=False) refuse it and leave every byte; a write
    migrates it."""
    path = tmp_path / "m.db"
    item = MemoryItem(content="kept")
    version_one_file(path, [item])
    before = digest(path)
    with pytest.raises(IncompatibleDatabaseError, match=r"holds schema version 1, older than this lionmem's"):
        with_store(path, lambda store: store.retrieve(item.id), create=False)
    for command in (
        ["get", f"sqlite:///{path}", str(item.id)],
        ["search", f"sqlite:///{path}"],
        ["stats", f"sqlite:///{path}"],
    ):
        assert main(command) == 1
        assert "opened to read (create=False), it was left as it was" in capsys.readouterr().err
    assert digest(path) == before and not path.with_name("m.db-wal").exists()
    assert with_store(path, lambda store: store.retrieve(item.id)) == item  # a writer migrates it
    assert with_store(path, lambda store: store.retrieve(item.id), create=False) == item
