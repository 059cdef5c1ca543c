"""Writing items as JSON lines: one item a line, whatever stdout can encode.

Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

import codecs
import sys
from typing import TYPE_CHECKING, Any

from lionmem.adapters.transfer import item_line
from lionmem.cli._parser import prog
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore

if TYPE_CHECKING:
    from tqdm import tqdm


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


def progress_bar(total: int | None, description: str | None = None) -> tqdm[Any]:
    """A bar on stderr counting items towards `total`, drawn only when stderr is a
    terminal: piped or redirected, a command prints only what it always prints."""
    from tqdm import tqdm  # only for a long command: the others never load it

    return tqdm(total=total, unit="item", desc=description, disable=not sys.stderr.isatty(), file=sys.stderr)
