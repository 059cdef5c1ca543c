"""`PagingStore`: the optional extension of `MemoryStore` for stores that hand out a
search's matches a page at a time, each page read after a cursor.

`MemoryQuery` keeps its meaning: `limit` is the size of a page, and the cursor is an
argument of the call, not a field a store could ignore. Governed by
[ADR-0105][adr-0105-d3].
"""

from __future__ import annotations

from typing import NamedTuple, Protocol, runtime_checkable

from lionmem._internal.arguments import require_type
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore

__all__ = ["Page", "PagingStore", "check_page", "cursor_of", "position_of"]

_LARGEST = 2**63 - 1


class Page(NamedTuple):
    """One page of a search: its items, and the cursor of the page after it."""

    items: list[MemoryItem]
    """At most `limit` matches, in insertion order, each after the cursor asked for."""
    next: str | None
    """The cursor to ask for the page after this one, or `None` when no further item
    matched as this page was read."""


@runtime_checkable
class PagingStore(MemoryStore, Protocol):
    """A `MemoryStore` whose matches come a page at a time.

    Paging is stable under concurrent writes: an item that exists from the first page
    to the last comes exactly once, on its place in insertion order (a replacement
    keeps its place and comes as it is when its page is read); an item stored
    meanwhile comes at the end or not at all; a deleted one does not come once
    deleted. `InMemoryStore`, `SQLiteMemoryStore` and `PostgresMemoryStore` implement
    it alike. See [ADR-0105][adr-0105-d3].
    """

    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        """The first `query.limit` items matching `query` that come after the cursor
        `after` (from the first item when `None`), and the cursor after them."""
        ...


def check_page(query: MemoryQuery, after: str | None) -> tuple[int, int]:
    """The page size `query` asks for and the position `after` names (0 for `None`).

    Raises:
        TypeError: `query` is not a `MemoryQuery`, or `after` is neither a str nor
            `None`.
        ValueError: `query.limit` is less than 1, or `after` is not a cursor.
    """
    require_type(query, "query", MemoryQuery)
    if query.limit < 1:
        raise ValueError(f"a page holds at least one item: the query's limit must be at least 1, got {query.limit}")
    return query.limit, position_of(after)


def position_of(after: str | None) -> int:
    """The position a cursor names: 0, before every item, for `None`.

    Raises:
        TypeError: `after` is neither a str nor `None`.
        ValueError: `after` is not a cursor a store gave.
    """
    if after is None:
        return 0
    require_type(after, "after", str)
    if not (after.isascii() and after.isdigit() and int(after) <= _LARGEST):
        raise ValueError(f"after must be a cursor a page gave (its next), got {after!r}")
    return int(after)


def cursor_of(position: int) -> str:
    """The cursor after the item at `position`."""
    return str(position)
