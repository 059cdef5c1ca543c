"""The checks of how a store keeps items: the protocol, concurrent and repeated
writes, visibility, copies, durability and what comes back of each field.

Each is a small function the kit's table names; see [ADR-0093][adr-0093].
"""

from __future__ import annotations

import asyncio
import inspect
import math
from decimal import Decimal
from functools import partial
from typing import Any, cast
from uuid import UUID

from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.profile import (
    ContentKind,
    Durability,
    FidelityProfile,
    OnExistingId,
    ResultOrder,
    ReturnedObjects,
    RoundTrip,
    TextMatch,
    Visibility,
)
from lionmem.testing._harness import Recorder, same_values, show
from lionmem.testing._probe import ALL, Probe, Reopen, Verdict, ids, numbered

PROTOCOL = "async store(item), retrieve(item_id), search(query)"
"""What every store declares for `protocol`, and what a passing store is observed to do."""


async def protocol(probe: Probe) -> Verdict:
    store = probe.inner
    problems: list[str] = []
    for name, parameter in (("store", "item"), ("retrieve", "item_id"), ("search", "query")):
        method = getattr(store, name, None)
        if method is None:
            problems.append(f"{name} is missing")
            continue
        if not inspect.iscoroutinefunction(method):
            problems.append(f"{name} is not a coroutine function")
            continue
        signature = inspect.signature(method)
        parameters = list(signature.parameters.values())
        takes_it = [p.name for p in parameters[:1]] == [parameter]
        if not takes_it or any(p.default is p.empty for p in parameters[1:]):
            problems.append(f"{name}{signature} does not take ({parameter})")
    if problems:
        probe.note("# inspect the three methods")
        return "; ".join(problems), False
    item = numbered(1, content="fence", tags=["t"], metadata={"k": 1})
    # Typed as object: the point is to find out what the store really returns.
    returned: object = await probe.store(item)
    if not (isinstance(returned, UUID) and returned == item.id):
        return f"store returned {returned!r}, not the item's own UUID", False
    await probe.visible(MemoryQuery(limit=ALL), 1)
    got: object = await probe.retrieve(item.id)
    if not isinstance(got, MemoryItem) or got != item or got.content != item.content:
        return f"retrieve after store returned {got!r}", False
    missing = await probe.retrieve(UUID(int=999))
    if missing is not None:
        return f"retrieve of an unknown id returned {missing!r}, not None", False
    found: object = await probe.search(MemoryQuery())
    if not isinstance(found, list) or not all(isinstance(i, MemoryItem) for i in cast("list[object]", found)):
        return f"search returned {type(found).__name__}, not a list of MemoryItem", False
    return PROTOCOL, True


async def concurrent_writes(probe: Probe) -> Verdict:
    items = [numbered(n, content=f"c{n}") for n in range(1, 201)]
    probe.note("await asyncio.gather(*(store.store(i) for i in items))  # 200 items")
    await asyncio.gather(*(probe.store(item, record=False) for item in items))
    found = await probe.visible(MemoryQuery(limit=ALL), len(items))
    missing = [i.id.int for i in items if await probe.retrieve(i.id, record=False) is None]
    listed = len({i.id for i in found})
    if missing or listed != len(items):
        return f"{len(missing)} of 200 not retrievable, {listed} listed by search", False
    return "no write lost", True


