"""Test configuration for the whole repository: the PostgreSQL fixture, and Sybil,
which runs every Python example in docs/ and in the docstrings under src/."""

from __future__ import annotations

import ast
import asyncio
import inspect
import sys
from collections.abc import Iterator
from doctest import ELLIPSIS
from pathlib import Path
from typing import Any

import pytest
from sybil import Example, Sybil
from sybil.parsers.markdown import CodeBlockParser
from sybil.parsers.rest import DocTestParser

sys.path.insert(0, str(Path(__file__).resolve().parent / "tests"))

from pg_server import postgres_url  # noqa: E402


@pytest.fixture(scope="session")
def pg_url() -> Iterator[str]:
    """`LIONMEM_TEST_POSTGRES_URL`, or a throwaway local server started for the run."""
    with postgres_url() as url:
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
    result = eval(code, namespace)  # noqa: S307 - the docs are our own code
    if inspect.iscoroutine(result):
        namespace["__loop__"].run_until_complete(result)


def teardown(namespace: dict[str, Any]) -> None:
    if "__loop__" in namespace:
        namespace["__loop__"].close()


markdown = Sybil(
    parsers=[CodeBlockParser(language="python", evaluator=evaluate_with_await)],
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
