"""How `InMemoryStore` applies the matching rules: each of a query's predicate groups
in turn over a snapshot of items, in chunks when a limit lets the scan stop early.

Governed by [ADR-0092][adr-0092-d3].

Seam for tests: `_matching`, whose `MIN_CHUNK` a test reads to search across a
chunk's edge.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable

from lionmem.protocols._expiries import NOTHING_HIDDEN, Hidden
from lionmem.protocols.generic.pile import Pile
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.rules import with_any_tag, with_filters

__all__ = ["Predicate", "first", "matches", "predicates", "scan"]


async def scan(snapshot: list[MemoryItem], size: int, expired: Hidden) -> AsyncIterator[list[MemoryItem]]:
    """The items of `snapshot` but the `expired` ones, in lists of at most `size`."""
    if expired:
        gone = expired.objects
        snapshot = [i for i in snapshot if id(i) not in gone]
    for start in range(0, len(snapshot), size):
        yield snapshot[start : start + size]


def first(items: Pile[MemoryItem], limit: int, expired: Hidden) -> list[MemoryItem]:
    """`items.values()[:limit]` but the `expired` ones. With a limit of at least 0, the
    first items are read a growing prefix at a time, until one holds `limit` unexpired
    or every item is read: a few more than `limit` when the expired are spread out."""
    if not expired:
        return items.values(limit)
    gone = expired.objects
    if limit < 0:
        return [i for i in items.values() if id(i) not in gone][:limit]
    size = limit + _SPARE
    while True:
        read = items.values(size)
        live = [i for i in read if id(i) not in gone]
        if len(live) >= limit or len(read) < size:
            return live[:limit]
        size *= 4


def matches(snapshot: list[MemoryItem], groups: list[Predicate], limit: int | None) -> list[MemoryItem]:
    """The items of `snapshot` every predicate of `groups` lets through, cut to
    `[:limit]` (`None`: not cut)."""
    if not groups:
        return snapshot if limit is None else snapshot[:limit]
    size = len(snapshot)
    # With a small non-negative limit, scan in chunks and stop once enough items
    # match: the first `limit` matches are the same as those of a full scan.
    step = max(MIN_CHUNK, size if limit is None or limit < 0 else 4 * limit)
    found: list[MemoryItem] = []
    for start in range(0, size, step):
        part = snapshot[start : start + step]
        for predicate in groups:
            part = predicate(part)
        found += part
        if limit is not None and 0 <= limit <= len(found):
            break
    return found if limit is None else found[:limit]


MIN_CHUNK = 512

_SPARE = 32
"""Items read past `limit` at first, for the expired among them."""

Predicate = Callable[[list[MemoryItem]], list[MemoryItem]]


def predicates(query: MemoryQuery, expired: Hidden = NOTHING_HIDDEN) -> list[Predicate]:
    """The non-empty predicate groups of `query`, in the order they apply, then one
    that drops the `expired` items when there are any ([ADR-0105][adr-0105-d2]): last,
    so that it reads only what the others kept."""
    groups: list[Predicate] = []
    if query.text:
        needle = query.text.lower()
        groups.append(lambda part: [i for i in part if needle in str(i.content).lower()])
    if query.tags:
        wanted = frozenset(query.tags)
        groups.append(lambda part: with_any_tag(part, wanted))
    if query.filters:
        conditions = list(query.filters.items())
        groups.append(lambda part: with_filters(part, conditions))
    if expired:
        gone = expired.objects
        groups.append(lambda part: [i for i in part if id(i) not in gone])
    return groups
