"""Which values are JSON values that come back exactly, and the nesting limit every
store and the command line hold them to."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path
from typing import cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic_core import from_json

from lionmem import MemoryItem
from lionmem._internal.json_values import MAX_NESTING, check_json, loads
from lionmem.adapters._codec import decode_item, encode_item


@pytest.mark.parametrize("value", [None, True, 0, -1, 2**80, 0.5, -0.0, "", "ü\x00", [], {}, {"a": [1, {"b": None}]}])
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


def test_lone_surrogates_are_refused_by_path() -> None:
    check_json("🙂 \U0001d11e", "v")
    with pytest.raises(TypeError, match=r"v\[0\] holds the lone surrogate U\+D800"):
        check_json(["a\ud800"], "v")
    with pytest.raises(TypeError, match=re.escape("v key 'k\\udfff' holds the lone surrogate U+DFFF")):
        check_json({"k\udfff": 1}, "v")


def _typed(value: object) -> object:
    """`value` with every float replaced by its bits and every scalar tagged by type, so
    that equal results mean identical values (1 vs 1.0 vs True, 0.0 vs -0.0)."""
    if isinstance(value, list):
        return ["list", [_typed(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [[k, _typed(v)] for k, v in value.items()]]
    if isinstance(value, float):
        return ["float", value.hex()]
    return [type(value).__name__, value]


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=["Cs"])),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.characters(exclude_categories=["Cs"]), max_size=5), inner, max_size=4)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(_JSON)
def test_stored_json_decodes_to_identical_values(value: object) -> None:
    text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    assert _typed(loads(text)) == _typed(json.loads(text)) == _typed(value)


def test_nesting_beyond_the_fast_parser_still_decodes() -> None:
    deep: list[object] = []
    inner = deep
    for _ in range(MAX_NESTING - 2):  # metadata {"deep": deep} nests MAX_NESTING levels
        inner.append([])
        inner = cast("list[object]", inner[0])
    item = MemoryItem(content=deep, metadata={"deep": deep})
    row = encode_item(item)
    with pytest.raises(ValueError, match="recursion limit"):
        from_json(row.body)
    assert decode_item(row.id, row.created_at, row.body) == item
    assert loads(row.body) == [deep, [], {"deep": deep}]


def _lists(levels: int) -> object:
    value: object = 0
    for _ in range(levels):
        value = [value]
    return value


def test_nesting_is_limited_to_max_nesting_levels() -> None:
    check_json(_lists(MAX_NESTING), "v")
    check_json({"k": _lists(MAX_NESTING - 1)}, "v")
    with pytest.raises(ValueError, match=f"^v nests lists and objects more than {MAX_NESTING} levels deep; "):
        check_json([_lists(MAX_NESTING)], "v")
    with pytest.raises(ValueError, match="^metadata nests"):
        check_json({"a": {"b": _lists(MAX_NESTING - 1)}}, "metadata")


STATING_THE_NESTING_LIMIT = [
    "docs/stores.md",
    "docs/cli.md",
    "docs/adr/0096-sqlite-store.md",
    "docs/adr/0098-store-urls-and-cli.md",
    "src/lionmem/adapters/sqlite/store.py",
    "src/lionmem/adapters/postgres/store.py",
]


@pytest.mark.parametrize("path", STATING_THE_NESTING_LIMIT)
def test_the_docs_state_the_nesting_limit_that_is_enforced(path: str) -> None:
    text = " ".join((Path(__file__).resolve().parents[2] / path).read_text(encoding="utf-8").split())
    stated = {int(n) for n in re.findall(r"(\d+) (?:levels|lists and objects) deep", text)}
    assert stated == {MAX_NESTING}


def test_far_too_deep_a_value_is_refused_before_python_runs_out_of_stack() -> None:
    with pytest.raises(ValueError, match="^content nests"):
        encode_item(MemoryItem(content=_lists(100 * MAX_NESTING)))


def test_an_integer_python_cannot_write_is_refused_by_path() -> None:
    check_json({"k": [10**4299, -(10**4299)]}, "metadata")
    with pytest.raises(ValueError, match=r"^metadata\['k'\]\[1\] is an integer of more than 4300 digits"):
        check_json({"k": [1, -(10**4300)]}, "metadata")
    default = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(640)  # the lowest limit Python accepts
    try:
        check_json(2**2100, "content")
        with pytest.raises(ValueError, match="^content is an integer of more than 640 digits"):
            check_json(10**640, "content")
    finally:
        sys.set_int_max_str_digits(default)
