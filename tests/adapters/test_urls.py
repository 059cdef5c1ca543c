"""`open_store`: which store a URL names, with which settings, and what it refuses."""

from __future__ import annotations

import asyncio
import re
import sqlite3
import sys
from pathlib import Path
from typing import Any
from uuid import uuid4

import psycopg
import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import PostgresMemoryStore
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.urls import SCHEMES, open_store
from tests.support.postgres_support import execute
from tests.support.sqlite_support import on_writer


def opened(url: str, inspect: Any) -> Any:
    async def scenario() -> Any:
        async with open_store(url) as store:
            return await inspect(store)

    return asyncio.run(scenario())


def test_memory_is_a_new_in_memory_store_each_time() -> None:
    async def kind(store: Any) -> Any:
        await store.store(MemoryItem(content="x"))
        return type(store), len(await store.search(MemoryQuery()))

    assert opened("memory:", kind) == (InMemoryStore, 1)
    assert opened("memory:", kind) == (InMemoryStore, 1)


def test_sqlite_paths_relative_absolute_and_escaped(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)

    async def path_of(store: Any) -> Path:
        assert isinstance(store, SQLiteMemoryStore)
        return store.path

    assert opened("sqlite:///rel.db", path_of) == Path("rel.db")
    assert (tmp_path / "rel.db").exists()
    absolute = tmp_path / "abs dir"
    absolute.mkdir()
    assert opened(f"sqlite:///{absolute}/a.db", path_of) == absolute / "a.db"
    assert opened("sqlite:///my%20notes.db", path_of) == Path("my notes.db")
    assert (tmp_path / "my notes.db").exists()
    assert opened("sqlite:///notes%231%3F.db", path_of) == Path("notes#1?.db")


def test_sqlite_options_reach_the_database(tmp_path: Path) -> None:
    def pragmas(db: sqlite3.Connection) -> tuple[int, int]:
        return db.execute("PRAGMA synchronous").fetchone()[0], db.execute("PRAGMA busy_timeout").fetchone()[0]

    async def settings(store: Any) -> tuple[int, int]:
        # The writer connection, which the options configure, lives on the store's thread.
        return await on_writer(store, pragmas)

    base = f"sqlite:///{tmp_path / 'o.db'}"
    assert opened(base, settings) == (1, 10_000)  # NORMAL, the store's default 10 s
    assert opened(f"{base}?synchronous=full&busy_timeout=2.5", settings) == (2, 2500)


def test_postgres_takes_its_namespace_and_passes_other_options_to_libpq(pg_url: str) -> None:
    namespace = f"url-{uuid4().hex[:12]}"
    separator = "&" if "?" in pg_url else "?"

    async def seen(store: Any) -> tuple[str, str, str]:
        assert isinstance(store, PostgresMemoryStore)
        [(name, timeout)] = await execute(
            store, "SELECT current_setting('application_name'), current_setting('lock_timeout')"
        )
        return store.namespace, name, timeout

    # Options reach libpq as libpq itself would read the URL: %20 is a space, and
    # "+" is a plus sign (in an HTML form it would be a space).
    url = (
        f"{pg_url}{separator}namespace={namespace}&application_name=lionmem%20url+test"
        "&options=-c%20lock_timeout%3D123ms"
    )
    assert opened(url, seen) == (namespace, "lionmem url+test", "123ms")
    assert opened(url.replace("postgresql://", "postgres://", 1), seen)[0] == namespace


