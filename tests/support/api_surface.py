"""Load lionmem's public API with griffe, from the source or from the snapshot."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import griffe

ROOT = Path(__file__).resolve().parents[2]
SNAPSHOT = ROOT / "api" / "lionmem.json"


def load_current() -> griffe.Module:
    module = griffe.load(
        "lionmem",
        search_paths=[str(ROOT / "src")],
        docstring_parser="google",
        resolve_aliases=True,
    )
    assert isinstance(module, griffe.Module)
    return module


def load_snapshot() -> griffe.Module:
    module = griffe.Module.from_json(SNAPSHOT.read_text(encoding="utf-8"))
    collection = griffe.ModulesCollection()
    collection.set_member("lionmem", module)
    # A decoded module has no collection, and alias resolution needs one.
    module._modules_collection = collection  # pyright: ignore[reportPrivateUsage]
    return module


# Documented by their class or by pydantic, not one by one.
_UNDOCUMENTED_NAMES = {"model_config"}


def public_objects(obj: griffe.Object) -> Iterator[griffe.Object]:
    """Every public object defined in lionmem, special methods and TypedDict keys aside."""
    for name, member in obj.members.items():
        if member.is_alias or not member.is_public or name in _UNDOCUMENTED_NAMES:
            continue
        if name.startswith("__") and name.endswith("__"):
            continue
        assert isinstance(member, griffe.Object)
        yield member
        typed_dict = isinstance(member, griffe.Class) and any(str(base) == "TypedDict" for base in member.bases)
        if member.is_module or (member.is_class and not typed_dict):
            yield from public_objects(member)


def write_snapshot() -> None:
    # Line numbers are written as 0, so that a line added above an object does not
    # rewrite the snapshot; griffe's decoder needs the keys, not their values.
    text = re.sub(r'^( *"(?:end)?lineno": )\d+', r"\g<1>0", load_current().as_json(indent=1), flags=re.MULTILINE)
    SNAPSHOT.write_text(text + "\n", encoding="utf-8")
