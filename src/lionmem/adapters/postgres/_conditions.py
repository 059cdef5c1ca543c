"""A search's predicates as SQL on the PostgreSQL store's rows: the text, the tags,
each filter (an order comparison through the table of metadata values), and what
Python must decide after. Which index reads them is `_planner`'s to choose.

Governed by [ADR-0097][adr-0097]; the table of metadata values that order
comparisons read, by [ADR-0099][adr-0099-d5].
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, LiteralString, NamedTuple, cast

from psycopg import sql
from psycopg.types.json import Jsonb

from lionmem.adapters._plan import SQL_FILTERS, Narrowing
from lionmem.adapters._settling import settle_unstorable
from lionmem.adapters.postgres._writes import INDEXED_KEY_BYTES, INDEXED_TEXT, TAG_DIGEST, tag_key
from lionmem.protocols.filters import Condition, Ge, Gt, In, Le, Lt
from lionmem.protocols.memory import MemoryQuery

__all__ = ["UNEXPIRED", "Where", "equal_rows", "where_of"]

_EXACT_NUMBER = 2**53
_ORDERS: dict[type[Condition], LiteralString] = {Gt: ">", Ge: ">=", Lt: "<", Le: "<="}
# A float's shortest decimal, as JSON and so `numeric` hold it, is within 2**-53 of
# its value, relatively; a widened bound keeps every match of a bound past 2**53.
_WIDEN = Decimal(2) ** -50
_INCLUSIVE: dict[LiteralString, LiteralString] = {">": ">=", ">=": ">=", "<": "<=", "<=": "<="}


def _order_clause(key: str, condition: Condition) -> Narrowing | None:
    """The `lionmem_meta` rows of an order comparison, read from its B-tree indexes.

    Exact for a string bound shorter than the `INDEXED_TEXT` characters a row keeps
    (a longer held string compares as its kept start does), and for a number up to
    2**53: the shortest decimals of floats order as the floats do, and an integer up
    to 2**53 is a float whose shortest decimal is itself. Past either, the bound is
    widened and Python decides.
    """
    if len(key.encode()) > INDEXED_KEY_BYTES:
        return None
    operator = _ORDERS[type(condition)]
    bound: int | float | str = condition.arguments[0]
    value: str | Decimal
    if isinstance(bound, str):
        column: LiteralString = "txt"
        value, exact = bound[:INDEXED_TEXT], len(bound) < INDEXED_TEXT
    else:
        column = "num"
        # A float as its shortest decimal, as JSON wrote every stored one.
        value = Decimal(repr(bound) if isinstance(bound, float) else int(bound))
        exact = abs(bound) <= _EXACT_NUMBER
        if not exact:
            value += abs(value) * (-_WIDEN if operator.startswith(">") else _WIDEN)
    if not exact:
        operator = _INCLUSIVE[operator]
    return Narrowing(
        "EXISTS (SELECT FROM lionmem_meta AS m WHERE m.namespace = lionmem_items.namespace"
        " AND m.seq = lionmem_items.seq AND m.key = %s AND m." + column + " " + operator + " %s)",
        [key, value],
        exact,
    )


def _filter_clause(key: str, value: object) -> Narrowing | None:
    """The SQL narrowing one filter; `None` to leave it to Python.

    JSON containment compares numbers as decimals, which agrees with Python's `==`
    (1 == 1.0, -0.0 == 0) up to 2**53; beyond that a float's shortest decimal form
    need not equal the integer it is equal to.
    """
    if value is None:
        return Narrowing("(NOT metadata ? %s OR metadata -> %s = 'null'::jsonb)", [key, key], True)
    if isinstance(value, In):
        # Each member as its own containment, so the metadata index answers each.
        members = [_filter_clause(key, member) for member in value.values]
        if not members or any(member is None or not member.exact for member in members):
            return None
        exact = cast("list[Narrowing]", members)
        return Narrowing(
            "(" + " OR ".join(member.condition for member in exact) + ")",
            [param for member in exact for param in member.params],
            True,
        )
    if type(value) in _ORDERS:
        return _order_clause(key, cast(Condition, value))
    kind = type(value)
    if kind is str:
        return Narrowing("metadata @> %s", [Jsonb({key: value})], True)
    if kind in (bool, int, float) and abs(cast(float, value)) <= _EXACT_NUMBER:
        # Python equality: True == 1 == 1.0, but JSON true is not the number 1.
        number = Jsonb({key: int(cast(bool, value)) if kind is bool else value})
        if value in (0, 1):
            return Narrowing("(metadata @> %s OR metadata @> %s)", [number, Jsonb({key: bool(value)})], True)
        return Narrowing("metadata @> %s", [number], True)
    if kind is list:
        return Narrowing("jsonb_typeof(metadata -> %s) = 'array'", [key], False)
    if kind is dict:
        return Narrowing("jsonb_typeof(metadata -> %s) = 'object'", [key], False)
    return None


class Where(NamedTuple):
    """A query's predicates over `lionmem_items`, as SQL and as what Python decides."""

    clause: sql.Composed
    """The conditions on one namespace's rows, naming the table's columns unqualified."""
    params: list[object]
    """The values of its marks, in order."""
    recheck: list[tuple[str, Any]]
    """Filters that Python's `==` decides on the rows."""
    any_tag: frozenset[str]
    """When not empty, each row must hold one of these tags, checked in Python."""
    query: MemoryQuery
    """The query left once strings no row can hold are settled."""


