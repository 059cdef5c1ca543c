"""Argument rules shared by the `Pile`, every lionmem store and the kit, so that an id
means the same everywhere and an argument of the wrong type is named.

Governed by [ADR-0095][adr-0095].
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import TypeVar, cast
from uuid import UUID

T = TypeVar("T")

__all__ = [
    "as_batch",
    "as_batch_size",
    "as_cutoff",
    "as_uuid",
    "as_uuids",
    "kind_of",
    "require_type",
    "timestamp_of_datetime",
    "timestamp_of_number",
]


def as_uuid(value: object, name: str) -> UUID:
    """`value` as a UUID: a UUID, or its string form (in any of the forms `UUID()` reads).

    Raises:
        ValueError: a string that is not a UUID; the message starts with `name`.
        TypeError: anything else.
    """
    if isinstance(value, UUID):
        return value
    if isinstance(value, str):
        try:
            return UUID(value)
        except ValueError:
            raise ValueError(f"{name} {value!r} is not a UUID") from None
    raise TypeError(f"{name} must be a UUID or its string form, got {type(value).__name__}")


def as_uuids(values: object, name: str) -> list[UUID]:
    """Each of `values` as a UUID (see `as_uuid`), in order, each once.

    Raises:
        TypeError: `values` is a str, bytes or not iterable, or holds something
            that is neither a UUID nor a string.
        ValueError: `values` holds a string that is not a UUID.
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        raise TypeError(f"{name} must be an iterable of ids, got {kind_of(values)}")
    given = cast("Iterable[object]", values)
    return list(dict.fromkeys(as_uuid(value, f"{name} item") for value in given))


def as_cutoff(value: object, name: str) -> float:
    """`value` as a UTC timestamp to compare `created_at` with: a finite number, or a
    datetime (a naive one read as UTC, as `created_at` reads it).

    Raises:
        TypeError: neither a number nor a datetime (a bool is not a number here).
        ValueError: a number that is NaN or infinite.
    """
    if isinstance(value, datetime):
        return timestamp_of_datetime(value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{name} must be a timestamp or a datetime, got {kind_of(value)}")
    return timestamp_of_number(value, name)


def timestamp_of_number(value: int | float, name: str) -> float:
    """`value` as a UTC timestamp, a float.

    Raises:
        ValueError: NaN, infinite, or an integer beyond a float's range; the message
            starts with `name`.
    """
    try:
        number = float(value)
    except OverflowError:
        raise ValueError(f"{name} is an integer too large for a timestamp") from None
    if not math.isfinite(number):
        raise ValueError(f"{name} must be a finite timestamp, got {number!r}")
    return number


def timestamp_of_datetime(value: datetime) -> float:
    """`value` as a UTC timestamp; a naive datetime carries no zone, and lionmem reads
    it as UTC, never as local time."""
    return (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).timestamp()


def as_batch(items: Iterable[T], item_type: type[T]) -> list[T]:
    """The items a `store_many` call writes, as a list.

    One `item_type` alone is refused by name: a pydantic model is iterable (it yields
    its fields), so it would otherwise fail later as "got tuple".

    Raises:
        TypeError: `items` is one `item_type`, or not iterable.
    """
    given: object = items  # typed callers cannot pass one; untyped ones can
    if isinstance(given, item_type):
        raise TypeError(
            f"store_many takes an iterable of {item_type.__name__}, got one {item_type.__name__}; use store()"
        )
    if not isinstance(given, Iterable):
        raise TypeError(f"store_many takes an iterable of {item_type.__name__}, got {type(given).__name__}")
    return list(items)


def as_batch_size(value: object) -> int:
    """`value` as the number of items a batch holds: an int of at least 1.

    Raises:
        TypeError: not an int (a bool is not one here).
        ValueError: less than 1.
    """
    require_type(value, "batch_size", int)
    size = cast(int, value)
    if size < 1:
        raise ValueError(f"batch_size must be at least 1, got {size}")
    return size


def kind_of(value: object) -> str:
    """The type of `value` with its article, for messages: "an int", "a str"."""
    name = type(value).__name__
    return f"{_article(name)} {name}"


def _article(noun: str) -> str:
    return "an" if noun[0] in "aeiouAEIOU" else "a"


def require_type(value: object, name: str, kind: type) -> None:
    """Refuse a `value` that is not a `kind`, for callers without a type checker (such
    as settings read from a file); for `int`, a bool is refused too.

    Raises:
        TypeError: naming `name`, the type wanted and the type given.
    """
    if not isinstance(value, kind) or (kind is int and type(value) is bool):
        wanted = kind.__name__
        raise TypeError(f"{name} must be {_article(wanted)} {wanted}, got {type(value).__name__}")
