"""What `demo`, `put`, `get` and `search` do with the store a URL names.

Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from typing import Any
from uuid import UUID, uuid5

from lionmem.cli._input import json_value, pairs, uuid_of
from lionmem.cli._output import print_items
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore

_DEMO_IDS = UUID("5f0c3d9e-4b1a-4e8f-9a2b-6c7d8e9f0a1b")

_DEMO_NOTES: list[tuple[str, list[str], dict[str, str]]] = [
    ("Paris is the capital of France", ["geo", "europe"], {"source": "atlas"}),
    ("The Seine flows through Paris", ["geo"], {"source": "atlas"}),
    ("Water boils at 100 °C at sea level", ["science"], {"source": "textbook"}),
    ("Remember to water the plants", ["todo"], {}),
]


async def _demo(store: MemoryStore) -> int:
    # Ids named by the notes: run again on a durable store, the demo replaces its own
    # notes in place rather than adding four more each time.
    ids = [
        await store.store(
            MemoryItem(id=uuid5(_DEMO_IDS, content), content=content, tags=tags, metadata=metadata)
        )
        for content, tags, metadata in _DEMO_NOTES
    ]
    print(f"stored {len(ids)} items")
    first = await store.retrieve(ids[0])
    print(f"retrieve {ids[0]} -> {first.content if first else None!r}")
    for query, rule in _DEMO_QUERIES:
        found = await store.search(query)
        print(f"search {query.model_dump(exclude_defaults=True)} -> {[item.content for item in found]}")
        print(f"  ({rule})")
    return 0


_DEMO_QUERIES: list[tuple[MemoryQuery, str]] = [
    (MemoryQuery(text="paris"), "text: a case-insensitive substring of the content"),
    (MemoryQuery(tags=["science", "todo"]), "tags: items with any one of them"),
    (
        MemoryQuery(text="water", filters={"source": "textbook"}),
        "text and filters: both must hold; a filter is metadata equal to the value",
    ),
    (MemoryQuery(limit=-3), "a negative limit drops that many of the last matches, as items[:-3] does"),
]
"""The demo's searches, each with the rule it shows (ADR-0092, D3)."""


def command_for(args: argparse.Namespace) -> Callable[[MemoryStore], Awaitable[int]]:
    """What to do with the opened store; every argument is checked here, before."""
    if args.command == "demo":
        return _demo
    if args.command == "put":
        fields: dict[str, Any] = {
            "content": json_value(args.content, "CONTENT") if args.json else args.content,
            "tags": args.tag or [],
            "metadata": pairs(args.meta, "--meta"),
        }
        if args.id is not None:
            fields["id"] = uuid_of(args.id)
        item = MemoryItem(**fields)

        async def put(store: MemoryStore) -> int:
            print(await store.store(item))
            return 0

        return put
    if args.command == "get":
        item_id = uuid_of(args.id)

        async def get(store: MemoryStore) -> int:
            found = await store.retrieve(item_id)
            if found is None:
                print(f"no item {item_id}", file=sys.stderr)
                await note_if_empty(store)
                return 1
            print_items([found])
            return 0

        return get
    query = MemoryQuery(
        text=args.text, tags=args.tag, filters=pairs(args.filter, "--filter") or None, limit=args.limit
    )

    async def search(store: MemoryStore) -> int:
        found = await store.search(query)
        print_items(found)
        if not found:
            await note_if_empty(store)
        return 0

    return search


async def note_if_empty(store: MemoryStore) -> None:
    """Say on stderr when a read found nothing because the store holds nothing: a
    mistyped PostgreSQL namespace is not an error, only an empty namespace."""
    if not await store.search(MemoryQuery(limit=1)):
        print("python -m lionmem: note: the store holds no items; is its name right?", file=sys.stderr)


async def run(
    opening: AbstractAsyncContextManager[MemoryStore], command: Callable[[MemoryStore], Awaitable[int]]
) -> int:
    async with opening as store:
        return await command(store)
