"""Which dimension a difference the stateful comparison found most likely breaks.

Governed by [ADR-0093][adr-0093].
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import cast

from lionmem.protocols.filters import Condition
from lionmem.protocols.memory import MemoryQuery
from lionmem.testing._probe import ALL

__all__ = ["likely_dimension"]


def likely_dimension(
    query: MemoryQuery, found: list[int], want: list[int], alone: Callable[[MemoryQuery], list[int]]
) -> str:
    """The dimension, or dimensions, a search most likely breaks when a store found
    the ids `found` where the reference found `want`.

    `alone` runs a query on the reference. Items found that the reference leaves out
    are blamed on the predicates that exclude them; items missed, on every predicate
    the query has; a difference within what the limit cut, on the limit.
    """
    if sorted(found) == sorted(want):
        return "result_order"
    every = set(alone(query.model_copy(update={"limit": ALL})))
    if set(found) <= every and len(want) < len(every):
        return "limit_policy"
    groups: dict[str, object] = {
        name: value
        for name, value in (("text", query.text), ("tags", query.tags), ("filters", query.filters))
        if value  # an empty value is no predicate
    }
    extra = set(found) - every
    blamed = [
        name
        for name, value in groups.items()
        if not extra or extra - set(alone(MemoryQuery(limit=ALL).model_copy(update={name: value})))
    ]
    return " or ".join(_dimension(name, groups[name]) for name in blamed) or "protocol"


_MATCHES = {"text": "text_match", "tags": "tag_match"}


def _dimension(group: str, value: object) -> str:
    if group in _MATCHES:
        return _MATCHES[group]
    wanted = list(cast("Mapping[str, object]", value).values())
    if any(isinstance(v, Condition) for v in wanted):
        return "filter_operators"  # checked first: a condition's == is its match
    return "none_filter_matches_missing" if None in wanted else "filter_equality"
