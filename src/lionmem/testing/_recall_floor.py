"""The recall check's measure of a declared `minimum_recall` on everyday notes: an
approximate store holds thousands of them, and its top 10 for everyday questions is
compared with the brute-force top 10 over the same vectors.

Random vectors and notes from a dozen words are easy for an approximate index; an
agent's notes, one template with one name changed again and again, are not. A store
declares only what holds on these. See [ADR-0103][adr-0103-d3].
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lionmem.protocols.batching import BatchingStore
from lionmem.testing._brute import TOLERANCE, Brute, holding
from lionmem.testing._harness import within
from lionmem.testing._probe import Probe, numbered
from lionmem.testing.notes import everyday_notes, everyday_questions

if TYPE_CHECKING:
    from lionmem.protocols.memory import MemoryItem
    from lionmem.protocols.recall import Recalled

QUESTIONS = 30
"""Everyday questions asked, each with no filter and with a filter keeping half."""

_BATCH = 500


async def floor(probe: Probe, store: Any, brute: Brute, notes: int, *, k: int) -> str | None:
    """What fell short of the declared `minimum_recall` on `notes` everyday notes, or
    `None`. Each recall's share is of the brute-force top `k` it found, an item
    scoring as high as the `k`-th (within float32's rounding) counting as one."""
    items = [
        numbered(10_000 + n, content=text, tags=["note"], metadata={"n": n, "half": n % 2 == 0})
        for n, text in enumerate(everyday_notes(notes))
    ]
    probe.note(
        f"# lionmem.testing.everyday_notes({notes}) stored as items 10000 and on, with metadata n and half "
        f"(even n), then each of everyday_questions({QUESTIONS}) recalled with k={k}, with no filter and "
        "with filters={'half': True}"
    )
    await _store_all(probe, store, items)
    await brute.add(items)
    shares: list[float] = []
    for question in everyday_questions(QUESTIONS):
        for filters in (None, {"half": True}):
            async with within(probe.timeout, f"store.recall({question!r}, {k})"):
                got: list[Recalled] = await store.recall(question, k, filters=filters)
            want, every = await brute.top(question, k, holding(None, filters))
            edge = want[-1][1] - TOLERANCE if want else 1.0
            shares.append(sum(1 for r in got[:k] if every.get(r.item.id, -2.0) >= edge) / max(1, len(want)))
    mean, declared = sum(shares) / len(shares), probe.profile.minimum_recall
    if mean >= declared:
        return None
    probe.difference = (
        f"recall@{k} averaged {mean:.3f} over {len(shares)} recalls among {notes:,} everyday notes (the worst "
        f"{min(shares):.1f}), where the profile declares minimum_recall={declared}"
    )
    return f"recall@{k} {mean:.2f} on everyday notes"


async def _store_all(probe: Probe, store: Any, items: list[MemoryItem]) -> None:
    """Store `items`, in batches where the store takes them, each call within the
    kit's timeout."""
    if isinstance(store, BatchingStore):
        for start in range(0, len(items), _BATCH):
            async with within(probe.timeout, f"store.store_many(<{_BATCH} notes>)"):
                await store.store_many(items[start : start + _BATCH])
        return
    for item in items:
        await probe.store(item, record=False)
