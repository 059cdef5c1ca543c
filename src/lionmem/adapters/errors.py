"""Errors the durable adapters raise for lifecycle and schema problems.

Governed by [ADR-0096][adr-0096].
"""

from __future__ import annotations

__all__ = ["IncompatibleDatabaseError", "StoreClosedError"]


class StoreClosedError(RuntimeError):
    """A store was used after `close()`."""


class IncompatibleDatabaseError(RuntimeError):
    """The database is not a lionmem database, or was written by a newer lionmem."""
