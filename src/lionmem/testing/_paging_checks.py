"""The check of the `PagingStore` extension: a search's pages join into its matches, a
cursor is a position that survives the writes and deletes around it, and a page
without a limit or with a cursor no page gave is refused ([ADR-0105][adr-0105-d3]).

A small function the kit's table names; see [ADR-0093][adr-0093].
"""

from __future__ import annotations

from uuid import UUID

from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.paging import PagingStore
from lionmem.testing._harness import show
from lionmem.testing._probe import ALL, Probe, Verdict, extension_verdict, ids, numbered

__all__ = ["paging"]

_MOST_PAGES = 20
"""More pages than any search of the check has: a store still giving a cursor after
them pages without end."""


async def paging(probe: Probe) -> Verdict:
    return await extension_verdict(probe, probe.profile.paging, PagingStore, _differs)


async def _every_page(probe: Probe, store: PagingStore, query: MemoryQuery, after: str | None) -> list[list[UUID]]:
    pages: list[list[UUID]] = []
    for _ in range(_MOST_PAGES):  # a store whose pages never end is stopped here
        page = await probe.recorded(f"store.search_page({show(query)}, {after!r})", store.search_page(query, after))
        pages.append([item.id for item in page.items])
        if page.next is None:
            break
        after = page.next
    return pages


async def _differs(probe: Probe, store: PagingStore) -> str | None:
    """How the store's pages differ from the reference's, or `None`."""
    items = [numbered(n, content=f"page {n}", tags=["odd" if n % 2 else "even"]) for n in range(1, 9)]
    await probe.fill(items)
    for query in (MemoryQuery(limit=3), MemoryQuery(tags=["odd"], limit=2), MemoryQuery(limit=8)):
        pages = await _every_page(probe, store, query, None)
        found = ids(await probe.search(query.model_copy(update={"limit": ALL})))
        joined = [item_id.int for page in pages for item_id in page]
        if joined != found or any(len(page) != query.limit for page in pages[:-1]):
            held = [[item_id.int for item_id in page] for page in pages]
            return f"the pages of {show(query)} held {held}, where {found}, {query.limit} a page"
    refused = await _refusal(probe, store)
    if refused:
        return refused
    # Its pages were checked above: this one is [1, 2, 3], and names a next.
    first = await probe.recorded("store.search_page(MemoryQuery(limit=3))", store.search_page(MemoryQuery(limit=3)))
    if isinstance(store, ForgettingStore):
        await probe.delete(numbered(3).id)  # the cursor's own item
    replaced = MemoryItem(id=items[3].id, content="page 4, replaced", tags=items[3].tags)
    await probe.store(replaced)
    await probe.store(numbered(9, content="page 9"))
    rest = await _every_page(probe, store, MemoryQuery(limit=3), first.next)
    after = [item_id.int for page in rest for item_id in page]
    if after != [4, 5, 6, 7, 8, 9]:
        return (
            f"after the first page's cursor, its item deleted and another stored, the pages held {after}, "
            "where [4, 5, 6, 7, 8, 9]"
        )
    return None


async def _refusal(probe: Probe, store: PagingStore) -> str | None:
    """What the store does with a page of no size or a cursor no page gave, if it
    does not refuse it with `ValueError`."""
    for query, after in ((MemoryQuery(limit=0), None), (MemoryQuery(limit=3), "not a cursor")):
        call = f"store.search_page({show(query)}, {after!r})"
        try:
            await probe.recorded(call, store.search_page(query, after))
        except ValueError:
            continue
        return f"{call} returned a page, where ValueError"
    return None
