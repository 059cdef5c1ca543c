"""How the durable stores turn a `MemoryItem` into rows and back, exactly, and what
they all promise for it.

Content, tags and metadata are stored as JSON; only values that come back equal and
of the same type are accepted. The text a search matches is computed here, in
Python, when an item is written. Governed by [ADR-0096][adr-0096].

Seam for tests: `_codec`, tested function by function, and patched to count how
the PostgreSQL store decodes.
"""

from __future__ import annotations

import asyncio
import math
import struct
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, TypeVar
from uuid import UUID, SafeUUID

from lionmem._internal.arguments import kind_of
from lionmem._internal.json_values import check_json, dumps, loads
from lionmem._internal.pydantic_state import construct_unchecked
from lionmem.protocols.memory import MemoryItem

__all__ = [
    "ENCODE_EVERY",
    "MAX_ITEM_BYTES",
    "SHARE_EVERY",
    "EncodedItem",
    "Row",
    "decode_in_slices",
    "decode_item",
    "decode_rows",
    "encode_batch",
    "encode_item",
    "fold",
]

T = TypeVar("T")


_FIELDS = frozenset(MemoryItem.model_fields)


MAX_ITEM_BYTES = 100_000_000
"""The most UTF-8 bytes a durable store keeps in either text of an item: the JSON of
its content, tags and metadata, and its content's searchable text. PostgreSQL's
trigram index ran out of memory on 300 MB of text, SQLite refuses a row (both texts)
over 10^9 bytes, and neither said why; this line, well inside both, keeps a write to
seconds. Every stored string is therefore at most this many characters long, and a
query naming a longer one is answered without the database. See [ADR-0096][adr-0096]."""


def _check_size(text: str, what: str) -> None:
    # A character takes at most 4 bytes, so only a text that long is encoded.
    if len(text) > MAX_ITEM_BYTES // 4 and (size := len(text.encode())) > MAX_ITEM_BYTES:
        raise ValueError(
            f"the item is too large: {what} takes {size:,} bytes in UTF-8, over the {MAX_ITEM_BYTES:,} this store keeps"
        )


def fold(content: Any) -> str:
    """The text a search matches against: the reference's `str(content).lower()`."""
    return str(content).lower()


class EncodedItem(NamedTuple):
    """The columns of one stored item."""

    id: str
    """The UUID in its string form."""
    created_at: float
    """The timestamp, stored as an 8-byte float so it comes back bit-exact."""
    body: str
    """`[content, tags, metadata]` as one JSON array: one decode a row."""
    folded: str
    """`str(content).lower()`, what text search matches."""


def encode_item(item: object, *, allow_nul: bool = True) -> EncodedItem:
    """Check and encode `item`; raise `TypeError` or `ValueError` before anything is
    written."""
    if not isinstance(item, MemoryItem):
        raise TypeError(f"the store takes MemoryItem, got {type(item).__name__}")
    if type(item) is not MemoryItem:
        added = sorted(type(item).model_fields.keys() - _FIELDS)
        if added:
            raise TypeError(
                f"{type(item).__name__} adds the field(s) {', '.join(added)}, which this store "
                "would lose: it keeps MemoryItem's fields and returns MemoryItem"
            )
    # Validation makes the id a UUID, created_at a finite float, tags a list of str and
    # metadata a dict; an item built without it (model_construct) could carry anything.
    # A row whose id is not a UUID's canonical text could not be retrieved, would fail
    # every search that reached it, and would stand beside the item's own row.
    if not isinstance(item.id, UUID):
        raise TypeError(f"id is {kind_of(item.id)}, not a UUID")
    created_at = item.created_at
    if not isinstance(created_at, float):
        raise TypeError(f"created_at is {kind_of(created_at)}, not a float")
    if not math.isfinite(created_at):
        raise ValueError(f"created_at must be a finite timestamp, got {created_at!r}")
    check_json(item.content, "content", allow_nul=allow_nul)
    if type(item.tags) is not list:
        raise TypeError(f"tags is {kind_of(item.tags)}, not a list of str")
    for index, tag in enumerate(item.tags):
        if type(tag) is not str:
            raise TypeError(f"tags[{index}] is {kind_of(tag)}, not a str")
    check_json(item.tags, "tags", allow_nul=allow_nul)
    if type(item.metadata) is not dict:
        raise TypeError(f"metadata is {kind_of(item.metadata)}, not a dict")
    check_json(item.metadata, "metadata", allow_nul=allow_nul)
    body = dumps([item.content, item.tags, item.metadata])
    _check_size(body, "the JSON of its content, tags and metadata")
    folded = fold(item.content)
    _check_size(folded, "its content's searchable text, str(content).lower(),")
    return EncodedItem(str(item.id), float(created_at), body, folded)


