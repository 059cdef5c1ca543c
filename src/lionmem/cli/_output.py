"""Writing items as JSON lines: one item a line, whatever stdout can encode.

Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

import codecs
import sys

from lionmem.adapters.transfer import item_line
from lionmem.cli._parser import prog
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore


def stdout_takes_any_text() -> bool:
    """Whether stdout encodes every character: UTF-8, or a stream of str with no
    encoding at all. A pipe on Windows, or PYTHONIOENCODING=latin-1, does not."""
    encoding = getattr(sys.stdout, "encoding", None)
    return encoding is None or codecs.lookup(encoding).name == "utf-8"


def print_items(items: list[MemoryItem]) -> None:
    ascii_only = not stdout_takes_any_text()
    for item in items:
        print(item_line(item, ascii_only=ascii_only))


def counted(items: int) -> str:
    """`1 item`, `2 items`."""
    return "1 item" if items == 1 else f"{items} items"


async def note_if_empty(store: MemoryStore) -> None:
    """Say on stderr when a read found nothing because the store holds nothing: a
    mistyped PostgreSQL namespace is not an error, only an empty namespace."""
    if not await store.search(MemoryQuery(limit=1)):
        print(f"{prog()}: note: the store holds no items; is its name right?", file=sys.stderr)
