"""The encoding shared by the durable adapters."""

from __future__ import annotations

import asyncio
import copy
import json
import math
import pickle
import re
import struct
import sys
import uuid
from pathlib import Path
from typing import cast

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from pydantic_core import from_json

from lionmem import MemoryItem, MemoryQuery
from lionmem._internal.json_values import MAX_NESTING, check_json, dumps, loads
from lionmem.adapters import _rows as _encoding
from lionmem.adapters._rows import (
    ENCODE_EVERY,
    SHARE_EVERY,
    Row,
    decode_in_slices,
    decode_item,
    encode_batch,
    encode_item,
    fold,
    matching,
    settle_unstorable,
)
from store_checks import ticking


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
    lambda inner: st.lists(inner, max_size=4)
    | st.dictionaries(st.text(st.characters(exclude_categories=["Cs"]), max_size=5), inner, max_size=4),
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


def test_stored_ids_decode_to_ordinary_uuids() -> None:
    for original in [uuid.uuid4() for _ in range(200)] + [uuid.UUID(int=0), uuid.UUID(int=2**128 - 1)]:
        item = MemoryItem(id=original, content="x")
        row = encode_item(item)
        got = decode_item(row.id, row.created_at, row.body).id
        assert type(got) is uuid.UUID and got == original and hash(got) == hash(original)
        assert str(got) == str(original) and got.version == original.version
        assert got.is_safe is uuid.SafeUUID.unknown
        assert pickle.loads(pickle.dumps(got)) == original
    # Any other spelling is parsed, and refused, by UUID itself.
    braced = "{" + str(original) + "}"
    assert decode_item(braced, 1.0, '["x",[],{}]').id == original
    with pytest.raises(ValueError, match="badly formed"):
        decode_item("not-a-uuid", 1.0, '["x",[],{}]')


@given(st.floats(allow_nan=False, allow_infinity=False))
@example(-0.0)  # how SQLite keeps it; any float's bytes must come back bit-exact
def test_a_time_read_as_its_eight_bytes_decodes_to_the_same_float(created_at: float) -> None:
    got = decode_item(str(uuid.UUID(int=1)), struct.pack("<d", created_at), '["x",[],{}]').created_at
    assert type(got) is float
    assert struct.pack("<d", got) == struct.pack("<d", created_at)


def _rows(count: int) -> tuple[list[MemoryItem], list[Row]]:
    items = [MemoryItem(content=n, metadata={"even": n % 2 == 0}) for n in range(count)]
    encoded = [encode_item(item) for item in items]
    return items, [(row.id, row.created_at, row.body) for row in encoded]


