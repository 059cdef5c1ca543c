"""Timeouts in seconds, checked and rounded up to the databases' whole milliseconds."""

from __future__ import annotations

import math

import pytest

from lionmem._internal.timeouts import MAX_TIMEOUT, milliseconds


def test_seconds_become_whole_milliseconds_rounded_up() -> None:
    assert milliseconds("t", 1, zero=False) == 1000
    assert milliseconds("t", 0.0001, zero=False) == 1  # never 0, which PostgreSQL reads as none
    assert milliseconds("t", 2.5, zero=False) == 2500
    assert milliseconds("t", 0, zero=True) == 0
    assert milliseconds("t", MAX_TIMEOUT, zero=False) == 2**31 - 1


@pytest.mark.parametrize(
    ("seconds", "zero", "message"),
    [
        (0, False, "^busy must be more than 0 and at most 2147483.647 seconds, got 0$"),
        (-1, True, "^busy must be from 0 to 2147483.647 seconds, got -1$"),
        (MAX_TIMEOUT + 0.001, True, "got 2147483.648"),
        (math.nan, True, "got nan$"),
        (math.inf, False, "got inf$"),
    ],
)
def test_out_of_range_is_refused_naming_the_setting(seconds: float, zero: bool, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        milliseconds("busy", seconds, zero=zero)


@pytest.mark.parametrize("seconds", [True, "1", None])
def test_a_timeout_must_be_a_number(seconds: object) -> None:
    with pytest.raises(TypeError, match=f"^busy must be a number of seconds, got {type(seconds).__name__}$"):
        milliseconds("busy", seconds, zero=True)  # type: ignore[arg-type]
