"""How the durable stores settle in Python what their SQL leaves: the predicates no
stored item can meet, decided before any SQL, and the rows SQL could not decide
exactly, rechecked by the reference's rules as they are decoded.

Governed by [ADR-0096][adr-0096] and [ADR-0097][adr-0097].

Seam for tests: `_settling`, tested function by function, and patched to see where
the PostgreSQL store rechecks rows.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from lionmem._internal.json_values import LONE_SURROGATE
from lionmem.adapters._codec import MAX_ITEM_BYTES, SHARE_EVERY, Row, decode_in_slices, decode_rows
from lionmem.adapters._plan import Plan
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.rules import any_tag_held, filters_hold

__all__ = ["aged_matches", "matching", "settle_unstorable", "settled"]


def _unstorable(text: str, allow_nul: bool) -> bool:
    """Whether no stored string can be `text`: it is longer than `MAX_ITEM_BYTES`
    characters, or holds a character no stored string can, U+0000 when the database
    cannot keep it or a lone surrogate. The characters are the rule `_check_json`
    applies to every string a write stores, which states it inline instead of calling
    this, since a call per string showed in the cost of encoding an item
    ([ADR-0096][adr-0096])."""
    if len(text) > MAX_ITEM_BYTES:
        return True
    if not allow_nul and "\x00" in text:
        return True
    return not text.isascii() and LONE_SURROGATE.search(text) is not None


def settle_unstorable(query: MemoryQuery, *, allow_nul: bool) -> MemoryQuery | None:
    """`query` without the predicates that name a string no stored item can hold (see
    `check_json`), which are decided here: `None` when one of them rules out every
    item, else the query that remains (`query` itself when it names none).

    The reference matches such strings like any other; the database could not even
    take one as a parameter, or not one that long. So text holding one matches
    nothing (a needle longer than `MAX_ITEM_BYTES` is longer than any searchable
    text, and folding never shortens it); a tag holding one is on no item; a filter on
    a key holding one compares `None` for every item, as `metadata.get(key)` does;
    and a string value holding one equals nothing stored.
    """
    if query.text and _unstorable(query.text, allow_nul):
        return None
    update: dict[str, Any] = {}
    if query.tags:
        tags = [tag for tag in query.tags if not _unstorable(tag, allow_nul)]
        if not tags:
            return None
        if len(tags) < len(query.tags):
            update["tags"] = tags
    if query.filters:
        filters: dict[str, Any] = {}
        for key, value in query.filters.items():
            if _unstorable(key, allow_nul):
                # `==`, not `is`: the reference's comparison, whatever `value` is.
                if not (None == value):
                    return None
            elif type(value) is str and _unstorable(value, allow_nul):
                return None
            else:
                filters[key] = value
        if len(filters) < len(query.filters):
            update["filters"] = filters
    return query.model_copy(update=update) if update else query


def matching(
    rows: Iterable[Row], recheck: list[tuple[str, Any]], limit: int, any_tag: frozenset[str] = frozenset()
) -> Iterator[MemoryItem]:
    """Decode rows whose metadata passes `recheck` (and that hold one of `any_tag`,
    when given) by the reference's rules, in order, stopping after `limit` matches
    when `limit` is not negative.

    Rows are read and decoded by `decode_rows` a slice at a time: first as many as
    the matches still wanted (at least `FIRST_SLICE`), then twice as many each time
    up to `SHARE_EVERY`, handing over the GIL between slices, as `decode_in_slices`
    does. So a limited search reads few rows past its last match, and a long one
    keeps the batch decoder's speed."""
    wanted = limit if limit >= 0 else -1
    size = SHARE_EVERY if wanted < 0 else min(SHARE_EVERY, max(FIRST_SLICE, wanted))
    reading = iter(rows)
    while wanted != 0 and (chunk := list(islice(reading, size))):
        for item in decode_rows(chunk):
            if any_tag and not any_tag_held(item.tags, any_tag):
                continue
            if filters_hold(item.metadata, recheck):
                yield item
                wanted -= 1
                if wanted == 0:
                    return
        if len(chunk) < size:
            return
        size = min(SHARE_EVERY, 2 * size)
        time.sleep(0)


FIRST_SLICE = 16
"""The fewest rows `matching` decodes at once."""


def aged_matches(found: list[MemoryItem], before: float, limit: int) -> list[MemoryItem]:
    """Of every match `found`, in order, those created before `before`, cut by `limit`:
    what a search returns of a store holding only the items created before it."""
    return [item for item in found if item.created_at < before][:limit]


def settled(rows: Iterable[Row], plan: Plan[Any], limit: int) -> list[MemoryItem]:
    """The items of the rows `plan`'s statement returned: every row decoded in slices
    when SQL decided every predicate, else the rows Python's rules keep, in order,
    cut by `limit` with the slice rules."""
    if not (plan.recheck or plan.any_tag):
        found = decode_in_slices(rows if isinstance(rows, list) else list(rows))
        return found if plan.pushed else found[:limit]
    return list(matching(rows, plan.recheck, limit, plan.any_tag))[:limit]
