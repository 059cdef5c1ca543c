"""`recall`: the items most like a text in meaning, or by words and meaning with
`--hybrid`, one JSON line each with its score.

Governed by [ADR-0102][adr-0102] and [ADR-0104][adr-0104].
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, NamedTuple

from lionmem.adapters.transfer import item_line
from lionmem.cli._output import note_if_empty, stdout_takes_any_text
from lionmem.protocols.hybrid import HybridRecalled


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
    if not found:
        await note_if_empty(store)
    return 0


_PARTS = tuple(field.name for field in dataclasses.fields(HybridRecalled) if field.name not in ("item", "score"))
"""What a hybrid line adds: the fields of `HybridRecalled` but its item and score."""
