"""The check of the `ExpiringStore` extension: an item whose expiry is at or before the
store's reading of the clock is gone from every read the store offers, one that
expires later is not, `sweep` removes exactly the expired, and `expire` refuses what
names no expiry ([ADR-0105][adr-0105-d2]).

The kit cannot set the store's clock, so it sets the expiries instead: one at the time
the kit read just before the call, which a store reading a clock that does not go
back must count as expired, and one an hour on, which it must not.

A small function the kit's table names; see [ADR-0093][adr-0093].
"""

from __future__ import annotations

import time
from typing import Any

from lionmem.protocols.expiry import ExpiringStore
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryQuery
from lionmem.protocols.paging import PagingStore
from lionmem.testing._harness import show
from lionmem.testing._probe import ALL, Probe, Verdict, extension_verdict, ids, numbered

__all__ = ["expiry"]

_HOUR = 3600.0


async def expiry(probe: Probe) -> Verdict:
    return await extension_verdict(probe, probe.profile.expiry, ExpiringStore, _differs)


async def _differs(probe: Probe, store: ExpiringStore) -> str | None:
    """How the store's expiry differs from the reference's, or `None`."""
    items = [numbered(n, content=f"lasting {n}", tags=["kept"], metadata={"kind": "note"}) for n in range(1, 5)]
    await probe.fill(items)
    every = [item.id for item in items]
    held = await probe.recorded(f"store.persist({show(every)})", store.persist(every))
    if held != len(items):
        return f"store.persist(...) of the {len(items)} items stored returned {held}"
    now = time.time()  # read before the store reads its own clock, so no later than it
    gone = [items[0].id, items[1].id]
    set_at = await probe.recorded(f"store.expire({show(gone)}, at={now!r})", store.expire(gone, at=now))
    later = await probe.recorded(
        f"store.expire([{show(items[2].id)}], ttl={_HOUR})", store.expire([items[2].id], ttl=_HOUR)
    )
    if (set_at, later) != (2, 1):
        return f"store.expire(...) returned {set_at} and {later}, where 2 and 1"
    unseen = await _reads_see(probe, store, [3, 4])
    if unseen:
        return unseen
    revived = await probe.recorded(f"store.expire({show(gone)}, ttl={_HOUR})", store.expire(gone, ttl=_HOUR))
    kept = await probe.recorded(f"store.persist({show(gone)})", store.persist(gone))
    if (revived, kept) != (0, 0):
        return f"store.expire(...) and store.persist(...) of expired items returned {revived} and {kept}, where 0"
    swept = await probe.recorded("store.sweep()", store.sweep())
    again = await probe.recorded("store.sweep()", store.sweep())
    if (swept, again) != (2, 0):
        return f"store.sweep() twice returned {swept} and {again}, where 2 and 0"
    unseen = await _reads_see(probe, store, [3, 4])
    if unseen:
        return unseen
    return await _refusal(probe, store, items[3].id)


async def _reads_see(probe: Probe, store: ExpiringStore, live: list[int]) -> str | None:
    """Which read of the store returns an item that is not one of `live`, or `None`."""
    queries = {"everything": MemoryQuery(limit=ALL), **probe.each_predicate("lasting", "kept", {"kind": "note"})}
    for described, query in queries.items():
        found = ids(await probe.search(query))
        if found != live:
            return f"a search for {described} found {found}, where the unexpired {live}"
    for n in range(1, 5):
        got = await probe.retrieve(numbered(n).id)
        if (got is not None) != (n in live):
            return f"store.retrieve({show(numbered(n).id)}) returned {got!r}" + (
                ", an expired item" if got is not None else ", where the unexpired item"
            )
    if isinstance(store, ForgettingStore):
        counted = await probe.count(MemoryQuery())
        if counted != len(live):
            return f"store.count(MemoryQuery()) returned {counted}, where {len(live)}"
        scanned = [n for batch in await probe.scan(2) for n in ids(batch)]
        if scanned != live:
            return f"store.scan() gave {scanned}, where {live}"
    if isinstance(store, PagingStore):
        page = await probe.recorded("store.search_page(MemoryQuery(limit=2))", store.search_page(MemoryQuery(limit=2)))
        if ids(page.items) != live[:2]:
            return f"store.search_page(MemoryQuery(limit=2)) held {ids(page.items)}, where {live[:2]}"
    return None


async def _refusal(probe: Probe, store: ExpiringStore, item_id: Any) -> str | None:
    """What the store does with an `expire` that names no expiry, or two, or a `ttl`
    not above 0, if it does not refuse it."""
    asked: tuple[tuple[str, dict[str, Any], type[Exception]], ...] = (
        ("", {}, TypeError),
        (f"at={_HOUR}, ttl={_HOUR}", {"at": _HOUR, "ttl": _HOUR}, TypeError),
        ("ttl=0", {"ttl": 0}, ValueError),
    )
    for written, arguments, refused in asked:
        call = f"store.expire([{show(item_id)}]{', ' if written else ''}{written})"
        try:
            await probe.recorded(call, store.expire([item_id], **arguments))
        except refused:
            continue
        return f"{call} was not refused with {refused.__name__}"
    return None
