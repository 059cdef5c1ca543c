"""The argument rules every store, the Pile and the kit share (ADR-0095), one by one."""

from __future__ import annotations

import math
from datetime import UTC, datetime, timedelta, timezone
from uuid import UUID, uuid4

import pytest

from lionmem._internal.arguments import (
    as_batch_size,
    as_cutoff,
    as_uuid,
    as_uuids,
    kind_of,
    require_type,
    timestamp_of_datetime,
    timestamp_of_number,
)

KNOWN = UUID("6f1c2a9e-1d1b-4b7e-9a49-8a4c1f0f6a11")


@pytest.mark.parametrize(
    "given",
    [KNOWN, str(KNOWN), str(KNOWN).upper(), KNOWN.hex, "{" + str(KNOWN) + "}", "urn:uuid:" + str(KNOWN)],
)
def test_an_id_is_a_uuid_or_any_string_form_uuid_reads(given: object) -> None:
    assert as_uuid(given, "item_id") == KNOWN


def test_a_uuid_is_returned_as_itself() -> None:
    assert as_uuid(KNOWN, "item_id") is KNOWN


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        ("not-a-uuid", ValueError, "^item_id 'not-a-uuid' is not a UUID$"),
        ("", ValueError, "^item_id '' is not a UUID$"),
        (None, TypeError, "^item_id must be a UUID or its string form, got NoneType$"),
        (KNOWN.int, TypeError, "got int$"),
        (KNOWN.bytes, TypeError, "got bytes$"),
    ],
)
def test_anything_else_is_refused_naming_the_argument(given: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        as_uuid(given, "item_id")


def test_ids_keep_their_order_and_each_comes_once() -> None:
    other = uuid4()
    assert as_uuids([str(other), KNOWN, other, str(KNOWN)], "item_ids") == [other, KNOWN]
    assert as_uuids(iter([KNOWN]), "item_ids") == [KNOWN]
    assert as_uuids([], "item_ids") == []


@pytest.mark.parametrize("given", [str(KNOWN), KNOWN.bytes, 7, None])
def test_ids_must_be_an_iterable_other_than_a_string(given: object) -> None:
    with pytest.raises(TypeError, match=f"^item_ids must be an iterable of ids, got {kind_of(given)}$"):
        as_uuids(given, "item_ids")


def test_a_bad_id_among_ids_is_named_as_an_item() -> None:
    with pytest.raises(ValueError, match="^item_ids item 'x' is not a UUID$"):
        as_uuids([KNOWN, "x"], "item_ids")
    with pytest.raises(TypeError, match="^item_ids item must be a UUID or its string form, got float$"):
        as_uuids([7.5], "item_ids")


def test_a_cutoff_is_a_finite_number_or_a_datetime_naive_read_as_utc() -> None:
    moment = datetime(2026, 1, 2, 3, 4, 5, 600_000, tzinfo=UTC)
    assert as_cutoff(moment, "cutoff") == moment.timestamp()
    assert as_cutoff(moment.replace(tzinfo=None), "cutoff") == moment.timestamp()
    east = moment.astimezone(timezone(timedelta(hours=5)))
    assert as_cutoff(east, "cutoff") == moment.timestamp()
    assert as_cutoff(7, "cutoff") == 7.0 and type(as_cutoff(7, "cutoff")) is float
    assert math.copysign(1.0, as_cutoff(-0.0, "cutoff")) == -1.0


@pytest.mark.parametrize(
    ("given", "error", "message"),
    [
        (True, TypeError, "^cutoff must be a timestamp or a datetime, got a bool$"),
        ("2026-01-01", TypeError, "got a str$"),
        (math.nan, ValueError, "^cutoff must be a finite timestamp, got nan$"),
        (-math.inf, ValueError, "got -inf$"),
        (10**400, ValueError, "^cutoff is an integer too large for a timestamp$"),
    ],
)
def test_a_bad_cutoff_is_refused(given: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        as_cutoff(given, "cutoff")


def test_timestamps_of_numbers_and_datetimes() -> None:
    assert timestamp_of_number(2**53, "t") == 2.0**53
    assert timestamp_of_datetime(datetime(1970, 1, 1)) == 0.0  # naive: UTC, not local time


@pytest.mark.parametrize(("given", "error"), [(0, ValueError), (-1, ValueError), (True, TypeError), (2.0, TypeError)])
def test_a_batch_size_is_an_int_of_at_least_one(given: object, error: type[Exception]) -> None:
    with pytest.raises(error, match="^batch_size must be"):
        as_batch_size(given)
    assert as_batch_size(1) == 1


def test_kind_of_names_the_type_with_its_article() -> None:
    assert [kind_of(v) for v in (1, "s", None, [], 1.5, object())] == [
        "an int",
        "a str",
        "a NoneType",
        "a list",
        "a float",
        "an object",
    ]


def test_require_type_refuses_another_type_and_a_bool_for_an_int() -> None:
    require_type(3, "limit", int)
    require_type(True, "create", bool)
    with pytest.raises(TypeError, match="^limit must be an int, got bool$"):
        require_type(True, "limit", int)
    with pytest.raises(TypeError, match="^path must be a str, got bytes$"):
        require_type(b"x", "path", str)