@pytest.mark.parametrize("count", [0, 1, SHARE_EVERY - 1, SHARE_EVERY, SHARE_EVERY + 1, 1200])
def test_slices_hand_over_the_gil_between_them(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    items, rows = _rows(count)
    pauses: list[float] = []
    monkeypatch.setattr("lionmem.adapters._rows.time.sleep", pauses.append)
    decoded = decode_in_slices(rows)
    assert [item.__dict__ for item in decoded] == [item.__dict__ for item in items]
    assert pauses == [0] * max(0, (count - 1) // SHARE_EVERY)


@pytest.mark.parametrize(("count", "limit"), [(1200, -1), (1200, 3), (1200, 400), (1200, 0), (499, -1)])
def test_matching_rechecks_in_order_and_hands_over_the_gil(
    monkeypatch: pytest.MonkeyPatch, count: int, limit: int
) -> None:
    items, rows = _rows(count)
    pauses: list[float] = []
    monkeypatch.setattr("lionmem.adapters._rows.time.sleep", pauses.append)
    found = list(matching(rows, [("even", True)], limit))
    expected = [item for item in items if item.metadata["even"]]
    expected = expected if limit < 0 else expected[:limit]
    assert [item.__dict__ for item in found] == [item.__dict__ for item in expected]
    # Decoding stops at the limit's last match; a pause comes before every
    # SHARE_EVERY-th row decoded after the first.
    decoded = count if limit < 0 else min(count, 2 * limit - 1) if limit else 0
    assert pauses == [0] * max(0, (decoded - 1) // SHARE_EVERY)


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
    "src/lionmem/adapters/sqlite/__init__.py",
    "src/lionmem/adapters/postgres/__init__.py",
]


@pytest.mark.parametrize("path", STATING_THE_NESTING_LIMIT)
def test_the_docs_state_the_nesting_limit_that_is_enforced(path: str) -> None:
    text = " ".join((Path(__file__).parent.parent / path).read_text(encoding="utf-8").split())
    stated = {int(n) for n in re.findall(r"(\d+) (?:levels|lists and objects) deep", text)}
    assert stated == {MAX_NESTING}


def test_far_too_deep_a_value_is_refused_before_python_runs_out_of_stack() -> None:
    with pytest.raises(ValueError, match="^content nests"):
        encode_item(MemoryItem(content=_lists(100 * MAX_NESTING)))


LIMIT = 1_000
"""`MAX_ITEM_BYTES` in the tests of its rules, which would otherwise each build
strings of 100 MB; the durable stores' own tests keep an item of the real size."""


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_encoding, "MAX_ITEM_BYTES", LIMIT)


def _too_large(what: str, size: int) -> str:
    message = f"the item is too large: {what} takes {size:,} bytes in UTF-8, over the {LIMIT:,} this store keeps"
    return f"^{re.escape(message)}$"


@pytest.mark.usefixtures("small_limit")
def test_an_item_is_kept_up_to_max_item_bytes_of_json_counted_in_utf8() -> None:
    around = len('["",[],{}]')
    largest = MemoryItem(content="é" * ((LIMIT - around) // 2))  # 2 bytes each
    assert len(encode_item(largest).body.encode()) == LIMIT
    # Counted in bytes, not characters: each holds far fewer characters than LIMIT.
    over = [
        (MemoryItem(content="é" * ((LIMIT - around) // 2) + "x"), LIMIT + 1),
        (MemoryItem(content="\U0001f600" * ((LIMIT - around) // 4) + "xxx"), LIMIT + 1),
        (MemoryItem(content="", metadata={"k": "x" * (LIMIT - 15)}), LIMIT + 1),
        (MemoryItem(content="", tags=["x" * (LIMIT - 11)]), LIMIT + 1),
    ]
    for item, size in over:
        with pytest.raises(ValueError, match=_too_large("the JSON of its content, tags and metadata", size)):
            encode_item(item)
    # Under a third of LIMIT in characters: only a text over a quarter is encoded.
    assert LIMIT // 4 < len(dumps([over[1][0].content, [], {}])) < LIMIT // 3


@pytest.mark.usefixtures("small_limit")
def test_the_searchable_text_is_held_to_the_limit_too() -> None:
    # str() writes a non-printable character as a 6-character escape where JSON
    # keeps its 3 bytes, and "İ" (2 bytes) lowers to "i" and U+0307 (3 bytes).
    escapes = (LIMIT - len("{'k': ''}")) // 6
    widest = MemoryItem(content={"k": "\u200b" * escapes + "x"})
    assert len(encode_item(widest).folded.encode()) == LIMIT
    cases = [
        (MemoryItem(content={"k": "\u200b" * escapes + "xx"}), LIMIT + 1),
        (MemoryItem(content="İ" * (LIMIT // 3 + 1)), 3 * (LIMIT // 3 + 1)),
    ]
    for item, size in cases:
        assert len(dumps([item.content, [], {}]).encode()) < LIMIT
        what = "its content's searchable text, str(content).lower(),"
        with pytest.raises(ValueError, match=_too_large(what, size)):
            encode_item(item)


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


def test_a_batch_is_encoded_in_slices_with_other_tasks_between() -> None:
    batch = [MemoryItem(content=n) for n in range(2 * ENCODE_EVERY + 1)]

    async def scenario() -> list[tuple[int, int]]:
        async with ticking() as turns:
            return await encode_batch(batch, lambda item: (cast(int, item.content), turns()))

    seen = asyncio.run(scenario())
    assert [n for n, _ in seen] == list(range(len(batch)))
    slices = [seen[:ENCODE_EVERY], seen[ENCODE_EVERY : 2 * ENCODE_EVERY], seen[2 * ENCODE_EVERY :]]
    assert [len({t for _, t in part}) for part in slices] == [1, 1, 1]  # no pause within a slice
    assert slices[0][0][1] < slices[1][0][1] < slices[2][0][1]  # the ticker ran between them
    assert asyncio.run(encode_batch([], lambda item: item)) == []


# (query, what remains where U+0000 can be stored, where it cannot); None: no item
# can match. A lone surrogate is stored by neither.
SETTLED: list[tuple[MemoryQuery, MemoryQuery | None, MemoryQuery | None]] = [
    (MemoryQuery(text="a\x00b"), MemoryQuery(text="a\x00b"), None),
    (MemoryQuery(text="a\ud800"), None, None),
    (MemoryQuery(tags=["t\x00", "t\udfff"]), MemoryQuery(tags=["t\x00"]), None),
    (MemoryQuery(tags=["t", "t\x00"], limit=3), MemoryQuery(tags=["t", "t\x00"], limit=3), MemoryQuery(tags=["t"], limit=3)),
    (MemoryQuery(filters={"k\x00": None, "j": 1}), MemoryQuery(filters={"k\x00": None, "j": 1}), MemoryQuery(filters={"j": 1})),
    (MemoryQuery(filters={"k\ud800": None}), MemoryQuery(filters={}), MemoryQuery(filters={})),
    (MemoryQuery(filters={"k\ud800": 0}), None, None),
    (MemoryQuery(filters={"k": "v\x00"}), MemoryQuery(filters={"k": "v\x00"}), None),
    (MemoryQuery(filters={"k": ["v\x00"]}), MemoryQuery(filters={"k": ["v\x00"]}), MemoryQuery(filters={"k": ["v\x00"]})),
]  # fmt: skip


@pytest.mark.usefixtures("small_limit")
def test_strings_longer_than_any_stored_one_are_settled_before_sql() -> None:
    longest, longer = "x" * LIMIT, "x" * (LIMIT + 1)
    kept = [
        MemoryQuery(text=longest),
        MemoryQuery(tags=[longest]),
        MemoryQuery(filters={longest: 1}),
        MemoryQuery(filters={"k": longest}),
    ]
    for query in kept:
        assert settle_unstorable(query, allow_nul=True) is query
    for allow_nul in (True, False):
        assert settle_unstorable(MemoryQuery(text=longer), allow_nul=allow_nul) is None
        assert settle_unstorable(MemoryQuery(tags=[longer]), allow_nul=allow_nul) is None
        assert settle_unstorable(MemoryQuery(tags=["t", longer]), allow_nul=allow_nul) == MemoryQuery(tags=["t"])
        assert settle_unstorable(MemoryQuery(filters={"k": longer}), allow_nul=allow_nul) is None
        assert settle_unstorable(MemoryQuery(filters={longer: 1}), allow_nul=allow_nul) is None
        missing = settle_unstorable(MemoryQuery(filters={longer: None, "j": 2}), allow_nul=allow_nul)
        assert missing == MemoryQuery(filters={"j": 2})


@pytest.mark.parametrize(("query", "with_nul", "without_nul"), SETTLED)
def test_predicates_naming_unstorable_strings_are_settled_before_sql(
    query: MemoryQuery, with_nul: MemoryQuery | None, without_nul: MemoryQuery | None
) -> None:
    for allow_nul, expected in ((True, with_nul), (False, without_nul)):
        settled = settle_unstorable(query, allow_nul=allow_nul)
        assert settled == expected, allow_nul
        if settled == query:
            assert settled is query  # nothing to settle: no copy
