"""The reference store: `InMemoryStore`, a process-local `Pile` of items that
applies the matching rules one by one, and recalls by meaning when given an
embedder.

Governed by [ADR-0092][adr-0092-d3]; recall by [ADR-0102][adr-0102].
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import AsyncIterator, Callable, Iterable, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any
from uuid import UUID

from lionmem._internal.arguments import as_batch, as_batch_size, as_cutoff, as_uuid, as_uuids, require_type
from lionmem.errors import NoEmbedderError
from lionmem.protocols._positions import Positions
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
from lionmem.protocols.rules import check_matchable, with_any_tag, with_filters

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

    __slots__ = ("__weakref__", "_index", "_items", "_namespace", "_order", "_shelf", "_text_of")

    def __init__(
        self, *, embedder: Embedder | None = None, text_of: TextOf | None = None, namespace: str = DEFAULT_NAMESPACE
    ) -> None:
        """Make an empty store; with an `embedder`, one that can also
        [`recall`][lionmem.protocols.in_memory.InMemoryStore.recall] by meaning
        ([ADR-0102][adr-0102]), embedding `text_of(item)` (`str(item.content)` by
        default) as each item is stored. The store is the `namespace` of a new
        database in memory, whose other namespaces
        [`in_namespace`][lionmem.protocols.in_memory.InMemoryStore.in_namespace] opens
        ([ADR-0105][adr-0105-d1]).

        Raises:
            TypeError: `embedder` is not an `Embedder`, `text_of` not callable, or
                `namespace` not a str.
            ValueError: `namespace` is not a [namespace's name][lionmem.protocols.namespaces.check_namespace].
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
        self._order = Positions()  # Seam for tests: `_order`, read to show storing keeps none until paged.
        # The items, index and order of each namespace of this store's database, shared
        # by every store on it; not the stores themselves, which would make a cycle.
        self._shelf: dict[str, tuple[Pile[MemoryItem], VectorIndex | None, Positions]] = {
            self._namespace: (self._items, self._index, self._order)
        }

    @property
    def namespace(self) -> str:
        """The namespace this store reads and writes ([ADR-0105][adr-0105-d1])."""
        return self._namespace

    def in_namespace(self, namespace: str) -> InMemoryStore:
        """A store of `namespace` in this store's database, with its embedder: empty the
        first time, then on the items stored in it through any such store.

        Raises:
            TypeError, ValueError: as [`check_namespace`][lionmem.protocols.namespaces.check_namespace].
        """
        name = check_namespace(namespace)
        sibling = InMemoryStore(embedder=self.embedder, text_of=self._text_of, namespace=name)
        if name in self._shelf:
            sibling._items, sibling._index, sibling._order = self._shelf[name]
        else:
            self._shelf[name] = (sibling._items, sibling._index, sibling._order)
        sibling._shelf = self._shelf
        return sibling

    async def namespaces(self) -> list[str]:
        """The namespaces of this store's database that hold an item, by name."""
        return sorted(name for name, (items, _, _) in self._shelf.items() if len(items))

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
        if self._order.positions is not None:
            self._order.place([item])
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
        if self._order.positions is not None:
            self._order.place(batch)
        return [item.id for item in batch]

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        """Return the stored item with `item_id`, or `None`.

        A string in UUID form is taken as that UUID ([ADR-0095][adr-0095]).

        Raises:
            ValueError: `item_id` is a string that is not a UUID.
            TypeError: `item_id` is neither a UUID nor a string.
        """
        return self._items.get(item_id if type(item_id) is UUID else as_uuid(item_id, "item_id"), None)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        """Return the live items matching `query`, in insertion order.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        if type(query) is not MemoryQuery:
            require_type(query, "query", MemoryQuery)
        if not (query.text or query.tags or query.filters):  # the first `limit` items alone
            return self._items.values(query.limit)
        return _matches(self._items.values(), _predicates(query), query.limit)

    async def search_newest(self, query: MemoryQuery) -> list[MemoryItem]:
        """The live items matching `query`, the last in insertion order first, cut by
        `limit` ([ADR-0099][adr-0099-d7]); a small limit stops the scan early.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        require_type(query, "query", MemoryQuery)
        return _matches(self._items.values()[::-1], _predicates(query), query.limit)

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
        predicates = _predicates(checked.model_copy(update={"tags": None}))  # tags: by the index
        vector = await index.query_vector(query)

        def keep(items: list[MemoryItem]) -> list[MemoryItem]:
            return _matches(items, predicates, None)

        wanted = frozenset(checked.tags) if checked.tags else None
        ranked = index.ranked(vector, k, tags=wanted, keep=keep if predicates else None)
        return recalled(ranked, floor)

    async def holding(self, terms: list[str], limit: int) -> list[list[tuple[MemoryItem, int]]]:
        """For each of `terms`, the items holding it among their terms, each with how
        often: every one in insertion order when at most `limit` do, else `limit` of
        them. Hybrid recall reads its rare terms here ([ADR-0104][adr-0104]).

        An item's terms are read when it is stored, as its vector is.
        """
        index = self._recalling()
        return [index.holding(term, limit) for term in terms]

    async def count_up_to(self, most: int) -> int:
        """How many items the store holds, counted up to `most` ([ADR-0104][adr-0104])."""
        return min(len(self._items), most)

    def _recalling(self) -> VectorIndex:
        if self._index is None:
            raise NoEmbedderError("this InMemoryStore was made without an embedder: InMemoryStore(embedder=...)")
        return self._index

    def _forgot(self, removed: list[MemoryItem]) -> list[MemoryItem]:
        """Drop the vectors and positions of `removed`, the items a deletion took out."""
        if self._index is not None:
            self._index.remove(i.id for i in removed)
        if self._order.positions is not None:
            for item in removed:
                del self._order.positions[item.id]
        return removed

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
        following, positions = self._after(start)
        found = _matches(following, _predicates(query), size + 1)
        if len(found) <= size:
            return Page(found, None)
        return Page(found[:size], cursor_of(positions[found[size - 1].id]))

    def _after(self, start: int) -> tuple[list[MemoryItem], dict[UUID, int]]:
        """The live items after position `start`, and the position of each item."""
        positions = self._order.positions_of(self._items)
        snapshot = self._items.values()
        return snapshot[bisect_right(snapshot, start, key=lambda item: positions[item.id]) :], positions

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
        predicates = _predicates(query)
        if created_before is None:
            return len(self._forgot(self._items.exclude_where(lambda items: _matches(items, predicates, query.limit))))
        before = as_cutoff(created_before, "created_before")
        return len(
            self._forgot(
                self._items.exclude_where(
                    lambda items: _matches([i for i in items if i.created_at < before], predicates, query.limit)
                )
            )
        )

    async def count(self, query: MemoryQuery) -> int:
        """The number of items `query`'s text, tags and filters match; `limit` is
        not applied.

        Raises:
            TypeError: `query` is not a `MemoryQuery`.
        """
        require_type(query, "query", MemoryQuery)
        predicates = _predicates(query)
        return len(_matches(self._items.values(), predicates, None)) if predicates else len(self._items)

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
        return _scan(self._after(start)[0] if start else self._items.values(), size)


async def _scan(snapshot: list[MemoryItem], size: int) -> AsyncIterator[list[MemoryItem]]:
    for start in range(0, len(snapshot), size):
        yield snapshot[start : start + size]


def _matches(snapshot: list[MemoryItem], predicates: list[_Predicate], limit: int | None) -> list[MemoryItem]:
    """The items of `snapshot` every predicate lets through, cut to `[:limit]`
    (`None`: not cut)."""
    if not predicates:
        return snapshot if limit is None else snapshot[:limit]
    size = len(snapshot)
    # With a small non-negative limit, scan in chunks and stop once enough items
    # match: the first `limit` matches are the same as those of a full scan.
    step = max(_MIN_CHUNK, size if limit is None or limit < 0 else 4 * limit)
    matches: list[MemoryItem] = []
    for start in range(0, size, step):
        part = snapshot[start : start + step]
        for predicate in predicates:
            part = predicate(part)
        matches += part
        if limit is not None and 0 <= limit <= len(matches):
            break
    return matches if limit is None else matches[:limit]


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


# Seam for tests: `_MIN_CHUNK`, read to search across a chunk's edge.
_MIN_CHUNK = 512

_Predicate = Callable[[list[MemoryItem]], list[MemoryItem]]


def _predicates(query: MemoryQuery) -> list[_Predicate]:
    """The non-empty predicate groups of `query`, in the order they apply."""
    predicates: list[_Predicate] = []
    if query.text:
        needle = query.text.lower()
        predicates.append(lambda part: [i for i in part if needle in str(i.content).lower()])
    if query.tags:
        wanted = frozenset(query.tags)
        predicates.append(lambda part: with_any_tag(part, wanted))
    if query.filters:
        conditions = list(query.filters.items())
        predicates.append(lambda part: with_filters(part, conditions))
    return predicates
