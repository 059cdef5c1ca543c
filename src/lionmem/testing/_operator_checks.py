"""The check of the filter operators: each one the profile declares gives what the
reference rule gives, and each one it does not is refused.

A small function the kit's table names; see [ADR-0093][adr-0093] and [ADR-0099][adr-0099].
"""

from __future__ import annotations

from typing import Any

from lionmem.protocols.filters import AllOf, AnyOf, Condition, Ge, Gt, In, Le, Lt, Missing, Ne, NotIn, Present
from lionmem.protocols.memory import MemoryQuery
from lionmem.protocols.profile import FidelityProfile
from lionmem.testing._probe import ALL, Probe, Verdict, ids, numbered

__all__ = ["declared_operators", "filter_operators"]

# Held values where each operator parts from its near misses: at a bound and either
# side of it, a string holding a member, a null beside a missing key. No booleans
# and no 1 beside 1.0, on which JSON equality parts from Python's.
_MISSING = object()
_HELD: list[Any] = [_MISSING, None, 0, 1, 2.5, 3, "a", "cat", "b", [1], {"a": 1}]
_ASKED: list[Condition] = [
    Ne(1),
    Gt(1),
    Ge(1),
    Lt(3),
    Le(3),
    Ge("b"),
    In(["a", 3]),
    NotIn(["a", 3]),
    Present(),
    Missing(),
    AnyOf(Lt(1), "cat"),
    AllOf(Ge(1), Lt(3)),
]


def declared_operators(profile: FidelityProfile) -> str:
    """The profile's operators as a check's declaration states them."""
    names = sorted(operator.__name__ for operator in profile.filter_operators)
    return ", ".join(names) if names else "none"


async def filter_operators(probe: Probe) -> Verdict:
    items = [
        numbered(n + 1, content=f"held {n}", metadata={} if held is _MISSING else {"v": held})
        for n, held in enumerate(_HELD)
    ]
    await probe.fill(items)
    for condition in _ASKED:
        query = MemoryQuery(filters={"v": condition}, limit=ALL)
        if type(condition) not in probe.profile.filter_operators:
            try:
                found = await probe.search(query)
            except NotImplementedError:
                continue
            return f"{condition!r}, not declared, was not refused: it found {ids(found)}", False
        expected = [item for item in items if item.metadata.get("v") == condition]
        found = await probe.search(query)
        if not probe.same_results(found, expected):
            return f"{condition!r} found {sorted(ids(found))}, where the reference rule finds {ids(expected)}", False
    return declared_operators(probe.profile), True
