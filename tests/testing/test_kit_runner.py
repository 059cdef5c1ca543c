"""Running the kit: its arguments, its factories, and the profile's own checks."""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar
from uuid import UUID

import pytest

from lionmem import InMemoryStore, MemoryQuery
from lionmem.testing import (
    CHECKS,
    REFERENCE_PROFILE,
    ConformanceKit,
    FidelityProfile,
    TextMatch,
)
from lionmem.testing.stateful import compare_with_reference
from tests.support.kit_doubles import DICT_PROFILE, DictStore, keeping_each


def test_unknown_check_is_refused() -> None:
    kit = ConformanceKit(InMemoryStore, REFERENCE_PROFILE)
    with pytest.raises(ValueError, match="unknown check 'speed'"):
        kit.check("speed")
    with pytest.raises(ValueError, match="unknown check 'speed'"):
        kit.assert_check("speed")


def test_run_all_refuses_an_unknown_name_before_running_any_check() -> None:
    opened, factory = keeping_each(InMemoryStore)
    kit = ConformanceKit(factory, REFERENCE_PROFILE)
    with pytest.raises(ValueError, match="unknown check 'speed'"):
        kit.run_all(["protocol", "speed"])
    with pytest.raises(ValueError, match="unknown check 'speed'"):
        asyncio.run(kit.arun_all(["protocol", "speed"]))
    with pytest.raises(TypeError, match="run_all takes a sequence of check names, got the str 'protocol'"):
        kit.run_all("protocol")
    with pytest.raises(TypeError, match="run_all takes a sequence of check names, got the str 'protocol'"):
        asyncio.run(kit.arun_all("protocol"))
    assert opened == []


def test_in_a_running_event_loop_the_kit_runs_awaited_and_its_sync_forms_say_so() -> None:
    """As in a notebook or `python -m asyncio`: `asyncio.run` cannot start there."""
    opened, factory = keeping_each(InMemoryStore)
    kit = ConformanceKit(factory, REFERENCE_PROFILE)

    async def in_a_loop() -> list[str]:
        refusals: list[str] = []
        calls: list[tuple[Callable[[], object], str]] = [
            (lambda: kit.run_all(["protocol"]), "arun_all"),
            (lambda: kit.check("protocol"), "acheck"),
            (lambda: kit.check("stateful"), "acheck"),
            (lambda: kit.assert_check("protocol"), "acheck"),
        ]
        for call, instead in calls:
            with pytest.raises(RuntimeError) as refused:
                call()
            assert str(refused.value).endswith(f"use `await kit.{instead}(...)` here")
            refusals.append(str(refused.value))
        assert opened == []  # refused before any store was made
        results = await kit.arun_all(["protocol", "text_match", "stateful"])
        assert [(r.dimension, r.passed) for r in results] == [
            ("protocol", True),
            ("text_match", True),
            ("stateful", True),
        ]
        return refusals

    refusals = asyncio.run(in_a_loop())
    assert refusals[0].startswith("ConformanceKit.run_all() runs its own event loop, and this thread runs one already")


def test_the_kit_keeps_its_arguments_and_documented_defaults() -> None:
    kit = ConformanceKit(InMemoryStore, REFERENCE_PROFILE)
    assert (kit.factory, kit.profile, kit.stateful_examples, kit.timeout) == (
        InMemoryStore,
        REFERENCE_PROFILE,
        60,
        30.0,
    )
    patient = ConformanceKit(DictStore, DICT_PROFILE, stateful_examples=1, timeout=None)
    assert (patient.factory, patient.profile, patient.stateful_examples, patient.timeout) == (
        DictStore,
        DICT_PROFILE,
        1,
        None,
    )


def test_compare_with_reference_tries_as_many_examples_by_default_as_the_kit() -> None:
    # The kit always passes its count; a caller of the function alone gets the same.
    kits_default = ConformanceKit(InMemoryStore, REFERENCE_PROFILE).stateful_examples

    def stores_opened(**examples: int) -> list[list[UUID]]:
        opened, factory = keeping_each(InMemoryStore)
        compare_with_reference(factory, REFERENCE_PROFILE, **examples)
        return [[i.id for i in asyncio.run(s.search(MemoryQuery(limit=10_000)))] for s in opened]

    by_default = stores_opened()
    assert len(by_default) >= kits_default
    assert by_default == stores_opened(max_examples=kits_default)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"factory": None}, TypeError, "^factory must be callable, got NoneType$"),
        ({"profile": "reference"}, TypeError, "^profile must be a FidelityProfile, got str$"),
        ({"stateful_examples": "60"}, TypeError, "^stateful_examples must be an int, got str$"),
        ({"stateful_examples": True}, TypeError, "^stateful_examples must be an int, got bool$"),
        ({"stateful_examples": 0}, ValueError, "^stateful_examples must be at least 1, got 0$"),
        ({"timeout": "30"}, TypeError, "^timeout must be a number of seconds, got str$"),
        ({"timeout": True}, TypeError, "^timeout must be a number of seconds, got bool$"),
        ({"timeout": 0}, ValueError, "^timeout must be more than 0 and at most 2147483.647 seconds, got 0$"),
        ({"timeout": -1.5}, ValueError, "^timeout must be more than 0 and at most .* seconds, got -1.5$"),
        ({"timeout": float("inf")}, ValueError, "^timeout must be more than 0 and at most .* seconds, got inf$"),
        ({"timeout": float("nan")}, ValueError, "^timeout must be more than 0 and at most .* seconds, got nan$"),
    ],
)
def test_the_kit_refuses_bad_arguments_when_built(
    arguments: dict[str, Any], error: type[Exception], message: str
) -> None:
    given: dict[str, Any] = {"factory": InMemoryStore, "profile": REFERENCE_PROFILE, **arguments}
    with pytest.raises(error, match=message):
        ConformanceKit(given.pop("factory"), given.pop("profile"), **given)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        # The enum's value in place of the member: the check would report a mismatch.
        (
            "text_match",
            "case-insensitive substring of str(content)",
            r"^text_match must be a TextMatch \(TextMatch.CASE_INSENSITIVE_SUBSTRING, "
            r"TextMatch.CASE_SENSITIVE_SUBSTRING, TextMatch.OTHER, TextMatch.UNSUPPORTED\), got 'case",
        ),
        ("tags", None, r"^tags must be a RoundTrip \(RoundTrip.EXACT, RoundTrip.LOST\), got None$"),
        ("returned_objects", TextMatch.OTHER, r"^returned_objects must be a ReturnedObjects .*got <TextMatch.OTHER"),
        ("none_filter_matches_missing", 1, "^none_filter_matches_missing must be a bool, got 1$"),
    ],
)
def test_a_profile_refuses_a_value_of_the_wrong_type(field: str, value: Any, message: str) -> None:
    given: dict[str, Any] = {field: value}
    with pytest.raises(TypeError, match=message):
        FidelityProfile(**given)
    with pytest.raises(TypeError, match=message):
        dataclasses.replace(REFERENCE_PROFILE, **given)


