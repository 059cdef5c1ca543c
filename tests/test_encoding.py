"""The encoding shared by the durable adapters."""

from __future__ import annotations

import copy
import math
import re

import pytest
from pydantic import ValidationError

from lionmem import MemoryItem
from lionmem.adapters._encoding import check_json, decode_item, encode_item, fold


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


def test_fold_is_the_reference_rule() -> None:
    assert fold({"K": "ÉCOLE"}) == "{'k': 'école'}" and fold(None) == "none"


@pytest.mark.parametrize(
    "value", [None, True, 0, -1, 2**80, 0.5, -0.0, "", "ü\x00", [], {}, {"a": [1, {"b": None}]}]
)
def test_json_values_pass(value: object) -> None:
    check_json(value, "v")


def test_nul_can_be_refused_in_strings_and_keys() -> None:
    check_json({"a\x00": ["b\x00"]}, "v")
    with pytest.raises(TypeError, match=r"v\[0\] holds the character U\+0000"):
        check_json(["b\x00"], "v", allow_nul=False)
    with pytest.raises(TypeError, match=re.escape("v key 'a\\x00' holds the character U+0000")):
        check_json({"a\x00": 1}, "v", allow_nul=False)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (math.nan, "v is nan"),
        (-math.inf, "v is -inf"),
        ((1,), "v is a tuple"),
        ({1}, "v is a set"),
        ({"a": {1: 2}}, r"v\['a'\] has a key 1"),
        ([b"x"], r"v\[0\] is a bytes"),
        (type("S", (str,), {})("x"), "v is a S"),
    ],
)
def test_other_values_are_refused_by_path(value: object, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        check_json(value, "v")
