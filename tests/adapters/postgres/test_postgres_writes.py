"""PostgreSQL writes: exact round trips, refusals that write nothing, long tags and hostile keys."""

from __future__ import annotations

import contextlib
import hashlib
import math
from collections.abc import AsyncIterator
from typing import Any

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.adapters.postgres import (
    PostgresMemoryStore,
)
from lionmem.adapters.postgres import _writes as postgres_writes
from tests.support.postgres_support import with_store
from tests.support.store_contract import (
    assert_writes_keep_the_item_as_called,
)


def test_an_item_changed_during_its_write_is_stored_as_called(pg_url: str) -> None:
    async def body(store: PostgresMemoryStore) -> None:
        @contextlib.asynccontextmanager
        async def paused() -> AsyncIterator[None]:
            # White-box: hold the pool's only connection until the block ends.
            async with store._connections.live().connection():
                yield

        await assert_writes_keep_the_item_as_called(store, paused)

    with_store(pg_url, body, min_size=1, max_size=1)


def test_a_tag_is_indexed_whole_up_to_2000_bytes_then_by_its_digest() -> None:
    key = postgres_writes.tag_key
    for tag in ("a" * 2_000, "é" * 1_000, "\U0001f600" * 500, "a" * 500):
        assert key(tag) is tag
    for tag in ("a" * 2_001, "é" * 1_000 + "a", "\U0001f600" * 501):
        assert key(tag) == "\x01sha256:" + hashlib.sha256(tag.encode()).hexdigest()


def test_a_tag_spelled_like_a_long_tags_digest_is_told_apart(pg_url: str) -> None:
    long = "t" * 5_000
    lookalike = postgres_writes.tag_key(long)
    items = [MemoryItem(content="long", tags=[long]), MemoryItem(content="lookalike", tags=[lookalike])]
    queries = [
        MemoryQuery(tags=[long]),
        MemoryQuery(tags=[lookalike]),
        MemoryQuery(tags=[long], limit=1),
        MemoryQuery(tags=[lookalike, "other"], limit=-1),
        MemoryQuery(tags=[long, lookalike]),
    ]

    async def body(store: PostgresMemoryStore) -> None:
        reference = InMemoryStore()
        for item in items:
            await store.store(item)
            await reference.store(item)
        for query in queries:
            assert [i.id for i in await store.search(query)] == [i.id for i in await reference.search(query)]

    with_store(pg_url, body)


def test_round_trip_is_exact(pg_url: str) -> None:
    item = MemoryItem(
        content={"text": "ü✓ 𝄞 " * 50_000, "nested": [1, 2.5, -0.0, None, True, {"d": []}], "n": 2**62, "f": 1e300},
        tags=["b", "a", "a", "ü"],
        metadata={"quote'\"": {"list": [1, 1.0, True]}, "": None, "big": 2**70},
        created_at=1767225600.123456789,
    )

    async def body(store: PostgresMemoryStore) -> MemoryItem | None:
        await store.store(item)
        return await store.retrieve(item.id)

    got = with_store(pg_url, body)
    assert got is not None and got.created_at.hex() == item.created_at.hex()
    assert got.content == item.content and got.tags == item.tags and got.metadata == item.metadata
    assert math.copysign(1, got.content["nested"][2]) == -1 and type(got.content["f"]) is float
    assert type(got.metadata["quote'\""]["list"][1]) is float


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"content": {1, 2}}, "content is a set"),
        ({"content": math.inf}, "content is inf"),
        ({"content": "a\x00b"}, "U\\+0000"),
        ({"tags": ["a\x00"]}, "U\\+0000"),
        ({"metadata": {"k\x00": 1}}, "U\\+0000"),
        ({"metadata": {"k": "\ud800"}}, "lone surrogate U\\+D800"),
    ],
)
def test_refused_values_write_nothing(pg_url: str, fields: dict[str, Any], problem: str) -> None:
    bad = MemoryItem(**fields)

    async def body(store: PostgresMemoryStore) -> None:
        with pytest.raises(TypeError, match=problem):
            await store.store(bad)
        with pytest.raises(TypeError, match=problem):
            await store.store_many([MemoryItem(content="fine"), bad])
        assert await store.search(MemoryQuery()) == []

    with_store(pg_url, body)


HOSTILE = ["it's", 'say "hi"', "a.b", "$.a", "$", "{a}", "'; DROP TABLE lionmem_items; --", "\\", "%", "_", "%s", "?"]


@pytest.mark.parametrize("key", HOSTILE)
def test_hostile_keys_and_values_are_plain_data(pg_url: str, key: str) -> None:
    item = MemoryItem(content=f"x{key}y", tags=[key], metadata={key: key, "other": 1})
    decoy = MemoryItem(content="decoy xy", metadata={"other": 1})

    async def body(store: PostgresMemoryStore) -> None:
        await store.store_many([item, decoy])
        assert await store.search(MemoryQuery(filters={key: key})) == [item]
        assert await store.search(MemoryQuery(filters={key: None})) == [decoy]
        assert await store.search(MemoryQuery(tags=[key])) == [item]
        assert await store.search(MemoryQuery(text=key)) == [item]
        assert len(await store.search(MemoryQuery(limit=100))) == 2

    with_store(pg_url, body)
