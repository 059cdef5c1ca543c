"""Reading the JSON values, ids, `KEY=VALUE` pairs and filters typed on the command
line, held to the rules a durable store keeps.

Governed by [ADR-0098][adr-0098]; the filter operators by [ADR-0099][adr-0099].
"""

from __future__ import annotations

import importlib
import json
import math
import re
from collections.abc import Callable
from typing import Any, NoReturn, cast
from uuid import UUID

from lionmem._internal.json_values import MAX_NESTING
from lionmem.protocols.filters import Condition, Ge, Gt, In, Le, Lt, Missing, Ne, NotIn, Present


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
    while containers := [cast("list[object] | dict[str, object]", v) for v in level if isinstance(v, (list, dict))]:
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


# Each operator of `--filter` and what it builds, the words after a space.
_SYMBOLS: list[tuple[str, Callable[[Any], Condition]]] = [("!=", Ne), (">=", Ge), ("<=", Le), (">", Gt), ("<", Lt)]
_MEMBERSHIP: list[tuple[str, Callable[[list[Any]], Condition]]] = [(" not in ", NotIn), (" in ", In)]
_PRESENCE: list[tuple[str, Callable[[], Condition]]] = [(" present", Present), (" missing", Missing)]


def filters(given: list[str] | None) -> dict[str, Any]:
    """`--filter` expressions: `KEY=TEXT` and `KEY:=JSON` for equality; `KEY!=V`,
    `KEY>V`, `KEY>=V`, `KEY<V` and `KEY<=V`; `KEY in V,V...` and `KEY not in V,V...`
    (or a JSON list); `KEY present` and `KEY missing`. Spaces around the key, the
    operator and each value are trimmed. A `V` is JSON where it reads as JSON (`3`,
    `true`, `"3"`), else the text as it is; a value that looks like a number, a list
    or a quoted string but does not read as one is an error, as are an empty value
    and an operator written backwards (`=>`). The first operator ends the key; a key
    holding one is written as a JSON string (`'"a>b">=3'`). See
    [ADR-0099][adr-0099-d8]."""
    found: dict[str, Any] = {}
    for expression in given or ():
        key, condition = _filter(expression)
        if key in found:
            raise ValueError(f"--filter gives the key {key!r} twice")
        found[key] = condition
    return found


FORMS = (
    "write KEY=TEXT, KEY:=JSON, 'KEY>=V' (or != > < <=), 'KEY in V,V', 'KEY not in V,V', 'KEY present' or 'KEY missing'"
)
"""The forms `--filter` reads, for its errors."""

_KEY_ENDS = (":=", "=", *(symbol for symbol, _ in _SYMBOLS), *(word for word, _ in _MEMBERSHIP))
"""Where a key ends, unquoted: at the first of these, or at a `_PRESENCE` word that ends the expression."""

_BACKWARDS = {"=>": ">=", "=<": "<=", "=!": "!=", "==": "="}
"""Operators written backwards, each with the one meant."""

_OPERATOR_CHARACTERS = "=<>!"
_MEANT = {"<>": "!=", "><": "!=", "!": "!="}
"""Operators from other languages, or cut short, each with the one meant."""

_LOOKS_LIKE_JSON = re.compile(r"[-+]?(?:[0-9]|\.[0-9])|[-+]?(?i:nan|inf|infinity)$|[\[{\"]")
"""The start of a value meant as a number, a list, an object or a quoted string."""