def test_every_check_runs_in_run_all() -> None:
    results = ConformanceKit(InMemoryStore, REFERENCE_PROFILE).run_all()
    assert [r.dimension for r in results] == list(CHECKS)
    assert all(r.passed for r in results)


def test_profile_is_immutable_and_names_every_dimension() -> None:
    with pytest.raises(AttributeError):
        REFERENCE_PROFILE.text_match = TextMatch.OTHER  # type: ignore[misc]
    # Every field is a check's, but `minimum_recall`, which the recall check reads.
    fields = set(FidelityProfile.__dataclass_fields__)
    assert fields - {"minimum_recall"} <= set(CHECKS) and "minimum_recall" in fields


def test_factories_may_return_awaitables_or_context_managers(tmp_path: Any) -> None:
    from contextlib import asynccontextmanager

    async def make() -> InMemoryStore:
        return InMemoryStore()

    @asynccontextmanager
    async def managed(workspace: Any) -> Any:
        yield InMemoryStore()

    for factory in (make, managed):
        assert ConformanceKit(factory, REFERENCE_PROFILE).check("protocol").passed


def test_a_factory_whose_signature_cannot_be_read_is_called_without_arguments() -> None:
    """As for a store class written in C: inspect cannot tell what it takes."""
    calls: list[tuple[object, ...]] = []

    def factory(*args: object) -> InMemoryStore:
        calls.append(args)
        return InMemoryStore()

    setattr(factory, "__signature__", "unreadable")
    with pytest.raises((TypeError, ValueError)):  # TypeError before Python 3.12
        inspect.signature(factory)
    assert ConformanceKit(factory, REFERENCE_PROFILE).check("protocol").passed
    assert calls == [()]


def test_a_factory_gets_a_workspace_only_for_a_required_positional_parameter() -> None:
    calls: list[tuple[object, ...]] = []

    def optional(workspace: Path | None = None, *, name: str = "x") -> InMemoryStore:
        calls.append((workspace, name))
        return InMemoryStore()

    def required(workspace: Path, *, name: str = "x") -> InMemoryStore:
        calls.append((workspace, name))
        return InMemoryStore()

    for factory in (optional, required):
        assert ConformanceKit(factory, REFERENCE_PROFILE).check("protocol").passed
    (none, _), (given, _) = calls
    assert none is None
    assert isinstance(given, Path) and given.name.startswith("lionmem-kit-")


class ClosingStore(DictStore):
    """Counts the stores opened and those closed by an awaited `close()`."""

    opened: ClassVar[int] = 0
    closed: ClassVar[int] = 0

    def __init__(self) -> None:
        super().__init__()
        ClosingStore.opened += 1

    async def close(self) -> None:
        ClosingStore.closed += 1


class SyncCloseStore(DictStore):
    def close(self) -> None:
        raise AssertionError("a close() that is no coroutine function is not the kit's to call")


def test_the_kit_awaits_a_returned_stores_close_coroutine_and_leaves_a_sync_close() -> None:
    ClosingStore.opened = ClosingStore.closed = 0
    assert ConformanceKit(ClosingStore, DICT_PROFILE).check("protocol").passed
    assert ClosingStore.opened == ClosingStore.closed > 0
    assert ConformanceKit(SyncCloseStore, DICT_PROFILE).check("protocol").passed


def test_the_adapters_page_lists_every_field_of_check_result() -> None:
    from lionmem.testing import CheckResult

    page = (Path(__file__).resolve().parents[2] / "docs" / "adapters.md").read_text(encoding="utf-8")
    table = page[page.index("Each check gives a [`CheckResult`]") :].split("\n\n")[1]
    listed = [line.split("`")[1] for line in table.splitlines()[2:]]
    assert listed == [field.name for field in dataclasses.fields(CheckResult)]
