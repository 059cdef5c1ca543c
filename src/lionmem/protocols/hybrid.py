"""Hybrid recall: meaning and words ranked together.

Recall by meaning blurs the identifiers agents keep (ticket numbers, codes,
surnames); a ranking by words finds them but is noisy on a paraphrase. Hybrid recall
lets words count only through the names and numbers a question writes, and only those
few items hold (its *rare* terms), and fuses the two rankings by reciprocal rank.

It is defined once, in [`recall_hybrid`][lionmem.protocols.hybrid.recall_hybrid],
over a store's `recall`, `count` and the items that hold each term: lionmem's stores
read those from a term index they keep with every write, any other store from
`search`. So every store gives the same answer. Governed by [ADR-0104][adr-0104].
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final, Protocol, cast, runtime_checkable

from lionmem._internal.arguments import kind_of
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.recall import (
    RecallMany,
    RecallStore,
    check_k,
    check_min_score,
    check_queries,
    embed_queries,
    embedder_of,
    recall_query,
)
from lionmem.protocols.rules import matches

if TYPE_CHECKING:
    from collections.abc import Sequence
    from uuid import UUID

    from lionmem.protocols.recall import Recalled

__all__ = [
    "BM25_K1",
    "COUNTED_UP_TO",
    "IDENTIFIER_WEIGHT",
    "RARE_AT_MOST",
    "RRF_K",
    "HybridRecall",
    "HybridRecalled",
    "HybridStore",
    "named_terms",
    "rare_bound",
    "recall_hybrid",
    "recall_hybrid_many",
    "term_counts",
    "terms_of",
]

RARE_AT_MOST: Final = 128
"""A question's name or number counts for words when at most this many items hold it,
and at most one in twenty ([`rare_bound`][lionmem.protocols.hybrid.rare_bound])."""

RRF_K: Final = 60
"""The constant of reciprocal rank fusion: an item at rank r of a ranking adds
`1 / (RRF_K + r)` to its score."""

BM25_K1: Final = 1.2
"""BM25's saturation of a repeated term; its length weight `b` is 0
([ADR-0104][adr-0104-d1])."""

COUNTED_UP_TO: Final = 10_000
"""The `N` of BM25's idf and of `rare_bound` is the store's count of items up to this
many: past it a rare term's weight hardly moves (idf of one holder against eight:
1.25 times at 10,000 items, 1.19 at 100,000), and no store counts every item at each
call."""

IDENTIFIER_WEIGHT: Final = 2
"""How much more the words part counts for an item that holds a rare term with a
digit in it (a ticket, an order, a code): a rare name alone ties with meaning, a rare
identifier outweighs it."""

_WORD = re.compile(r"\w+")


def terms_of(text: str) -> list[str]:
    """The terms of `text`, in order: its runs of word characters (letters, digits
    and `_`, as Python's `re` knows them), lowered with `str.lower` as `search`
    lowers text ([ADR-0104][adr-0104-d1]).

    Examples:
        >>> terms_of("Ticket #88412: wait for ACME's patch")
        ['ticket', '88412', 'wait', 'for', 'acme', 's', 'patch']
    """
    return _WORD.findall(text.lower())


def term_counts(text: str) -> dict[str, int]:
    """Each distinct term of `text`, with how many times it holds it: what a term index
    keeps of an item's text ([ADR-0104][adr-0104-d3]).

    Examples:
        >>> term_counts("Order 7 and order 8")
        {'order': 2, '7': 1, 'and': 1, '8': 1}
    """
    return dict(Counter(terms_of(text)))


def named_terms(question: str) -> list[str]:
    """The terms `question` writes as a name or a number, each once, in order: a run
    of word characters with a digit in it, or with a capital letter other than the
    first letter of a sentence (one after `.`, `!` or `?`, or the first)
    ([ADR-0104][adr-0104-d1]). Only these count for words: everyday words a store
    happens to hold rarely ("often", "morning") brought the wrong items up.

    Examples:
        >>> named_terms("Where is ACME's ticket 88412? Ask Marisol, or marisol.")
        ['acme', '88412', 'marisol']
        >>> named_terms("How often should we see the physician?")
        []
    """
    named: dict[str, None] = {}
    after = 0
    for found in _WORD.finditer(question):
        run = found.group()
        opens = after == 0 or any(mark in question[after : found.start()] for mark in ".!?")
        if any(c.isdigit() for c in run) or any(c.isupper() for c in run[1:]) or (run[0].isupper() and not opens):
            named[run.lower()] = None
        after = found.end()
    return list(named)


@dataclass(frozen=True, slots=True)
class HybridRecalled:
    """One item hybrid recall found: its fused score and each ranking's part in it
    ([ADR-0104][adr-0104-d2])."""

    item: MemoryItem
    """The item, as `search` returns it."""
    score: float
    """The fused score, `1 / (RRF_K + meaning_rank) + w / (RRF_K + words_rank)` over
    the rankings it is in, `w` being `IDENTIFIER_WEIGHT` when `identified` and 1
    otherwise; results come highest first."""
    meaning_rank: int | None
    """Its place (1 first) among the `k` best by meaning, or `None`."""
    meaning_score: float | None
    """Its cosine similarity to the question, when it has a `meaning_rank`."""
    words_rank: int | None
    """Its place (1 first) among the `k` best by the question's rare terms, or `None`."""
    words_score: float | None
    """Its BM25 score over the question's rare terms, when it has a `words_rank`."""
    identified: bool
    """Whether it holds a rare term of the question that has a digit in it."""


@runtime_checkable
class HybridStore(RecallStore, Protocol):
    """A [`RecallStore`][lionmem.protocols.recall.RecallStore] that also recalls by
    meaning and words together, as
    [`recall_hybrid`][lionmem.protocols.hybrid.recall_hybrid] defines it.
    See [ADR-0104][adr-0104]."""

    async def recall_hybrid(
        self,
        query: str,
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[HybridRecalled]:
        """The `k` best of `query` by fused rank, highest first; `min_score` is the
        least cosine similarity an item needs to be ranked by meaning."""
        ...


class _Parts(RecallStore, Protocol):
    """What hybrid recall is made of: a `RecallStore` that counts its items."""

    async def count(self, query: MemoryQuery) -> int:
        """How many items `query` matches, as `ForgettingStore.count`."""
        ...


class HybridRecall(RecallMany):
    """What a store inherits to recall by meaning and words together: one
    `recall_hybrid` for every store, over the store's own `recall`, `count` and term
    index, so that the three of lionmem give one answer ([ADR-0104][adr-0104]); and
    `recall_many` and `recall_hybrid_many` for many questions in one call."""

    __slots__ = ()

    async def recall_hybrid(
        self,
        query: str,
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[HybridRecalled]:
        """The `k` items best for `query` by meaning and rare names and numbers fused,
        highest first, among those `tags` and `filters` match as in `search`: see
        [`recall_hybrid`][lionmem.protocols.hybrid.recall_hybrid], which this calls.

        Raises:
            NoEmbedderError: the store was made without an embedder.
            TypeError: `query` is not a str, `k` not an int, `tags` or `filters`
                not what `MemoryQuery` takes, or `min_score` not a number.
            ValueError: `k` is less than 1, or `min_score` outside -1 to 1.
        """
        # Every class that inherits this has recall, search and count of its own.
        return await recall_hybrid(cast("_Parts", self), query, k, tags=tags, filters=filters, min_score=min_score)

    async def recall_hybrid_many(
        self,
        queries: Sequence[str],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[list[HybridRecalled]]:
        """What `recall_hybrid` gives for each of `queries`, in order, their texts
        embedded in one call: see
        [`recall_hybrid_many`][lionmem.protocols.hybrid.recall_hybrid_many].

        Raises:
            NoEmbedderError: the store was made without an embedder.
            TypeError, ValueError: as `recall_hybrid_many` raises them.
        """
        parts = cast("_Parts", self)
        return await recall_hybrid_many(parts, queries, k, tags=tags, filters=filters, min_score=min_score)


async def recall_hybrid(
    store: _Parts,
    query: str,
    k: int = 10,
    *,
    tags: list[str] | None = None,
    filters: dict[str, Any] | None = None,
    min_score: float | None = None,
) -> list[HybridRecalled]:
    """The `k` items of `store` best for `query` by meaning and rare names and numbers
    fused, among those `tags` and `filters` match as in `search` ([ADR-0104][adr-0104]).

    1. Meaning: `store.recall(query, k, tags=tags, filters=filters,
       min_score=min_score)`: `min_score` is a floor on the cosine similarity, so an
       item below it is ranked by words alone, if at all.
    2. Words: each of `named_terms(query)` that at most `rare_bound(N)` items of
       the whole store hold among their terms (`terms_of(str(item.content))`) is
       rare, where `N` is the store's count of items up to `COUNTED_UP_TO`, counted
       only when the question names something. The matching items that hold a rare term as a term are ranked by BM25 over the rare terms
       (`k1 = BM25_K1`, `b = 0`, `idf = ln(1 + (N - df + 0.5) / (df + 0.5))`);
       equal scores keep the order the terms were met in, each term's items
       newest first.
    3. Fusion of the `k` best of each: an item scores `1 / (RRF_K + rank)` by
       meaning and `w / (RRF_K + rank)` by words, `w` being `IDENTIFIER_WEIGHT` for
       an item holding a rare term with a digit and 1 for others; equal scores go to
       the better meaning rank, then the better words rank.

    A question that names no rare term is ranked by meaning alone.

    Raises:
        NoEmbedderError: the store cannot recall.
        TypeError: `query` is not a str, `k` not an int, `tags` or `filters` not
            what `MemoryQuery` takes, or `min_score` not a number.
        ValueError: `k` is less than 1, or `min_score` outside -1 to 1.
    """
    if not isinstance(query, str):
        raise TypeError(f"hybrid recall ranks the words of a text: query must be a str, got {kind_of(query)}")
    k = check_k(k)
    wanted = recall_query(tags, filters)
    check_min_score(min_score)
    meaning = await store.recall(query, k, tags=tags, filters=filters, min_score=min_score)
    named = named_terms(query)
    words = await _by_words(store, named, wanted, await _counted(store)) if named else []
    return _fused(meaning, words[:k], k)


async def recall_hybrid_many(
    store: _Parts,
    queries: Sequence[str],
    k: int = 10,
    *,
    tags: list[str] | None = None,
    filters: dict[str, Any] | None = None,
    min_score: float | None = None,
) -> list[list[HybridRecalled]]:
    """What `recall_hybrid(store, query, k, tags=tags, filters=filters,
    min_score=min_score)` gives for each of `queries`, in order. The texts go to the
    embedder in one call, each is ranked by meaning by its vector, and the store is
    counted once; so it gives what one call a question gives wherever the embedder
    embeds a text alike alone and in a batch, and no write comes between
    ([ADR-0104][adr-0104]). Every argument is checked before anything is embedded.

    Raises:
        NoEmbedderError: the store cannot recall.
        TypeError: `queries` is not a list or tuple of str, `k` not an int, `tags`
            or `filters` not what `MemoryQuery` takes, or `min_score` not a number.
        ValueError: `k` is less than 1, `min_score` outside -1 to 1, or the
            embedder gave vectors of another count or length, or with NaN or
            infinity.
    """
    embedder = embedder_of(store)
    texts = check_queries(queries)
    for text in texts:
        if not isinstance(text, str):
            raise TypeError(f"hybrid recall ranks the words of a text: each query must be a str, got {kind_of(text)}")
    k = check_k(k)
    wanted = recall_query(tags, filters)
    check_min_score(min_score)
    if not texts:
        return []
    vectors = await embed_queries(embedder, texts)
    named = [named_terms(cast("str", text)) for text in texts]
    total = await _counted(store) if any(named) else 0
    found: list[list[HybridRecalled]] = []
    for terms, vector in zip(named, vectors, strict=True):
        meaning = await store.recall(vector, k, tags=tags, filters=filters, min_score=min_score)
        words = await _by_words(store, terms, wanted, total) if terms else []
        found.append(_fused(meaning, words[:k], k))
    return found


@runtime_checkable
class _Holding(Protocol):
    """A store that keeps an index of its items' terms."""

    async def holding(self, terms: list[str], limit: int) -> list[list[tuple[MemoryItem, int]]]:
        """For each term, the first `limit` items that hold it, in insertion order,
        each with how many times it holds it."""
        ...

    async def count_up_to(self, most: int) -> int:
        """How many items the store holds, counted up to `most`."""
        ...


async def _counted(store: _Parts) -> int:
    """The store's count of items up to `COUNTED_UP_TO`."""
    if isinstance(store, _Holding):
        return await store.count_up_to(COUNTED_UP_TO)
    return min(await store.count(MemoryQuery()), COUNTED_UP_TO)


async def _holders(store: _Parts, terms: list[str], limit: int) -> list[list[tuple[MemoryItem, int]]]:
    """What `_Holding.holding` gives: from the store's term index where it keeps
    one, or else from `search` (every match) and the terms of each item it finds."""
    if isinstance(store, _Holding):
        return await store.holding(terms, limit)
    everything = await store.count(MemoryQuery())
    found: list[list[tuple[MemoryItem, int]]] = []
    for term in terms:
        searched = await store.search(MemoryQuery(text=term, limit=max(everything, 1)))
        counted = [(item, term_counts(str(item.content)).get(term, 0)) for item in searched]
        found.append([(item, tf) for item, tf in counted if tf][:limit])
    return found


async def _by_words(
    store: _Parts, terms: list[str], wanted: MemoryQuery, total: int
) -> list[tuple[MemoryItem, float, bool]]:
    """The matching items that hold a rare one of a question's named `terms`, best
    BM25 first, each with whether one of its rare terms has a digit; `total` is the
    store's count up to `COUNTED_UP_TO`."""
    bound = rare_bound(total)
    scores: dict[UUID, float] = {}
    found: dict[UUID, MemoryItem] = {}
    identified: set[UUID] = set()
    for term, held in zip(terms, await _holders(store, terms, bound + 1), strict=True):
        if not 0 < len(held) <= bound:
            continue
        idf = math.log(1 + (total - len(held) + 0.5) / (len(held) + 0.5))
        number = any(character.isdigit() for character in term)
        for item, tf in reversed(held):  # newest first: a later note often updates an earlier one
            if matches(item, wanted):
                found.setdefault(item.id, item)
                if number:
                    identified.add(item.id)
                scores[item.id] = scores.get(item.id, 0.0) + idf * tf * (BM25_K1 + 1) / (tf + BM25_K1)
    order = sorted(found, key=lambda item_id: -scores[item_id])  # stable: ties keep the order met
    return [(found[item_id], scores[item_id], item_id in identified) for item_id in order]


def rare_bound(total: int) -> int:
    """How many of `total` items may hold a name or number for it to be rare:
    `RARE_AT_MOST`, and no more than one in twenty (at least one), so that in a small
    store a name every note holds is not rare ([ADR-0104][adr-0104-d1]).

    Examples:
        >>> rare_bound(35), rare_bound(500), rare_bound(100_000)
        (1, 25, 128)
    """
    return min(RARE_AT_MOST, max(1, total // 20))


def _fused(meaning: list[Recalled], words: list[tuple[MemoryItem, float, bool]], k: int) -> list[HybridRecalled]:
    """The top `k` of the two rankings fused by reciprocal rank."""
    by_meaning = {hit.item.id: (rank, hit) for rank, hit in enumerate(meaning, 1)}
    by_words = {item.id: (rank, item, score, named) for rank, (item, score, named) in enumerate(words, 1)}
    fused: list[HybridRecalled] = []
    for item_id in dict.fromkeys([*by_meaning, *by_words]):
        m = by_meaning.get(item_id)
        w = by_words.get(item_id)
        weight = IDENTIFIER_WEIGHT if w is not None and w[3] else 1
        score = (0.0 if m is None else 1 / (RRF_K + m[0])) + (0.0 if w is None else weight / (RRF_K + w[0]))
        if m is not None:
            item = m[1].item
        else:
            assert w is not None  # the id came from one ranking or the other
            item = w[1]
        fused.append(
            HybridRecalled(
                item=item,
                score=score,
                meaning_rank=None if m is None else m[0],
                meaning_score=None if m is None else m[1].score,
                words_rank=None if w is None else w[0],
                words_score=None if w is None else w[2],
                identified=w is not None and w[3],
            )
        )
    fused.sort(key=_order)
    return fused[:k]


def _order(hit: HybridRecalled) -> tuple[float, float, float]:
    return (-hit.score, hit.meaning_rank or math.inf, hit.words_rank or math.inf)
