"""The kit's `expiry` check (ADR-0105 D2): it passes the three stores, fails a store that
declares expiry and shows an expired item in a read, brings one back, sweeps nothing
or takes an expiry it should refuse, and leaves a store that declares nothing
unchecked."""

from __future__ import annotations

import copy
import dataclasses
import time
from collections.abc import AsyncIterator, Callable, Iterable
from datetime import datetime
from typing import Any
from uuid import UUID

import pytest

from lionmem import MemoryItem, MemoryQuery
from lionmem.protocols.expiry import expiry_of
from lionmem.protocols.paging import Page, check_page
from lionmem.testing import ConformanceKit, Expiry
from tests.support.kit_doubles import DICT_PROFILE, DictStore, assert_the_three_stores_pass

DECLARED = dataclasses.replace(DICT_PROFILE, expiry=Expiry.REFERENCE)


class ExpiringDict(DictStore):
    """Keeps each expiry beside its item and hides what expired, as the reference does;
    each subclass below breaks it in one place."""

    ttl = None

    def __init__(self) -> None:
        super().__init__()
        self.expiries: dict[UUID, float] = {}

    def expired(self, item_id: UUID, now: float) -> bool:
        at = self.expiries.get(item_id)
        return at is not None and at <= now

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        found = await super().retrieve(item_id)
        return None if found is None or self.expired(found.id, time.time()) else found

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        now = time.time()
        live = [copy.deepcopy(i) for i in self.items.values() if not self.expired(i.id, now) and self.matches(i, query)]
        return live[: query.limit]

    async def scan(self, batch_size: int = 500) -> AsyncIterator[list[MemoryItem]]:
        now = time.time()
        live = [i for i in self.items.values() if not self.expired(i.id, now)]
        for start in range(0, len(live), batch_size):
            yield copy.deepcopy(live[start : start + batch_size])

    def changeable(self, item_ids: Iterable[UUID]) -> list[UUID]:
        now = time.time()
        return [i for i in dict.fromkeys(item_ids) if i in self.items and not self.expired(i, now)]

    async def expire(self, item_ids: Iterable[UUID], *, at: float | datetime | None = None, ttl: Any = None) -> int:
        when = expiry_of(time.time(), at, ttl)
        changed = self.changeable(item_ids)
        self.expiries.update(dict.fromkeys(changed, when))
        return len(changed)

    async def persist(self, item_ids: Iterable[UUID]) -> int:
        changed = self.changeable(item_ids)
        for item_id in changed:
            self.expiries.pop(item_id, None)
        return len(changed)

    async def sweep(self) -> int:
        now = time.time()
        return self._drop([i for i in self.items if self.expired(i, now)])


class ShowsExpired(ExpiringDict):
    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return await DictStore.search(self, query)


class RetrievesExpired(ExpiringDict):
    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        return await DictStore.retrieve(self, item_id)


class ScansExpired(ExpiringDict):
    async def scan(self, batch_size: int = 500) -> AsyncIterator[list[MemoryItem]]:
        async for batch in DictStore.scan(self, batch_size):
            yield batch


class BringsBack(ExpiringDict):
    def changeable(self, item_ids: Iterable[UUID]) -> list[UUID]:
        return [i for i in dict.fromkeys(item_ids) if i in self.items]


class SweepsNothing(ExpiringDict):
    async def sweep(self) -> int:
        return 0


class TakesAnyExpiry(ExpiringDict):
    """Reads an `expire` naming no expiry as never."""

    async def expire(self, item_ids: Iterable[UUID], *, at: float | datetime | None = None, ttl: Any = None) -> int:
        if at is None and ttl is None:
            return await self.persist(item_ids)
        return await super().expire(item_ids, at=at, ttl=ttl)


class PersistsNone(ExpiringDict):
    async def persist(self, item_ids: Iterable[UUID]) -> int:
        await super().persist(item_ids)
        return 0


