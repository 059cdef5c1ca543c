"""Argument rules shared by the `Pile`, every lionmem store and the kit, so that an id
means the same everywhere and an argument of the wrong type is named.

Governed by [ADR-0095][adr-0095].
"""

from __future__ import annotations

from uuid import UUID

__all__ = ["as_uuid", "kind_of", "require_type"]


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
