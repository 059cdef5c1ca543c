"""Embedders for semantic recall: a small offline model, any function of your own, and
a deterministic one for tests.

`WordLlamaEmbedder` needs the `recall` extra (`pip install "lionmem[recall]"`); it
loads its weights and tokenizer from the installed package and never downloads.
Importing this module loads neither numpy nor a model. Governed by
[ADR-0102][adr-0102].
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import re
import threading
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeAlias, cast

from lionmem._internal.arguments import kind_of, require_type

__all__ = ["EmbedFunction", "FunctionEmbedder", "HashingEmbedder", "VectorArray", "Vectors", "WordLlamaEmbedder"]


class VectorArray(Protocol):
    """An array of vectors with a `tolist()`, such as numpy's."""

    def tolist(self) -> Any:
        """The rows as lists of floats."""
        ...


Vectors: TypeAlias = Sequence[Sequence[float]] | VectorArray
"""What an embedding function gives: one vector per text, as lists or an array."""

EmbedFunction: TypeAlias = Callable[[list[str]], Vectors | Awaitable[Vectors]]
"""A function, plain or async, from a list of texts to one vector for each."""


def _rows(vectors: object) -> list[list[float]]:
    """Vectors as lists: a numpy array through its `tolist`, anything else row by row.
    The store checks the numbers."""
    tolist = getattr(vectors, "tolist", None)
    if callable(tolist):
        return cast("list[list[float]]", tolist())
    if isinstance(vectors, str | bytes) or not isinstance(vectors, Sequence):
        raise TypeError(f"an embedder must give a sequence of vectors, got {kind_of(vectors)}")
    return [list(cast("Sequence[float]", row)) for row in cast("Sequence[object]", vectors)]


class FunctionEmbedder:
    """Any function from texts to vectors as an [`Embedder`][lionmem.protocols.recall.Embedder]:
    a hosted model's client, sentence-transformers, a local server.

    Examples:
        >>> import asyncio
        >>> def lengths(texts: list[str]) -> list[list[float]]:
        ...     return [[len(t), 1.0] for t in texts]
        >>> embedder = FunctionEmbedder(lengths, dimensions=2, identity="lengths:v1")
        >>> asyncio.run(embedder.embed(["ab", "abc"]))
        [[2, 1.0], [3, 1.0]]
    """

    def __init__(self, function: EmbedFunction, *, dimensions: int, identity: str) -> None:
        """Wrap `function`, which may be async or not.

        Raises:
            TypeError: `function` is not callable, `dimensions` not an int or
                `identity` not a str.
            ValueError: `dimensions` is less than 1, or `identity` is empty.
        """
        if not callable(function):
            raise TypeError(f"function must be callable, got {kind_of(function)}")
        require_type(dimensions, "dimensions", int)
        require_type(identity, "identity", str)
        if dimensions < 1:
            raise ValueError(f"dimensions must be at least 1, got {dimensions}")
        if not identity.strip():
            raise ValueError("identity must name the model, got an empty string")
        self.function = function
        """The function called with each batch."""
        self._dimensions = dimensions
        self._identity = identity

    @property
    def identity(self) -> str:
        """The identity given."""
        return self._identity

    @property
    def dimensions(self) -> int:
        """The dimensions given."""
        return self._dimensions

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Call the function with `texts` as a list, awaiting it if it is async."""
        given = self.function(list(texts))
        if inspect.isawaitable(given):
            given = await given
        return _rows(given)

    def __repr__(self) -> str:
        return f"FunctionEmbedder({self.function!r}, dimensions={self._dimensions}, identity={self._identity!r})"


_WORD = re.compile(r"\w+")


class HashingEmbedder:
    """A deterministic bag of words, for tests: each word, lower-cased, adds 1 to the
    dimension its hash picks. Texts sharing words score high, others 0; there is no
    model, no meaning and no randomness.

    Examples:
        >>> import asyncio
        >>> [a, b] = asyncio.run(HashingEmbedder(8).embed(["Red fox", "red FOX"]))
        >>> a == b
        True
    """

    def __init__(self, dimensions: int = 64) -> None:
        """Make vectors of `dimensions` floats.

        Raises:
            TypeError: `dimensions` is not an int.
            ValueError: `dimensions` is less than 1.
        """
        require_type(dimensions, "dimensions", int)
        if dimensions < 1:
            raise ValueError(f"dimensions must be at least 1, got {dimensions}")
        self._dimensions = dimensions

    @property
    def identity(self) -> str:
        """`hashing:` and the dimensions."""
        return f"hashing:{self._dimensions}"

    @property
    def dimensions(self) -> int:
        """The length of each vector."""
        return self._dimensions

    def vector(self, text: str) -> list[float]:
        """The vector of one text."""
        vector = [0.0] * self._dimensions
        for word in _WORD.findall(text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vector[int.from_bytes(digest, "big") % self._dimensions] += 1.0
        return vector

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector for each text."""
        return [self.vector(text) for text in texts]

    def __repr__(self) -> str:
        return f"HashingEmbedder({self._dimensions})"


