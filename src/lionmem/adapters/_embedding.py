"""What the durable stores share of recall: their embedding settings, checked when a
store is opened, and the one rule for a database whose vectors another embedder made.

Governed by [ADR-0102][adr-0102-d4].
"""

from __future__ import annotations

from lionmem._internal.arguments import require_type
from lionmem.errors import EmbedderMismatchError
from lionmem.protocols.recall import Embedder, TextOf, check_embedder

__all__ = ["checked_settings", "refuse_another_embedder"]


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
    return check_embedder(embedder, text_of)


def refuse_another_embedder(recorded: tuple[str, int] | None, embedder: Embedder, holder: str) -> None:
    """Raise unless `recorded`, the `(identity, dimensions)` a database holds (or
    `None` for none yet), is `embedder`'s.

    Raises:
        EmbedderMismatchError: naming both embedders, and `holder`, the database.
    """
    if recorded is not None and recorded != (embedder.identity, embedder.dimensions):
        raise EmbedderMismatchError(
            f"the vectors in {holder} were made by {recorded[0]!r} ({recorded[1]} dimensions), "
            f"not by {embedder.identity!r} ({embedder.dimensions}); open it with that embedder, "
            "or with reembed=True to make every vector again with this one"
        )