async def on_existing_id(probe: Probe) -> Verdict:
    items = [
        numbered(1, content="a1", tags=["old"], metadata={"v": "old"}),
        numbered(2, content="b"),
        numbered(3, content="c"),
    ]
    await probe.fill(items)
    newer = numbered(1, content="a2", tags=["new"], metadata={"v": "new"})
    try:
        await probe.store(newer)
    except ValueError:
        got = await probe.retrieve(newer.id)
        kept = got is not None and got.content == "a1"
        observed = OnExistingId.REJECT.value if kept else "raised, but changed the item"
        return observed, observed == probe.profile.on_existing_id.value
    got = await probe.retrieved(newer.id, content="a2")
    found = await probe.search(MemoryQuery(limit=ALL))
    if got is None or got.content != "a2":
        return f"store returned, but retrieve gives {got!r}", False
    if sorted(ids(found)) != [1, 2, 3]:
        return f"search lists ids {ids(found)} after a replacement", False
    # An index that keeps what the old version held finds the new one by it. A
    # text rule of the store's own may find anything.
    stale: list[str] = []
    for described, query in probe.each_predicate("a1", "old", {"v": "old"}).items():
        if query.text and probe.profile.text_match is TextMatch.OTHER:
            continue
        matched = await probe.eventually(
            probe.search(query), partial(probe.search, query, record=False), lambda got: 1 not in ids(got)
        )
        if 1 in ids(matched):
            stale.append(described)
    if stale:
        return f"replaced, but {', '.join(stale)} still found it", False
    if not probe.ordered:
        declared = on_existing_id_declared(probe.profile)
        return _UNPLACED.format(probe.profile.result_order.value), declared.startswith("replaced")
    position: dict[tuple[int, ...], str] = {
        (1, 2, 3): OnExistingId.REPLACE_IN_PLACE.value,
        (2, 3, 1): OnExistingId.MOVE_TO_END.value,
    }
    observed = position.get(tuple(ids(found)), f"replaced, order {ids(found)}")
    if observed != probe.profile.on_existing_id.value:
        want = {value: list(order) for order, value in position.items()}.get(probe.profile.on_existing_id.value)
        probe.differs(MemoryQuery(limit=ALL), ids(found), f"{probe.profile.on_existing_id.value} lists {want}")
    return observed, observed == probe.profile.on_existing_id.value


_UNPLACED = "replaced (its place unchecked: {} results)"


def on_existing_id_declared(profile: FidelityProfile) -> str:
    """What a profile declares for `on_existing_id`, as the check can observe it:
    without insertion order, replacing in place and moving to the end are both
    "replaced"."""
    placed = profile.on_existing_id in {OnExistingId.REPLACE_IN_PLACE, OnExistingId.MOVE_TO_END}
    if placed and profile.result_order is not ResultOrder.INSERTION:
        return _UNPLACED.format(profile.result_order.value)
    return profile.on_existing_id.value


async def visibility(probe: Probe) -> Verdict:
    item = numbered(1, content="fresh", tags=["v"])
    await probe.store(item)
    got = await probe.retrieve(item.id)
    found = await probe.search(MemoryQuery(limit=ALL))
    if got is not None and ids(found) == [1]:
        return Visibility.IMMEDIATE.value, True
    if probe.profile.visibility is Visibility.IMMEDIATE:
        return f"not yet visible: retrieve gave {got!r}, search {ids(found)}", False
    found = await probe.visible(MemoryQuery(limit=ALL), 1)
    got = await probe.retrieve(item.id)
    visible = got is not None and ids(found) == [1]
    return (Visibility.EVENTUAL.value if visible else "never visible"), visible


async def returned_objects(probe: Probe) -> Verdict:
    item = numbered(1, content=["original"])
    await probe.fill([item])
    got = await probe.retrieve(item.id)
    assert got is not None, "retrieve returned None after store"
    probe.note("(await store.retrieve(UUID(int=1))).content.append('retrieved')")
    got.content.append("retrieved")
    (listed,) = await probe.search(MemoryQuery(limit=ALL))
    probe.note("(await store.search(MemoryQuery()))[0].content.append('searched')")
    listed.content.append("searched")
    again = await probe.retrieve(item.id)
    assert again is not None
    live = again.content == ["original", "retrieved", "searched"]
    untouched = again.content == ["original"]
    observed = "mixed: some changes were seen"
    if live:
        observed = ReturnedObjects.LIVE.value
    elif untouched:
        observed = ReturnedObjects.COPIES.value
    return observed, observed == probe.profile.returned_objects.value


