"""A search's predicates as SQL on the SQLite store's rows: each filter as a lookup of
the item's metadata row, what a `Condition` keeps of the metadata index, and what
Python must decide after. Which index drives the read is `_planner`'s to choose.

Governed by [ADR-0096][adr-0096] and, for operators, [ADR-0099][adr-0099].
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, LiteralString, NamedTuple, cast

from lionmem.adapters._plan import SQL_FILTERS, Narrowing
from lionmem.adapters.sqlite._indexes import INT64
from lionmem.protocols.filters import AllOf, Condition, Ge, Gt, In, Le, Lt
from lionmem.protocols.memory import MemoryQuery

__all__ = [
    "BIG_INTEGERS",
    "Clauses",
    "Conditions",
    "Held",
    "Predicates",
    "clauses_of",
    "conditions_of",
    "held",
    "predicates_of",
    "same_value",
]

_SQL_TAGS = 1_000


_NUMBER_KINDS: LiteralString = "('integer', 'real', 'true', 'false')"


def same_value(value: object, row: LiteralString) -> LiteralString | None:
    """The condition on the `item_meta` row named `row` that holds exactly when its
    value `==` `value` in Python (given its key), or `None` when SQL cannot decide that.

    SQLite compares a 64-bit integer with a float exactly, as Python does, and stores
    `True` and `False` as 1 and 0. Integers beyond 64 bits are 'bigint' rows without a
    value; no float smaller than 2**63 in size can equal one.
    """
    kind = type(value)
    if kind is str:
        return f"{row}.value = ? AND {row}.kind = 'text'"
    if ((kind is bool or kind is int) and value in INT64) or (
        kind is float and -(2.0**63) <= cast(float, value) < 2.0**63
    ):
        return f"{row}.value = ? AND {row}.kind IN {_NUMBER_KINDS}"
    return None


_ORDERS: dict[type[Condition], LiteralString] = {Gt: ">", Ge: ">=", Lt: "<", Le: "<="}


class Held(NamedTuple):
    """SQL keeping the `item_meta` rows whose value meets a condition."""

    on: Callable[[LiteralString], LiteralString]
    """The condition on the row named by its argument."""
    params: list[object]
    """The values of its marks."""
    exact: bool
    """Whether it keeps no row whose value does not meet the condition."""


def held(condition: Condition) -> Held | None:
    """The SQL keeping every `item_meta` row whose value meets `condition`; `None` when
    SQL cannot narrow it (a member or bound it cannot compare), so Python alone
    decides. A missing key has no row, so a condition that a missing key meets is
    never narrowed here. Worked out once a filter, for both the driver and the
    condition that may use it."""
    if isinstance(condition, In):
        # Values of another type never compare equal here (the column has no
        # affinity), numbers of any type do, as `same_value` relies on.
        members = list(condition.values)
        if not members or any(same_value(value, "m") is None for value in members):
            return None
        kinds: list[LiteralString] = []
        if any(type(value) is str for value in members):
            kinds.append("'text'")
        if any(type(value) is not str for value in members):
            kinds.append("'integer', 'real', 'true', 'false'")
        marks = "?" + ", ?" * (len(members) - 1)
        listed = ", ".join(kinds)

        def among(row: LiteralString) -> LiteralString:
            return f"{row}.value IN ({marks}) AND {row}.kind IN ({listed})"

        return Held(among, members, True)
    if isinstance(condition, AllOf):
        return _held_by_every(condition.conditions)
    operator = _ORDERS.get(type(condition))
    if operator is None:
        return None
    (bound,) = condition.arguments
    if isinstance(bound, str):

        def text_order(row: LiteralString) -> LiteralString:
            return f"{row}.value {operator} ? AND {row}.kind = 'text'"

        return Held(text_order, [bound], True)
    if not (-(2.0**63) <= bound < 2.0**63):
        return None

    # An integer beyond 64 bits is a 'bigint' row without a value: a candidate, which
    # Python decides; so the condition is not exact (a driver reads those apart).
    def number_order(row: LiteralString) -> LiteralString:
        return f"{row}.value {operator} ? AND {row}.kind IN {_NUMBER_KINDS}"

    return Held(number_order, [bound], False)


def _held_by_every(members: tuple[Any, ...]) -> Held | None:
    """The rows `AllOf(*members)` may keep: those every member SQL can narrow keeps,
    so that `AllOf(Ge(a), Lt(b))` reads one range of the index. Exact only when
    every member is; `None` when none can narrow."""
    parts: list[Held | None] = []
    for member in members:
        if isinstance(member, Condition):
            parts.append(held(member))
        else:
            parts.append(_equal_to(member))
    kept = [part for part in parts if part is not None]
    if not kept:
        return None

    def every(row: LiteralString) -> LiteralString:
        return " AND ".join(f"({part.on(row)})" for part in kept)

    params = [param for part in kept for param in part.params]
    return Held(every, params, len(kept) == len(parts) and all(part.exact for part in kept))


def _equal_to(value: object) -> Held | None:
    """The rows holding a value `==` `value`, as `same_value` decides it."""
    if same_value(value, "r") is None:
        return None

    def same(row: LiteralString) -> LiteralString:
        return cast(LiteralString, same_value(value, row))

    return Held(same, [value], True)


BIG_INTEGERS: LiteralString = (
    "SELECT d.seq FROM item_meta AS d WHERE d.key = ? AND d.value IS NULL AND d.kind = 'bigint'"
)
"""The rows of one key holding an integer beyond 64 bits, which no SQL order compares."""


_ROW: LiteralString = "m.seq = items.seq AND m.key = ?"
"""Correlates a lookup of one item's metadata row for one key."""


