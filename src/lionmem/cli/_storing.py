"""Writing what the user gave: a store's refusal turned into the command's own error,
and a batch stored whole or not at all. Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager

from lionmem.errors import LionmemError
from lionmem.protocols.batching import BatchingStore
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem


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
