"""Export and import: a store's items as a versioned file of JSON lines, from Python
as from the command line.

The first line is the header, `{"format":"lionmem-export","version":1}`; each other
line is one item, with the fields `put` and `search` print, in the store's insertion
order. [`export_items`][lionmem.adapters.transfer.export_items] writes one,
[`import_items`][lionmem.adapters.transfer.import_items] reads one back, checking
every line before it writes anything. Governed by [ADR-0100][adr-0100]; the format is
published as a JSON Schema on the docs site.
"""

from __future__ import annotations

import codecs
import json
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, NamedTuple, cast

from pydantic import ValidationError

from lionmem._internal.arguments import kind_of, require_type
from lionmem._internal.json_values import dumps, loads
from lionmem.adapters.urls import rules_for
from lionmem.errors import ImportFileError, LionmemError
from lionmem.protocols.batching import BatchingStore
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery

__all__ = [
    "BATCH",
    "FORMAT",
    "VERSION",
    "Batch",
    "Check",
    "Progress",
    "batches",
    "check_file",
    "checked_items",
    "export_items",
    "header",
    "import_items",
    "item_from_line",
    "item_line",
    "rules_of",
    "write_export",
]

FORMAT = "lionmem-export"
"""The `format` an export's header names."""
VERSION = 1
"""The export format version this lionmem writes, and the newest it reads."""

BATCH = 500
"""Items read from a store, or written to one, at a time."""

Check = Callable[[MemoryItem], object]
"""A store's rules for an item: raises `TypeError` or `ValueError` naming the rule."""

Progress = Callable[[int], object]
"""Told how many more items were written, after each batch."""


def header() -> str:
    """The export's first line, without the line's end ([ADR-0100][adr-0100-d6])."""
    return dumps({"format": FORMAT, "version": VERSION})


_FIELDS = tuple(MemoryItem.model_fields)

# JSON leaves these unescaped, but many line readers (Python's `splitlines` among them)
# end a line at each; escaped, one item is always one line.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})

_ascii_dumps = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode


def item_line(item: MemoryItem, *, ascii_only: bool = False) -> str:
    """One item as one line of JSON, without the line's end ([ADR-0098][adr-0098]).

    Not model_dump_json: pydantic writes at most 255 levels of content, and the
    durable stores keep up to MAX_NESTING. With `ascii_only`, for a stream that cannot
    take every character, JSON's own escapes keep the line valid JSON of the same value.
    """
    fields = {name: getattr(item, name) for name in _FIELDS}
    fields["id"] = str(item.id)
    line = (_ascii_dumps if ascii_only else dumps)(fields)
    # Rare, and translate() looks up every character: only a line holding one pays.
    if "\x85" in line or "\u2028" in line or "\u2029" in line:
        return line.translate(_LINE_BREAKS)
    return line


async def export_items(
    store: ForgettingStore,
    path: str | os.PathLike[str],
    *,
    query: MemoryQuery | None = None,
    progress: Progress | None = None,
) -> int:
    """Write `store`'s items to the file `path`, as `lionmem export` does:
    every item in insertion order, read `BATCH` at a time, or those `query` finds;
    return how many. The file appears whole or not at all: it is written beside its
    name and renamed once complete, replacing any file of that name
    ([ADR-0100][adr-0100-d6]).

    Raises:
        TypeError: `store` cannot `scan` (a `ForgettingStore` can), or `query` is
            not a `MemoryQuery`.
        OSError: the file cannot be written; nothing is left behind.
    """
    _require_a(store, ForgettingStore, "scan its items in batches")
    if query is not None:
        require_type(query, "query", MemoryQuery)
    target = Path(path)
    partial_file = target.with_name(target.name + ".partial")
    try:
        with partial_file.open("w", encoding="utf-8") as file:
            written = await write_export(store, query, file, progress=progress)
        os.replace(partial_file, target)
    finally:
        partial_file.unlink(missing_ok=True)
    return written


async def write_export(
    store: ForgettingStore,
    query: MemoryQuery | None,
    out: IO[str],
    *,
    ascii_only: bool = False,
    progress: Progress | None = None,
) -> int:
    """Write the header and the items (all of them in order, or those `query` finds)
    to the open text stream `out`; return how many ([ADR-0100][adr-0100-d6])."""
    out.write(header() + "\n")
    written = 0
    if query is None:
        async for batch in store.scan(BATCH):
            out.writelines(item_line(item, ascii_only=ascii_only) + "\n" for item in batch)
            written += len(batch)
            if progress is not None:
                progress(len(batch))
    else:
        found = await store.search(query)
        out.writelines(item_line(item, ascii_only=ascii_only) + "\n" for item in found)
        written = len(found)
        if progress is not None:
            progress(written)
    return written


