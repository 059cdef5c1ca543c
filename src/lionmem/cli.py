"""The `lionmem` command line: a demo of the default store and the conformance check.

`check` runs the kit of [ADR-0093][adr-0093] against a store factory.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
from collections.abc import Sequence
from typing import Any, cast

from lionmem.protocols.memory import InMemoryStore, MemoryItem, MemoryQuery, MemoryStore

__all__ = ["main"]

_DEMO_NOTES: list[tuple[str, list[str], dict[str, str]]] = [
    ("Paris is the capital of France", ["geo", "europe"], {"source": "atlas"}),
    ("The Seine flows through Paris", ["geo"], {"source": "atlas"}),
    ("Water boils at 100 °C at sea level", ["science"], {"source": "textbook"}),
    ("Remember to water the plants", ["todo"], {}),
]


async def _demo(store: MemoryStore) -> None:
    ids = [
        await store.store(MemoryItem(content=content, tags=tags, metadata=metadata))
        for content, tags, metadata in _DEMO_NOTES
    ]
    print(f"stored {len(ids)} items")
    first = await store.retrieve(ids[0])
    print(f"retrieve {ids[0]} -> {first.content if first else None!r}")
    for query in (
        MemoryQuery(text="paris"),
        MemoryQuery(tags=["science", "todo"]),
        MemoryQuery(text="water", filters={"source": "textbook"}),
        MemoryQuery(limit=-3),
    ):
        found = await store.search(query)
        shown = query.model_dump(exclude_defaults=True) or "everything"
        print(f"search {shown} -> {[item.content for item in found]}")


def _load(reference: str) -> Any:
    """Import `module:attribute`, raising `ValueError` with what was wrong."""
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{reference!r} is not of the form module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attribute!r}") from None


def _check(factory_ref: str, profile_ref: str | None, names: list[str] | None) -> int:
    from lionmem.testing import (
        CHECKS,
        REFERENCE_PROFILE,
        ConformanceKit,
        FidelityProfile,
        StoreFactory,
    )

    factory = _load(factory_ref)
    if not callable(factory):
        raise ValueError(f"{factory_ref} is not callable")
    profile = REFERENCE_PROFILE if profile_ref is None else _load(profile_ref)
    if not isinstance(profile, FidelityProfile):
        raise ValueError(f"{profile_ref} is a {type(profile).__name__}, not a FidelityProfile")
    kit = ConformanceKit(cast("StoreFactory", factory), profile)
    results = kit.run_all(names or CHECKS)
    rows = [("check", "declared", "observed", "")] + [
        (r.dimension, r.declared, r.observed, "ok" if r.passed else "MISMATCH") for r in results
    ]
    widths = [min(48, max(len(row[i]) for row in rows)) for i in range(3)]
    for row in rows:
        cells = [row[i][: widths[i]].ljust(widths[i]) for i in range(3)]
        print("  ".join([*cells, row[3]]).rstrip())
    failed = [r for r in results if not r.passed]
    for result in failed:
        print(f"\n{result.dimension}: declared {result.declared}, observed {result.observed}")
        print("\n".join(f"    {line}" for line in result.reproduction.splitlines()))
    print(f"\n{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status."""
    parser = argparse.ArgumentParser(prog="python -m lionmem", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="store, retrieve and search a few notes in memory")
    check = commands.add_parser("check", help="check a store against its fidelity profile")
    check.add_argument("factory", help="module:callable that builds a fresh store")
    check.add_argument("--profile", help="module:NAME of its FidelityProfile (default: reference)")
    check.add_argument(
        "--only", action="append", metavar="CHECK", help="run only this check (repeatable)"
    )
    args = parser.parse_args(argv)
    if args.command == "check":
        try:
            return _check(args.factory, args.profile, args.only)
        except ValueError as exc:
            parser.error(str(exc))
    asyncio.run(_demo(InMemoryStore()))
    return 0