async def durability(probe: Probe, reopen: Reopen) -> Verdict:
    item = numbered(1, content="durable", tags=["d"], metadata={"k": "v"})
    await probe.fill([item])
    probe.note("# close the store and open it again on the same backing")
    async with reopen() as reopened:
        again = await Recorder(reopened, probe.timeout).retrieve(item.id)
    probe.note("await store.retrieve(UUID(int=1))")
    if again is None:
        observed = Durability.PROCESS.value
    elif again == item and again.content == item.content:
        observed = Durability.RESTART.value
    else:
        observed = f"reopened store returned {again!r}"
    return observed, observed == probe.profile.durability.value


async def content(probe: Probe) -> Verdict:
    json_value = {
        "a": [1, 2.5, None, True, "ü✓"],
        "b": {"c": ""},
        "big": 2**60,
        # Beyond a 64-bit integer, and a zero with a sign, which SQL numerics drop.
        "huge": -(2**100),
        "zero": -0.0,
    }
    plain = numbered(1, content=json_value)
    await probe.fill([plain])
    got = await probe.retrieve(plain.id)
    if got is None or not same_values(got.content, json_value):
        return f"JSON content came back as {None if got is None else got.content!r}", False
    refused: list[int] = []
    for n, odd in ((2, {1, 2}), (3, math.nan), (4, math.inf), (5, {"k": Decimal("1.5")}), (6, (1, 2))):
        item = numbered(n, content=odd)
        try:
            await probe.store(item)
        except TypeError:
            refused.append(n)
            if await probe.retrieve(item.id) is not None:
                return f"store raised TypeError for {odd!r} but wrote the item", False
            continue
        back = await probe.retrieved(item.id)
        if back is None or not (back.content is odd or same_values(back.content, odd)):
            shown = None if back is None else back.content
            return f"accepted {show(odd)} but returned {shown!r}", False
    if refused == [2, 3, 4, 5, 6]:
        observed = ContentKind.JSON_VALUES.value
    elif not refused:
        observed = ContentKind.ANY_OBJECT.value
    else:
        observed = f"refused some non-JSON contents only (items {refused})"
    return observed, observed == probe.profile.content.value


async def created_at(probe: Probe) -> Verdict:
    # Bits a database may lose: digits beyond microseconds, the sign of a zero
    # (SQLite writes whole-number REALs as integers), a subnormal.
    times = [1767225600.1234567, -0.0, 5e-324]
    items = [numbered(n + 1, content="rt", created_at=t) for n, t in enumerate(times)]
    await probe.fill(items)
    lost: list[str] = []
    for item, sent in zip(items, times, strict=True):
        got = await probe.retrieve(item.id)
        assert got is not None, "retrieve returned None after store"
        if not same_values(got.created_at, sent):
            lost.append(f"{sent!r} came back as {got.created_at!r}")
    observed = RoundTrip.LOST if lost else RoundTrip.EXACT
    detail = f" ({'; '.join(lost)})" if lost else ""
    return observed.value + detail, observed is probe.profile.created_at


async def metadata(probe: Probe) -> Verdict:
    value: dict[str, Any] = {
        "nested": {"list": [1, 2.5, None, True, "ü✓"]},
        "quote'\"key": "v",
        "": 0,
        "empty": ["", [], {}],
        "blank": "",
    }
    return await _round_trip(probe, "metadata", value, probe.profile.metadata)


async def tags(probe: Probe) -> Verdict:
    return await _round_trip(probe, "tags", ["b", "a", "a", "ü"], probe.profile.tags)


async def _round_trip(probe: Probe, field: str, value: Any, declared: RoundTrip) -> Verdict:
    item = numbered(1, content="rt", **{field: value})
    await probe.fill([item])
    got = await probe.retrieve(item.id)
    assert got is not None, "retrieve returned None after store"
    observed = RoundTrip.EXACT if same_values(getattr(got, field), value) else RoundTrip.LOST
    detail = "" if observed is RoundTrip.EXACT else f" ({getattr(got, field)!r})"
    return observed.value + detail, observed is declared
