from lionmem.protocols.forgetting import ForgettingStore as ForgettingStore
from lionmem.protocols.generic.element import Element as Element
from lionmem.protocols.generic.pile import Pile as Pile
from lionmem.protocols.generic.progression import Progression as Progression
from lionmem.protocols.memory import InMemoryStore as InMemoryStore
from lionmem.protocols.memory import MemoryItem as MemoryItem
from lionmem.protocols.memory import MemoryQuery as MemoryQuery
from lionmem.protocols.memory import MemoryStore as MemoryStore
from lionmem.session.branch import Branch as Branch
from lionmem.session.session import Session as Session

__all__ = [
    "Branch",
    "Element",
    "ForgettingStore",
    "InMemoryStore",
    "MemoryItem",
    "MemoryQuery",
    "MemoryStore",
    "Pile",
    "Progression",
    "Session",
]