async def import_items(
    store: BatchingStore,
    path: str | os.PathLike[str],
    *,
    check: Check | None = None,
    progress: Progress | None = None,
    header: bool = True,
) -> int:
    """Store the items of the export file `path` in `store`, as `lionmem
    import` does; return how many. With `header=False`, `path` is a plain JSON Lines
    file of items with no header line, each line an item as `item_line` writes it
    (and `lionmem get` and `search` print it). Every line is read and checked first (the format,
    each item, and each item by `check`, by default the store's own rules where it is
    one of lionmem's: [`rules_of`][lionmem.adapters.transfer.rules_of]), so a file
    with a bad line writes nothing. The items are then stored `BATCH` at a time, each
    batch whole or not at all, by id: importing a file twice leaves one copy of each
    item, and a second run completes an interrupted one ([ADR-0100][adr-0100-d11]).

    Raises:
        TypeError: `store` has no `store_many`, or `check` is not callable.
        ImportFileError: no header (the message shows the line to add), a newer
            format, text that is not UTF-8, a line that is not an item, an item the
            store's rules refuse, or an id given twice; each named by its line.
        OSError: the file cannot be read.
    """
    _require_a(store, BatchingStore, "store a batch (store_many)")
    if check is not None and not callable(check):
        raise TypeError(f"check must be callable, got {kind_of(check)}")
    source = Path(path)
    require_type(header, "header", bool)
    check_file(source, check or rules_of(store) or _no_rules, header=header)
    imported = 0
    for batch in batches(source, header=header):
        await store.store_many(batch.items)
        imported += len(batch.items)
        if progress is not None:
            progress(len(batch.items))
    return imported


def rules_of(store: object) -> Check | None:
    """What `store` refuses at `store`, as a check to run before a write, for
    lionmem's three stores ([`rules_for`][lionmem.adapters.urls.rules_for] its
    scheme); `None` for any other, whose writes are its own check
    ([ADR-0100][adr-0100-d11])."""
    # A module not loaded made no store of its own: the command line reads a SQLite
    # file without loading the others.
    in_memory = sys.modules.get("lionmem.protocols.in_memory")
    if in_memory is not None and isinstance(store, in_memory.InMemoryStore):
        return rules_for("memory")
    postgres = sys.modules.get("lionmem.adapters.postgres.store")
    if postgres is not None and isinstance(store, postgres.PostgresMemoryStore):
        return rules_for("postgresql")
    from lionmem.adapters.sqlite.store import SQLiteMemoryStore

    if isinstance(store, SQLiteMemoryStore):
        return rules_for("sqlite")
    return None


def _no_rules(item: MemoryItem) -> None:
    """The check of a store whose rules lionmem does not know: none."""


def _require_a(store: object, kind: type, able: str) -> None:
    if not isinstance(store, kind):
        raise TypeError(f"the store must {able}, as a {kind.__name__} does; got {kind_of(store)}")


class Batch(NamedTuple):
    """Items of an import file, in order, and the line the first is on."""

    items: list[MemoryItem]
    """At most `BATCH` items, in the file's order."""
    first_line: int
    """The line of the file the first of them is on (a header is line 1)."""


def check_file(path: Path, check: Check, *, header: bool = True) -> int:
    """Read every line of `path` as the format says (with its header line, or with
    none when `header` is false), and each item by the rules of the store it goes to
    (`check`), before anything is written; return how many items it holds. An id may
    come once ([ADR-0100][adr-0100-d11]).

    Raises:
        ImportFileError: no header, a newer format, text that is not UTF-8, a line
            that is not an item, an item the store refuses, or an id given twice;
            each named by its line.
        OSError: the file cannot be read.
    """
    seen: set[int] = set()
    for batch in batches(path, check, header=header):
        for offset, item in enumerate(batch.items):
            if item.id.int in seen:
                earlier = next(n for n, i in _items(path, None, header) if i.id == item.id)
                written = "so the file was not written by export" if header else "as an export does"
                raise ImportFileError(
                    f"{path} line {batch.first_line + offset}: the id {item.id} again, first given on line "
                    f"{earlier}; a file of items holds each item once, {written}"
                )
            seen.add(item.id.int)
    return len(seen)


