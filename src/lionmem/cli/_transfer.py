"""`export` and `import` on the command line, over
[`lionmem.adapters.transfer`][lionmem.adapters.transfer], which reads and writes the
format: export to stdout, and the refusals a command turns into its own error.
Governed by [ADR-0100][adr-0100].
"""

from __future__ import annotations

import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

from lionmem.adapters.transfer import export_items, write_export
from lionmem.cli._output import stdout_takes_any_text
from lionmem.errors import LionmemError
from lionmem.protocols.batching import BatchingStore
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery


async def export(store: ForgettingStore, query: MemoryQuery | None, output: Path | None) -> int:
    """Write the header and the items (all of them in order, or those `query` finds)
    to `output`, whole or not at all, or to stdout; return how many."""
    if output is None:
        return await write_export(store, query, sys.stdout, ascii_only=not stdout_takes_any_text())
    return await export_items(store, output, query=query)


class CommandError(LionmemError):
    """A command could not do what it was asked, for a reason the message gives: the
    store refused an item, or the store offers no such operation."""


@contextmanager
def refusals(what: str) -> Generator[None, None, None]:
    """Re-raise a store's refusal of data the user gave (the `TypeError` or
    `ValueError` its writes document) as a `CommandError` naming `what`; any other
    error passes as it is."""
    try:
        yield
    except (TypeError, ValueError) as exc:
        raise CommandError(f"the store refused {what}: {exc}") from exc


async def store_batch(store: ForgettingStore, batch: list[MemoryItem], *, first_line: int | None = None) -> None:
    """Store `batch` in one call, all of it or none, its items checked by the store's
    rules beforehand (`import` and `copy` check every one before they write). A
    refusal names the batch, or its one item; with its lines in the file, from
    `first_line`."""
    assert isinstance(store, BatchingStore), "every store open_store opens takes batches"
    try:
        await store.store_many(batch)
    except (TypeError, ValueError) as exc:
        raise CommandError(_refused(batch, exc, first_line)) from exc


def _refused(batch: list[MemoryItem], error: Exception, first_line: int | None) -> str:
    if len(batch) == 1:
        line = "" if first_line is None else f" (line {first_line})"
        return f"the store refused item {batch[0].id}{line}: {error}"
    lines = "" if first_line is None else f" (lines {first_line}-{first_line + len(batch) - 1})"
    return f"the store refused a batch of {len(batch)} items from item {batch[0].id}{lines}: {error}"
