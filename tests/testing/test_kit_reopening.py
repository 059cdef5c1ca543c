"""A store declared to survive a restart is reopened during the stateful comparison."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from uuid import UUID

import pytest

from lionmem import MemoryItem
from lionmem.testing import (
    ConformanceKit,
    Durability,
    StoreFactory,
)
from tests.support.kit_doubles import QUICK, forever
from tests.support.kit_stores import JSON_FILE_PROFILE, JsonFileStore


class OrderLostOnReopen(JsonFileStore):
    """Keeps every item across a restart, but reads them back in id order."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(workspace)
        for item in sorted(self.items.values(), key=lambda i: i.id.int):
            self.items.pop(item.id)
            self.items[item.id] = item


class FirstVersionOnReopen(JsonFileStore):
    """Appends every write to a log, and reads back the first version of each item;
    a deletion removes the item's versions from the log."""

    def __init__(self, workspace: Path) -> None:
        super().__init__(workspace)
        self.log = workspace / "log.json"
        if self.log.exists():
            self.items.clear()
            for raw in json.loads(self.log.read_text()):
                item = MemoryItem.model_validate(raw)
                self.items.setdefault(item.id, item)

    async def store(self, item: MemoryItem) -> UUID:
        stored = await super().store(item)
        written = json.loads(self.log.read_text()) if self.log.exists() else []
        self.log.write_text(json.dumps([*written, item.model_dump(mode="json")]))
        return stored

    def saved(self) -> None:
        super().saved()
        if self.log.exists():
            kept = [raw for raw in json.loads(self.log.read_text()) if UUID(raw["id"]) in self.items]
            self.log.write_text(json.dumps(kept))


class LockedOnReopen(JsonFileStore):
    """Cannot open a file that it has written."""

    def __init__(self, workspace: Path) -> None:
        if (workspace / "items.json").exists():
            raise RuntimeError("the file is locked")
        super().__init__(workspace)


async def hangs_on_reopen(workspace: Path) -> JsonFileStore:
    if (workspace / "items.json").exists():
        await forever()
    return JsonFileStore(workspace)


@pytest.mark.parametrize(
    ("factory", "observed"),
    [
        (
            OrderLostOnReopen,
            "after closing the store and opening it again, search(MemoryQuery(limit=18446744073709551616)) returned ids [",
        ),
        (FirstVersionOnReopen, "retrieve(UUID(int="),
    ],
    ids=["order lost", "replacements lost"],
)
def test_a_durable_store_that_forgets_on_reopen_fails_only_the_stateful_check(
    factory: StoreFactory, observed: str
) -> None:
    # The durability check reopens the store for one item, never replaced; only a
    # longer history shows what a reopening loses.
    failed = [r for r in ConformanceKit(factory, JSON_FILE_PROFILE).run_all() if not r.passed]
    assert [r.dimension for r in failed] == ["stateful"]
    assert failed[0].observed.startswith(observed), failed[0].observed
    assert "state.reopen()" in failed[0].reproduction


def test_a_store_that_cannot_be_reopened_fails_the_stateful_check() -> None:
    result = ConformanceKit(LockedOnReopen, JSON_FILE_PROFILE).check("stateful")
    assert not result.passed
    assert result.observed.startswith(
        "closing the store and opening it again raised RuntimeError: the file is locked"
    ), result.observed
    # A store declared to keep nothing is never reopened.
    process = dataclasses.replace(JSON_FILE_PROFILE, durability=Durability.PROCESS)
    assert ConformanceKit(LockedOnReopen, process).check("stateful").passed


def test_a_reopening_that_hangs_ends_the_stateful_check_naming_the_calls() -> None:
    result = ConformanceKit(hangs_on_reopen, JSON_FILE_PROFILE, timeout=QUICK).check("stateful")
    assert (result.passed, result.observed) == (False, "opening the store did not finish within 0.2 s")
    steps = result.reproduction.splitlines()
    assert steps[-1] == "# close the store and open it again on the same backing"
    assert any(step.startswith("await store.") for step in steps[:-1])
