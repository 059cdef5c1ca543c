"""`recall`: the items most like a text in meaning, or by words and meaning with
`--hybrid`, one JSON line each with its score, by the model `--embedder` names.

Governed by [ADR-0102][adr-0102] and [ADR-0104][adr-0104].
"""

from __future__ import annotations

import dataclasses
import json
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from lionmem._internal.arguments import kind_of
from lionmem.adapters.transfer import item_line
from lionmem.cli._input import load_reference
from lionmem.cli._output import counted, note_if_empty, progress_bar, stdout_takes_any_text
from lionmem.cli._parser import prog
from lionmem.protocols.hybrid import HybridRecalled
from lionmem.protocols.recall import Embedder

if TYPE_CHECKING:
    from tqdm import tqdm


def embedder_named(name: str, query: str) -> Telling:
    """The embedder `--embedder NAME` names, telling when it embeds stored items.

    Raises:
        ValueError: `name` names no embedder, or a model size it does not have.
    """
    if re.fullmatch(r"wordllama(:\d+)?", name):
        from lionmem.embedders import WordLlamaEmbedder

        _, _, size = name.partition(":")
        try:
            return Telling(WordLlamaEmbedder(int(size)) if size else WordLlamaEmbedder(), query)
        except ValueError as exc:
            raise ValueError(f"--embedder {name}: {exc}") from None
    try:
        found: Any = load_reference(name)  # Any: a callable's type is the user's
    except ValueError as exc:
        raise ValueError(f"--embedder {name}: {exc}; or wordllama, wordllama:DIMENSIONS") from None
    if isinstance(found, type) or (callable(found) and not isinstance(found, Embedder)):
        try:
            found = found()
        except Exception as exc:  # the user's own code, named in a usage error
            raise ValueError(f"--embedder {name}: making the embedder raised {type(exc).__name__}: {exc}") from None
    if not isinstance(found, Embedder):
        raise ValueError(
            f"--embedder {name} gave {kind_of(found)}, not an Embedder (identity, dimensions, async embed)"
        )
    return Telling(found, query)


class Telling:
    """An embedder that says on stderr when it embeds the store's items rather than
    the query, which the store does for items written without a vector, and counts
    them on a bar when stderr is a terminal."""

    def __init__(self, embedder: Embedder, query: str) -> None:
        self.embedder = embedder
        self._query: str | None = query
        self._bar: tqdm[Any] | None = None
        self.items = 0

    @property
    def identity(self) -> str:
        return self.embedder.identity

    @property
    def dimensions(self) -> int:
        return self.embedder.dimensions

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self._query is not None and list(texts) == [self._query]:
            self._query = None  # the query is embedded once; the same text again is an item's
            return await self.embedder.embed(texts)
        if self._bar is None:
            print(f"{prog()}: embedding the items that have no vector for this model yet", file=sys.stderr)
            self._bar = progress_bar(None, "embedding")
        vectors = await self.embedder.embed(texts)
        self._bar.update(len(texts))
        self.items += len(texts)
        return vectors

    def done(self) -> None:
        """Close the bar, and say how many items were embedded, if any were."""
        if self._bar is not None:
            self._bar.close()
            print(f"{prog()}: embedded {counted(self.items)}", file=sys.stderr)


class Asked(NamedTuple):
    """What `recall` was asked, checked."""

    text: str
    k: int
    tags: list[str] | None
    filters: dict[str, Any] | None
    min_score: float | None


async def recall(asked: Asked, hybrid: bool, store: Any) -> int:
    """Print each item recalled as `{"score": ..., "item": ...}`, best first; with
    `hybrid`, each ranking's rank and score between them."""
    ascii_only = not stdout_takes_any_text()
    text, k, tags, conditions, min_score = asked
    if hybrid:
        found: list[Any] = await store.recall_hybrid(text, k, tags=tags, filters=conditions, min_score=min_score)
    else:
        found = await store.recall(text, k, tags=tags, filters=conditions, min_score=min_score)
    for result in found:
        parts = (
            "".join(f", {json.dumps(name)}: {json.dumps(getattr(result, name))}" for name in _PARTS) if hybrid else ""
        )
        print(f'{{"score": {result.score:.6f}{parts}, "item": {item_line(result.item, ascii_only=ascii_only)}}}')
    store.embedder.done()  # the Telling embedder_named made for this command
    if not found:
        await note_if_empty(store)
    return 0


_PARTS = tuple(field.name for field in dataclasses.fields(HybridRecalled) if field.name not in ("item", "score"))
"""What a hybrid line adds: the fields of `HybridRecalled` but its item and score."""
