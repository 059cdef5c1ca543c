"""The `lionmem` command line: a demo of the embedded default store."""

from __future__ import annotations

import argparse
import asyncio
from collections.abc import Sequence

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


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status."""
    parser = argparse.ArgumentParser(prog="python -m lionmem", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="store, retrieve and search a few notes in memory")
    args = parser.parse_args(argv)
    if args.command == "demo":
        asyncio.run(_demo(InMemoryStore()))
    return 0
