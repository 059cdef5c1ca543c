"""A search as the durable stores' planners give it: the `Plan` each returns, the
`Narrowing` of one filter, and the limits SQL may take.

Governed by [ADR-0096][adr-0096] and [ADR-0097][adr-0097].
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, LiteralString, NamedTuple, TypeVar

from lionmem.protocols.memory import MemoryQuery

__all__ = ["MAX_SQL_LIMIT", "SQL_FILTERS", "Narrowing", "Plan", "sql_limit", "unlimited"]

S = TypeVar("S")

SQL_FILTERS = 32
"""The most filters of one query a durable store narrows in SQL; Python checks any
further ones on the rows those leave. A query of a thousand filters made SQLite's
expression tree too deep, and forty thousand exceeded PostgreSQL's parameter limit."""


MAX_SQL_LIMIT = 2**63 - 1
"""The largest LIMIT SQLite and PostgreSQL take (a signed 64-bit integer). No table
holds more rows, so a larger limit asks for the same rows as this one."""


class Narrowing(NamedTuple):
    """SQL that keeps every item one predicate matches, as both stores' planners
    build it for a filter."""

    condition: LiteralString
    """The SQL condition, with the store's own parameter marks; built from literals
    only, so that no value reaches SQL but through `params`."""
    params: list[object]
    """The values of its marks, in order."""
    exact: bool
    """Whether it also drops every item the predicate does not match, so that Python
    need not check the rows it leaves."""


@dataclass(frozen=True, slots=True)
class Plan(Generic[S]):
    """A search as one statement, in the store's own SQL type `S`, and what Python
    decides on the rows it returns; both stores' planners return one, and the store
    that made it runs it."""

    statement: S
    """The statement, ending with the query's own LIMIT when `pushed`."""
    params: list[object]
    """The values of its marks, in order."""
    recheck: list[tuple[str, Any]]
    """Filters that Python's `==` decides on the rows."""
    any_tag: frozenset[str]
    """When not empty, each row must hold one of these tags, checked in Python."""
    pushed: bool
    """Whether the statement ends with the query's own LIMIT, so that every row it
    returns is a match."""


def sql_limit(limit: int, recheck: Sequence[tuple[str, Any]], any_tag: frozenset[str]) -> int | None:
    """The LIMIT a search's SQL may end with: the query's own, capped at
    `MAX_SQL_LIMIT`, when SQL decides every predicate and the limit is not negative;
    `None` when Python must see more rows than the limit (it rechecks some) or the
    slice drops trailing matches."""
    if recheck or any_tag or limit < 0:
        return None
    return min(limit, MAX_SQL_LIMIT)


def unlimited(query: MemoryQuery) -> MemoryQuery:
    """`query` without its limit: every match."""
    return query.model_copy(update={"limit": MAX_SQL_LIMIT})