class ExpiresNone(ExpiringDict):
    async def expire(self, item_ids: Iterable[UUID], *, at: float | datetime | None = None, ttl: Any = None) -> int:
        await super().expire(item_ids, at=at, ttl=ttl)
        return 0


class SweepForgets(ExpiringDict):
    """Counts what expired and takes the expiries away instead of the items."""

    async def sweep(self) -> int:
        now = time.time()
        expired = [i for i in self.items if self.expired(i, now)]
        for item_id in expired:
            del self.expiries[item_id]
        return len(expired)


class CountsExpired(ExpiringDict):
    async def count(self, query: MemoryQuery) -> int:
        return len(await DictStore.search(self, query.model_copy(update={"limit": 2**62})))


class PagesExpired(ExpiringDict):
    async def search_page(self, query: MemoryQuery, after: str | None = None) -> Page:
        size, _ = check_page(query, after)
        found = await DictStore.search(self, query)
        return Page(found[:size], None)


class WithoutForgetting:
    """Expiry on the three methods alone: nothing to delete, count or scan."""

    ttl = None

    def __init__(self) -> None:
        self.inner = ExpiringDict()

    async def store(self, item: MemoryItem) -> Any:
        return await self.inner.store(item)

    async def retrieve(self, item_id: Any) -> MemoryItem | None:
        return await self.inner.retrieve(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        return await self.inner.search(query)

    async def expire(self, item_ids: Iterable[UUID], *, at: float | datetime | None = None, ttl: Any = None) -> int:
        return await self.inner.expire(item_ids, at=at, ttl=ttl)

    async def persist(self, item_ids: Iterable[UUID]) -> int:
        return await self.inner.persist(item_ids)

    async def sweep(self) -> int:
        return await self.inner.sweep()


def test_the_three_stores_pass() -> None:
    assert_the_three_stores_pass("expiry", "an ExpiringStore that hides what expired", expiry=Expiry.REFERENCE)


@pytest.mark.parametrize("store", [ExpiringDict, WithoutForgetting])
def test_a_faithful_double_passes(store: Callable[[], Any]) -> None:
    result = ConformanceKit(store, DECLARED).check("expiry")
    assert result.passed, str(result)


@pytest.mark.parametrize(
    ("store", "observed"),
    [
        (ShowsExpired, "a search for everything found [1, 2, 3, 4], where the unexpired [3, 4]"),
        (RetrievesExpired, "returned MemoryItem(id=UUID('00000000-0000-0000-0000-000000000001')"),
        (ScansExpired, "store.scan() gave [1, 2, 3, 4], where [3, 4]"),
        (BringsBack, "of expired items returned 2 and 2, where 0"),
        (SweepsNothing, "store.sweep() twice returned 0 and 0, where 2 and 0"),
        (TakesAnyExpiry, "store.expire([UUID(int=4)]) was not refused with TypeError"),
        (PersistsNone, "store.persist(...) of the 4 items stored returned 0"),
        (ExpiresNone, "store.expire(...) returned 0 and 0, where 2 and 1"),
        (SweepForgets, "a search for everything found [1, 2, 3, 4], where the unexpired [3, 4]"),
        (CountsExpired, "store.count(MemoryQuery()) returned 4, where 2"),
        (PagesExpired, "store.search_page(MemoryQuery(limit=2)) held [1, 2], where [3, 4]"),
        (DictStore, "not an ExpiringStore"),
    ],
)
def test_a_store_declaring_expiry_fails_where_it_expires_otherwise(store: Callable[[], Any], observed: str) -> None:
    result = ConformanceKit(store, DECLARED).check("expiry")
    assert not result.passed
    assert observed in result.observed, result.observed
    assert "leave expiry undeclared (Expiry.UNDECLARED)" in str(result)


def test_a_store_that_declares_nothing_is_not_checked() -> None:
    kit = ConformanceKit(ShowsExpired, DICT_PROFILE)
    assert kit.declared("expiry") == "not declared"
    result = kit.check("expiry")
    assert result.passed and result.observed == "not declared" and result.reproduction == ""
