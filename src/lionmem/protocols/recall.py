"""Semantic recall: the `Embedder` that turns text into vectors, the optional
`RecallStore` extension of `MemoryStore`, and its result, `Recalled`.

Nothing here loads numpy or a model; a store does when it is given an embedder.
Governed by [ADR-0102][adr-0102].
"""

from __future__ import annotations

import hashlib
import importlib
import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, cast, runtime_checkable

from pydantic import ValidationError

from lionmem._internal.arguments import kind_of
from lionmem.errors import NoEmbedderError
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore

if TYPE_CHECKING:
    from lionmem._internal.vectors import Matrix

__all__ = [
    "Embedded",
    "Embedder",
    "Keep",
    "RecallMany",
    "RecallStore",
    "Recalled",
    "TextOf",
    "check_embedder",
    "check_k",
    "check_min_score",
    "check_queries",
    "embed_items",
    "embed_queries",
    "embedder_of",
    "recall_many",
    "recall_query",
    "recalled",
    "text_digest",
    "text_to_embed",
]

TextOf = Callable[["MemoryItem"], str]
"""What a store embeds of an item; `str(item.content)` unless the store is given another."""

Keep = Callable[["MemoryItem"], bool]
"""Whether an item meets a recall's tags and filters."""


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors of one fixed length, in one batched call.

    `identity` names the model and its settings: a durable store records it with
    its vectors and refuses to open with an embedder of another identity, since
    vectors of two models cannot be compared. See [ADR-0102][adr-0102].
    """

    @property
    def identity(self) -> str:
        """The model and settings, such as `"wordllama:l2_supercat:256"`."""
        ...

    @property
    def dimensions(self) -> int:
        """The length of every vector `embed` returns."""
        ...

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector of `dimensions` floats for each text, in order."""
        ...


@dataclass(frozen=True, slots=True)
class Recalled:
    """One item `recall` found, with its score: the cosine similarity of its vector
    and the query's, from -1 to 1."""

    item: MemoryItem
    """The item, as `search` returns it."""
    score: float
    """The cosine similarity; results come highest first."""