def batches(path: Path, check: Check | None = None, *, header: bool = True) -> Iterator[Batch]:
    """The items of `path`, in order, in lists of at most `BATCH`, each checked by
    `check` when given; after its header line, or from the first line when `header`
    is false."""
    batch: list[MemoryItem] = []
    first = 2
    for number, item in _items(path, check, header):
        if not batch:
            first = number
        batch.append(item)
        if len(batch) == BATCH:
            yield Batch(batch, first)
            batch = []
    if batch:
        yield Batch(batch, first)


def _items(path: Path, check: Check | None, header: bool) -> Iterator[tuple[int, MemoryItem]]:
    with path.open("rb") as file:
        lines = enumerate(file, start=1)
        if header:
            first = next(lines, None)
            if first is None:
                raise ImportFileError(f"{path} is empty, not a lionmem export")
            _check_header(path, _text(path, *first, header=True))
        yield from checked_items(lines, path, check)


def checked_items(
    lines: Iterable[tuple[int, bytes]], source: str | Path, check: Check | None, *, whole: bool = True
) -> Iterator[tuple[int, MemoryItem]]:
    """The item of each numbered line of `source` (a file's path, or a name such as
    `stdin`), read as [`item_from_line`][lionmem.adapters.transfer.item_from_line]
    reads it (`whole` or not) and checked by `check` when given, lazily.

    Raises:
        ImportFileError: a line that is not UTF-8, not such an item, or an item
            `check` refuses; named by `source` and its number.
    """
    for number, raw in lines:
        item = item_from_line(f"{source} line {number}", _text(source, number, raw, header=False), whole=whole)
        if check is not None:
            try:
                check(item)
            except (TypeError, ValueError) as rule:
                raise ImportFileError(f"{source} line {number}: item {item.id}: the store refuses it: {rule}") from None
        yield number, item


def _text(source: str | Path, number: int, raw: bytes, *, header: bool) -> str:
    """Line `number` of `source` as text; `header`, when it is an export's header."""
    if number == 1:
        raw = raw.removeprefix(codecs.BOM_UTF8)  # as some editors on Windows begin a file
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        what = "not a lionmem export, " if header else ""
        raise ImportFileError(
            f"{source} line {number}: {what}not UTF-8 text (byte 0x{raw[exc.start]:02x} at column {exc.start + 1})"
        ) from None


def _check_header(path: Path, line: str) -> None:
    try:
        found: object = loads(line)
    except (ValueError, RecursionError):
        found = None
    fields = cast("dict[str, object]", found) if isinstance(found, dict) else {}
    if fields.get("format") != FORMAT:
        raise ImportFileError(
            f"{path} line 1: not a lionmem export (its first line is no export header); "
            f"an export begins with the line {header()}"
        )
    version = fields.get("version")
    if type(version) is not int or version < 1:
        raise ImportFileError(f"{path} line 1: the export format version must be a whole number, got {version!r}")
    if version > VERSION:
        raise ImportFileError(
            f"{path} was written in export format version {version}, newer than this lionmem "
            f"reads ({VERSION}); upgrade lionmem to import it"
        )


def item_from_line(where: str, line: str, *, whole: bool = True) -> MemoryItem:
    """The item one line of JSON gives: with `whole`, every field of an item as
    `item_line` writes it, and no other; otherwise `content` and any of the other
    fields, the rest taking their defaults (a new id, the time now).

    Raises:
        ImportFileError: the line is not JSON, gives a key twice, or is not such an
            item; the message begins with `where`.
    """
    try:
        fields: object = loads(line)
    except ValueError as exc:
        raise ImportFileError(f"{where}: not JSON ({exc})") from None
    except RecursionError:
        raise ImportFileError(
            f"{where}: nests lists and objects deeper than Python reads; a store keeps 500 levels"
        ) from None
    repeated = _repeated_key(line)
    if repeated is not None:
        raise ImportFileError(
            f"{where}: the key {repeated!r} twice in one object, whose value JSON leaves to the reader"
        )
    keys = frozenset(cast("dict[str, object]", fields)) if isinstance(fields, dict) else None
    if whole and keys != _ITEM_FIELDS:
        raise ImportFileError(
            f"{where}: not an item; an item is a JSON object with exactly the fields {', '.join(sorted(_ITEM_FIELDS))}"
        )
    if not whole and (keys is None or "content" not in keys or not keys <= _ITEM_FIELDS):
        others = ", ".join(sorted(_ITEM_FIELDS - {"content"}))
        raise ImportFileError(f"{where}: not an item; an item is a JSON object with content and any of {others}")
    try:
        return MemoryItem.model_validate(fields)
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise ImportFileError(f"{where}: not an item ({problems})") from None


_ITEM_FIELDS = frozenset(MemoryItem.model_fields)


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
