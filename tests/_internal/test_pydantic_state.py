"""The one place lionmem touches pydantic's private state: what it builds is what
pydantic's public constructor builds. CI runs these on the oldest and the newest
pydantic lionmem allows."""

from __future__ import annotations

import copy
import uuid

import pytest
from pydantic import ValidationError

from lionmem import Branch, InMemoryStore, MemoryItem
from lionmem._internal.pydantic_state import (
    construct_unchecked,
    private_values,
    with_private,
)
from lionmem.adapters._codec import decode_item, encode_item


def test_decoded_items_are_indistinguishable_from_constructed_ones() -> None:
    item = MemoryItem(content={"a": [1, 2.5]}, tags=["x"], metadata={"k": None}, created_at=1.5)
    row = encode_item(item)
    fast = decode_item(row.id, row.created_at, row.body)
    slow = MemoryItem.model_construct(**dict(item))
    for candidate in (fast, slow):
        assert candidate.model_dump() == item.model_dump()
        assert candidate.model_dump_json() == item.model_dump_json()
        assert candidate.model_fields_set == set(MemoryItem.model_fields)
        assert candidate == item and hash(candidate) == hash(item)
    assert fast.__pydantic_private__ == slow.__pydantic_private__
    assert fast.__pydantic_extra__ == slow.__pydantic_extra__
    clone = copy.deepcopy(fast)
    clone.tags.append("y")
    assert fast.tags == ["x"]
    assert fast.model_copy(update={"content": "z"}).content == "z"
    assert MemoryItem.model_validate(fast.model_dump()) == item
    with pytest.raises(ValidationError, match="frozen"):
        fast.id = item.id


def test_construct_unchecked_builds_what_model_construct_builds() -> None:
    fields = set(MemoryItem.model_fields)
    values = {"id": uuid.uuid4(), "created_at": 2.5, "metadata": {"k": [1]}, "content": {"a": None}, "tags": ["t"]}
    fast = construct_unchecked(MemoryItem, dict(values), set(fields))
    slow = MemoryItem.model_construct(_fields_set=set(fields), **values)
    assert type(fast) is MemoryItem
    for attribute in ("__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"):
        assert getattr(fast, attribute) == getattr(slow, attribute), attribute
    assert fast.model_dump() == slow.model_dump() and fast == slow


def test_private_values_are_the_models_own_and_with_private_leaves_it_alone() -> None:
    store = InMemoryStore()
    branch = Branch(memory=store)
    private = private_values(branch)
    assert private["_memory"] is store
    private["_memory"] = replaced = InMemoryStore()
    assert branch.memory is replaced
    state = branch.__getstate__()
    changed = with_private(state, _memory=None)
    assert changed["__pydantic_private__"]["_memory"] is None
    assert state["__pydantic_private__"]["_memory"] is replaced
    assert branch.memory is replaced
