"""The memory contract: `MemoryItem`, `MemoryQuery` and `MemoryStore`.

Governed by [ADR-0092][adr-0092] (schemas D1, protocol D2). The reference store,
`InMemoryStore` (D3), is `lionmem.protocols.in_memory`'s; its first home, this
module, still names it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, runtime_checkable
from uuid import UUID

from pydantic import BaseModel, ConfigDict, Field

from lionmem.protocols.generic.element import Element

if TYPE_CHECKING:
    from lionmem.protocols.in_memory import InMemoryStore

__all__ = ["InMemoryStore", "MemoryItem", "MemoryQuery", "MemoryStore"]


class MemoryItem(Element):
    """One remembered thing: any content, plain-string tags and the `Element` identity.

    `MemoryItem()` is valid: no content, no tags, a fresh id and timestamp. Tags are
    neither deduplicated nor checked for emptiness. See [ADR-0092][adr-0092-d1].

    Examples:
        >>> item = MemoryItem(content="the sky is blue", tags=["fact"])
        >>> item.content, item.tags, item.metadata
        ('the sky is blue', ['fact'], {})
    """

    content: Any = None
    """The payload; the reference store matches text against `str(content)`."""

    # Not `default_factory=list`: pydantic reads a factory's signature, and for `list`
    # that parses its text signature, compiling tokenize's regular expressions: a
    # quarter of the time importing the models took.
    tags: list[str] = Field(default_factory=lambda: [])  # noqa: PIE807
    """Labels for any-of tag search; case-sensitive, duplicates allowed."""


class MemoryQuery(BaseModel):
    """The predicates of one search, combined with AND, and a final limit.

    Empty or `None` predicates apply nothing. There are no validators beyond the
    field types: `limit` may be zero or negative, and each backend declares what it
    does with such values. Unknown fields are refused so that a misspelt predicate
    cannot silently widen a search. See [ADR-0092][adr-0092-d1] and
    [ADR-0095][adr-0095].

    Examples:
        >>> MemoryQuery()
        MemoryQuery(text=None, tags=None, filters=None, limit=20)
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    text: str | None = None
    """Substring to find in the content; `None` or `""` applies no text predicate."""

    tags: list[str] | None = None
    """Any one of these tags must be on the item; `None` or `[]` applies none."""

    filters: dict[str, Any] | None = None
    """Every `key: value` must equal `metadata.get(key)`; `None` or `{}` applies none."""

    limit: int = 20
    """The result list is cut to `results[:limit]`."""


@runtime_checkable
class MemoryStore(Protocol):
    """The structural contract of a memory backend: three async methods.

    Any object with these methods conforms; no subclassing or registration. A
    passing `isinstance` check proves only that the three names exist, not their
    signatures, matching rules or durability. See [ADR-0092][adr-0092-d2].
    """

    async def store(self, item: MemoryItem) -> UUID:
        """Persist `item` and return its own id."""
        ...

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        """Return the item with `item_id`, or `None` when there is none."""
        ...

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """Return the items that match `query`, as a list."""
        ...


if not TYPE_CHECKING:  # type checkers see the import above, and no other name

    def __getattr__(name: str) -> Any:
        # The reference store's first home, which `in_memory` imports: the store is
        # loaded when first asked for here, as the package's own names are.
        if name == "InMemoryStore":
            return importlib.import_module("lionmem.protocols.in_memory").InMemoryStore
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