@runtime_checkable
class RecallStore(MemoryStore, Protocol):
    """A [`MemoryStore`][lionmem.protocols.memory.MemoryStore] that recalls by
    meaning: the `k` items whose vectors are most like the query's, among those its
    `tags` and `filters` match.

    Tags and filters mean what they mean in `search` and narrow the items before the
    top `k` is taken, so a selective filter still gives `k` items when that many
    match. Ties keep insertion order. `min_score` keeps only results scoring at least
    that much: the top `k` cut where the scores fall below it. See
    [ADR-0102][adr-0102].
    """

    @property
    def embedder(self) -> Embedder | None:
        """The store's embedder, or `None` for a store made without one, which
        cannot recall."""
        ...

    async def recall(
        self,
        query: str | Sequence[float],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[Recalled]:
        """The `k` best matches of `query` (a text the embedder embeds, or a vector
        of its dimensions), highest score first, none scoring below `min_score`."""
        ...


class RecallMany:
    """What a store inherits to answer many questions in one call:
    [`recall_many`][lionmem.protocols.recall.recall_many] as a method
    ([ADR-0102][adr-0102-d6])."""

    __slots__ = ()

    async def recall_many(
        self,
        queries: Sequence[str | Sequence[float]],
        k: int = 10,
        *,
        tags: list[str] | None = None,
        filters: dict[str, Any] | None = None,
        min_score: float | None = None,
    ) -> list[list[Recalled]]:
        """What `recall` gives for each of `queries`, in order, their texts embedded in
        one call: see [`recall_many`][lionmem.protocols.recall.recall_many].

        Raises:
            NoEmbedderError: the store was made without an embedder.
            TypeError, ValueError: as `recall_many` raises them.
        """
        # Every class that inherits this is a RecallStore.
        return await recall_many(cast("RecallStore", self), queries, k, tags=tags, filters=filters, min_score=min_score)


async def recall_many(
    store: RecallStore,
    queries: Sequence[str | Sequence[float]],
    k: int = 10,
    *,
    tags: list[str] | None = None,
    filters: dict[str, Any] | None = None,
    min_score: float | None = None,
) -> list[list[Recalled]]:
    """What `store.recall(query, k, tags=tags, filters=filters, min_score=min_score)`
    gives for each of `queries`, in order. The texts among them go to the embedder in
    one call, and each is then recalled by its vector, which gives what recall by its
    text gives wherever the embedder embeds a text alike alone and in a batch
    ([ADR-0102][adr-0102-d6]). Every argument is checked before anything is embedded.

    Raises:
        NoEmbedderError: the store cannot recall.
        TypeError: `queries` is not a list or tuple, `k` not an int, `min_score` not
            a number, or `tags` or `filters` not what `MemoryQuery` takes; a query
            is neither a str nor a vector (raised by `recall`).
        ValueError: `k` is less than 1, `min_score` outside -1 to 1, or the
            embedder gave vectors of another count or length, or with NaN or
            infinity.
    """
    embedder = embedder_of(store)
    asked = check_queries(queries)
    check_k(k)
    recall_query(tags, filters)
    check_min_score(min_score)
    return [
        await store.recall(query, k, tags=tags, filters=filters, min_score=min_score)
        for query in await embed_queries(embedder, asked)
    ]


def embedder_of(store: RecallStore) -> Embedder:
    """The embedder `store` recalls with ([ADR-0102][adr-0102-d2]).

    Raises:
        NoEmbedderError: the store has none, so cannot recall.
    """
    embedder = store.embedder
    if embedder is None:
        raise NoEmbedderError(f"the store cannot recall: {type(store).__name__} has no embedder")
    return embedder


def check_queries(queries: object) -> list[str | Sequence[float]]:
    """`queries` as a list of questions ([ADR-0102][adr-0102-d6]).

    Raises:
        TypeError: `queries` is not a list or tuple.
    """
    if not isinstance(queries, list | tuple):
        raise TypeError(f"queries must be a list or tuple of questions, got {kind_of(queries)}")
    return list(cast("list[str | Sequence[float]]", queries))


async def embed_queries(embedder: Embedder, queries: list[str | Sequence[float]]) -> list[str | Sequence[float]]:
    """`queries` with each text replaced by the vector the embedder gives it, all in
    one call (none when no query is a text) ([ADR-0102][adr-0102-d6]).

    Raises:
        ValueError: the embedder gave vectors of another count or length, or with
            NaN or infinity.
    """
    texts = [query for query in queries if isinstance(query, str)]
    if not texts:
        return queries
    from lionmem._internal.vectors import as_matrix

    given = await embedder.embed(texts)
    as_matrix(given, len(texts), embedder.dimensions, "the embedder")  # checked as recall checks one
    vectors = iter(given)
    return [next(vectors) if isinstance(query, str) else query for query in queries]


def check_k(k: object) -> int:
    """`k` as a count of results.

    Raises:
        TypeError: `k` is not an int (a bool is not taken).
        ValueError: `k` is less than 1.
    """
    if type(k) is not int:
        raise TypeError(f"k must be an int, got {kind_of(k)}")
    if k < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    return k


def check_min_score(min_score: object) -> float | None:
    """`min_score` as the least score a recall keeps, or `None` for no floor
    ([ADR-0102][adr-0102-d6]).

    Raises:
        TypeError: `min_score` is neither `None` nor an int or float (a bool is not
            taken).
        ValueError: `min_score` is NaN or outside -1 to 1, where no cosine is.
    """
    if min_score is None:
        return None
    if type(min_score) not in (int, float):
        raise TypeError(f"min_score must be a number from -1 to 1, got {kind_of(min_score)}")
    floor = float(cast("float", min_score))
    if math.isnan(floor) or not -1 <= floor <= 1:
        raise ValueError(f"min_score must be from -1 to 1, got {min_score!r}")
    return floor


def recalled(ranked: Iterable[tuple[MemoryItem, float]], floor: float | None) -> list[Recalled]:
    """The results of a ranking, best first, cut where the scores fall below `floor`
    (`check_min_score`'s): how every store applies `min_score`, after its top `k`
    ([ADR-0102][adr-0102-d6])."""
    return [Recalled(item, score) for item, score in ranked if floor is None or score >= floor]


def check_embedder(embedder: Embedder | None, text_of: TextOf | None) -> Embedder:
    """`embedder`, checked with `text_of`, for a store that is to recall.

    Raises:
        TypeError: `embedder` is not an `Embedder`, or `text_of` is not callable.
        ImportError: numpy is not installed; the message names the extra.
    """
    if not isinstance(embedder, Embedder):
        raise TypeError(
            f"embedder must be an Embedder (identity, dimensions and async embed), got {type(embedder).__name__}"
        )
    if text_of is not None and not callable(text_of):
        raise TypeError(f"text_of must be callable, got {type(text_of).__name__}")
    try:
        importlib.import_module("numpy")
    except ImportError as exc:
        raise ImportError(f"recall needs numpy: pip install 'lionmem[recall]' ({exc})") from exc
    return embedder


def text_to_embed(item: MemoryItem, text_of: TextOf | None) -> str:
    """What a store embeds of `item`: `text_of(item)`, or `str(item.content)`.

    Raises:
        TypeError: `text_of` gave something other than a str.
    """
    text = str(item.content) if text_of is None else text_of(item)
    if not isinstance(text, str):
        raise TypeError(f"text_of must return a str, got {type(text).__name__} for item {item.id}")
    return text


def text_digest(text: str) -> bytes:
    """The 8-byte BLAKE2b digest of `text`: a store keeps it beside the vector made from
    the text, to know which text that was ([ADR-0102][adr-0102-d4]).

    Examples:
        >>> text_digest("Paris") == text_digest("Paris") != text_digest("paris")
        True
    """
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()


class Embedded(NamedTuple):
    """A batch of items embedded: a unit vector and a text digest for each, in order."""

    vectors: Matrix
    """The unit vectors, a float32 row each."""
    digests: list[bytes]
    """`text_digest` of the text each vector was made from."""


async def embed_items(embedder: Embedder, text_of: TextOf | None, items: Sequence[MemoryItem]) -> Embedded:
    """The unit vectors of `items`, a row each, of what `text_to_embed` gives, with the
    digest of each text; for a store whose embedder `check_embedder` passed, so numpy
    is there. This is the one way a store embeds items.

    Raises:
        TypeError: `text_of` gave something other than a str.
        ValueError: the embedder gave vectors of another count, length, or with
            NaN or infinity.
    """
    from lionmem._internal.vectors import as_matrix, unit_rows

    texts = [text_to_embed(item, text_of) for item in items]
    given = await embedder.embed(texts)
    vectors = unit_rows(as_matrix(given, len(texts), embedder.dimensions, "the embedder"))
    return Embedded(vectors, [text_digest(text) for text in texts])


def recall_query(tags: object, filters: object) -> MemoryQuery:
    """The query of a recall's `tags` and `filters`, which mean what they mean in
    `search` ([ADR-0102][adr-0102-d3]).

    Raises:
        TypeError: `tags` is not a list of str, or `filters` not a dict, as
            `MemoryQuery` takes them.
    """
    try:
        return MemoryQuery(tags=tags, filters=filters, limit=0)  # type: ignore[arg-type]
    except ValidationError as exc:
        raise TypeError(f"tags must be a list of str and filters a dict, as in MemoryQuery: {exc}") from None
