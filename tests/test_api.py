"""The public API is what the committed snapshot says, and every part is documented."""

from __future__ import annotations

import functools
import re

import griffe
import pytest

from api_surface import load_current, load_snapshot, public_objects


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
    assert breaks == [], (
        "breaking API changes; if intended, run scripts/update_api_snapshot.py:\n"
        + "\n".join(breaks)
    )


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
