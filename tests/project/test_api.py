"""The public API is what the committed snapshot says, and every part is documented."""

from __future__ import annotations

import ast
import functools
import re
import textwrap

import griffe
import pytest

from tests.support.api_surface import load_current, load_snapshot, public_objects


@functools.cache
def _current() -> griffe.Module:
    """The API as the source defines it, loaded once for the tests that only read it."""
    return load_current()


def _paths(module: griffe.Module) -> dict[str, str]:
    return {obj.path: obj.kind.value for obj in public_objects(module)}


def test_no_breaking_change_against_the_snapshot() -> None:
    breaks = [
        re.sub(r"\x1b\[[0-9;]*m", "", change.explain())
        for change in griffe.find_breaking_changes(load_snapshot(), _current())
    ]
    assert breaks == [], "breaking API changes; if intended, run scripts/update_api_snapshot.py:\n" + "\n".join(breaks)


def test_the_snapshot_lists_exactly_the_current_public_objects() -> None:
    current, recorded = _paths(_current()), _paths(load_snapshot())
    added = sorted(set(current) - set(recorded))
    removed = sorted(set(recorded) - set(current))
    assert (added, removed) == ([], []), "run scripts/update_api_snapshot.py and commit it"
    assert current == recorded


def test_the_lock_notices_a_removed_field() -> None:
    changed = load_current()
    memory_query = changed["protocols.memory.MemoryQuery"]
    del memory_query.members["limit"]
    found = list(griffe.find_breaking_changes(load_snapshot(), changed))
    assert [c.obj.path for c in found] == ["lionmem.protocols.memory.MemoryQuery.limit"]


@pytest.mark.parametrize("path", sorted(_paths(_current())))
def test_every_public_object_has_a_docstring(path: str) -> None:
    obj = _current()[path.removeprefix("lionmem.")]
    assert obj.docstring is not None and obj.docstring.value.strip(), f"{path} has no docstring"


def _raised_here(function: griffe.Function) -> set[str]:
    """The exception classes `function`'s own body raises by name, leaving out nested
    functions and classes, which raise on their own callers' behalf."""
    tree = ast.parse(textwrap.dedent(function.source))
    definition = tree.body[0]
    assert isinstance(definition, ast.FunctionDef | ast.AsyncFunctionDef)
    names: set[str] = set()
    pending: list[ast.AST] = list(definition.body)
    while pending:
        node = pending.pop()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda):
            continue
        if isinstance(node, ast.Raise) and node.exc is not None:
            raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(raised, ast.Name):
                names.add(raised.id)
        pending.extend(ast.iter_child_nodes(node))
    return names


def _documented_raises(function: griffe.Function) -> set[str]:
    assert function.docstring is not None
    return {
        str(entry.annotation)
        for section in function.docstring.parse("google")
        if section.kind is griffe.DocstringSectionKind.raises
        for entry in section.value
    }


_FUNCTIONS = sorted(path for path, kind in _paths(_current()).items() if kind == "function")


@pytest.mark.parametrize("path", _FUNCTIONS)
def test_every_exception_a_public_function_raises_is_documented(path: str) -> None:
    function = _current()[path.removeprefix("lionmem.")]
    assert isinstance(function, griffe.Function)
    undocumented = sorted(_raised_here(function) - _documented_raises(function))
    assert undocumented == [], f"{path} raises {', '.join(undocumented)} without a Raises entry"


def test_the_raises_check_reads_the_function_and_not_its_helpers() -> None:
    function = _current()["adapters.urls.open_store"]
    assert isinstance(function, griffe.Function)
    assert "ValueError" in _raised_here(function)
    # Raised by the helpers require_type and _postgres; the docstring still names them.
    assert not {"TypeError", "ModuleNotFoundError"} & _raised_here(function)
    assert {"ValueError", "FileNotFoundError"} <= _documented_raises(function)
