"""Test configuration for the whole repository: the PostgreSQL fixture, and Sybil,
which runs every Python example in docs/ and in the docstrings under src/, and every
`console` example in docs/."""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from doctest import ELLIPSIS, OutputChecker
from pathlib import Path
from typing import Any

import pytest
from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser
from sybil.parsers.rest import DocTestParser

from tests.support.pg_server import fresh_database, pgvector_url, postgres_url
from tests.support.sqlite_support import close_opened

# The kit's plugin, which installed users get through its pytest11 entry point; the
# suite turns that off (pyproject.toml) to load it here, once coverage is running.
pytest_plugins = ["pytester", "lionmem.testing.pytest_plugin"]


@pytest.fixture(autouse=True)
def _close_sqlite_test_connections() -> Iterator[None]:
    """Close the SQLite connections a test opened with `sqlite_support.connect`."""
    yield
    close_opened()


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """`LIONMEM_TEST_POSTGRES_URL`, or a throwaway local server started for the run."""
    with postgres_url() as url:
        yield url


@pytest.fixture(scope="session")
def pgvector_server_url() -> Iterator[str]:
    """A server with pgvector: `LIONMEM_TEST_POSTGRES_URL` when it has it, or a
    throwaway one from the `pgserver` wheel."""
    with pgvector_url() as url:
        yield url


def evaluate_with_await(example: Example) -> None:
    """Run a code block in its document's namespace, top-level `await` allowed.

    Stock Sybil compiles without `PyCF_ALLOW_TOP_LEVEL_AWAIT`; here a block that
    awaits compiles to a coroutine, which runs on the document's own event loop.
    """
    namespace = example.namespace
    if "__loop__" not in namespace:
        # Fixtures reach the namespace after Sybil's setup hook, so wire them here.
        namespace["__loop__"] = asyncio.new_event_loop()
        namespace["dsn"] = namespace["pg_url"]
    source = "\n" * example.line + str(example.parsed)
    code = compile(source, example.path, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        namespace["__loop__"].run_until_complete(result)


def run_console(example: Example) -> str | None:
    """Run each `$ ...` line of a console block with bash, as a pip user's shell would,
    in its document's own directory, the installed `lionmem` command first on the
    PATH, and compare stdout and stderr with the lines below it (`...` matches
    anything). `$DATABASE_URL` is the URL of a database made for the document on the
    test server."""
    namespace = example.namespace
    if "__cwd__" not in namespace:
        namespace["__cwd__"] = tempfile.mkdtemp(prefix="lionmem-docs-")
    commands: list[tuple[str, list[str]]] = []
    for line in str(example.parsed).splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], []))
        elif commands:
            commands[-1][1].append(line)
        else:
            return f"output before any command: {line!r}"
    checker = OutputChecker()
    for command, expected in commands:
        if not re.search(r"(^|\| )lionmem ", command):
            return f"a command here runs lionmem, not {command!r}"
        if "$DATABASE_URL" in command and "__database_url__" not in namespace:
            namespace["__database_url__"] = fresh_database(namespace["pg_url"])  # empty, each run
        path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=namespace["__cwd__"],
            capture_output=True,
            text=True,
            check=False,
            env={**os.environ, "PATH": path, "DATABASE_URL": namespace.get("__database_url__", "")},
        )
        want = "".join(f"{line}\n" for line in expected)
        got = done.stdout + done.stderr
        if not checker.check_output(want, got, ELLIPSIS):
            return f"$ {command}\nexpected:\n{want}got:\n{got}"
    return None


def teardown(namespace: dict[str, Any]) -> None:
    if "__loop__" in namespace:
        namespace["__loop__"].close()
    if "__cwd__" in namespace:
        shutil.rmtree(namespace["__cwd__"])


markdown = Sybil(
    parsers=[
        CodeBlockParser(language="python", evaluator=evaluate_with_await),
        CodeBlockParser(language="console", evaluator=run_console),
    ],
    patterns=["*.md"],
    path="docs",
    teardown=teardown,
    fixtures=["pg_url"],
)
docstrings = Sybil(
    parsers=[
        DocTestParser(optionflags=ELLIPSIS),
        CodeBlockParser(language="python", evaluator=evaluate_with_await),
    ],
    patterns=["*.py"],
    path="src",
    teardown=teardown,
    fixtures=["pg_url"],
)
pytest_collect_file = (markdown + docstrings).pytest()
