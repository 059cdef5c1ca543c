"""`NamespacedStore`: the optional extension of `MemoryStore` for stores whose database
holds many namespaces, each a store of its own.

The three-method protocol and `MemoryQuery` stay as [ADR-0092][adr-0092-d2] fixed them:
a namespace is chosen when a store is opened (or by `in_namespace`), never by a query
field, so a store that knows nothing of namespaces cannot widen a search by ignoring
one. Governed by [ADR-0105][adr-0105-d1].
"""

from __future__ import annotations

import re
from typing import Final, Protocol, Self, runtime_checkable

from lionmem._internal.arguments import require_type
from lionmem.protocols.memory import MemoryStore

__all__ = ["DEFAULT_NAMESPACE", "NamespacedStore", "check_namespace"]

DEFAULT_NAMESPACE: Final = "default"
"""The namespace an `InMemoryStore` or an SQLite file opens when none is named; a file
written before namespaces holds its items there."""

_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,62}")


def check_namespace(namespace: str) -> str:
    """`namespace`, if it is a name a namespace may have: 1 to 63 letters, digits,
    `_`, `.` or `-`, not starting with `.` or `-` ([ADR-0105][adr-0105-d1]).

    Raises:
        TypeError: `namespace` is not a str.
        ValueError: it is not such a name.
    """
    require_type(namespace, "namespace", str)
    if not _NAME.fullmatch(namespace):
        raise ValueError(
            f"namespace {namespace!r} must be 1-63 letters, digits, '_', '.' or '-', not starting with '.' or '-'"
        )
    return namespace


@runtime_checkable
class NamespacedStore(MemoryStore, Protocol):
    """A `MemoryStore` bound to one namespace of a database that may hold many.

    Every read, write and delete of the store sees only its namespace; the same id
    may live in two namespaces as two items. `InMemoryStore`, `SQLiteMemoryStore` and
    `PostgresMemoryStore` implement it alike, which the conformance kit checks. See
    [ADR-0105][adr-0105-d1].
    """

    @property
    def namespace(self) -> str:
        """The namespace this store reads and writes."""
        ...

    def in_namespace(self, namespace: str) -> Self:
        """The same database bound to `namespace`, sharing this store's connections:
        closing either closes both. Nothing is written until an item is stored."""
        ...

    async def namespaces(self) -> list[str]:
        """The namespaces of the database that hold at least one item, in order of
        their names."""
        ...