def where_of(namespace: str, asked: MemoryQuery, after: int = 0, now: float | None = None) -> Where:
    """The conditions selecting `namespace`'s rows after position `after`, and with
    `now` unexpired at it ([ADR-0105][adr-0105-d2]), that may match `asked`'s text, tags
    and filters, and what Python decides on them."""
    clauses: list[sql.Composable] = [sql.SQL("namespace = %s")]
    params: list[object] = [namespace]
    if after:
        clauses.append(sql.SQL("seq > %s"))
        params.append(after)
    if now is not None:
        clauses.append(sql.SQL(UNEXPIRED))
        params.append(now)
    # PostgreSQL text cannot hold U+0000, so neither can a stored string.
    query = settle_unstorable(asked, allow_nul=False)
    if query is None:
        clauses.append(sql.SQL("false"))
        query = asked.model_copy(update={"text": None, "tags": None, "filters": None})
    if query.text:
        needle = query.text.lower()
        escaped = needle.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        # LIKE lets a pg_trgm index narrow; strpos() decides, wildcards and all.
        clauses.append(sql.SQL("folded LIKE %s AND strpos(folded, %s) > 0"))
        params += [f"%{escaped}%", needle]
    any_tag: frozenset[str] = frozenset()
    if query.tags:
        keys = [tag_key(tag) for tag in query.tags]
        clauses.append(sql.SQL("tags && %s::text[]"))
        params.append(keys)
        # Keys equal for different tags need a digest on one side: a digest
        # collision, or a tag spelled like another's digest. Python decides those.
        if any(key.startswith(TAG_DIGEST) for key in keys):
            any_tag = frozenset(query.tags)
    recheck: list[tuple[str, Any]] = []
    for n, (key, value) in enumerate((query.filters or {}).items()):
        narrowing = _filter_clause(key, value) if n < SQL_FILTERS else None
        if narrowing is not None:
            clauses.append(sql.SQL(narrowing.condition))
            params += narrowing.params
        if narrowing is None or not narrowing.exact:
            recheck.append((key, value))
    return Where(sql.SQL(" AND ").join(clauses), params, recheck, any_tag, query)


UNEXPIRED: LiteralString = "(expires_at IS NULL OR expires_at > %s)"
"""An item's row unexpired at the time its one value gives ([ADR-0105][adr-0105-d2])."""


def equal_rows(key: str, value: object) -> tuple[LiteralString, str | Decimal] | None:
    """The `lionmem_meta` column and value whose rows of `key` are exactly the items
    holding a value `==` `value`, or `None` when they are not: a key too long to have
    rows, a string as long as the start a row keeps, a number past 2**53 (see
    `_order_clause`), or a value of another kind. A bool is the number 1 or 0 there,
    as it is to Python's `==`."""
    if len(key.encode()) > INDEXED_KEY_BYTES:
        return None
    kind = type(value)
    if kind is str:
        text = cast(str, value)
        return ("txt", text) if len(text) < INDEXED_TEXT else None
    if kind in (bool, int, float) and abs(cast(float, value)) <= _EXACT_NUMBER:
        return "num", Decimal(repr(value) if kind is float else int(cast(int, value)))
    return None
