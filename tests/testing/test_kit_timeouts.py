"""A store that hangs fails its check, named with the call, instead of hanging the kit."""

from __future__ import annotations

import asyncio
import time
from uuid import UUID

from lionmem import MemoryItem, MemoryQuery
from lionmem.testing import (
    ConformanceKit,
)
from tests.support.kit_doubles import DICT_PROFILE, QUICK, DictStore, HangingSearch, forever


class HangingClose(DictStore):
    async def close(self) -> None:
        await forever()


class HangingBoth(DictStore):
    """Hangs on its third call, and then on closing."""

    closes = 0

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0
        self.stuck = False

    async def _third(self) -> None:
        self.calls += 1
        if self.calls == 3:
            self.stuck = True
            await forever()

    async def store(self, item: MemoryItem) -> UUID:
        await self._third()
        return await super().store(item)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        await self._third()
        return await super().retrieve(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        await self._third()
        return await super().search(query)

    async def close(self) -> None:
        if self.stuck:
            HangingBoth.closes += 1
            await forever()


class OwnTimeout(DictStore):
    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        raise TimeoutError("the backend timed out")


async def never_opens() -> DictStore:
    await forever()
    raise AssertionError("unreachable")


def test_a_call_that_does_not_return_fails_the_check_naming_the_call() -> None:
    result = ConformanceKit(HangingSearch, DICT_PROFILE, timeout=QUICK).check("text_match")
    assert not result.passed
    assert result.observed == ("store.search(MemoryQuery(text='hello', limit=10000)) did not finish within 0.2 s")
    assert result.reproduction.splitlines()[-1] == ("await store.search(MemoryQuery(text='hello', limit=10000))")
    # The checks that make no text search are not held up.
    assert ConformanceKit(HangingSearch, DICT_PROFILE, timeout=QUICK).check("tag_match").passed


def test_a_store_that_does_not_open_or_close_fails_the_check() -> None:
    opening = ConformanceKit(never_opens, DICT_PROFILE, timeout=QUICK).check("protocol")
    assert (opening.passed, opening.observed, opening.reproduction) == (
        False,
        "opening the store did not finish within 0.2 s",
        "",
    )
    closing = ConformanceKit(HangingClose, DICT_PROFILE, timeout=QUICK).check("protocol")
    assert not closing.passed
    assert closing.observed == (
        "async store(item), retrieve(item_id), search(query); then closing the store did not finish within 0.2 s"
    )
    reopening = ConformanceKit(HangingClose, DICT_PROFILE, timeout=QUICK).check("durability")
    assert (
        reopening.observed
        == "closing the store did not finish within 0.2 s; then closing the store did not finish within 0.2 s"
    )


def test_a_timeout_error_of_the_stores_own_is_reported_as_raised() -> None:
    result = ConformanceKit(OwnTimeout, DICT_PROFILE, timeout=QUICK).check("protocol")
    assert result.observed == "raised TimeoutError: the backend timed out"


def test_without_a_timeout_the_kit_waits_for_a_slow_store() -> None:
    class Slow(DictStore):
        async def search(self, query: MemoryQuery) -> list[MemoryItem]:
            await asyncio.sleep(0.3)
            return await super().search(query)

    assert not ConformanceKit(Slow, DICT_PROFILE, timeout=0.1).check("protocol").passed
    assert ConformanceKit(Slow, DICT_PROFILE, timeout=None).check("protocol").passed


def test_a_hang_ends_the_stateful_check_at_once_naming_the_calls() -> None:
    HangingBoth.closes = 0
    started = time.monotonic()
    result = ConformanceKit(HangingBoth, DICT_PROFILE, timeout=QUICK).check("stateful")
    # Shrinking would replay the hang, a timeout each time.
    assert time.monotonic() - started < 20 * QUICK
    assert not result.passed
    assert result.observed.startswith("store.")
    assert result.observed.endswith(") did not finish within 0.2 s")
    steps = result.reproduction.splitlines()
    assert len(steps) == 3 and all(step.startswith("await store.") for step in steps)
    assert steps[-1] == "await " + result.observed.removesuffix(" did not finish within 0.2 s")
    # The close after the hang was tried, and hung, and the call is what is reported.
    assert HangingBoth.closes == 1


def test_a_store_that_does_not_close_fails_the_stateful_check() -> None:
    result = ConformanceKit(HangingClose, DICT_PROFILE, stateful_examples=1, timeout=QUICK).check("stateful")
    assert (result.passed, result.observed) == (False, "closing the store did not finish within 0.2 s")
