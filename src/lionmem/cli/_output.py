"""Writing items as JSON lines: one item a line, whatever stdout can encode.

Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

import codecs
import json
import sys

from lionmem._internal.json_values import dumps
from lionmem.protocols.memory import MemoryItem

_FIELDS = tuple(MemoryItem.model_fields)

# JSON leaves these unescaped, but many line readers (Python's `splitlines` among them)
# end a line at each; escaped, one item is always one line.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


_ascii_dumps = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode


def stdout_takes_any_text() -> bool:
    """Whether stdout encodes every character: UTF-8, or a stream of str with no
    encoding at all. A pipe on Windows, or PYTHONIOENCODING=latin-1, does not."""
    encoding = getattr(sys.stdout, "encoding", None)
    return encoding is None or codecs.lookup(encoding).name == "utf-8"


def item_line(item: MemoryItem, *, ascii_only: bool = False) -> str:
    """One item as one line of JSON, without the line's end.

    Not model_dump_json: pydantic writes at most 255 levels of content, and the
    durable stores keep up to MAX_NESTING. With `ascii_only`, for a stream that cannot
    take every character, JSON's own escapes keep the line valid JSON of the same value.
    """
    fields = {name: getattr(item, name) for name in _FIELDS}
    fields["id"] = str(item.id)
    line = (_ascii_dumps if ascii_only else dumps)(fields)
    # Rare, and translate() looks up every character: only a line holding one pays.
    if "\x85" in line or "\u2028" in line or "\u2029" in line:
        return line.translate(_LINE_BREAKS)
    return line


def print_items(items: list[MemoryItem]) -> None:
    ascii_only = not stdout_takes_any_text()
    for item in items:
        print(item_line(item, ascii_only=ascii_only))
