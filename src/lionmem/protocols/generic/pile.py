"""`Pile`: a thread- and task-safe, UUID-keyed collection in insertion order.

Governed by [ADR-0092][adr-0092-d3].
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator
from collections.abc import Set as AbstractSet
from itertools import islice
from typing import Generic, TypeVar, overload
from uuid import UUID

from lionmem._internal.arguments import as_uuid, kind_of, require_type
from lionmem.protocols.generic.element import Element
from lionmem.protocols.generic.progression import Progression

__all__ = ["Pile"]

T = TypeVar("T", bound=Element)
D = TypeVar("D")

_MISSING: object = object()

_State = tuple[frozenset[type[T]], bool, list[tuple[UUID, T]]]
"""What a copy or a pickle of a `Pile` carries: its types, strictness and entries."""


def _is_element_class(candidate: object) -> bool:
    return isinstance(candidate, type) and issubclass(candidate, Element)


class Pile(Generic[T]):
    """Elements keyed by `id`, kept in the order their ids were first included.

    Including an element whose id is already present replaces the stored object and
    keeps its position. Only instances of `item_type` are admitted (subclasses too,
    unless `strict_type`); anything else raises `TypeError` and leaves the pile as it
    was. One re-entrant lock guards every read and write, so a pile may be shared by
    threads; the `a*` methods never await inside the critical section, so a step is
    also atomic with respect to other asyncio tasks. A copy (`copy.copy`,
    `copy.deepcopy` or a pickle round trip) is a new pile with its own lock: a
    shallow copy holds the same elements, a deep copy copies them, and changing
    either pile never changes the other. See [ADR-0092][adr-0092-d3].

    Examples:
        >>> from lionmem import Element
        >>> pile = Pile(item_type=Element)
        >>> first, second = Element(), Element()
        >>> pile.include(first); pile.include(second)
        >>> pile.include(Element(id=first.id, metadata={"v": 2}))
        >>> pile.keys() == [first.id, second.id], pile[first.id].metadata
        (True, {'v': 2})
    """

    __slots__ = ("__weakref__", "_item_types", "_items", "_lock", "_strict_type")

    def __init__(
        self,
        items: Iterable[T] = (),
        *,
        item_type: type[T] | AbstractSet[type[T]],
        strict_type: bool = False,
    ) -> None:
        types = frozenset({item_type} if isinstance(item_type, type) else item_type)
        if not types:
            raise ValueError("item_type names no type")
        for t in types:
            if not _is_element_class(t):
                raise TypeError(f"item_type must be Element subclasses, got {t!r}")
        self._item_types: frozenset[type[T]] = types
        self._strict_type = strict_type
        self._items: dict[UUID, T] = {}
        self._lock = threading.RLock()
        for item in items:
            self.include(item)

    @property
    def item_type(self) -> frozenset[type[T]]:
        """The admitted types."""
        return self._item_types

    @property
    def strict_type(self) -> bool:
        """Whether subclasses of `item_type` are refused."""
        return self._strict_type

    @property
    def progression(self) -> Progression:
        """A snapshot of the ids in order."""
        return Progression(self.keys())

    def _check(self, item: object) -> None:
        """Raise `TypeError` unless `item`, whose type is not one admitted exactly, is
        an instance of one and subclasses are admitted."""
        kind = type(item)
        if not self._strict_type and isinstance(item, tuple(self._item_types)):
            return
        expected = " | ".join(sorted(t.__qualname__ for t in self._item_types))
        qualifier = "exactly " if self._strict_type else ""
        raise TypeError(f"Pile expects {qualifier}{expected}, got {kind.__qualname__}")

    def include(self, item: T) -> None:
        """Add `item`, or replace the element with its id in place.

        Raises:
            TypeError: `item` is not an admitted type, or its id is not a UUID (an
                element built without validation); nothing changes.
        """
        if type(item) not in self._item_types:
            self._check(item)
        key = item.id
        # Validation makes every id a UUID; a string key would stand beside the
        # element with the same UUID, and no `get` could reach it.
        if type(key) is not UUID and not isinstance(key, UUID):
            raise TypeError(f"Pile keys elements by their UUID id, got an id that is {kind_of(key)}")
        with self._lock:
            self._items[key] = item

    @overload
    def get(self, key: UUID | str) -> T: ...
    @overload
    def get(self, key: UUID | str, default: D) -> T | D: ...
    def get(self, key: UUID | str, default: object = _MISSING) -> object:
        """Return the element with id `key`, or `default` when given.

        Raises:
            KeyError: no element has that id and no default was given.
            ValueError: `key` is a string that is not a UUID.
            TypeError: `key` is neither a UUID nor a string.
        """
        # A plain dict read is atomic under the GIL, so the hot path takes no lock.
        found = self._items.get(key if type(key) is UUID else as_uuid(key, "Pile key"), _MISSING)
        if found is not _MISSING:
            return found
        if default is not _MISSING:
            return default
        raise KeyError(f"{key} is not in the pile")

    def exclude(self, key: UUID | str) -> T:
        """Remove and return the element with id `key`.

        Raises:
            KeyError: no element has that id.
            ValueError: `key` is a string that is not a UUID.
            TypeError: `key` is neither a UUID nor a string.
        """
        item_id = as_uuid(key, "Pile key")
        with self._lock:
            try:
                return self._items.pop(item_id)
            except KeyError:
                raise KeyError(f"{item_id} is not in the pile") from None

    def exclude_ids(self, keys: Iterable[UUID]) -> list[T]:
        """Remove the elements whose ids are among `keys`, in one step; return them.

        Ids not in the pile are passed over. An element included again afterwards
        goes at the end of the order, as a new one.
        """
        with self._lock:
            return [found for key in keys if (found := self._items.pop(key, None)) is not None]

    def exclude_where(self, select: Callable[[list[T]], list[T]]) -> list[T]:
        """Remove the elements `select` picks from the current ones (given in order),
        in one step that no other thread's change can split; return them.

        If `select` raises, nothing is removed.
        """
        with self._lock:
            chosen = select(list(self._items.values()))
            for element in chosen:
                del self._items[element.id]
            return chosen

    async def ainclude(self, item: T) -> None:
        """Async form of [`include`][lionmem.protocols.generic.pile.Pile.include]."""
        self.include(item)

    @overload
    async def aget(self, key: UUID | str) -> T: ...
    @overload
    async def aget(self, key: UUID | str, default: D) -> T | D: ...
    async def aget(self, key: UUID | str, default: object = _MISSING) -> object:
        """Async form of [`get`][lionmem.protocols.generic.pile.Pile.get]."""
        return self.get(key, default)

    async def aexclude(self, key: UUID | str) -> T:
        """Async form of [`exclude`][lionmem.protocols.generic.pile.Pile.exclude]."""
        return self.exclude(key)

    def values(self, stop: int | None = None) -> list[T]:
        """A snapshot of the elements in order; with `stop`, `values()[:stop]`, read
        without copying the elements after it.

        Raises:
            TypeError: `stop` is neither an int nor `None`.
        """
        with self._lock:
            if stop is None:
                return list(self._items.values())
            if type(stop) is not int:
                require_type(stop, "stop", int)
            # islice takes no stop past sys.maxsize; a limit may be any int.
            stop = max(0, len(self._items) + stop) if stop < 0 else min(stop, len(self._items))
            return list(islice(self._items.values(), stop))

    def keys(self) -> list[UUID]:
        """A snapshot of the ids in order."""
        with self._lock:
            return list(self._items)

    def items(self) -> list[tuple[UUID, T]]:
        """A snapshot of `(id, element)` pairs in order."""
        with self._lock:
            return list(self._items.items())

    def __getstate__(self) -> _State[T]:
        # Without this, a copy would share this pile's dict and lock: including an
        # element in the copy would include it here too.
        return self._item_types, self._strict_type, self.items()

    def __setstate__(self, state: _State[T]) -> None:
        self._item_types, self._strict_type, items = state
        self._items = dict(items)
        self._lock = threading.RLock()

    def __getitem__(self, key: UUID | str) -> T:
        return self.get(key)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, Element):
            key = key.id
        elif isinstance(key, str):
            try:
                key = UUID(key)
            except ValueError:
                return False
        return key in self._items

    def __iter__(self) -> Iterator[T]:
        return iter(self.values())

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        names = ", ".join(sorted(t.__qualname__ for t in self._item_types))
        return f"Pile[{names}](len={len(self)})"
