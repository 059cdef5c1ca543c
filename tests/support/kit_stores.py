"""Stores that differ from the reference on purpose, each with a truthful profile."""

from __future__ import annotations

import asyncio
import copy
import json
import math
from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any
from uuid import UUID

from lionmem import MemoryItem, MemoryQuery
from lionmem.filters import Condition
from lionmem.testing import (
    ContentKind,
    Durability,
    FidelityProfile,
    FilterEquality,
    LimitPolicy,
    OnExistingId,
    ResultOrder,
    ReturnedObjects,
    RoundTrip,
    TagMatch,
    TextMatch,
    Visibility,
)


class BareStore:
    """A structural implementor that subclasses nothing."""

    def __init__(self) -> None:
        self.items: dict[UUID, MemoryItem] = {}

    async def store(self, item: MemoryItem) -> UUID:
        self.items[item.id] = item
        return item.id

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return self.items.get(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return list(self.items.values())[: query.limit]


class DictForgetting:
    """The `ForgettingStore` methods over a dict of items in insertion order, each
    deleting what its store's own `search` finds; `saved()` runs after a deletion."""

    items: dict[UUID, MemoryItem]

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        raise NotImplementedError

    def saved(self) -> None:
        pass

    def _drop(self, item_ids: Iterable[UUID]) -> int:
        dropped = sum(self.items.pop(i, None) is not None for i in set(item_ids))
        self.saved()
        return dropped

    async def delete(self, item_id: UUID) -> bool:
        return self._drop([UUID(str(item_id))]) == 1

    async def delete_many(self, item_ids: Iterable[UUID]) -> int:
        return self._drop([_an_id(i) for i in item_ids])

    async def delete_matching(self, query: MemoryQuery) -> int:
        return self._drop(i.id for i in await self.search(query))

    async def count(self, query: MemoryQuery) -> int:
        return len(await self.search(query.model_copy(update={"limit": 2**62})))

    async def delete_created_before(self, cutoff: float | datetime) -> int:
        before = cutoff.timestamp() if isinstance(cutoff, datetime) else cutoff
        return self._drop(i.id for i in self.items.values() if i.created_at < before)

    async def scan(self, batch_size: int = 500) -> AsyncIterator[list[MemoryItem]]:
        every = list(self.items.values())
        for start in range(0, len(every), batch_size):
            yield copy.deepcopy(every[start : start + batch_size])


def _an_id(value: object) -> UUID:
    if isinstance(value, UUID | str):
        return UUID(str(value))
    raise TypeError(f"item ids are UUIDs, got {value!r}")


class CopyingStore(DictForgetting):
    """Dict-backed, hands out deep copies; the knobs below change one rule each."""

    def __init__(self) -> None:
        self.items: dict[UUID, MemoryItem] = {}

    async def store(self, item: MemoryItem) -> UUID:
        if not isinstance(item, MemoryItem):
            raise TypeError("CopyingStore stores MemoryItem")
        self.put(copy.deepcopy(item))
        return item.id

    def put(self, item: MemoryItem) -> None:
        self.items[item.id] = item

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return copy.deepcopy(self.items.get(item_id))

    def text(self, needle: str, item: MemoryItem) -> bool:
        return needle.lower() in str(item.content).lower()

    def tags(self, wanted: list[str], item: MemoryItem) -> bool:
        return bool(set(wanted) & set(item.tags))

    def filters(self, wanted: dict[str, Any], item: MemoryItem) -> bool:
        return all(item.metadata.get(k) == v for k, v in wanted.items())

    def listed(self) -> list[MemoryItem]:
        return list(self.items.values())

    def limit(self, found: list[MemoryItem], limit: int) -> list[MemoryItem]:
        return found[:limit]

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        found = self.listed()
        if query.text:
            found = [i for i in found if self.text(query.text, i)]
        if query.tags:
            found = [i for i in found if self.tags(query.tags, i)]
        if query.filters:
            found = [i for i in found if self.filters(query.filters, i)]
        return [copy.deepcopy(i) for i in self.limit(found, query.limit)]


COPYING_PROFILE = FidelityProfile(returned_objects=ReturnedObjects.COPIES)


class RefusingStore(CopyingStore):
    """Supports no predicate at all, and says so."""

    def text(self, needle: str, item: MemoryItem) -> bool:
        raise NotImplementedError("text search is not supported")

    def tags(self, wanted: list[str], item: MemoryItem) -> bool:
        raise NotImplementedError("tag search is not supported")

    def filters(self, wanted: dict[str, Any], item: MemoryItem) -> bool:
        raise NotImplementedError("filters are not supported")

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        if query.text or query.tags or query.filters:
            raise NotImplementedError("this store only lists")
        return await super().search(query)


REFUSING_PROFILE = FidelityProfile(
    returned_objects=ReturnedObjects.COPIES,
    text_match=TextMatch.UNSUPPORTED,
    tag_match=TagMatch.UNSUPPORTED,
    filter_equality=FilterEquality.UNSUPPORTED,
    filter_operators=frozenset(),
)


class NonNegativeLimitStore(CopyingStore):
    """The reference in every way but one: a negative limit is an error."""

    def limit(self, found: list[MemoryItem], limit: int) -> list[MemoryItem]:
        if limit < 0:
            raise ValueError("limit must not be negative")
        return found[:limit]


NON_NEGATIVE_PROFILE = FidelityProfile(
    returned_objects=ReturnedObjects.COPIES, limit_policy=LimitPolicy.REJECT_NEGATIVE
)


class StrictStore(NonNegativeLimitStore):
    """Case-sensitive text, all-of tags, JSON equality, no None-for-missing; rejects
    existing ids and negative limits."""

    def put(self, item: MemoryItem) -> None:
        if item.id in self.items:
            raise ValueError(f"{item.id} is already stored")
        super().put(item)

    def text(self, needle: str, item: MemoryItem) -> bool:
        return needle in str(item.content)

    def tags(self, wanted: list[str], item: MemoryItem) -> bool:
        return set(wanted) <= set(item.tags)

    def filters(self, wanted: dict[str, Any], item: MemoryItem) -> bool:
        if any(isinstance(v, Condition) for v in wanted.values()):
            raise NotImplementedError("filter operators are not supported")
        return all(k in item.metadata and _json_equal(item.metadata[k], v) for k, v in wanted.items())


def _json_equal(a: Any, b: Any) -> bool:
    return bool(_as_json(a) == _as_json(b))


def _as_json(value: Any) -> Any:
    """`value` with each JSON value tagged by its JSON type at every level, so that
    `==` keeps `1 == 1.0` but no longer equates a boolean with a number."""
    if isinstance(value, dict):
        return ("object", {k: _as_json(v) for k, v in value.items()})
    if isinstance(value, list):
        return ("array", [_as_json(v) for v in value])
    if isinstance(value, bool):
        return ("boolean", value)
    if isinstance(value, int | float):
        return ("number", value)
    return (type(value).__name__, value)


STRICT_PROFILE = FidelityProfile(
    returned_objects=ReturnedObjects.COPIES,
    text_match=TextMatch.CASE_SENSITIVE_SUBSTRING,
    tag_match=TagMatch.ALL_OF,
    filter_equality=FilterEquality.JSON,
    none_filter_matches_missing=False,
    on_existing_id=OnExistingId.REJECT,
    limit_policy=LimitPolicy.REJECT_NEGATIVE,
    filter_operators=frozenset(),
)


class MovingStore(CopyingStore):
    """Moves a replaced item to the end."""

    def put(self, item: MemoryItem) -> None:
        self.items.pop(item.id, None)
        super().put(item)


MOVING_PROFILE = FidelityProfile(returned_objects=ReturnedObjects.COPIES, on_existing_id=OnExistingId.MOVE_TO_END)


class ReversedStore(CopyingStore):
    """Lists newest first: unordered as far as the contract goes."""

    def listed(self) -> list[MemoryItem]:
        return list(reversed(self.items.values()))


REVERSED_PROFILE = FidelityProfile(returned_objects=ReturnedObjects.COPIES, result_order=ResultOrder.UNORDERED)


class LaggingStore(CopyingStore):
    """Makes a write visible `LAG` seconds after `store` returns."""

    LAG = 0.002

    def __init__(self) -> None:
        super().__init__()
        self.pending: list[asyncio.Task[None]] = []

    async def store(self, item: MemoryItem) -> UUID:
        if not isinstance(item, MemoryItem):
            raise TypeError("LaggingStore stores MemoryItem")
        frozen = copy.deepcopy(item)

        async def land() -> None:
            await asyncio.sleep(self.LAG)
            self.put(frozen)

        self.pending.append(asyncio.create_task(land()))
        return item.id

    async def close(self) -> None:
        await asyncio.gather(*self.pending)


LAGGING_PROFILE = FidelityProfile(returned_objects=ReturnedObjects.COPIES, visibility=Visibility.EVENTUAL)


class JsonFileStore(CopyingStore):
    """Keeps JSON values in a file in its workspace: durable, copies, JSON only."""

    def __init__(self, workspace: Path) -> None:
        super().__init__()
        self.path = workspace / "items.json"
        if self.path.exists():
            for raw in json.loads(self.path.read_text()):
                self.put(MemoryItem.model_validate(raw))

    async def store(self, item: MemoryItem) -> UUID:
        if not isinstance(item, MemoryItem):
            raise TypeError("JsonFileStore stores MemoryItem")
        try:
            json.dumps(item.content, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise TypeError(f"content is not a JSON value: {exc}") from None
        if isinstance(item.content, tuple):
            raise TypeError("content is not a JSON value: tuple")
        _reject_tuples(item.content)
        await super().store(item)
        self.saved()
        return item.id

    def saved(self) -> None:
        self.path.write_text(json.dumps([i.model_dump(mode="json") for i in self.items.values()]))


def _reject_tuples(value: Any) -> None:
    if isinstance(value, tuple) or (isinstance(value, float) and not math.isfinite(value)):
        raise TypeError(f"content is not a JSON value: {value!r}")
    if isinstance(value, dict):
        for v in value.values():
            _reject_tuples(v)
    if isinstance(value, list):
        for v in value:
            _reject_tuples(v)


JSON_FILE_PROFILE = FidelityProfile(
    returned_objects=ReturnedObjects.COPIES,
    durability=Durability.RESTART,
    content=ContentKind.JSON_VALUES,
)


class ForgetfulStore(CopyingStore):
    """Drops created_at, metadata and tags on the way in."""

    def put(self, item: MemoryItem) -> None:
        super().put(MemoryItem(id=item.id, content=item.content, created_at=0.0))


FORGETFUL_PROFILE = FidelityProfile(
    returned_objects=ReturnedObjects.COPIES,
    tag_match=TagMatch.UNSUPPORTED,
    filter_equality=FilterEquality.UNSUPPORTED,
    filter_operators=frozenset(),
    created_at=RoundTrip.LOST,
    metadata=RoundTrip.LOST,
    tags=RoundTrip.LOST,
)


class ForgetfulRefusing(ForgetfulStore):
    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        if query.tags or query.filters:
            raise NotImplementedError("tags and metadata are not kept")
        return await super().search(query)
