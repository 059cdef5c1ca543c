"""`export` and `import`: a store's items as a versioned file of JSON lines.

The first line is the header, `{"format": "lionmem-export", "version": 1}`; each
other line is one item, with the fields `put` and `search` print, in the store's
insertion order. Governed by [ADR-0100][adr-0100]; the format is published as a JSON
Schema on the docs site.
"""

from __future__ import annotations

import codecs
import json
import os
import sys
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO, NamedTuple, cast

from pydantic import ValidationError

from lionmem._internal.json_values import dumps, loads
from lionmem.cli._output import item_line, stdout_takes_any_text
from lionmem.errors import ImportFileError, LionmemError
from lionmem.protocols.batching import BatchingStore
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery

FORMAT = "lionmem-export"
VERSION = 1
"""The export format this lionmem writes, and the newest it reads."""

BATCH = 500
"""Items read from a store, or written to one, at a time."""


def header() -> str:
    return dumps({"format": FORMAT, "version": VERSION})


async def export(store: ForgettingStore, query: MemoryQuery | None, output: Path | None) -> int:
    """Write the header and the items (all of them in order, or those `query` finds)
    to `output`, or stdout; return how many. A file appears whole or not at all: it is
    written beside its name and renamed once complete."""
    if output is None:
        return await _write(store, query, sys.stdout, ascii_only=not stdout_takes_any_text())
    partial = output.with_name(output.name + ".partial")
    try:
        with partial.open("w", encoding="utf-8") as file:
            written = await _write(store, query, file, ascii_only=False)
        os.replace(partial, output)
    finally:
        partial.unlink(missing_ok=True)
    return written


async def _write(store: ForgettingStore, query: MemoryQuery | None, out: IO[str], *, ascii_only: bool) -> int:
    out.write(header() + "\n")
    written = 0
    if query is None:
        async for batch in store.scan(BATCH):
            out.writelines(item_line(item, ascii_only=ascii_only) + "\n" for item in batch)
            written += len(batch)
    else:
        found = await store.search(query)
        out.writelines(item_line(item, ascii_only=ascii_only) + "\n" for item in found)
        written = len(found)
    return written


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


Check = Callable[[MemoryItem], object]
"""A store's rules for an item: raises `TypeError` or `ValueError` naming the rule."""


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


class Batch(NamedTuple):
    """Items of an import file, in order, and the line the first is on."""

    items: list[MemoryItem]
    first_line: int


def check_file(path: Path, check: Check) -> int:
    """Read every line of `path` as the format says, and each item by the rules of
    the store it goes to (`check`), before anything is written; return how many items
    it holds. An id may come once.

    Raises:
        ImportFileError: no header, a newer format, text that is not UTF-8, a line
            that is not an item, an item the store refuses, or an id given twice;
            each named by its line.
        OSError: the file cannot be read.
    """
    seen: set[int] = set()
    for batch in batches(path, check):
        for offset, item in enumerate(batch.items):
            if item.id.int in seen:
                earlier = next(n for n, i in _items(path) if i.id == item.id)
                raise ImportFileError(
                    f"{path} line {batch.first_line + offset}: the id {item.id} again, first given on line "
                    f"{earlier}; an export holds each item once, so the file was not written by export"
                )
            seen.add(item.id.int)
    return len(seen)


def batches(path: Path, check: Check | None = None) -> Iterator[Batch]:
    """The items of `path`, in order, in lists of at most `BATCH`, each checked by
    `check` when given."""
    batch: list[MemoryItem] = []
    first = 2
    for number, item in _items(path, check):
        if not batch:
            first = number
        batch.append(item)
        if len(batch) == BATCH:
            yield Batch(batch, first)
            batch = []
    if batch:
        yield Batch(batch, first)


def _items(path: Path, check: Check | None = None) -> Iterator[tuple[int, MemoryItem]]:
    with path.open("rb") as file:
        lines = enumerate(file, start=1)
        first = next(lines, None)
        if first is None:
            raise ImportFileError(f"{path} is empty, not a lionmem export")
        _check_header(path, _text(path, *first))
        for number, raw in lines:
            item = _item(path, number, _text(path, number, raw))
            if check is not None:
                try:
                    check(item)
                except (TypeError, ValueError) as rule:
                    raise ImportFileError(
                        f"{path} line {number}: item {item.id}: the store refuses it: {rule}"
                    ) from None
            yield number, item


def _text(path: Path, number: int, raw: bytes) -> str:
    if number == 1:
        raw = raw.removeprefix(codecs.BOM_UTF8)  # as some editors on Windows begin a file
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        what = "not a lionmem export, " if number == 1 else ""
        raise ImportFileError(
            f"{path} line {number}: {what}not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
        ) from None


def _check_header(path: Path, line: str) -> None:
    try:
        found: object = loads(line)
    except (ValueError, RecursionError):
        found = None
    fields = cast("dict[str, object]", found) if isinstance(found, dict) else {}
    if fields.get("format") != FORMAT:
        raise ImportFileError(f"{path} line 1: not a lionmem export (its first line is no export header)")
    version = fields.get("version")
    if type(version) is not int or version < 1:
        raise ImportFileError(f"{path} line 1: the export format version must be a whole number, got {version!r}")
    if version > VERSION:
        raise ImportFileError(
            f"{path} was written in export format version {version}, newer than this lionmem "
            f"reads ({VERSION}); upgrade lionmem to import it"
        )


def _item(path: Path, number: int, line: str) -> MemoryItem:
    try:
        fields: object = loads(line)
    except ValueError as exc:
        raise ImportFileError(f"{path} line {number}: not JSON ({exc})") from None
    except RecursionError:
        raise ImportFileError(
            f"{path} line {number}: nests lists and objects deeper than Python reads; a store keeps 500 levels"
        ) from None
    repeated = _repeated_key(line)
    if repeated is not None:
        raise ImportFileError(
            f"{path} line {number}: the key {repeated!r} twice in one object, whose value JSON leaves to the reader"
        )
    if not isinstance(fields, dict) or frozenset(cast("dict[str, object]", fields)) != _FIELDS:
        raise ImportFileError(
            f"{path} line {number}: not an item; an item is a JSON object with exactly the "
            f"fields {', '.join(sorted(_FIELDS))}"
        )
    try:
        return MemoryItem.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ImportFileError(f"{path} line {number}: not an item ({problems})") from None


_FIELDS = frozenset(MemoryItem.model_fields)


class _Repeated(LionmemError):
    """A key given twice in one line of an import file."""

    def __init__(self, key: str) -> None:
        self.key = key


def _unique(pairs: list[tuple[str, object]]) -> dict[str, object]:
    fields: dict[str, object] = {}
    for key, value in pairs:
        if key in fields:
            raise _Repeated(key)
        fields[key] = value
    return fields


def _repeated_key(line: str) -> str | None:
    """The first key that an object of `line`, a line already read as JSON, gives twice."""
    try:
        json.loads(line, object_pairs_hook=_unique)
    except _Repeated as repeated:
        return repeated.key
    return None