@pytest.mark.parametrize("scheme", ["sqlite", "postgresql"])
def test_a_url_gives_its_store_a_ttl(scheme: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if scheme == "sqlite":
        url = f"sqlite:///{tmp_path / 'm.db'}?ttl=3600"
    else:
        pg_url: str = request.getfixturevalue("pg_url")
        url = f"{pg_url}{'&' if '?' in pg_url else '?'}namespace=url-ttl-{tmp_path.name[-8:]}&ttl=3600"

    async def seen(store: Any) -> float | None:
        ttl: float | None = store.ttl
        return ttl

    assert opened(url, seen) == 3600.0


def test_postgres_timeouts_are_url_options(pg_url: str) -> None:
    url = f"{pg_url}{'&' if '?' in pg_url else '?'}namespace=url-timeouts&timeout=3&statement_timeout=2.5"

    async def seen(store: Any) -> tuple[bool, str]:
        [(statement_timeout,)] = await execute(store, "SELECT current_setting('statement_timeout')")
        return "connect_timeout=3 " in repr(store), statement_timeout

    assert opened(url, seen) == (True, "2500ms")


def test_a_postgres_url_without_a_host_part_reaches_libpq_whole(pg_url: str) -> None:
    # `postgresql:///db` (no host: a local socket, or a host given as an option) lost
    # its "//" on the way to libpq, which then refused it as a malformed string.
    parts = psycopg.conninfo.conninfo_to_dict(pg_url)
    url = (
        f"postgresql:///{parts['dbname']}?namespace=url-no-host&host={parts['host']}&port={parts['port']}"
        f"&user={parts['user']}&password={parts['password']}"
    )

    async def namespace(store: Any) -> str:
        assert isinstance(store, PostgresMemoryStore)
        return store.namespace

    assert opened(url, namespace) == "url-no-host"


def test_postgres_without_the_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "lionmem.adapters.postgres", None)
    with pytest.raises(ModuleNotFoundError, match=r"pip install 'lionmem\[postgres\]'"):
        open_store("postgresql://h/db?namespace=n")


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("", "starts with one of"),
        ("sqlite", "starts with one of"),
        ("SQLITE:///x.db", "got 'SQLITE:'"),
        ("memory://", "nothing after the colon"),
        ("sqlite:relative.db", "names a local file"),
        ("sqlite:///x.db#frag", "takes no #fragment; write a # in the path as %23"),
        ("sqlite:///?synchronous=FULL", "names no file"),
        ("sqlite:///x.db?synchronous", "not name=value pairs"),
        ("sqlite:///x.db?busy_timeout=1&busy_timeout=2", "'busy_timeout' twice"),
        # A blank value is a value, not a missing option.
        ("sqlite:///x.db?synchronous=", "synchronous must be 'NORMAL' or 'FULL', got ''"),
        ("postgresql://h/db?namespace=", "needs ?namespace=NAME"),
        ("postgresql://h/db?namespace=n#frag", "takes no #fragment; write a # in a value as %23"),
        ("postgresql://h/db?namespace=n&timeout=soon", "the postgresql URL option timeout must be a number of seconds"),
        ("postgresql://h/db?namespace=n&statement_timeout=", "option statement_timeout must be a number of seconds"),
        ("postgresql://h/db?namespace=n&timeout=0", "timeout must be more than 0"),
        ("postgresql://h/db?namespace=n&connect_timeout=3", "sets connect_timeout, which lionmem sets from timeout"),
        ("sqlite:///x.db?busy_timeout=soon", "the sqlite URL option busy_timeout must be a number of seconds"),
        ("sqlite:///x.db?ttl=1d", "the sqlite URL option ttl must be a number of seconds"),
        ("sqlite:///x.db?ttl=0", "ttl must be a finite number of seconds above 0, got 0.0"),
        ("postgresql://h/db?namespace=n&ttl=-5", "ttl must be a finite number of seconds above 0, got -5.0"),
    ],
)
def test_malformed_urls_are_refused_before_anything_opens(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, url: str, message: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=re.escape(message)):
        open_store(url)
    assert list(tmp_path.iterdir()) == []


def test_a_url_must_be_a_string_and_create_a_bool() -> None:
    with pytest.raises(TypeError, match="url must be a str, got PosixPath|url must be a str, got WindowsPath"):
        open_store(Path("x.db"))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="create must be a bool, got str"):
        open_store("memory:", create="no")  # type: ignore[arg-type]


def test_every_listed_scheme_is_understood() -> None:
    example = {
        "memory": "memory:",
        "sqlite": "sqlite:///x.db",
        "postgresql": "postgresql://h/db?namespace=n",
        "postgres": "postgres://h/db?namespace=n",
    }
    assert set(SCHEMES) == set(example)
    for scheme in SCHEMES:
        assert open_store(example[scheme]) is not None  # accepted; nothing opened yet


def test_without_create_a_missing_sqlite_file_is_not_made(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"

    async def read() -> None:
        async with open_store(url, create=False) as store:
            await store.search(MemoryQuery())

    with pytest.raises(FileNotFoundError, match="there is no database at"):
        asyncio.run(read())
    assert list(tmp_path.iterdir()) == []

    async def write_then_read() -> list[MemoryItem]:
        async with open_store(url) as store:
            await store.store(MemoryItem(content="kept"))
        async with open_store(url, create=False) as store:
            return await store.search(MemoryQuery())

    assert [i.content for i in asyncio.run(write_then_read())] == ["kept"]


def test_profile_of_names_each_stores_declaration_without_loading_it() -> None:
    from lionmem.adapters.postgres import POSTGRES_PROFILE
    from lionmem.adapters.sqlite import SQLITE_PROFILE
    from lionmem.adapters.urls import profile_of
    from lionmem.testing import REFERENCE_PROFILE

    assert profile_of("memory:") is REFERENCE_PROFILE
    assert profile_of("sqlite:///n.db") is SQLITE_PROFILE
    assert profile_of("postgresql://h/db?namespace=n") is POSTGRES_PROFILE
    assert profile_of("postgres://h/db") is POSTGRES_PROFILE
    with pytest.raises(ValueError, match="a store URL starts with one of memory:, sqlite:"):
        profile_of("mysql://h/db")
    with pytest.raises(TypeError, match="url must be a str"):
        profile_of(b"memory:")  # type: ignore[arg-type]
    # Naming the profile loads neither adapter.
    code = "import sys; from lionmem.adapters.urls import profile_of; profile_of('sqlite:///x'); profile_of('postgres://h/d'); print(sorted(m for m in sys.modules if m.startswith(('lionmem.adapters.sqlite', 'lionmem.adapters.postgres', 'psycopg'))))"
    import subprocess

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "[]\n"


def test_sqlite_file_is_the_path_a_sqlite_url_names() -> None:
    from lionmem.adapters.urls import sqlite_file

    assert sqlite_file("sqlite:///notes.db") == Path("notes.db")
    assert sqlite_file("sqlite:////var/lib/a%20b.db?synchronous=FULL") == Path("/var/lib/a b.db")
    assert sqlite_file("memory:") is None
    assert sqlite_file("postgresql://h/db?namespace=n") is None


def test_reembed_is_a_bool_for_a_durable_store(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="reembed"):
        open_store(f"sqlite:///{tmp_path / 'm.db'}", reembed="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="a new memory: store holds none"):
        open_store("memory:", reembed=True)
