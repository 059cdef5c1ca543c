"""Argument rules shared by the `Pile` and every lionmem store, so that an id means
the same everywhere.

Governed by [ADR-0095][adr-0095].
"""

from __future__ import annotations

from uuid import UUID

__all__ = ["as_uuid"]


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