def filter_condition(key: str, value: object, held: Held | None) -> Narrowing | None:
    """The condition on items narrowing one filter, given what `_held` found for it
    when it is a `Condition`; `None` when nothing narrows it (a value that is no JSON
    value), so Python alone decides."""
    if isinstance(value, Condition):
        if held is None:
            return None
        condition = held.on("m")
        if not held.exact:
            condition = f"({condition} OR m.kind = 'bigint')"
        return Narrowing(
            f"EXISTS (SELECT 1 FROM item_meta AS m WHERE {_ROW} AND {condition})", [key, *held.params], held.exact
        )
    same = same_value(value, "m")
    if same is not None:
        return Narrowing(f"EXISTS (SELECT 1 FROM item_meta AS m WHERE {_ROW} AND {same})", [key, value], True)
    if value is None:  # a missing key matches, so does a stored null
        return Narrowing(f"NOT EXISTS (SELECT 1 FROM item_meta AS m WHERE {_ROW} AND m.kind != 'null')", [key], True)
    kind = type(value)
    if kind is int or kind is float:
        # Beyond 64 bits (or NaN): a float or a big integer may be equal; Python decides.
        kinds = "m.kind IN ('real', 'bigint')"
    elif kind is list:
        kinds = "m.kind = 'array'"
    elif kind is dict:
        kinds = "m.kind = 'object'"
    else:
        return None
    return Narrowing(f"EXISTS (SELECT 1 FROM item_meta AS m WHERE {_ROW} AND {kinds})", [key], False)


class Conditions(NamedTuple):
    """A query's predicates as a condition on `items` rows alone, with no driving
    index: for rows another index chose, such as a recall's best candidates."""

    sql: str
    """`AND` and the conditions, naming `items`' columns, or nothing."""
    params: list[object]
    """The values of its marks, in order."""
    recheck: list[tuple[str, Any]]
    """Filters that Python's `==` decides on the rows."""
    any_tag: frozenset[str]
    """When not empty, each row must hold one of these tags, checked in Python."""


def conditions_of(query: MemoryQuery) -> Conditions:
    """The text, tags and filters of `query`, which `settle_unstorable` has settled,
    as `Conditions`."""
    asked = predicates_of(query)
    clauses = clauses_of(query, asked)
    return Conditions(
        " AND " + " AND ".join(clauses.sql) if clauses.sql else "", clauses.params, clauses.recheck, asked.any_tag
    )


class Predicates(NamedTuple):
    """A query's tags and filters, as SQL and Python share them."""

    tags: list[str]
    """The tags SQL checks, each once."""
    any_tag: frozenset[str]
    """The tags Python checks instead, when too many for a statement."""
    filters: dict[str, Any]
    """The filters SQL narrows by."""
    recheck: list[tuple[str, Any]]
    """The filters left to Python alone."""
    held: dict[str, Held | None]
    """What each filter that is a `Condition` keeps of the metadata index."""


def predicates_of(query: MemoryQuery) -> Predicates:
    """The `Predicates` of `query`."""
    tags = list(dict.fromkeys(query.tags or ()))
    # More tags than a statement safely takes parameters for (SQLite's default
    # limit is 32,766) are checked in Python instead.
    any_tag = frozenset(tags) if len(tags) > _SQL_TAGS else frozenset[str]()
    if any_tag:
        tags = []
    every_filter = list((query.filters or {}).items())
    filters = dict(every_filter[:SQL_FILTERS])
    recheck: list[tuple[str, Any]] = every_filter[SQL_FILTERS:]
    kept = {key: held(value) for key, value in filters.items() if isinstance(value, Condition)}
    return Predicates(tags, any_tag, filters, recheck, kept)


class Clauses(NamedTuple):
    """The SQL conditions of a query's predicates on `items` rows, and the filters
    Python decides after."""

    sql: list[str]
    params: list[object]
    recheck: list[tuple[str, Any]]


def clauses_of(
    query: MemoryQuery, asked: Predicates, *, tags_settled: bool = False, key_settled: str | None = None
) -> Clauses:
    """The conditions on `items` rows of `query`'s text and of `asked`, each looked up
    row by row on primary keys, but for the tags and the filter key an index driving
    the read settles already."""
    clauses: list[str] = []
    params: list[object] = []
    recheck = [*asked.recheck]
    if query.text:
        clauses.append("instr(items.folded, ?) > 0")
        params.append(query.text.lower())
    if asked.tags and not tags_settled:
        marks = ", ".join("?" * len(asked.tags))
        clauses.append(f"EXISTS (SELECT 1 FROM item_tags AS t WHERE t.seq = items.seq AND t.tag IN ({marks}))")
        params.extend(asked.tags)
    for key, value in asked.filters.items():
        if key == key_settled:
            continue
        narrowing = filter_condition(key, value, asked.held.get(key))
        if narrowing is None or not narrowing.exact:
            recheck.append((key, value))
        if narrowing is not None:
            clauses.append(narrowing.condition)
            params.extend(narrowing.params)
    return Clauses(clauses, params, recheck)
