"""MemoryItem and MemoryQuery exactly as ADR-0092 D1 records them."""

from __future__ import annotations

from uuid import UUID

import pytest
from pydantic import ValidationError

from lionmem import Element, MemoryItem, MemoryQuery


def test_memory_item_extends_element() -> None:
    assert issubclass(MemoryItem, Element)
    assert set(MemoryItem.model_fields) == {"id", "created_at", "metadata", "content", "tags"}


def test_empty_memory_item_is_valid() -> None:
    item = MemoryItem()
    assert item.content is None and item.tags == [] and item.metadata == {}
    assert isinstance(item.id, UUID)
    assert isinstance(item.created_at, float)


def test_memory_item_defaults_are_not_shared() -> None:
    a, b = MemoryItem(), MemoryItem()
    a.tags.append("x")
    a.metadata["k"] = 1
    assert b.tags == [] and b.metadata == {}


def test_content_accepts_any_object() -> None:
    payload = object()
    assert MemoryItem(content=payload).content is payload


def test_tags_are_neither_deduplicated_nor_checked_for_emptiness() -> None:
    assert MemoryItem(tags=["a", "a", ""]).tags == ["a", "a", ""]


def test_tags_must_be_a_list_of_strings() -> None:
    with pytest.raises(ValidationError, match="tags"):
        MemoryItem(tags="solo")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="tags"):
        MemoryItem(tags=[1])  # type: ignore[list-item]


def test_empty_memory_query_means_no_predicates_and_limit_20() -> None:
    q = MemoryQuery()
    assert (q.text, q.tags, q.filters, q.limit) == (None, None, None, 20)


def test_memory_query_has_no_validators_beyond_types() -> None:
    q = MemoryQuery(text="", tags=[], filters={}, limit=-3)
    assert (q.text, q.tags, q.filters, q.limit) == ("", [], {}, -3)
    assert MemoryQuery(limit=0).limit == 0
    assert MemoryQuery(tags=["", ""]).tags == ["", ""]
    assert MemoryQuery(filters={"lion_class": 1, "": None}).filters == {"lion_class": 1, "": None}
    assert MemoryQuery.__pydantic_decorators__.field_validators == {}
    assert MemoryQuery.__pydantic_decorators__.model_validators == {}


def test_schema_errors_are_plain_pydantic_errors() -> None:
    with pytest.raises(ValidationError, match="limit"):
        MemoryQuery(limit="ten")  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="text"):
        MemoryQuery(text=5)  # type: ignore[arg-type]


def test_memory_query_refuses_unknown_fields() -> None:
    with pytest.raises(ValidationError, match="extra"):
        MemoryQuery(txt="typo")  # type: ignore[call-arg]
