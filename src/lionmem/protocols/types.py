"""One eager import path for the memory contract and its primitives.

The reference record names this surface (the reference's `protocols.types` re-exports
the four memory names), so it stays beside the lazy face; each name is the object its
own module defines. See [ADR-0092][adr-0092-d1] and, for the lazy alternative,
[ADR-0094][adr-0094].
"""

from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.generic.element import Element
from lionmem.protocols.generic.pile import Pile
from lionmem.protocols.generic.progression import Progression
from lionmem.protocols.in_memory import InMemoryStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore
from lionmem.protocols.recent import RecentStore

__all__ = [
    "Element",
    "ForgettingStore",
    "InMemoryStore",
    "MemoryItem",
    "MemoryQuery",
    "MemoryStore",
    "Pile",
    "Progression",
    "RecentStore",
]
