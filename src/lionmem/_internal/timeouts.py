"""Timeouts in seconds, as every lionmem setting takes them, checked and converted
for the databases, which take whole milliseconds.

Governed by [ADR-0096][adr-0096].
"""

from __future__ import annotations

import math
from typing import Final

__all__ = ["MAX_TIMEOUT", "milliseconds"]

_MAX_MS = 2**31 - 1

MAX_TIMEOUT: Final = _MAX_MS / 1000
"""The longest timeout, in seconds, that SQLite's busy timeout and PostgreSQL's
statement_timeout hold: 2**31 - 1 milliseconds, about 24.8 days."""


def milliseconds(name: str, seconds: float, *, zero: bool) -> int:
    """`seconds` as whole milliseconds for the database, rounded up so that a short
    timeout never becomes 0 (PostgreSQL reads 0 as no timeout at all).

    Raises:
        TypeError: `seconds` is not an int or a float (a bool is neither here);
            the message names `name`.
        ValueError: `seconds` is not from 0 (or above 0, without `zero`) to
            `MAX_TIMEOUT`; the message names `name`.
    """
    if type(seconds) is bool or not isinstance(seconds, int | float):
        raise TypeError(f"{name} must be a number of seconds, got {type(seconds).__name__}")
    if not ((0 <= seconds) if zero else (0 < seconds)) or not seconds <= MAX_TIMEOUT:
        bound = "from 0 to" if zero else "more than 0 and at most"
        raise ValueError(f"{name} must be {bound} {MAX_TIMEOUT} seconds, got {seconds!r}")
    return min(math.ceil(seconds * 1000), _MAX_MS)
