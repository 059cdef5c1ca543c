"""lionmem's stores behind lionagi's `Branch` and `Session`, and lionagi's stores
before lionmem's conformance kit.

lionagi and lionmem share the memory seam of [ADR-0092][adr-0092], each with its own
`MemoryItem` and `MemoryQuery` classes. [`for_lionagi`][lionmem.integrations.lionagi.for_lionagi]
turns any lionmem store into one that takes and returns lionagi's;
[`from_lionagi`][lionmem.integrations.lionagi.from_lionagi] does the reverse, so
that a store written against lionagi's types can be checked by the kit. Needs the
`lionagi` extra; `import lionmem` never imports this module. Governed by
[ADR-0101][adr-0101].
"""

from __future__ import annotations

import inspect
import threading
import weakref
from collections.abc import Sequence
from typing import Any, Generic, TypeVar
from uuid import UUID

from lionmem._internal.arguments import kind_of
from lionmem.errors import NoEmbedderError
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore
from lionmem.protocols.recall import RecallStore

try:
    from lionagi.protocols.memory import MemoryItem as LionagiItem
    from lionagi.protocols.memory import MemoryQuery as LionagiQuery
    from lionagi.protocols.memory import MemoryStore as LionagiStore
except ImportError:  # lionagi's own error stays chained, as the context
    # No `as` name: it would be a module attribute of this module's typed surface.
    raise ImportError("lionmem.integrations.lionagi needs lionagi: pip install 'lionmem[lionagi]'")  # noqa: B904

__all__ = ["StoreForLionagi", "StoreFromLionagi", "for_lionagi", "from_lionagi"]

Given = TypeVar("Given", MemoryItem, LionagiItem)
Held = TypeVar("Held", MemoryItem, LionagiItem)

_FIELDS = ("id", "created_at", "metadata", "content", "tags")


class _Twins(Generic[Given, Held]):
    """The items a bridge handed to the store it wraps, each beside the caller's own.

    A bridge gives the wrapped store a twin of each item: an item of the other
    library's class holding the same `content`, `tags` list and `metadata` dict, so
    that a change made in place to one is a change to both. A store that returns what
    it was given, as a reference store does, returns the twin; the bridge then gives
    the caller its own object back, so results stay live objects. A twin is held
    weakly: once the store lets it go (a store that keeps copies does at once), the
    entry goes too.
    """

    def __init__(self, caller_class: type[Given], store_class: type[Held]) -> None:
        self._caller_class: type[Given] = caller_class
        self._store_class: type[Held] = store_class
        # Seam for tests: `_by_id`, read to show that no entry outlives its twin.
        self._by_id: dict[UUID, tuple[weakref.ref[Held], Given]] = {}
        # A twin may die on a store's worker thread while the loop's thread remembers
        # a new twin for its id. Reentrant: collecting garbage while the lock is held
        # may run a callback on the same thread.
        self._lock = threading.RLock()

    def for_store(self, item: Given) -> Held:
        """The twin of the caller's `item` for the store, remembered."""
        twin = _twin(self._store_class, item)
        self._remember(twin, item)
        return twin

    def for_caller(self, found: Held) -> Given:
        """The caller's object for an item the store returned: the one the caller
        gave, when `found` is its twin; else a new twin of `found`, remembered, so
        that a live store's item gives the same object each time."""
        entry = self._by_id.get(found.id)
        if entry is not None and entry[0]() is found:
            return entry[1]
        twin = _twin(self._caller_class, found)
        self._remember(found, twin)
        return twin

    def _remember(self, held: Held, given: Given) -> None:
        key, by_id, lock = held.id, self._by_id, self._lock

        def forget(gone: weakref.ref[Held]) -> None:
            with lock:  # only this twin's entry: its id may have a newer one
                entry = by_id.get(key)
                if entry is not None and entry[0] is gone:
                    del by_id[key]

        with lock:
            by_id[key] = (weakref.ref(held, forget), given)


