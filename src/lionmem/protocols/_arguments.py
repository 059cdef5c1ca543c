"""Argument rules shared by every lionmem store, so that a call means the same on each.

Governed by [ADR-0095][adr-0095].
"""

from __future__ import annotations

from uuid import UUID

__all__ = ["item_uuid"]


def item_uuid(item_id: object) -> UUID:
    """The id `retrieve` looks up: a UUID, or its string form (as `Pile` keys are).

    Raises:
        ValueError: a string that is not a UUID.
        TypeError: anything else.
    """
    if isinstance(item_id, UUID):
        return item_id
    if isinstance(item_id, str):
        try:
            return UUID(item_id)
        except ValueError:
            raise ValueError(f"item_id {item_id!r} is not a UUID") from None
    raise TypeError(f"item_id must be a UUID or its string form, got {type(item_id).__name__}")
