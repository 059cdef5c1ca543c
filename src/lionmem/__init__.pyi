from lionmem.errors import LionmemError as LionmemError
from lionmem.protocols.batching import BatchingStore as BatchingStore
from lionmem.protocols.expiry import ExpiringStore as ExpiringStore
from lionmem.protocols.expiry import Sweeper as Sweeper
from lionmem.protocols.filters import AllOf as AllOf
from lionmem.protocols.filters import AnyOf as AnyOf
from lionmem.protocols.filters import Condition as Condition
from lionmem.protocols.filters import Ge as Ge
from lionmem.protocols.filters import Gt as Gt
from lionmem.protocols.filters import In as In
from lionmem.protocols.filters import Le as Le
from lionmem.protocols.filters import Lt as Lt
from lionmem.protocols.filters import Missing as Missing
from lionmem.protocols.filters import Ne as Ne
from lionmem.protocols.filters import NotIn as NotIn
from lionmem.protocols.filters import Present as Present
from lionmem.protocols.forgetting import ForgettingStore as ForgettingStore
from lionmem.protocols.generic.element import Element as Element
from lionmem.protocols.generic.pile import Pile as Pile
from lionmem.protocols.generic.progression import Progression as Progression
from lionmem.protocols.hybrid import HybridRecalled as HybridRecalled
from lionmem.protocols.hybrid import HybridStore as HybridStore
from lionmem.protocols.in_memory import InMemoryStore as InMemoryStore
from lionmem.protocols.memory import MemoryItem as MemoryItem
from lionmem.protocols.memory import MemoryQuery as MemoryQuery
from lionmem.protocols.memory import MemoryStore as MemoryStore
from lionmem.protocols.namespaces import NamespacedStore as NamespacedStore
from lionmem.protocols.paging import PagingStore as PagingStore
from lionmem.protocols.recall import Embedder as Embedder
from lionmem.protocols.recall import Recalled as Recalled
from lionmem.protocols.recall import RecallStore as RecallStore
from lionmem.protocols.recent import RecentStore as RecentStore
from lionmem.protocols.stats import StatsStore as StatsStore
from lionmem.protocols.verifying import VerifyingStore as VerifyingStore
from lionmem.session.branch import Branch as Branch
from lionmem.session.session import Session as Session

__all__ = [
    "AllOf",
    "AnyOf",
    "BatchingStore",
    "Branch",
    "Condition",
    "Element",
    "Embedder",
    "ExpiringStore",
    "ForgettingStore",
    "Ge",
    "Gt",
    "HybridRecalled",
    "HybridStore",
    "In",
    "InMemoryStore",
    "Le",
    "LionmemError",
    "Lt",
    "MemoryItem",
    "MemoryQuery",
    "MemoryStore",
    "Missing",
    "NamespacedStore",
    "Ne",
    "NotIn",
    "PagingStore",
    "Pile",
    "Present",
    "Progression",
    "RecallStore",
    "Recalled",
    "RecentStore",
    "Session",
    "StatsStore",
    "Sweeper",
    "VerifyingStore",
]