_MODEL_LOCK = threading.Lock()
_MODELS: dict[int, Any] = {}
_IN_THREAD = 64
"""Batches larger than this are embedded in a worker thread, off the event loop."""


class WordLlamaEmbedder:
    """WordLlama's `l2_supercat` model: 256 (or fewer) dimensions from token
    embeddings pooled and normalised, about 25,000 short texts a second on two cores.

    The weights and tokenizer come from the installed `wordllama` package, with
    downloads turned off; the model loads once per process and dimensions, on first
    use (the Performance page measures how long). Needs `lionmem[recall]`.
    """

    def __init__(self, dimensions: int = 256) -> None:
        """Use the model cut to `dimensions`; nothing loads until the first `embed`.

        Raises:
            TypeError: `dimensions` is not an int.
            ValueError: `dimensions` is not one of 64, 128, 256.
        """
        require_type(dimensions, "dimensions", int)
        if dimensions not in (64, 128, 256):
            raise ValueError(f"dimensions must be 64, 128 or 256, got {dimensions}")
        self._dimensions = dimensions

    @property
    def identity(self) -> str:
        """`wordllama:l2_supercat:` and the dimensions."""
        return f"wordllama:l2_supercat:{self._dimensions}"

    @property
    def dimensions(self) -> int:
        """The length of each vector."""
        return self._dimensions

    def model(self) -> Any:
        """The loaded model, loading it on the first call in this process.

        Raises:
            ImportError: wordllama is not installed; the message names the extra.
        """
        with _MODEL_LOCK:
            if self._dimensions not in _MODELS:
                try:
                    import wordllama  # type: ignore[import-untyped, unused-ignore]
                except ImportError as exc:
                    raise ImportError(
                        f"WordLlamaEmbedder needs wordllama: pip install 'lionmem[recall]' ({exc})"
                    ) from exc
                folder = Path(wordllama.__file__).parent
                # The wheel keeps its tokenizer under tokenizers/, which the loader reads
                # as its cache; with downloads off, a missing file raises, never fetches.
                _MODELS[self._dimensions] = wordllama.WordLlama.load(
                    cache_dir=folder, disable_download=True, trunc_dim=self._dimensions
                )
            return _MODELS[self._dimensions]

    def _embed_now(self, texts: list[str]) -> list[list[float]]:
        model = self.model()
        if not texts:
            return []
        return cast("list[list[float]]", model.embed(texts, norm=True).tolist())

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector for each text; a large batch runs in a worker thread."""
        batch = list(texts)
        if len(batch) > _IN_THREAD:
            return await asyncio.to_thread(self._embed_now, batch)
        return self._embed_now(batch)

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder({self._dimensions})"
