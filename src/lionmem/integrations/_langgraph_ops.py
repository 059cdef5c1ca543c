"""How each LangGraph operation runs against a lionmem store. Governed by
[ADR-0106][adr-0106].

Seam for tests: `_PAGE`, the most items one call reads to skip an offset or list
namespaces.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from typing import Any
from uuid import UUID

from langgraph.store.base import (
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    validate_op_namespace,
)

from lionmem._internal.arguments import kind_of
from lionmem.integrations import _langgraph_items as items
from lionmem.protocols.batching import BatchingStore
from lionmem.protocols.expiry import ExpiringStore
from lionmem.protocols.filters import Ne
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.hybrid import HybridStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.paging import PagingStore
from lionmem.protocols.recall import RecallStore

__all__ = ["Operations", "checked"]

_PAGE = 1_000


class Operations:
    """Runs batches of LangGraph operations against one store, each in order.

    Raises (as it is made):
        TypeError: the store does not batch, expire or page, or `hybrid` is asked of a
            store that does not fuse.
    """

    def __init__(self, store: ForgettingStore, fields: Sequence[str] | None, *, hybrid: bool) -> None:
        self.store = store
        self.batching: BatchingStore = _needs(store, BatchingStore)
        self.expiring: ExpiringStore = _needs(store, ExpiringStore)
        self.paging: PagingStore = _needs(store, PagingStore)
        self.fuses: HybridStore | None = _needs(store, HybridStore) if hybrid else None
        self._recalls: RecallStore | None = store if isinstance(store, RecallStore) else None
        self._fields = list(fields) if fields is not None else None

    async def run(self, ops: list[Op]) -> list[Result]:
        """The result of each of `ops`, run in order; consecutive puts and deletes as
        one `store_many` and one `delete_many`."""
        results: list[Result] = []
        puts: list[PutOp] = []
        for op in ops:
            if isinstance(op, PutOp):
                puts.append(op)
                results.append(None)
                continue
            if puts:
                await self._put(puts)
                puts = []
            if isinstance(op, GetOp):
                results.append(await self._get(op))
            elif isinstance(op, SearchOp):
                results.append(await self._search(op))
            else:
                results.append(await self._list(op))
        if puts:
            await self._put(puts)
        return results

    async def _put(self, ops: list[PutOp]) -> None:
        last = {(op.namespace, op.key): op for op in ops}  # the last write of a key wins, as in order
        now = time.time()
        gone = [items.item_id(*where) for where, op in last.items() if op.value is None]
        kept: list[MemoryItem] = []
        by_ttl: dict[float | None, list[UUID]] = {}
        lasting = self.expiring.ttl is None
        for (namespace, key), op in last.items():
            if op.value is None:
                continue
            before = await self.store.retrieve(items.item_id(namespace, key))
            text = None if op.index is False else items.text_to_index(op.value, op.index or self._fields)
            kept.append(
                items.memory_item(
                    namespace,
                    key,
                    op.value,
                    text=text,
                    created_at=now if before is None else before.created_at,
                    updated_at=now,
                    ttl=op.ttl,
                )
            )
            if op.ttl is not None or not lasting:  # else storing left it unexpiring
                by_ttl.setdefault(op.ttl, []).append(kept[-1].id)
        if kept:  # first: a put the store refuses changes nothing
            await self.batching.store_many(kept)
        if gone:
            await self.store.delete_many(gone)
        await self._refresh(by_ttl)

    async def _get(self, op: GetOp) -> Item | None:
        found = await self.store.retrieve(items.item_id(op.namespace, op.key))
        if found is None:
            return None
        if op.refresh_ttl:
            await self._refresh(_ttls([found]))
        return items.langgraph_item(found)

    async def _search(self, op: SearchOp) -> list[SearchItem]:
        if op.limit < 0 or op.offset < 0:
            raise ValueError(f"a search's limit and offset are at least 0; got limit={op.limit}, offset={op.offset}")
        filters = items.filters_of(op.namespace_prefix, op.filter)
        if op.limit == 0:
            return []
        chosen: list[tuple[MemoryItem, float | None]]
        recalls = self._recalls
        if op.query and recalls is not None and recalls.embedder is not None:
            chosen = (await self._recall(recalls, op.query, op.offset + op.limit, filters))[op.offset :]
            if len(chosen) < op.limit:  # as LangGraph's stores, the unindexed make up the number
                unindexed = MemoryQuery(filters={**filters, items.NOT_INDEXED: True}, limit=op.limit - len(chosen))
                chosen += [(item, None) for item in await recalls.search(unindexed)]
        else:  # without an embedder, LangGraph's stores pass over `query` too
            query = MemoryQuery(filters=filters, limit=op.limit)
            found = await (self._skipping(query, op.offset) if op.offset else self.store.search(query))
            chosen = [(item, None) for item in found]
        if op.refresh_ttl:
            await self._refresh(_ttls([item for item, _ in chosen]))
        return [items.search_item(item, score) for item, score in chosen]

    async def _recall(
        self, store: RecallStore, query: str, k: int, filters: dict[str, Any]
    ) -> list[tuple[MemoryItem, float | None]]:
        if self.fuses is not None:  # an item's fused score depends on the others ranked: filter first
            indexed = {**filters, items.NOT_INDEXED: Ne(True)}
            return [(found.item, found.score) for found in await self.fuses.recall_hybrid(query, k, filters=indexed)]
        # A cosine score does not: ask for more while unindexed items take places, rather
        # than add a condition every store must test on each row.
        asked = k
        while True:
            found = await store.recall(query, asked, filters=filters)
            kept: list[tuple[MemoryItem, float | None]] = [
                (each.item, each.score) for each in found if items.NOT_INDEXED not in each.item.metadata
            ]
            if len(kept) >= k or len(found) < asked:
                return kept[:k]
            asked *= 2

    async def _list(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        if op.limit < 0 or op.offset < 0 or (op.max_depth is not None and op.max_depth < 0):
            raise ValueError(
                "list_namespaces' limit, offset and max_depth are at least 0; "
                f"got limit={op.limit}, offset={op.offset}, max_depth={op.max_depth}"
            )
        seen: set[tuple[str, ...]] = set()
        async for batch in self.store.scan(_PAGE):
            seen.update(items.namespace_of(item) for item in batch)
        wanted = {
            namespace if op.max_depth is None else namespace[: op.max_depth]
            for namespace in seen
            if all(items.matches(condition, namespace) for condition in op.match_conditions or ())
        }
        return sorted(wanted)[op.offset : op.offset + op.limit]

    async def _refresh(self, by_ttl: dict[float | None, list[UUID]]) -> None:
        """Give each item its TTL from now; one put without a TTL never expires."""
        for minutes, ids in by_ttl.items():
            if minutes is None:
                await self.expiring.persist(ids)
            else:
                await self.expiring.expire(ids, ttl=minutes * 60)

    async def _skipping(self, query: MemoryQuery, offset: int) -> list[MemoryItem]:
        """The matches of `query` from `offset`, at most its limit: a page at a time up
        to the offset, so that no call reads more than `_PAGE` items it does not return."""
        after: str | None = None
        while offset > 0:
            page = await self.paging.search_page(query.model_copy(update={"limit": min(offset, _PAGE)}), after)
            offset -= len(page.items)
            if page.next is None:
                return []
            after = page.next
        return list((await self.paging.search_page(query, after)).items)


def checked(ops: Iterable[Op]) -> list[Op]:
    """`ops` as a list, each an operation whose namespace LangGraph allows, given as a
    tuple (LangGraph's stores take a list too).

    Raises:
        TypeError: an object that is no operation, or a put's value that is no dict.
        InvalidNamespaceError: a label LangGraph refuses.
    """
    listed = list(ops)
    for index, op in enumerate(listed):
        if not isinstance(op, GetOp | SearchOp | PutOp | ListNamespacesOp):
            raise TypeError(f"a LangGraph store runs GetOp, SearchOp, PutOp and ListNamespacesOp; got {kind_of(op)}")
        validate_op_namespace(op)
        if isinstance(op, PutOp) and op.value is not None and not isinstance(op.value, dict):
            raise TypeError(f"a put's value is a dict or None (a delete); got {kind_of(op.value)}")
        if isinstance(op, GetOp | PutOp) and _is_list(op.namespace):
            listed[index] = op._replace(namespace=tuple(op.namespace))
        elif isinstance(op, SearchOp) and _is_list(op.namespace_prefix):
            listed[index] = op._replace(namespace_prefix=tuple(op.namespace_prefix))
    return listed


def _is_list(namespace: Sequence[str]) -> bool:
    """Whether a namespace typed as a tuple came as a list, as LangGraph's stores allow."""
    return not isinstance(namespace, tuple)


def _needs(store: ForgettingStore, kind: type[object]) -> Any:
    """`store`, checked to implement the extension `kind` (a runtime-checkable protocol)."""
    if not isinstance(store, kind):
        raise TypeError(f"StoreForLangGraph needs a store that implements {kind.__name__}, got {kind_of(store)}")
    return store


def _ttls(found: Iterable[MemoryItem]) -> dict[float | None, list[UUID]]:
    by_ttl: dict[float | None, list[UUID]] = {}
    for item in found:
        if (minutes := item.metadata.get(items.TTL)) is not None:
            by_ttl.setdefault(minutes, []).append(item.id)
    return by_ttl
