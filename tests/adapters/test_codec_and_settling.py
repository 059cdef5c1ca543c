"""The durable stores' shared rows and queries: items to rows and back, exactly, in
slices that let other tasks run (`adapters._codec`), and queries settled before any
SQL (`adapters._settling`)."""

from __future__ import annotations

import asyncio
import pickle
import re
import struct
import uuid
from itertools import pairwise
from typing import cast

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from lionmem import MemoryItem, MemoryQuery
from lionmem._internal.json_values import dumps
from lionmem.adapters import _codec, _settling
from lionmem.adapters._codec import (
    ENCODE_EVERY,
    SHARE_EVERY,
    Row,
    decode_in_slices,
    decode_item,
    encode_batch,
    encode_item,
    fold,
)
from lionmem.adapters._settling import matching, settle_unstorable
from tests.support.store_contract import ticking


def test_fold_is_the_reference_rule() -> None:
    assert fold({"K": "ÉCOLE"}) == "{'k': 'école'}" and fold(None) == "none"


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
    monkeypatch.setattr("lionmem.adapters._codec.time.sleep", pauses.append)
    decoded = decode_in_slices(rows)
    assert [item.__dict__ for item in decoded] == [item.__dict__ for item in items]
    assert pauses == [0] * max(0, (count - 1) // SHARE_EVERY)


@pytest.mark.parametrize(
    ("count", "limit"), [(1200, -1), (1200, 3), (1200, 400), (1200, 0), (499, -1), (1200, 1199), (40, 100)]
)
def test_matching_rechecks_in_order_in_slices_and_hands_over_the_gil(
    monkeypatch: pytest.MonkeyPatch, count: int, limit: int
) -> None:
    items, rows = _rows(count)
    pauses: list[float] = []
    slices: list[int] = []
    decode_rows = _codec.decode_rows

    def counted(chunk: list[Row]) -> list[MemoryItem]:
        slices.append(len(chunk))
        return decode_rows(chunk)

    monkeypatch.setattr("lionmem.adapters._settling.time.sleep", pauses.append)
    monkeypatch.setattr(_settling, "decode_rows", counted)
    found = list(matching(iter(rows), [("even", True)], limit))
    expected = [item for item in items if item.metadata["even"]]
    expected = expected if limit < 0 else expected[:limit]
    assert [item.__dict__ for item in found] == [item.__dict__ for item in expected]
    # Every row up to the last match is decoded, in slices of at most SHARE_EVERY,
    # each at least FIRST_SLICE or the matches still wanted, each twice the last.
    needed = count if limit < 0 else min(count, 2 * limit - 1) if limit else 0
    if needed:
        assert sum(slices[:-1]) < needed <= sum(slices) <= count, slices
    else:
        assert slices == []
    assert all(size <= SHARE_EVERY for size in slices)
    first = SHARE_EVERY if limit < 0 else min(SHARE_EVERY, max(_settling.FIRST_SLICE, limit))
    assert slices[:1] == ([min(first, count)] if limit else [])
    assert all(later == min(SHARE_EVERY, 2 * earlier) for earlier, later in pairwise(slices[:-1]))
    # The GIL is handed over between two slices, and only there.
    assert pauses == [0] * max(0, len(slices) - 1)


LIMIT = 1_000
"""`MAX_ITEM_BYTES` in the tests of its rules, which would otherwise each build
strings of 100 MB; the durable stores' own tests keep an item of the real size."""


@pytest.fixture
def small_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_codec, "MAX_ITEM_BYTES", LIMIT)
    monkeypatch.setattr(_settling, "MAX_ITEM_BYTES", LIMIT)


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
