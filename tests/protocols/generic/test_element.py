"""Element identity, timestamps and metadata (ADR-0092 D1)."""

from __future__ import annotations

import json
import math
import re
import time
from collections import OrderedDict
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from types import MappingProxyType
from uuid import UUID, uuid4

import pytest
from pydantic import ValidationError

from lionmem import Element, MemoryItem

NEW_YEAR = 1767225600.0  # 2026-01-01T00:00:00Z


def test_id_defaults_to_a_fresh_uuid4() -> None:
    a, b = Element(), Element()
    assert isinstance(a.id, UUID)
    assert a.id.version == 4
    assert a.id != b.id


def test_id_accepts_a_uuid_string() -> None:
    raw = uuid4()
    assert Element.model_validate({"id": str(raw)}).id == raw


def test_id_rejects_a_non_uuid() -> None:
    with pytest.raises(ValidationError, match="id"):
        Element.model_validate({"id": "not-a-uuid"})


@pytest.mark.parametrize("mode", ["python", "json"])
def test_id_serializes_as_a_string(mode: str) -> None:
    e = Element()
    assert e.model_dump(mode=mode)["id"] == str(e.id)


def test_id_is_frozen() -> None:
    e = Element()
    with pytest.raises(ValidationError, match="frozen"):
        e.id = uuid4()


def test_created_at_defaults_to_now_in_utc() -> None:
    before = datetime.now(UTC).timestamp()
    e = Element()
    after = datetime.now(UTC).timestamp()
    assert before <= e.created_at <= after


@pytest.mark.parametrize(
    "value",
    [
        NEW_YEAR,
        int(NEW_YEAR),
        datetime(2026, 1, 1, tzinfo=UTC),
        datetime(2026, 1, 1, 2, tzinfo=timezone(timedelta(hours=2))),
        "2026-01-01T00:00:00+00:00",
        "2026-01-01T01:00:00+01:00",
        "2026-01-01T00:00:00",
        "2026-01-01T00:00:00Z",
        "1767225600",
        "1767225600.0",
    ],
    ids=repr,
)
def test_created_at_accepts_numbers_datetimes_and_strings(value: object) -> None:
    e = Element.model_validate({"created_at": value})
    assert type(e.created_at) is float
    assert e.created_at == NEW_YEAR


