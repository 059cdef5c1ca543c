"""The check of the `NamespacedStore` extension: two namespaces of one database keep
the same id as two items, every read, count and delete sees its own namespace alone,
and `namespaces()` lists those that hold an item ([ADR-0105][adr-0105-d1]).

A small function the kit's table names; see [ADR-0093][adr-0093].
"""

from __future__ import annotations

from typing import cast
from uuid import uuid4

from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryQuery
from lionmem.protocols.namespaces import NamespacedStore
from lionmem.testing._harness import show
from lionmem.testing._probe import ALL, Probe, Verdict, extension_verdict, ids, numbered

__all__ = ["namespaces"]


async def namespaces(probe: Probe) -> Verdict:
    return await extension_verdict(probe, probe.profile.namespaces, NamespacedStore, _differs)


async def _differs(probe: Probe, store: NamespacedStore) -> str | None:
    """How the store's namespaces differ from the reference's, or `None`.

    The store's workspace may be one namespace of a database that others share, with
    their own namespaces coming and going: `namespaces()` is held to the two this
    check writes, and to its order."""
    home = store.namespace
    name = f"kit-{uuid4().hex[:12]}"
    probe.note(f"other = store.in_namespace({name!r})")
    other = store.in_namespace(name)
    if other.namespace != name:
        return f"store.in_namespace({name!r}).namespace is {other.namespace!r}"
    listed = await probe.recorded("store.namespaces()", store.namespaces())
    if home in listed or name in listed:
        return f"store.namespaces() listed an empty namespace: {listed!r}"
    mine = numbered(1, content="kept at home", tags=["shared"], metadata={"kind": "note"})
    theirs = [
        numbered(1, content="kept elsewhere", tags=["shared"], metadata={"kind": "note"}),
        numbered(2, content="kept elsewhere too", tags=["shared"], metadata={"kind": "note"}),
    ]
    await probe.store(mine)
    for item in theirs:
        await probe.recorded(f"other.store({show(item)})", other.store(item))
    await probe.visible(MemoryQuery(limit=ALL), 1)
    found = await probe.retrieve(mine.id)
    if found is None or found.content != mine.content:
        return f"store.retrieve({show(mine.id)}) returned {found!r}, where the item stored at home"
    found = await probe.recorded(f"other.retrieve({show(mine.id)})", other.retrieve(mine.id))
    if found is None or found.content != theirs[0].content:
        return f"other.retrieve({show(mine.id)}) returned {found!r}, where the other namespace's own item"
    queries = {"everything": MemoryQuery(limit=ALL), **probe.each_predicate("kept", "shared", {"kind": "note"})}
    for described, query in queries.items():
        at_home = await probe.search(query)
        elsewhere = await probe.recorded(f"other.search({show(query)})", other.search(query))
        if [(i.id.int, i.content) for i in at_home] != [(1, mine.content)]:
            return f"a search for {described} at home found {ids(at_home)}, where only the home item 1"
        if sorted(ids(elsewhere)) != [1, 2] or any(i.content == mine.content for i in elsewhere):
            return f"a search for {described} in {name!r} found {ids(elsewhere)}, where its own items 1 and 2"
    listed = await probe.recorded("store.namespaces()", store.namespaces())
    if home not in listed or name not in listed or listed != sorted(listed):
        return f"store.namespaces() returned {listed!r}, where {home!r} and {name!r} among others, by name"
    if isinstance(store, ForgettingStore):
        return await _forgets_apart(probe, store, cast(ForgettingStore, other), name, len(theirs))
    return None


async def _forgets_apart(
    probe: Probe, store: NamespacedStore, other: ForgettingStore, name: str, held: int
) -> str | None:
    """How deleting in one namespace reaches into another, or `None`."""
    counted = await probe.recorded("other.count(MemoryQuery())", other.count(MemoryQuery()))
    if counted != held:
        return f"other.count(MemoryQuery()) returned {counted}, where {held}"
    everything = MemoryQuery(limit=ALL)
    deleted = await probe.recorded(f"other.delete_matching({show(everything)})", other.delete_matching(everything))
    if deleted != held:
        return f"other.delete_matching(...) deleted {deleted}, where its own {held}"
    left = await probe.search(everything)
    if ids(left) != [1]:
        return f"after deleting every item of {name!r}, the home namespace held {ids(left)}, where [1]"
    listed = await probe.recorded("store.namespaces()", store.namespaces())
    if name in listed or store.namespace not in listed:
        return f"store.namespaces() returned {listed!r} once {name!r} was emptied"
    return None
