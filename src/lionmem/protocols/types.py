"""One eager import path for the memory contract and its primitives.

See [ADR-0092][adr-0092-d1] and, for the lazy alternative, [ADR-0094][adr-0094].
"""

from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.generic.element import Element
from lionmem.protocols.generic.pile import Pile
from lionmem.protocols.generic.progression import Progression
from lionmem.protocols.memory import InMemoryStore, MemoryItem, MemoryQuery, MemoryStore
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
