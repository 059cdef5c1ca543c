"""Reading the JSON values, ids and `KEY=VALUE` pairs typed on the command line,
held to the rules a durable store keeps.

Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, NoReturn, cast
from uuid import UUID

from lionmem._internal.json_values import MAX_NESTING


def _not_json(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not a JSON value")


def _finite(number: str) -> float:
    value = float(number)
    if math.isinf(value):
        raise ValueError(f"{number} is beyond the range of a float")
    return value


def json_value(text: str, what: str) -> Any:
    """Read a JSON value typed on the command line; a durable store's rules on depth
    apply to every store, so that what is accepted does not depend on the Python
    version (from 3.12 the parser reads deeper than the recursion limit)."""
    too_deep = f"{what} nests lists and objects more than {MAX_NESTING} levels deep"
    try:
        value = json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except ValueError as exc:
        raise ValueError(f"{what} is not JSON: {exc}") from None
    except RecursionError:
        raise ValueError(too_deep) from None
    if _nesting(value) > MAX_NESTING:
        raise ValueError(too_deep)
    return value


def _nesting(value: object) -> int:
    """How many lists and objects deep a parsed JSON value is, without recursion."""
    depth = 0
    level: list[object] = [value]
    while containers := [
        cast("list[object] | dict[str, object]", v) for v in level if isinstance(v, (list, dict))
    ]:
        depth += 1
        level = [child for c in containers for child in (c.values() if isinstance(c, dict) else c)]
    return depth


def pairs(given: list[str] | None, option: str) -> dict[str, Any]:
    """`KEY=TEXT` gives a string, `KEY:=JSON` any JSON value; each key once."""
    pairs: dict[str, Any] = {}
    for pair in given or ():
        key, equals, value = pair.partition("=")
        is_json = key.endswith(":")
        key = key.removesuffix(":")
        if not equals or not key:
            raise ValueError(f"{option} {pair!r} is not KEY=TEXT or KEY:=JSON")
        if key in pairs:
            raise ValueError(f"{option} gives the key {key!r} twice")
        pairs[key] = json_value(value, f"{option} {key!r}") if is_json else value
    return pairs


_DURATION = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def seconds_of(text: str) -> float:
    """A duration such as `90s`, `15m`, `12h`, `30d` or `2w`, in seconds.

    Raises:
        ValueError: not a number followed by one of s, m, h, d, w.
    """
    matched = _DURATION.fullmatch(text.strip())
    if matched is None:
        raise ValueError(f"--older-than {text!r} is not a duration such as 90s, 15m, 12h, 30d or 2w")
    number, unit = matched.groups()
    return float(number) * _UNIT_SECONDS[unit]


def uuid_of(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a UUID") from None
