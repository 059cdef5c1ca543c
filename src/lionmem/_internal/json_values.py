"""Which Python values are JSON values that come back exactly, and their JSON text.

The durable stores keep content, tags and metadata as JSON, and the command line
reads and writes it; both hold values to the same rules. Governed by
[ADR-0096][adr-0096].
"""

from __future__ import annotations

import json
import math
import re
import sys
from typing import Any, cast

from pydantic_core import from_json

from lionmem._internal.arguments import kind_of

__all__ = ["LONE_SURROGATE", "MAX_NESTING", "check_json", "dumps", "loads"]

_dumps = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
_json_loads = json.JSONDecoder().decode


def dumps(value: Any) -> str:
    """The compact JSON text of a value `check_json` accepts, as the stores write it."""
    return _dumps(value)


def loads(text: str) -> Any:
    """Decode one stored JSON column.

    pydantic-core's parser is the faster of the two ([ADR-0096][adr-0096] records
    by how much) and gives the same values (floats bit-exact, integers unbounded);
    it refuses nesting deeper than about 200 levels, which the standard library
    then decodes.
    """
    try:
        return from_json(text)
    except ValueError:
        return _json_loads(text)


LONE_SURROGATE = re.compile("[\ud800-\udfff]")
"""Matches a lone surrogate: a code point with no UTF-8 form, so in no stored text."""


MAX_NESTING = 500
"""How many lists and objects deep content and metadata may nest. Checking, encoding,
matching (`str(content)`) and decoding a value each spend one level of Python's
recursion limit (1,000 by default) per level of nesting, on top of the caller's
stack; half of it is left to the caller, so that what was stored can be read back."""


_FEWEST_DIGITS_BITS = 2_100
"""Integers up to this many bits have fewer decimal digits than any limit
`sys.set_int_max_str_digits` accepts (640 at the least), so JSON can always write them."""


def _check_digits(value: int, path: str) -> None:
    try:
        str(value)
    except ValueError:
        raise ValueError(
            f"{path} is an integer of more than {sys.get_int_max_str_digits()} digits, "
            "more than Python writes as text (sys.set_int_max_str_digits)"
        ) from None


def check_json(value: object, path: str, *, allow_nul: bool = True) -> None:
    """Raise `TypeError` naming `path` unless `value` round-trips through JSON exactly
    (and, with `allow_nul=False`, holds no U+0000 in any string or key), or
    `ValueError` if it nests more than `MAX_NESTING` lists and objects deep or holds
    an integer with more digits than Python writes as text (4,300 by default).

    A string must be Unicode text: a lone surrogate has no UTF-8 form to store.
    """
    _check_json(value, path, allow_nul, MAX_NESTING, path)


def _check_json(value: object, path: str, allow_nul: bool, levels: int, root: str) -> None:
    """`check_json` with `levels` of nesting left to the part of `root` at `path`."""
    kind = type(value)
    if kind is str:
        text = cast(str, value)
        if not allow_nul and "\x00" in text:
            raise TypeError(f"{path} holds the character U+0000, which this store cannot keep")
        if not text.isascii() and (found := LONE_SURROGATE.search(text)):
            raise TypeError(f"{path} holds the lone surrogate U+{ord(found.group()):04X}, which is not text")
        return
    if kind is int:
        if cast(int, value).bit_length() > _FEWEST_DIGITS_BITS:
            _check_digits(cast(int, value), path)
        return
    if value is None or kind is bool:
        return
    if kind is float:
        if not math.isfinite(cast(float, value)):
            raise TypeError(f"{path} is {value!r}; NaN and infinity are not JSON values")
        return
    if kind is not list and kind is not dict:
        raise TypeError(f"{path} is {kind_of(value)}, not a JSON value")
    if not levels:
        raise ValueError(
            f"{root} nests lists and objects more than {MAX_NESTING} levels deep; "
            f"this store keeps at most {MAX_NESTING}"
        )
    if kind is list:
        for index, element in enumerate(cast("list[object]", value)):
            _check_json(element, f"{path}[{index}]", allow_nul, levels - 1, root)
        return
    for key, element in cast("dict[object, object]", value).items():
        if type(key) is not str:
            raise TypeError(f"{path} has a key {key!r}; JSON object keys are strings")
        _check_json(key, f"{path} key {key!r}", allow_nul, levels, root)
        _check_json(element, f"{path}[{key!r}]", allow_nul, levels - 1, root)
