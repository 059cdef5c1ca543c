"""Writing items as JSON lines: one item a line, whatever stdout can encode.

Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

import codecs
import json
import sys

from lionmem._internal.json_values import dumps
from lionmem.protocols.memory import MemoryItem

# JSON leaves these unescaped, but many line readers (Python's `splitlines` among them)
# end a line at each; escaped, one item is always one line.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


_ascii_dumps = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode


def stdout_takes_any_text() -> bool:
    """Whether stdout encodes every character: UTF-8, or a stream of str with no
    encoding at all. A pipe on Windows, or PYTHONIOENCODING=latin-1, does not."""
    encoding = getattr(sys.stdout, "encoding", None)
    return encoding is None or codecs.lookup(encoding).name == "utf-8"


def print_items(items: list[MemoryItem]) -> None:
    # Not model_dump_json: pydantic writes at most 255 levels of content, and the
    # durable stores keep up to MAX_NESTING. Where stdout cannot take every character,
    # JSON's own escapes keep each line valid JSON of the same value.
    encode = dumps if stdout_takes_any_text() else _ascii_dumps
    for item in items:
        fields = {name: getattr(item, name) for name in MemoryItem.model_fields}
        fields["id"] = str(item.id)
        print(encode(fields).translate(_LINE_BREAKS))
