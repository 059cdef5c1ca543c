"""Every error lionmem raises of its own, under one root: `except LionmemError` catches
them all, and each also keeps the builtin base it has always had, so an `except` on
that base still catches it.

```text
Exception
└── LionmemError
    ├── StoreClosedError ............ also RuntimeError
    ├── IncompatibleDatabaseError ... also RuntimeError
    │   ├── MissingSchemaError
    │   ├── DatabaseCorruptError
    │   └── VectorExtensionMissingError
    ├── StoreUnavailableError ....... also ConnectionError
    ├── ImportFileError ............. also ValueError
    ├── NoEmbedderError ............. also RuntimeError
    ├── EmbedderMismatchError ....... also ValueError
    └── ConformanceFailure .......... also AssertionError (lionmem.testing)
```

Its warnings have a root of their own beside it, `LionmemWarning`:

```text
UserWarning
└── LionmemWarning
    └── ErasureWarning .............. lionmem.protocols.forgetting
```

`ConformanceFailure` is defined with the kit, since it carries the kit's
`CheckResult`; it is a `LionmemError` all the same. Arguments a caller got wrong
raise the builtin `TypeError` or `ValueError` that Python's own functions raise, not
a `LionmemError`: they are the caller's to fix, not a state of a store. The
[Errors][errors] page of the docs draws the same tree. See [ADR-0096][adr-0096] and
[ADR-0097][adr-0097] for the stores' errors.
"""

from __future__ import annotations

__all__ = [
    "DatabaseCorruptError",
    "EmbedderMismatchError",
    "ImportFileError",
    "IncompatibleDatabaseError",
    "LionmemError",
    "LionmemWarning",
    "MissingSchemaError",
    "NoEmbedderError",
    "StoreClosedError",
    "StoreUnavailableError",
    "VectorExtensionMissingError",
]


class LionmemError(Exception):
    """The root of lionmem's own errors; see the tree in
    [`lionmem.errors`][lionmem.errors]."""


class LionmemWarning(UserWarning):
    """The root of lionmem's own warnings: `warnings.simplefilter("error",
    LionmemWarning)` turns them all into errors, and a filter on `UserWarning` still
    catches them."""


class StoreClosedError(LionmemError, RuntimeError):
    """A store was used after `close()`."""


class IncompatibleDatabaseError(LionmemError, RuntimeError):
    """The database is not a lionmem database, or was written by a newer lionmem."""


class MissingSchemaError(IncompatibleDatabaseError):
    """Opened with `create=False`, the database (an empty SQLite file, a PostgreSQL
    database without lionmem's tables) holds no lionmem schema, and none was created.

    Opening it with `create=True`, the default, makes it a store
    ([ADR-0096][adr-0096], [ADR-0097][adr-0097]).
    """


class DatabaseCorruptError(IncompatibleDatabaseError):
    """The database file is damaged: SQLite met a page it cannot read, at open or at
    any call after. The message names the file and how to recover what it holds; a
    store that met the damage refuses every write after it, so that nothing is
    written into a file that may lose it ([ADR-0096][adr-0096-damage])."""


class VectorExtensionMissingError(IncompatibleDatabaseError):
    """A PostgreSQL store was opened with an embedder where the `vector` extension
    (pgvector) is not installed, and the role may not install it: the message says
    whether the server lacks pgvector or the database only lacks the extension, and
    the one-time step for an administrator. Every other method works without it
    ([ADR-0103][adr-0103])."""


class StoreUnavailableError(LionmemError, ConnectionError):
    """The server could not be reached, or did not answer, within the timeout; or
    every connection of the store's pool stayed in use by its other calls for that
    long, which the message says.

    A call the server answers with an error of its own, such as a deadlock with
    another client or a `lock_timeout` the application set, raises psycopg's error
    for it instead, and writes nothing.
    """


class ImportFileError(LionmemError, ValueError):
    """A line of an import file is not what the export format says; the message names
    the file and the line ([ADR-0100][adr-0100])."""


class NoEmbedderError(LionmemError, RuntimeError):
    """`recall` was called on a store made without an embedder
    ([ADR-0102][adr-0102])."""


class EmbedderMismatchError(LionmemError, ValueError):
    """A durable store's vectors were made by another embedder than the one it was
    opened with; the message names both. Vectors of two models cannot be compared:
    open it with the recorded embedder, or rebuild the vectors with `reembed`
    ([ADR-0102][adr-0102])."""
