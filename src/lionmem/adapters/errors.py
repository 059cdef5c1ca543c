"""Errors the durable adapters raise for lifecycle and schema problems.

Governed by [ADR-0096][adr-0096] and [ADR-0097][adr-0097].
"""

from __future__ import annotations

__all__ = ["IncompatibleDatabaseError", "MissingSchemaError", "StoreClosedError", "StoreUnavailableError"]


class StoreClosedError(RuntimeError):
    """A store was used after `close()`."""


class IncompatibleDatabaseError(RuntimeError):
    """The database is not a lionmem database, or was written by a newer lionmem."""


class MissingSchemaError(IncompatibleDatabaseError):
    """Opened with `create=False`, the database (an empty SQLite file, a PostgreSQL
    database without lionmem's tables) holds no lionmem schema, and none was created.

    Opening it with `create=True`, the default, makes it a store
    ([ADR-0096][adr-0096], [ADR-0097][adr-0097]).
    """


class StoreUnavailableError(ConnectionError):
    """The server could not be reached, or did not answer, within the timeout; or
    every connection of the store's pool stayed in use by its other calls for that
    long, which the message says.

    A call the server answers with an error of its own, such as a deadlock with
    another client or a `lock_timeout` the application set, raises psycopg's error
    for it instead, and writes nothing.
    """
