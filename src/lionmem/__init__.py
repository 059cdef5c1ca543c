"""lionmem: a typed, pluggable memory store for agent conversations.

Importing the package loads nothing but this map; each public name is imported on
first use. The typed face of this module is `__init__.pyi`, kept equal to the map by
tests. See [ADR-0094][adr-0094].

pytest rewrites the asserts of every module in a distribution that ships a pytest
plugin, as lionmem does; this module has none, and the marker PYTEST_DONT_REWRITE
keeps pytest's helper names out of `dir(lionmem)` in a test run too.
"""

# pyright: reportUnsupportedDunderAll=false
# The names in __all__ exist through __getattr__; __init__.pyi declares them.

# Imported under a private name, so that `dir(lionmem)` shows only the public face.
import importlib as _importlib

# Seam for tests: `_LAZY`, compared with `__all__` and with the stub.
_LAZY: dict[str, str] = {
    "AllOf": "lionmem.protocols.filters",
    "AnyOf": "lionmem.protocols.filters",
    "BatchingStore": "lionmem.protocols.batching",
    "Branch": "lionmem.session.branch",
    "Condition": "lionmem.protocols.filters",
    "Element": "lionmem.protocols.generic.element",
    "Embedder": "lionmem.protocols.recall",
    "ExpiringStore": "lionmem.protocols.expiry",
    "ForgettingStore": "lionmem.protocols.forgetting",
    "Ge": "lionmem.protocols.filters",
    "Gt": "lionmem.protocols.filters",
    "HybridRecalled": "lionmem.protocols.hybrid",
    "HybridStore": "lionmem.protocols.hybrid",
    "In": "lionmem.protocols.filters",
    "InMemoryStore": "lionmem.protocols.in_memory",
    "Le": "lionmem.protocols.filters",
    "LionmemError": "lionmem.errors",
    "Lt": "lionmem.protocols.filters",
    "MemoryItem": "lionmem.protocols.memory",
    "MemoryQuery": "lionmem.protocols.memory",
    "MemoryStore": "lionmem.protocols.memory",
    "Missing": "lionmem.protocols.filters",
    "NamespacedStore": "lionmem.protocols.namespaces",
    "Ne": "lionmem.protocols.filters",
    "NotIn": "lionmem.protocols.filters",
    "PagingStore": "lionmem.protocols.paging",
    "Pile": "lionmem.protocols.generic.pile",
    "Present": "lionmem.protocols.filters",
    "Progression": "lionmem.protocols.generic.progression",
    "RecallStore": "lionmem.protocols.recall",
    "Recalled": "lionmem.protocols.recall",
    "RecentStore": "lionmem.protocols.recent",
    "Session": "lionmem.session.session",
    "StatsStore": "lionmem.protocols.stats",
    "Sweeper": "lionmem.protocols.expiry",
    "VerifyingStore": "lionmem.protocols.verifying",
}

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


def __getattr__(name: str) -> object:
    try:
        module = _LAZY[name]
    except KeyError:
        raise AttributeError(f"module 'lionmem' has no attribute {name!r}") from None
    value: object = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
