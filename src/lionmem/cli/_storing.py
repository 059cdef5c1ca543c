"""Writing what the user gave: `put` of one item, of several, or of JSON lines on
stdin; a store's refusal turned into the command's own error; a batch stored whole or
not at all. Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Awaitable, Callable, Generator, Iterable
from contextlib import contextmanager
from typing import Any

from lionmem.adapters.transfer import Check, checked_items
from lionmem.cli._input import json_value, pairs, uuid_of
from lionmem.errors import ImportFileError, LionmemError
from lionmem.protocols.batching import BatchingStore
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem


def put_command(args: argparse.Namespace, check: Check) -> Callable[[ForgettingStore], Awaitable[int]]:
    """`put`: the items of the arguments, or of stdin's lines (checked by the store's
    rules, `check`), read before any store opens. One item is stored by `store`,
    several in one `store_many`, all of them or none; their ids print in order.

    Raises:
        ValueError: an option `put -` does not take, `--id` with several contents,
            or a line of stdin that is no item (an `ImportFileError` naming it).
    """
    if "-" in args.content:
        items = _from_stdin(args, check)
    else:
        if args.id is not None and len(args.content) > 1:
            raise ValueError(f"--id names one item, and put got {len(args.content)} contents")
        fields: dict[str, Any] = {"tags": args.tag or [], "metadata": pairs(args.meta, "--meta")}
        if args.id is not None:
            fields["id"] = uuid_of(args.id)
        contents = [json_value(text, "CONTENT") if args.json else text for text in args.content]
        items = [MemoryItem(content=content, **fields) for content in contents]

    async def put(store: ForgettingStore) -> int:
        if len(items) == 1:
            with refusals(f"item {items[0].id}"):
                print(await store.store(items[0]))
        elif items:
            await store_batch(store, items, first_line=1 if "-" in args.content else None)
            print("\n".join(str(item.id) for item in items))
        else:
            print("put: stdin held no items; nothing was stored", file=sys.stderr)
        return 0

    return put


def _from_stdin(args: argparse.Namespace, check: Check) -> list[MemoryItem]:
    given = {"a CONTENT": len(args.content) > 1, "--id": args.id is not None, "--json": args.json}
    given |= {"--tag": bool(args.tag), "--meta": bool(args.meta)}
    named = [name for name, present in given.items() if present]
    if named:
        raise ValueError(
            f"put - reads whole items from stdin, each line with its own fields; it takes no {', '.join(named)}"
        )
    return items_of_lines(sys.stdin.buffer, check)


def items_of_lines(lines: Iterable[bytes], check: Check) -> list[MemoryItem]:
    """The items of JSON lines read from stdin, each checked by the store's rules.

    Raises:
        ImportFileError: a line that is not UTF-8, not an item, refused by `check`,
            or giving an id an earlier line gave; named by its number.
    """
    items: list[MemoryItem] = []
    first: dict[int, int] = {}
    for number, item in checked_items(enumerate(lines, start=1), "stdin", check, whole=False):
        earlier = first.setdefault(item.id.int, number)
        if earlier != number:
            raise ImportFileError(
                f"stdin line {number}: the id {item.id} again, first given on line {earlier}; each item comes once"
            )
        items.append(item)
    return items


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
