"""`Progression`: an ordered run of unique UUIDs.

Governed by [ADR-0092][adr-0092-d3].
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from uuid import UUID

__all__ = ["Progression"]


class Progression:
    """An ordered sequence of unique UUIDs with O(1) membership.

    Backed by an insertion-ordered dict, so appending, membership and removal are
    constant time while iteration keeps the order of first appearance. A copy
    (`copy.copy`, `copy.deepcopy` or a pickle round trip) changes independently.

    Examples:
        >>> from uuid import UUID
        >>> a, b = UUID(int=1), UUID(int=2)
        >>> p = Progression([b, a])
        >>> list(p) == [b, a], a in p, len(p)
        (True, True, 2)
    """

    __slots__ = ("__weakref__", "_order")

    def __init__(self, ids: Iterable[UUID] = ()) -> None:
        self._order: dict[UUID, None] = {}
        for item_id in ids:
            self.append(item_id)

    def append(self, item_id: UUID) -> None:
        """Add `item_id` at the end.

        Raises:
            TypeError: `item_id` is not a UUID.
            ValueError: `item_id` is already in the progression.
        """
        if not isinstance(item_id, UUID):
            raise TypeError(f"Progression holds UUIDs, got {type(item_id).__name__}")
        if item_id in self._order:
            raise ValueError(f"{item_id} is already in the progression")
        self._order[item_id] = None

    def remove(self, item_id: UUID) -> None:
        """Remove `item_id`, keeping the order of the rest.

        Raises:
            TypeError: `item_id` is not a UUID.
            ValueError: `item_id` is not in the progression.
        """
        if not isinstance(item_id, UUID):
            raise TypeError(f"Progression holds UUIDs, got {type(item_id).__name__}")
        try:
            del self._order[item_id]
        except KeyError:
            raise ValueError(f"{item_id} is not in the progression") from None

    def __getstate__(self) -> list[UUID]:
        # Without this, a copy would share this progression's dict.
        return list(self._order)

    def __setstate__(self, state: list[UUID]) -> None:
        self._order = dict.fromkeys(state)

    def __contains__(self, item_id: object) -> bool:
        return item_id in self._order

    def __iter__(self) -> Iterator[UUID]:
        return iter(list(self._order))

    def __len__(self) -> int:
        return len(self._order)

    def __repr__(self) -> str:
        return f"Progression({list(self._order)!r})"
