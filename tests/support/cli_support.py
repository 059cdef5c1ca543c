"""Helpers for the command line's tests: running it in-process, and reading its output."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import pty
import struct
import subprocess
import sys
import termios
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.urls import open_store
from lionmem.cli import main

KNOWN = "6f1c2a9e-1d1b-4b7e-9a49-8a4c1f0f6a11"
"""An item id the tests put and get by."""

PIPED_ENV = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}
"""The environment of a child whose output is a pipe, buffered as a pipe is."""


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run the command line in this process: its status, stdout and stderr."""
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def lines_of(out: str) -> list[dict[str, Any]]:
    """The items of the command line's output, one JSON object a line."""
    return [json.loads(line) for line in out.splitlines()]


def with_namespace(url: str, namespace: str) -> str:
    """`url` with a PostgreSQL namespace added to its query."""
    return f"{url}{'&' if '?' in url else '?'}namespace={namespace}"


def fill(url: str, items: list[MemoryItem]) -> None:
    """Store `items` one by one in the store `url` names, creating it if need be."""

    async def each() -> None:
        async with open_store(url) as store:
            for item in items:
                await store.store(item)

    asyncio.run(each())


def fail_store_many_at(monkeypatch: pytest.MonkeyPatch, call: int, error: Exception) -> Callable[[], None]:
    """Make `SQLiteMemoryStore.store_many` raise `error` at its `call`th call (from 1),
    writing nothing then, as a lost disk or connection would; every other call writes.
    Returns what puts the real one back."""
    store_many = SQLiteMemoryStore.store_many
    calls: list[int] = []

    async def failing(store: SQLiteMemoryStore, items: Any) -> Any:
        calls.append(1)
        if len(calls) == call:
            raise error
        return await store_many(store, items)

    monkeypatch.setattr(SQLiteMemoryStore, "store_many", failing)
    return lambda: monkeypatch.setattr(SQLiteMemoryStore, "store_many", store_many)


def everything(url: str) -> list[MemoryItem]:
    """Every item of the store `url` names, in order."""

    async def read() -> list[MemoryItem]:
        async with open_store(url) as store:
            return await store.search(MemoryQuery(limit=10**6))

    return asyncio.run(read())


def exactly(items: list[MemoryItem]) -> list[tuple[Any, ...]]:
    """Each item's fields, with `created_at` as its bits."""
    return [(i.id, struct.pack("<d", i.created_at), i.content, i.tags, i.metadata) for i in items]


def on_a_terminal(
    argv: list[str], cwd: Path, stdin: bytes | None = None
) -> tuple[subprocess.CompletedProcess[str], bytes]:
    """Run `python -m lionmem ARGV` with stderr on a terminal of 100 columns (with no
    size, as a new pty has, tqdm draws nothing) and stdout a pipe: the process, and
    what the terminal showed."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 100, 0, 0))
    try:
        done = subprocess.run(
            [sys.executable, "-m", "lionmem", *argv],
            input=None if stdin is None else stdin.decode(),
            stdout=subprocess.PIPE,
            stderr=follower,
            text=True,
            env=PIPED_ENV,
            cwd=cwd,
            timeout=120,
        )
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65_536)
            except OSError:  # the terminal's other end is closed: all read
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(leader)
    return done, shown