@pytest.fixture
def local_zone_five_hours_behind(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """A local time zone that is not UTC, so that reading a naive time as local time
    would give another timestamp (POSIX TZ form: no zone database needed)."""
    monkeypatch.setenv("TZ", "LOCAL+05")
    time.tzset()
    try:
        assert time.timezone == 5 * 3600
        yield
    finally:
        monkeypatch.undo()
        time.tzset()  # the zone of the tests that follow, whatever happened here


@pytest.mark.usefixtures("local_zone_five_hours_behind")
@pytest.mark.parametrize("value", [datetime(2026, 1, 1), "2026-01-01T00:00:00"], ids=repr)
def test_created_at_reads_a_naive_time_as_utc_not_local_time(value: object) -> None:
    assert datetime(2026, 1, 1).timestamp() == NEW_YEAR + 5 * 3600  # the local reading
    assert Element.model_validate({"created_at": value}).created_at == NEW_YEAR


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (None, "created_at must be a timestamp, datetime or ISO string, got NoneType"),
        (True, "created_at must be a timestamp, datetime or ISO string, got a bool"),
        ([NEW_YEAR], "created_at must be a timestamp, datetime or ISO string, got list"),
        ({"t": 1}, "created_at must be a timestamp, datetime or ISO string, got dict"),
        (b"1", "created_at must be a timestamp, datetime or ISO string, got bytes"),
        ("yesterday", "created_at string 'yesterday' is neither a number nor an ISO 8601 datetime"),
        ("", "created_at string '' is neither a number nor an ISO 8601 datetime"),
        (math.nan, "created_at must be a finite timestamp, got nan"),
        (math.inf, "created_at must be a finite timestamp, got inf"),
        ("nan", "created_at must be a finite timestamp, got nan"),
        ("-inf", "created_at must be a finite timestamp, got -inf"),
        (10**400, "created_at is an integer too large for a timestamp"),
    ],
    ids=lambda value: repr(value)[:20],
)
def test_created_at_rejects_anything_else_naming_the_problem(value: object, message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        Element.model_validate({"created_at": value})


def test_the_json_schema_says_what_created_at_reads_and_what_it_dumps() -> None:
    # The JSON forms of what validation reads: a number, or a string (ISO or numeric).
    read = Element.model_json_schema()["properties"]["created_at"]
    assert [kind["type"] for kind in read["anyOf"]] == ["number", "string"]
    for value in (NEW_YEAR, "2026-01-01T00:00:00Z", "1767225600"):
        assert Element.model_validate_json(json.dumps({"created_at": value})).created_at == NEW_YEAR
    assert Element.model_json_schema(mode="serialization")["properties"]["created_at"] == {
        "title": "Created At",
        "type": "number",
    }
    assert type(json.loads(Element(created_at=NEW_YEAR).model_dump_json())["created_at"]) is float


def test_created_at_is_frozen() -> None:
    e = Element()
    with pytest.raises(ValidationError, match="frozen"):
        e.created_at = 0.0


def test_created_at_round_trips_through_json() -> None:
    e = Element(created_at=0.1 + 0.2)
    assert Element.model_validate_json(e.model_dump_json()).created_at == e.created_at


@pytest.mark.parametrize("value", [None, {}])
def test_metadata_none_or_empty_gives_an_empty_dict(value: object) -> None:
    assert Element.model_validate({"metadata": value}).metadata == {}


@pytest.mark.parametrize("mapping", [MappingProxyType({"k": 1}), OrderedDict(k=1)], ids=repr)
def test_metadata_mapping_becomes_a_dict(mapping: object) -> None:
    md = Element.model_validate({"metadata": mapping}).metadata
    assert type(md) is dict and md == {"k": 1}


def test_metadata_is_the_elements_own_dict() -> None:
    # A change to the dict given afterwards never reaches the element, nor back.
    givens: list[dict[str, object]] = [{"k": [1]}, {"lion_class": "lionmem.protocols.generic.element.Element"}]
    for given in givens:
        element = Element(metadata=given)
        assert element.metadata == given and element.metadata is not given
        given["added"] = 1
        assert "added" not in element.metadata


def test_metadata_that_is_not_a_mapping_is_rejected() -> None:
    with pytest.raises(ValidationError, match="metadata"):
        Element.model_validate({"metadata": [("k", 1)]})


def test_metadata_lion_class_must_name_the_class() -> None:
    element_class = "lionmem.protocols.generic.element.Element"
    item_class = "lionmem.protocols.memory.MemoryItem"
    assert Element(metadata={"lion_class": element_class}).metadata["lion_class"] == element_class
    assert MemoryItem(metadata={"lion_class": item_class}).metadata["lion_class"] == item_class
    with pytest.raises(ValidationError, match="lion_class"):
        MemoryItem(metadata={"lion_class": "lionmem.protocols.generic.element.Element"})
    with pytest.raises(ValidationError, match="lion_class"):
        Element(metadata={"lion_class": "Element"})


def test_extra_fields_are_forbidden() -> None:
    with pytest.raises(ValidationError, match="extra"):
        Element(colour="red")  # type: ignore[call-arg]
    with pytest.raises(ValidationError, match="extra"):
        MemoryItem(score=1.0)  # type: ignore[call-arg]


def test_equality_and_hash_use_the_id_only() -> None:
    a = MemoryItem(content="one", tags=["x"])
    twin = MemoryItem(id=a.id, content="two", metadata={"k": 1})
    assert a == twin and hash(a) == hash(twin)
    assert len({a, twin}) == 1
    assert a != MemoryItem(content="one", tags=["x"])


def test_equality_with_a_non_element_is_not_implemented() -> None:
    e = Element()
    assert e != e.id
    assert e.__eq__(str(e.id)) is NotImplemented
