"""What the durable stores share of recall: their embedding settings, checked when a
store is opened, and the unit vectors of a batch of items.

numpy loads only when a store is given an embedder. Governed by
[ADR-0102][adr-0102-d4].
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING

from lionmem._internal.arguments import require_type
from lionmem.protocols.memory import MemoryItem
from lionmem.protocols.recall import Embedder, TextOf, check_embedder, text_to_embed

if TYPE_CHECKING:
    from lionmem._internal.vectors import Matrix

__all__ = ["checked_settings", "unit_vectors"]


def checked_settings(embedder: Embedder | None, text_of: TextOf | None, reembed: bool) -> Embedder | None:
    """The embedder of a store opened with these, checked, or `None` without one.

    Raises:
        TypeError: `embedder` is not an `Embedder`, `text_of` not callable, or
            `reembed` not a bool.
        ImportError: numpy is not installed; the message names the extra.
    """
    require_type(reembed, "reembed", bool)
    if embedder is None and text_of is None and not reembed:
        return None
    checked = check_embedder(embedder, text_of)
    try:
        importlib.import_module("numpy")
    except ImportError as exc:
        raise ImportError(f"recall needs numpy: pip install 'lionmem[recall]' ({exc})") from exc
    return checked


async def unit_vectors(embedder: Embedder, text_of: TextOf | None, items: Sequence[MemoryItem]) -> Matrix:
    """The unit vectors of `items`, a row each, from what `text_of` (or `str` of the
    content) gives.

    Raises:
        TypeError: `text_of` gave something other than a str.
        ValueError: the embedder gave vectors of another count, length, or with
            NaN or infinity.
    """
    from lionmem._internal.vectors import as_matrix, unit_rows

    texts = [text_to_embed(item, text_of) for item in items]
    given = await embedder.embed(texts)
    return unit_rows(as_matrix(given, len(texts), embedder.dimensions, "the embedder"))