ENCODE_EVERY = 200
"""Items a batch write encodes before it lets other tasks run: about a millisecond
of work, so that a large batch never stalls the event loop for long."""


async def encode_batch(batch: Sequence[MemoryItem], encode: Callable[[MemoryItem], T]) -> list[T]:
    """`encode` each item of a `store_many` batch on the event loop's thread, letting
    other tasks run after every `ENCODE_EVERY` items, so that a large batch does not
    stall the loop. Each item is read whole between two pauses, and nothing is
    written before every item is encoded, so a bad item still leaves the store as it
    was."""
    rows = [encode(item) for item in batch[:ENCODE_EVERY]]
    for start in range(ENCODE_EVERY, len(batch), ENCODE_EVERY):
        await asyncio.sleep(0)
        rows += [encode(item) for item in batch[start : start + ENCODE_EVERY]]
    return rows


Row = tuple[str, float | bytes, str]
"""`(id, created_at, body)` as a store reads them back. `created_at` may come as the
8 little-endian bytes of the float, which is how SQLite keeps -0.0."""


_new = object.__new__


_set = object.__setattr__


_unpack_time = struct.Struct("<d").unpack


_UUID_TEXT_LENGTH = 36


def decode_rows(rows: Iterable[Row]) -> list[MemoryItem]:
    """Rebuild stored items from `(id, created_at, body)` rows without validating again
    what `encode_item` checked.

    Each item is built by `construct_unchecked`, as `MemoryItem.model_construct`
    would build it, at less cost. One loop with local names serves a whole result,
    and the UUID of the canonical text a store wrote is built from its integer, at
    less cost than `UUID(text)`; [ADR-0096][adr-0096] records the measurements.
    """
    new, put, parse, unknown, build = _new, _set, loads, SafeUUID.unknown, construct_unchecked
    unpack_time, fields = _unpack_time, _FIELDS
    items: list[MemoryItem] = []
    append = items.append
    for item_id, created_at, body in rows:
        content, tags, metadata = parse(body)
        if type(created_at) is bytes:
            (created_at,) = unpack_time(created_at)
        if len(item_id) == _UUID_TEXT_LENGTH:
            uuid = new(UUID)
            put(uuid, "int", int(item_id.replace("-", ""), 16))
            put(uuid, "is_safe", unknown)
        else:
            uuid = UUID(item_id)
        values = {"id": uuid, "created_at": created_at, "metadata": metadata, "content": content, "tags": tags}
        append(build(MemoryItem, values, set(fields)))
    return items


def decode_item(item_id: str, created_at: float | bytes, body: str) -> MemoryItem:
    """Rebuild one stored item; see `decode_rows`."""
    return decode_rows(((item_id, created_at, body),))[0]


SHARE_EVERY = 500
"""Rows decoded (about a millisecond of work) before a worker thread lets the event
loop's thread take the GIL, instead of making it wait for the interpreter's switch
interval; fewer rows a slice would spend more on the hand-overs, whose cost
[ADR-0096][adr-0096] records."""


def decode_in_slices(rows: Sequence[Row]) -> list[MemoryItem]:
    """`decode_rows` in slices of `SHARE_EVERY`, handing over the GIL between them;
    for a worker thread."""
    items = decode_rows(rows[:SHARE_EVERY])
    for start in range(SHARE_EVERY, len(rows), SHARE_EVERY):
        time.sleep(0)
        items += decode_rows(rows[start : start + SHARE_EVERY])
    return items
