"""`VerifyingStore`: the optional extension of `MemoryStore` that checks its own data
whole and names what is wrong, and `Verification`, its answer, as
`lionmem verify` prints it.

Governed by [ADR-0096][adr-0096-damage].
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from lionmem.protocols.memory import MemoryStore

__all__ = ["Verification", "VerifyingStore"]


@dataclass(frozen=True, slots=True)
class Verification:
    """What a store's `verify` found. See [ADR-0096][adr-0096-damage]."""

    damage: tuple[str, ...]
    """Each thing that is broken, named: a store that found any refuses writes."""
    stale: tuple[str, ...]
    """Each vector made from another text than its item's as the store reads it (by
    another `text_of`); the next recall that meets one makes it again."""

    @property
    def whole(self) -> bool:
        """Whether nothing is broken."""
        return not self.damage


@runtime_checkable
class VerifyingStore(MemoryStore, Protocol):
    """A `MemoryStore` that checks what it holds, whole.

    `SQLiteMemoryStore` and `PostgresMemoryStore` implement it; `InMemoryStore` holds
    nothing that could be damaged apart from the objects themselves.
    """

    async def verify(self) -> Verification:
        """Check everything the store holds; see `Verification`."""
        ...