def _filter(expression: str) -> tuple[str, Any]:
    stripped = expression.strip()
    if stripped.startswith('"'):
        try:
            key, end = json.JSONDecoder().raw_decode(stripped)
        except ValueError:
            raise ValueError(f"--filter {expression!r} opens a quoted key it does not close") from None
    else:
        ends = [stripped.find(token) for token in _KEY_ENDS if token in stripped]
        ends += [len(stripped) - len(word) for word, _ in _PRESENCE if stripped.endswith(word)]
        ends += [0 for word, _ in _PRESENCE if stripped == word.strip()]
        end = min(ends, default=-1)
        key = stripped[: max(end, 0)].strip()
    if end < 0 or not key:
        problem = "has no operator" if end < 0 else "names no key"
        raise ValueError(f"--filter {expression!r} {problem}; {FORMS}")
    rest = stripped[end:].lstrip()
    try:
        if key[-1] in _OPERATOR_CHARACTERS and not stripped.startswith('"'):  # `! =`: an operator split
            typed, meant = f"{key[-1]} {rest[:1]}", _nearest(key[-1] + rest[:1])
            raise ValueError(f"{typed!r} is no operator; for {meant!r} write {key[:-1].rstrip()}{meant}V")
        words = key.split()
        if rest.startswith("in ") and len(words) > 1 and words[-1] == "not" and not stripped.startswith('"'):
            raise ValueError(f"for 'not in' write {' '.join(words[:-1])} not in V,V, one space apart")
        if rest.startswith(":="):
            given = _given(rest.removeprefix(":="))
        else:
            return key, _condition(rest, key)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"--filter {expression!r}: {exc}; {FORMS}") from None
    shown = given if len(given) <= 40 else given[:37] + "..."
    try:
        return key, json_value(given, f"the value {shown!r}")
    except ValueError as exc:
        raise ValueError(f"--filter {key!r}:=...: {exc}; for the text, write {key}=TEXT; {FORMS}") from None


def _nearest(typed: str) -> str:
    """The operator meant by `typed`, an operator written with one character too many
    or from another language: the longest operator it begins with."""
    meant = _MEANT.get(typed.strip())
    if meant is not None:
        return meant
    symbols = sorted((symbol for symbol, _ in _SYMBOLS), key=len, reverse=True)
    return next((symbol for symbol in symbols if typed.startswith(symbol)), "=")


def _condition(rest: str, key: str) -> Any:
    """The operator and value that follow the key: a `Condition`, or the value that
    equality compares with."""
    for backwards, meant in _BACKWARDS.items():
        if rest.startswith(backwards):
            raise ValueError(f"{backwards!r} is no operator; for {meant!r} write {key}{meant}V")
    if rest.startswith("="):
        return _given(rest.removeprefix("="))
    for word, absent in _PRESENCE:
        if rest == word.strip():
            return absent()
    for word, members in _MEMBERSHIP:
        if rest.startswith(word.lstrip()):
            return members(_members(rest.removeprefix(word.lstrip())))
    for symbol, compared in _SYMBOLS:
        if rest.startswith(symbol):
            value = rest.removeprefix(symbol)
            after = value.lstrip()[:1]
            if after in tuple(_OPERATOR_CHARACTERS):  # `<>`, `>==`, `!==`, `< =`: a typo
                typed, meant = symbol + value[: len(value) - len(value.lstrip())] + after, _nearest(symbol + after)
                raise ValueError(f"{typed!r} is no operator; for {meant!r} write {key}{meant}V")
            return compared(_value(value))
    raise ValueError(f"no operator follows the key {key!r}")


def _given(text: str) -> str:
    """`text` trimmed; an empty value is an error."""
    value = text.strip()
    if not value:
        raise ValueError("gives an empty value")
    return value


def _value(text: str) -> Any:
    """`text`, trimmed, as JSON where it reads as JSON, else the text itself; one that
    looks like JSON but does not read as it is an error."""
    value = _given(text)
    try:
        return json_value(value, repr(value))
    except ValueError:
        if _LOOKS_LIKE_JSON.match(value):
            raise
        return value


def _members(text: str) -> list[Any]:
    """A JSON list, or values separated by commas, each read as `_value` reads it."""
    given = _given(text)
    if given.startswith("["):
        value = json_value(given, "the list")
        if not isinstance(value, list):  # pragma: no cover - a JSON text starting with [ is a list
            raise ValueError(f"{given!r} is not a list")
        return cast("list[object]", value)
    return [_value(part) for part in given.split(",")]


_DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)([smhdw])")
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


def load_reference(reference: str) -> Any:
    """Import `module:attribute`, raising `ValueError` with what was wrong."""
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{reference!r} is not of the form module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attribute!r}") from None