def _twin(kind: type[Held], item: MemoryItem | LionagiItem) -> Held:
    """An item of `kind` holding `item`'s values themselves, unvalidated: the wrapped
    store checks what it is given, as it would the item itself."""
    return kind.model_construct(**{name: getattr(item, name) for name in _FIELDS})


def _qualified(value: object) -> str:
    """`value`'s class with its module, since both libraries name theirs alike."""
    kind = type(value)
    return kind.__qualname__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"


def _whole(item: object, kind: type[MemoryItem] | type[LionagiItem], library: str) -> None:
    """Refuse anything but a `kind`, and a subclass whose added fields the other
    library's class cannot hold."""
    if not isinstance(item, kind):
        raise TypeError(f"the store takes {library}'s MemoryItem, got {_qualified(item)}")
    added = sorted(type(item).model_fields.keys() - kind.model_fields.keys())
    if added:
        raise TypeError(
            f"{type(item).__name__} adds the field(s) {', '.join(added)}, which the bridge would lose: "
            f"it passes {library}'s MemoryItem fields on"
        )


class StoreForLionagi:
    """A lionmem store as a lionagi `MemoryStore`: lionagi's `MemoryItem` and
    `MemoryQuery` in, lionagi's `MemoryItem` out ([ADR-0101][adr-0101]).

    The wrapped store applies its own rules, and its profile holds: over an
    `InMemoryStore` results are the very objects stored, over a durable store they
    are copies, with `id`, `created_at` (to the bit), `content`, `tags` and
    `metadata` as stored. The bridge owns nothing: close the wrapped store yourself.

    Examples:
        >>> import asyncio
        >>> from lionagi.protocols.memory import MemoryItem, MemoryQuery, MemoryStore
        >>> from lionmem import InMemoryStore
        >>> store = for_lionagi(InMemoryStore())
        >>> isinstance(store, MemoryStore)
        True
        >>> item = MemoryItem(content="Paris is in France")
        >>> _ = asyncio.run(store.store(item))
        >>> asyncio.run(store.search(MemoryQuery(text="paris")))[0] is item
        True
    """

    __slots__ = ("_twins", "wrapped")

    def __init__(self, wrapped: MemoryStore) -> None:
        """Wrap `wrapped`.

        Raises:
            TypeError: `wrapped` lacks one of `store`, `retrieve` and `search`.
        """
        if not isinstance(wrapped, MemoryStore):
            raise TypeError(f"for_lionagi takes a lionmem MemoryStore, got {kind_of(wrapped)}")
        self.wrapped: MemoryStore = wrapped
        """The lionmem store every call goes to."""
        # Seam for tests: `_twins`, the bridge's memory of the twins it made.
        self._twins: _Twins[LionagiItem, MemoryItem] = _Twins(LionagiItem, MemoryItem)

    def __repr__(self) -> str:
        return f"for_lionagi({self.wrapped!r})"

    async def store(self, item: LionagiItem) -> UUID:
        """Store `item` in the wrapped store, as its `store` does; return its id.

        Raises:
            TypeError: `item` is not a lionagi `MemoryItem`, or is one of a subclass
                adding fields; nothing is stored. Else what the wrapped store raises.
        """
        _whole(item, LionagiItem, "lionagi")
        return await self.wrapped.store(self._twins.for_store(item))

    async def retrieve(self, item_id: UUID) -> LionagiItem | None:
        """The item with `item_id` as lionagi's `MemoryItem`, or `None`."""
        found = await self.wrapped.retrieve(item_id)
        return None if found is None else self._twins.for_caller(found)

    async def search(self, query: LionagiQuery) -> list[LionagiItem]:
        """The wrapped store's results for `query`, as lionagi's `MemoryItem`s.

        Raises:
            TypeError: `query` is not a lionagi `MemoryQuery`.
            pydantic.ValidationError: a field lionmem's `MemoryQuery` refuses, such
                as a limit that is not an int.
        """
        if not isinstance(query, LionagiQuery):
            raise TypeError(f"search takes lionagi's MemoryQuery, got {_qualified(query)}")
        asked = MemoryQuery(text=query.text, tags=query.tags, filters=query.filters, limit=query.limit)
        return [self._twins.for_caller(found) for found in await self.wrapped.search(asked)]

    async def recall(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[tuple[LionagiItem, float]]:
        """The wrapped store's [`recall`][lionmem.protocols.recall.RecallStore.recall],
        each item as lionagi's `MemoryItem` with its score, best first
        ([ADR-0102][adr-0102]).

        Raises:
            NoEmbedderError: the wrapped store cannot recall: it is not a
                `RecallStore`, or has no embedder. Else what its `recall` raises.
        """
        wrapped = self.wrapped
        if not isinstance(wrapped, RecallStore) or wrapped.embedder is None:
            raise NoEmbedderError(f"the wrapped store cannot recall: {wrapped!r} has no embedder")
        found = await wrapped.recall(query, k, tags=tags, filters=filters, min_score=min_score)
        return [(self._twins.for_caller(result.item), result.score) for result in found]


class StoreFromLionagi:
    """A store written against lionagi's types as a lionmem `MemoryStore`, to check
    it with the conformance kit ([ADR-0101][adr-0101]).

    Items and queries are handed over as lionagi's; results come back as lionmem's,
    the very objects stored when the wrapped store returns what it was given.
    `close()` closes the wrapped store when it has a coroutine `close`.
    """

    __slots__ = ("_twins", "wrapped")

    def __init__(self, wrapped: LionagiStore) -> None:
        """Wrap `wrapped`.

        Raises:
            TypeError: `wrapped` lacks one of `store`, `retrieve` and `search`.
        """
        if not isinstance(wrapped, LionagiStore):
            raise TypeError(f"from_lionagi takes a lionagi MemoryStore, got {kind_of(wrapped)}")
        self.wrapped: LionagiStore = wrapped
        """The lionagi store every call goes to."""
        self._twins: _Twins[MemoryItem, LionagiItem] = _Twins(MemoryItem, LionagiItem)

    def __repr__(self) -> str:
        return f"from_lionagi({self.wrapped!r})"

    async def store(self, item: MemoryItem) -> UUID:
        """Store `item` in the wrapped store as lionagi's `MemoryItem`; return what it returns.

        Raises:
            TypeError: `item` is not a lionmem `MemoryItem`, or is one of a subclass
                adding fields; nothing is stored. Else what the wrapped store raises.
        """
        _whole(item, MemoryItem, "lionmem")
        return await self.wrapped.store(self._twins.for_store(item))

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        """The item with `item_id` as lionmem's `MemoryItem`, or `None`."""
        found = await self.wrapped.retrieve(item_id)
        return None if found is None else self._twins.for_caller(found)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """The wrapped store's results for `query`, as lionmem's `MemoryItem`s.

        Raises:
            TypeError: `query` is not a lionmem `MemoryQuery`.
        """
        if not isinstance(query, MemoryQuery):
            raise TypeError(f"search takes lionmem's MemoryQuery, got {_qualified(query)}")
        asked = LionagiQuery(text=query.text, tags=query.tags, filters=query.filters, limit=query.limit)
        return [self._twins.for_caller(found) for found in await self.wrapped.search(asked)]

    async def close(self) -> None:
        """Close the wrapped store, if it has a coroutine `close`; the kit calls this
        after each check."""
        close = getattr(self.wrapped, "close", None)
        if close is not None and inspect.iscoroutinefunction(close):
            await close()


def for_lionagi(store: MemoryStore) -> StoreForLionagi:
    """`store`, any lionmem `MemoryStore`, as a store for lionagi's `Branch(memory=...)`
    and `Session(memory=...)`. See [`StoreForLionagi`][lionmem.integrations.lionagi.StoreForLionagi]."""
    return StoreForLionagi(store)


def from_lionagi(store: LionagiStore) -> StoreFromLionagi:
    """`store`, written against lionagi's types, as a lionmem `MemoryStore`. See
    [`StoreFromLionagi`][lionmem.integrations.lionagi.StoreFromLionagi]."""
    return StoreFromLionagi(store)
