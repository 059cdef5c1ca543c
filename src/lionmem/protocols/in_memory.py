"""The reference store: `InMemoryStore`, a process-local `Pile` of items that
applies the matching rules one by one, and recalls by meaning when given an
embedder.

Governed by [ADR-0092][adr-0092-d3]; recall by [ADR-0102][adr-0102].
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from lionmem._internal.arguments import as_batch, as_batch_size, as_cutoff, as_uuid, as_uuids, require_type
from lionmem.errors import NoEmbedderError
from lionmem.protocols._expiries import Expiries, Lifetimes
from lionmem.protocols._matching import first, matches, predicates, scan
from lionmem.protocols._positions import Positions
from lionmem.protocols.expiry import Clock, check_expiring
from lionmem.protocols.generic.pile import Pile
from lionmem.protocols.hybrid import HybridRecall
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.namespaces import DEFAULT_NAMESPACE, check_namespace
from lionmem.protocols.paging import Page, check_page, cursor_of, position_of
from lionmem.protocols.recall import (
    Embedder,
    Recalled,
    TextOf,
    check_embedder,
    check_k,
    check_min_score,
    embed_items,
    recall_query,
    recalled,
)
from lionmem.protocols.rules import check_matchable

if TYPE_CHECKING:
    from lionmem.protocols._vector_index import VectorIndex

__all__ = ["InMemoryStore"]


class InMemoryStore(HybridRecall):
    """The zero-setup reference store: a process-local `Pile` of `MemoryItem`.

    - `store` creates or replaces by id; a replacement keeps its original position.
    - `retrieve` returns the stored object itself, or `None`.
    - `search` scans a snapshot in insertion order and applies, in turn: text
      (case-insensitive substring of `str(content)`), tags (any-of, case-sensitive),
      filters (all-of, `metadata.get(key) == value`, so `None` matches a missing key),
      then `[:limit]` with Python slice rules (`0` gives `[]`, a negative limit drops
      that many trailing matches).
    - Results are the live stored objects, not copies.
    - Nothing survives the process.

    See [ADR-0092][adr-0092-d3].

    Examples:
        >>> import asyncio
        >>> store = InMemoryStore()
        >>> item = MemoryItem(content="Paris is in France", tags=["geo"])
        >>> asyncio.run(store.store(item)) == item.id
        True
        >>> [i.content for i in asyncio.run(store.search(MemoryQuery(text="PARIS")))]
        ['Paris is in France']
    """

    __slots__ = ("__weakref__", "_index", "_items", "_life", "_namespace", "_order", "_shelf", "_text_of")

    def __init__(
        self,
        *,
        embedder: Embedder | None = None,
        text_of: TextOf | None = None,
        namespace: str = DEFAULT_NAMESPACE,
        ttl: float | None = None,
        refresh_on_read: bool = False,
        clock: Clock = time.time,
    ) -> None:
        """Make an empty store; with an `embedder`, one that can also
        [`recall`][lionmem.protocols.in_memory.InMemoryStore.recall] by meaning
        ([ADR-0102][adr-0102]), embedding `text_of(item)` (`str(item.content)` by
        default) as each item is stored. The store is the `namespace` of a new
        database in memory, whose other namespaces
        [`in_namespace`][lionmem.protocols.in_memory.InMemoryStore.in_namespace] opens
        ([ADR-0105][adr-0105-d1]). With a `ttl`, each item stored expires `ttl`
        seconds after, by `clock`; with `refresh_on_read` too, each read that returns
        an item moves its expiry to `ttl` seconds from then ([ADR-0105][adr-0105-d2]).

        Raises:
            TypeError: `embedder` is not an `Embedder`, `text_of` not callable, or
                `namespace` not a str; or as [`check_expiring`][lionmem.protocols.expiry.check_expiring].
            ValueError: `namespace` is not a [namespace's name][lionmem.protocols.namespaces.check_namespace];
                or as `check_expiring`.
            ImportError: an embedder is given but numpy is not installed; the
                message names the extra.
        """
        # Seam for tests: `_items`, the pile itself, to change it behind a running search.
        self._items: Pile[MemoryItem] = Pile(item_type=MemoryItem)
        # Seam for tests: `_index`, the vector index, whose tag map a test reads.
        self._index: VectorIndex | None = None
        self._text_of = text_of
        if embedder is not None or text_of is not None:
            self._index = _index_for(embedder, text_of)
        self._namespace = check_namespace(namespace)
        self._life = Lifetimes(self._items, *check_expiring(ttl, refresh_on_read, clock))
        self._order = Positions()  # Seam for tests: `_order`, read to show storing keeps none until paged.
        # Each namespace's items, index, order and expiries, shared by every store on
        # it (not the stores, which would make a cycle). Seam for tests: `_shelf`, `_life`.
        self._shelf: dict[str, tuple[Pile[MemoryItem], VectorIndex | None, Positions, Expiries]] = {
            self._namespace: (self._items, self._index, self._order, self._life.expiries)
        }

    @property
    def namespace(self) -> str:
        """The namespace this store reads and writes ([ADR-0105][adr-0105-d1])."""
        return self._namespace

    def in_namespace(self, namespace: str) -> InMemoryStore:
        """A store of `namespace` in this store's database, with its embedder and expiry
        settings: empty the first time, then on the items stored in it through any
        such store.

        Raises:
            TypeError, ValueError: as [`check_namespace`][lionmem.protocols.namespaces.check_namespace].
        """
        name = check_namespace(namespace)
        sibling = InMemoryStore(embedder=self.embedder, text_of=self._text_of, namespace=name)
        if name in self._shelf:
            sibling._items, sibling._index, sibling._order, expiries = self._shelf[name]
            sibling._life = self._life.sibling(expiries, sibling._items)
        else:
            sibling._life = self._life.sibling(None, sibling._items)
            self._shelf[name] = (sibling._items, sibling._index, sibling._order, sibling._life.expiries)
        sibling._shelf = self._shelf
        return sibling

    async def namespaces(self) -> list[str]:
        """The namespaces of this store's database that hold an item, by name."""
        return sorted(name for name, (items, *_) in self._shelf.items() if len(items))

    @property
    def embedder(self) -> Embedder | None:
        """The embedder given, or `None`: then the store cannot recall."""
        return None if self._index is None else self._index.embedder

    async def store(self, item: MemoryItem) -> UUID:
        """Create or replace `item` by id and return `item.id`. A store with an
        embedder embeds the item first; if that fails, nothing is stored.

        Raises:
            TypeError: `item` is not a `MemoryItem`; nothing is stored.
            ValueError: `str(item.content)` raises, so no text search could read the
                item (an integer of more digits than Python writes as text, content
                nested past the recursion limit), or the embedder gave a vector that
                is not one of its dimensions; nothing is stored
                ([ADR-0092][adr-0092-notes]).
        """
        if (type(item) is not MemoryItem or type(item.content) is not str) and isinstance(item, MemoryItem):
            check_matchable(item)
        if self._index is None:
            self._items.include(item)
        else:
            require_type(item, "item", MemoryItem)
            embedded = await embed_items(self._index.embedder, self._text_of, [item])
            self._items.include(item)
            self._index.put(item, embedded.vectors[0], embedded.digests[0])
        self._order.place([item])
        self._life.stored([item.id])
        return item.id

    async def store_many(self, items: Iterable[MemoryItem]) -> list[UUID]:
        """Store `items` in order, as `store` would one at a time, and return their
        ids: all of them or, on error, none. A store with an embedder embeds the
        whole batch in one call first ([ADR-0096][adr-0096]).

        Raises:
            TypeError: `items` is not an iterable, is one `MemoryItem` alone, or
                holds something else; nothing is stored.
            ValueError: as for `store`; nothing is stored.
        """
        batch = as_batch(items, MemoryItem)
        for item in batch:
            require_type(item, "every item", MemoryItem)
            if type(item.content) is not str:
                check_matchable(item)
        if self._index is None:
            for item in batch:
                self._items.include(item)
        else:
            embedded = await embed_items(self._index.embedder, self._text_of, batch)
            for item, vector, digest in zip(batch, *embedded, strict=True):
                self._items.include(item)
                self._index.put(item, vector, digest)
        self._order.place(batch)
        ids = [item.id for item in batch]
        self._life.stored(ids)
        return ids

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        """Return the stored item with `item_id`, or `None`.

        A string in UUID form is taken as that UUID ([ADR-0095][adr-0095]).

        Raises:
            ValueError: `item_id` is a string that is not a UUID.
            TypeError: `item_id` is neither a UUID nor a string.
        """
        key = item_id if type(item_id) is UUID else as_uuid(item_id, "item_id")
        return self._life.unexpired(self._items.get(key, None))

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """Return the live items matching `query`, in insertion order.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        if type(query) is not MemoryQuery:
            require_type(query, "query", MemoryQuery)
        now, expired = self._life.expired()
        if not (query.text or query.tags or query.filters):  # the first `limit` items alone
            return self._life.refreshed(first(self._items, query.limit, expired), now)
        return self._life.refreshed(matches(self._items.values(), predicates(query, expired), query.limit), now)

    async def search_newest(self, query: MemoryQuery) -> list[MemoryItem]:
        """The live items matching `query`, the last in insertion order first, cut by
        `limit` ([ADR-0099][adr-0099-d7]); a small limit stops the scan early.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        require_type(query, "query", MemoryQuery)
        now, expired = self._life.expired()
        return self._life.refreshed(matches(self._items.values()[::-1], predicates(query, expired), query.limit), now)

    async def recall(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Recalled]:
        """The `k` items most like `query`, highest cosine similarity first, among
        those `tags` and `filters` match as in `search`; equal scores keep insertion
        order; none scoring below `min_score`. Exact: every matching item is scored
        ([ADR-0102][adr-0102]). An item's text and tags are read when it is stored:
        change one in place and store it again.

        `query` is a text, which the embedder embeds, or a vector of its dimensions.

        Raises:
            NoEmbedderError: the store was made without an embedder.
            TypeError: `k` is not an int, `query` neither a str nor a vector of
                numbers, `tags` or `filters` not what `MemoryQuery` takes, or
                `min_score` not a number.
            ValueError: `k` is less than 1, `min_score` outside -1 to 1, or the
                vector has the wrong length or a NaN or infinity.
        """
        index = self._recalling()
        k = check_k(k)
        checked = recall_query(tags, filters)
        floor = check_min_score(min_score)
        vector = await index.query_vector(query)
        now, expired = self._life.expired()
        groups = predicates(checked.model_copy(update={"tags": None}), expired)  # tags: by the index

        def keep(items: list[MemoryItem]) -> list[MemoryItem]:
            return matches(items, groups, None)

        wanted = frozenset(checked.tags) if checked.tags else None
        found = recalled(index.ranked(vector, k, tags=wanted, keep=keep if groups else None), floor)
        self._life.refreshed([hit.item for hit in found], now)
        return found

    async def holding(self, terms: list[str], limit: int) -> list[list[tuple[MemoryItem, int]]]:
        """For each of `terms`, the items holding it among their terms, each with how
        often: every one in insertion order when at most `limit` do, else `limit` of
        them. Hybrid recall reads its rare terms here ([ADR-0104][adr-0104]).

        An item's terms are read when it is stored, as its vector is.
        """
        index, expired = self._recalling(), self._life.expired()[1]
        return [index.holding(term, limit, expired.ids) for term in terms]

    async def count_up_to(self, most: int) -> int:
        """How many items the store holds, counted up to `most` ([ADR-0104][adr-0104])."""
        return min(len(self._items) - len(self._life.expired()[1]), most)

    def _recalling(self) -> VectorIndex:
        if self._index is None:
            raise NoEmbedderError("this InMemoryStore was made without an embedder: InMemoryStore(embedder=...)")
        return self._index

    def _forgot(self, removed: list[MemoryItem]) -> list[MemoryItem]:
        """Drop the vectors, positions and expiries of `removed`, which a delete took."""
        self._life.expiries.drop(i.id for i in removed)
        if self._index is not None:
            self._index.remove(i.id for i in removed)
        self._order.drop(removed)
        return removed

    # -- expiry: the optional extension of ADR-0105 --------------------------------

    @property
    def ttl(self) -> float | None:
        """The seconds after storing at which an item stored here expires, or `None`."""
        return self._life.ttl

    async def expire(
        self, item_ids: Iterable[UUID], *, at: float | datetime | None = None, ttl: float | None = None
    ) -> int:
        """Make the unexpired items with these ids expire `at` a time (a timestamp or
        a datetime) or `ttl` seconds from now; return how many there were.

        Raises:
            TypeError, ValueError: as [`expiry_of`][lionmem.protocols.expiry.expiry_of]
                and `delete_many`; nothing changes.
        """
        return self._life.expire(as_uuids(item_ids, "item_ids"), at, ttl)

    async def persist(self, item_ids: Iterable[UUID]) -> int:
        """Make the unexpired items with these ids never expire; return how many.

        Raises:
            TypeError, ValueError: as `delete_many`; nothing changes."""
        return self._life.persist(as_uuids(item_ids, "item_ids"))

    async def sweep(self) -> int:
        """Delete every expired item of this namespace in one step; return how many."""
        return len(self._forgot(self._items.exclude_ids(self._life.expiries.take_expired(self._life.clock()))))

    # -- paging: the optional extension of ADR-0105 --------------------------------

    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        """The first `query.limit` live items matching `query` after the cursor `after`,
        in insertion order, and the cursor after them ([ADR-0105][adr-0105-d3]).

        Raises:
            TypeError: `query` is not a `MemoryQuery`, or `after` neither a str nor
                `None`.
            ValueError: `query.limit` is less than 1, or `after` is not a cursor.
        """
        size, start = check_page(query, after)
        now, expired = self._life.expired()
        following, positions = self._order.after(self._items, start)
        found = self._life.refreshed(matches(following, predicates(query, expired), size + 1), now)
        if len(found) <= size:
            return Page(found, None)
        return Page(found[:size], cursor_of(positions[found[size - 1].id]))

    # -- forgetting: the optional extension of ADR-0100 --------------------------------

    async def delete(self, item_id: UUID) -> bool:
        """Delete the item with `item_id`; return whether there was one.

        Storing an item with that id afterwards adds it at the end of the order
        ([ADR-0100][adr-0100]).

        Raises:
            ValueError: `item_id` is a string that is not a UUID.
            TypeError: `item_id` is neither a UUID nor a string.
        """
        return bool(self._forgot(self._items.exclude_ids([as_uuid(item_id, "item_id")])))

    async def delete_many(self, item_ids: Iterable[UUID]) -> int:
        """Delete the items with these ids in one step; return how many there were.

        Raises:
            TypeError: `item_ids` is a string or not iterable, or holds something
                that is neither a UUID nor a string; nothing is deleted.
            ValueError: `item_ids` holds a string that is not a UUID; nothing is
                deleted.
        """
        return len(self._forgot(self._items.exclude_ids(as_uuids(item_ids, "item_ids"))))

    async def delete_matching(self, query: MemoryQuery, *, created_before: float | datetime | None = None) -> int:
        """Delete exactly the items `search(query)` would return, `limit` included,
        in one step; return how many ([ADR-0100][adr-0100]). With `created_before`,
        the items it would return if the store held only those created before it.

        Raises:
            TypeError: `query` is not a `MemoryQuery`, or `created_before` is neither
                a number nor a datetime.
            ValueError: `created_before` is NaN or infinite.
        """
        require_type(query, "query", MemoryQuery)
        groups = predicates(query, self._life.expired()[1])
        before = None if created_before is None else as_cutoff(created_before, "created_before")

        def chosen(items: list[MemoryItem]) -> list[MemoryItem]:
            return matches(
                items if before is None else [i for i in items if i.created_at < before], groups, query.limit
            )

        return len(self._forgot(self._items.exclude_where(chosen)))

    async def count(self, query: MemoryQuery) -> int:
        """The number of items `query`'s text, tags and filters match; `limit` is
        not applied.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        require_type(query, "query", MemoryQuery)
        groups = predicates(query, self._life.expired()[1])
        return len(matches(self._items.values(), groups, None)) if groups else len(self._items)

    async def delete_created_before(self, cutoff: float | datetime) -> int:
        """Delete every item whose `created_at` is before `cutoff`, in one step;
        return how many.

        Raises:
            TypeError: `cutoff` is neither a number nor a datetime.
            ValueError: `cutoff` is NaN or infinite.
        """
        before = as_cutoff(cutoff, "cutoff")
        return len(self._forgot(self._items.exclude_where(lambda items: [i for i in items if i.created_at < before])))

    def scan(self, batch_size: int = 500, *, after: str | None = None) -> AsyncIterator[list[MemoryItem]]:
        """The live items, in insertion order, in lists of at most `batch_size`, from a
        snapshot taken now; with `after`, those after that cursor of
        [`search_page`][lionmem.protocols.in_memory.InMemoryStore.search_page].

        Raises:
            TypeError: `batch_size` is not an int, or `after` neither a str nor `None`.
            ValueError: `batch_size` is less than 1, or `after` is not a cursor.
        """
        size, start = as_batch_size(batch_size), position_of(after)
        return scan(
            self._order.after(self._items, start)[0] if start else self._items.values(), size, self._life.expired()[1]
        )


def _index_for(embedder: Embedder | None, text_of: TextOf | None) -> VectorIndex:
    """The vector index of a store given `embedder` and `text_of`.

    Raises:
        TypeError: `embedder` is not an `Embedder`, or `text_of` is not callable.
        ImportError: numpy is not installed.
    """
    checked = check_embedder(embedder, text_of)
    # numpy, which the index needs, is an optional dependency.
    from lionmem.protocols._vector_index import VectorIndex

    return VectorIndex(checked)
