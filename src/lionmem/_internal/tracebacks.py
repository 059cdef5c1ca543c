"""Keeping a secret out of the frames a traceback keeps.

Error trackers and `TracebackException(capture_locals=True)` show the local variables
of every frame a traceback passes through. A function given a connection string
holds its password in a local until it returns. Governed by [ADR-0097][adr-0097].
"""

from __future__ import annotations

import functools
import traceback
from collections.abc import Callable
from typing import ParamSpec, TypeVar

__all__ = ["without_locals_on_refusal"]

P = ParamSpec("P")
T = TypeVar("T")


def without_locals_on_refusal(function: Callable[P, T]) -> Callable[P, T]:
    """`function`, whose `ValueError` (a refused argument, such as a connection string)
    leaves no local variable in the frames of its traceback: the frames it passed
    through are cleared, and the wrapper drops the arguments before raising it."""

    @functools.wraps(function)
    def refusing_without_locals(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return function(*args, **kwargs)
        except ValueError as exc:
            refused = exc
        traceback.clear_frames(refused.__traceback__)
        del args, kwargs
        raise refused

    return refusing_without_locals
