"""The check of the `ForgettingStore` extension: each call deletes exactly what
[ADR-0100][adr-0100] says, a failed call deletes nothing, and a deleted id stored
again comes last.

A small function the kit's table names; see [ADR-0093][adr-0093].
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from uuid import UUID

from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryQuery
from lionmem.protocols.profile import Forgetting, RoundTrip
from lionmem.testing._probe import ALL, Probe, Verdict, ids, numbered

__all__ = ["forgetting"]

_MATCHING = (2, 3, 5, 6)
"""The items that the check's predicates find."""
_EPOCH = 100.0
"""Item `n` is created at `_EPOCH + n`."""


async def forgetting(probe: Probe) -> Verdict:
    offered = isinstance(probe.inner, ForgettingStore)
    probe.note("isinstance(store, ForgettingStore)")
    if probe.profile.forgetting is Forgetting.NOT_OFFERED:
        return ("a ForgettingStore" if offered else Forgetting.NOT_OFFERED.value), not offered
    if not offered:
        return Forgetting.NOT_OFFERED.value, False
    difference = await _differs(probe)
    return difference or Forgetting.REFERENCE.value, difference is None


async def _differs(probe: Probe) -> str | None:
    """How the store's deletions differ from the reference's, or `None`."""
    await probe.fill(
        [
            numbered(
                n,
                content=f"{'drop' if n in _MATCHING else 'keep'} {n}",
                tags=["drop" if n in _MATCHING else "keep"],
                metadata={"kind": "drop" if n in _MATCHING else "keep"},
                created_at=_EPOCH + n,
            )
            for n in range(1, 9)
        ]
    )
    predicates = probe.each_predicate("drop", "drop", {"kind": "drop"})
    left = list(range(1, 9))

    counted = await probe.count(MemoryQuery(limit=2))
    if counted != len(left):
        return f"count(MemoryQuery(limit=2)) of {len(left)} items returned {counted!r}; a count takes no limit"
    for described, query in predicates.items():
        found = await probe.search(query)
        counted = await probe.count(query.model_copy(update={"limit": 1}))
        if counted != len(found):
            return f"count by {described} returned {counted!r}, where search finds {len(found)}"

    existed = await probe.delete(UUID(int=1))
    if existed is not True:
        return f"delete of a stored id returned {existed!r}, not True"
    left.remove(1)
    if difference := await _lists(probe, left, "after delete"):
        return difference
    existed = await probe.delete(UUID(int=1))
    if existed is not False:
        return f"delete of an id already deleted returned {existed!r}, not False"
    if (got := await probe.retrieve(UUID(int=1))) is not None:
        return f"retrieve of a deleted id returned {got!r}, not None"

    deleted = await probe.delete_many([UUID(int=999), UUID(int=4), UUID(int=4)])
    if deleted != 1:
        return f"delete_many of an unknown id and a stored one given twice returned {deleted!r}, not 1"
    left.remove(4)
    if difference := await _lists(probe, left, "after delete_many"):
        return difference

    try:
        deleted = await probe.delete_many([UUID(int=7), 7.5])
    except Exception:  # which error is the store's to choose; that nothing went is the rule
        if difference := await _lists(probe, left, "after delete_many raised for the id 7.5"):
            return difference
    else:
        return f"delete_many of a stored id and 7.5, which is no id, returned {deleted!r} instead of raising"

    # Which items a limit keeps is known only where results come in order.
    query = next(iter(predicates.values()), MemoryQuery()).model_copy(update={"limit": 1 if probe.ordered else ALL})
    chosen = ids(await probe.search(query))
    deleted = await probe.delete_matching(query)
    if deleted != len(chosen):
        return f"delete_matching returned {deleted!r}, where search with the same query found {len(chosen)}"
    left = [n for n in left if n not in chosen]
    if difference := await _lists(probe, left, "after delete_matching"):
        return difference

    if probe.profile.created_at is RoundTrip.EXACT:
        for cutoff in (_EPOCH + 6, datetime.fromtimestamp(_EPOCH + 7, UTC)):
            before = _EPOCH + 7 if isinstance(cutoff, datetime) else cutoff
            older = [n for n in left if _EPOCH + n < before]
            deleted = await probe.delete_created_before(cutoff)
            if deleted != len(older):
                return f"delete_created_before({cutoff!r}) returned {deleted!r}, not {len(older)}"
            left = [n for n in left if n not in older]
            if difference := await _lists(probe, left, f"after delete_created_before({cutoff!r})"):
                return difference

    await probe.store(numbered(1, content="back"))
    left.append(1)
    if difference := await _lists(probe, left, "after storing a deleted id again"):
        return difference

    batches = await probe.scan(2)
    if any(not 0 < len(batch) <= 2 for batch in batches):
        return f"scan(2) gave batches of {[len(batch) for batch in batches]} items"
    scanned = [n for batch in batches for n in ids(batch)]
    if not _same(probe, scanned, left):
        return f"scan(2) gave ids {scanned}, where {left} are stored"
    counted = await probe.count(MemoryQuery())
    if counted != len(left):
        return f"count(MemoryQuery()) returned {counted!r} where {len(left)} items are left"
    for described, query in predicates.items():
        stale = sorted(set(ids(await probe.search(query))) - set(left))
        if stale:
            return f"search by {described} still finds the deleted items {stale}"
    return None


def _same(probe: Probe, found: list[int], want: list[int]) -> bool:
    return found == want if probe.ordered else sorted(found) == sorted(want)


async def _lists(probe: Probe, want: list[int], when: str) -> str | None:
    """How a search for everything differs from `want`, waiting for an eventual store."""
    query = MemoryQuery(limit=ALL)
    found = await probe.eventually(
        probe.search(query), partial(probe.search, query, record=False), lambda got: _same(probe, ids(got), want)
    )
    if _same(probe, ids(found), want):
        return None
    return f"{when}, search lists ids {ids(found)}, where {want} are left"
