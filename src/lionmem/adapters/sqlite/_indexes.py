"""What the SQLite store's index tables hold for an item: its text as the trigram index
reads it, its distinct tags, a row for each metadata value with its kind, and a row
for each term hybrid recall ranks by.

The writes fill the tables with these, and the planner asks them in the same terms.
Governed by [ADR-0096][adr-0096].
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from lionmem.protocols.hybrid import term_counts

__all__ = ["INT64", "MetaRow", "index_rows", "indexable", "term_rows"]

INT64 = range(-(2**63), 2**63)
"""The integers a metadata row holds as a value; SQL compares them exactly."""


def indexable(folded: str) -> str:
    """`folded` as the trigram index keeps it.

    FTS5 stops reading text at a NUL, so it is indexed as U+0001. The index only
    narrows the candidates and instr() on the real text decides, so the stand-in
    cannot mislead."""
    return folded.replace("\x00", "\x01")


def _meta_row(value: object) -> tuple[str, object]:
    """The (kind, comparable value) of a metadata value for the narrowing index."""
    if value is None:
        return "null", None
    if value is True or value is False:
        return ("true" if value else "false"), int(value)
    if type(value) is int:
        return ("integer", value) if value in INT64 else ("bigint", None)
    if type(value) is float:
        return "real", value
    if type(value) is str:
        return "text", value
    return ("array" if type(value) is list else "object"), None


MetaRow = tuple[str, str, object]
"""`(key, kind, comparable value)` of one metadata entry in the narrowing index."""


def index_rows(tags: list[str], metadata: dict[str, Any]) -> tuple[list[str], list[MetaRow]]:
    """The distinct tags and the metadata rows that index an item."""
    return list(dict.fromkeys(tags)), [(key, *_meta_row(value)) for key, value in metadata.items()]


def term_rows(texts: Iterable[tuple[int, str]]) -> list[tuple[int, str, int]]:
    """`(seq, term, how often)` for each distinct term of each `(seq, folded text)`
    ([ADR-0104][adr-0104])."""
    return [(seq, term, tf) for seq, folded in texts for term, tf in term_counts(folded).items()]
