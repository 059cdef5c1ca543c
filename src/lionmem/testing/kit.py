"""The conformance kit: checks a store against the fidelity profile it declares.

The checks are small functions in a table, `_TABLE`: each takes only what it uses,
a `probe` of the store under check and, to open the store again, `reopen`. Add a
check by writing its function and adding its entry. Governed by [ADR-0093][adr-0093].
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from enum import Enum
from typing import Literal, NamedTuple, cast, overload

from lionmem._internal.arguments import require_type
from lionmem._internal.timeouts import milliseconds
from lionmem.errors import LionmemError
from lionmem.protocols.memory import MemoryStore
from lionmem.protocols.profile import FidelityProfile
from lionmem.testing import _expiry_checks as expiring
from lionmem.testing import _forget_checks as forgetting
from lionmem.testing import _namespace_checks as naming
from lionmem.testing import _operator_checks as operators
from lionmem.testing import _paging_checks as pages
from lionmem.testing import _recall_checks as recalling
from lionmem.testing import _search_checks as searching
from lionmem.testing import _store_checks as keeping
from lionmem.testing._harness import (
    LionagiStoreFactory,
    StoreFactory,
    StoreHung,
    outside_a_loop,
    store_from_factory,
    through_lionagi,
    workspace,
)
from lionmem.testing._probe import Probe, Reopen, Verdict

__all__ = ["CHECKS", "CheckResult", "ConformanceFailure", "ConformanceKit", "raise_for_failures"]


class _Entry(NamedTuple):
    """One check: what it runs, what a profile declares for it, and the names of
    what `run` takes, each `probe` or `reopen`."""

    run: Callable[..., Awaitable[Verdict]]
    declared: Callable[[FidelityProfile], str]
    takes: tuple[str, ...]


def _entry(run: Callable[..., Awaitable[Verdict]], declared: Callable[[FidelityProfile], str]) -> _Entry:
    return _Entry(run, declared, tuple(inspect.signature(run).parameters))


def _stated(text: str) -> Callable[[FidelityProfile], str]:
    """A declaration every store makes alike."""
    return lambda profile: text


def _field(name: str) -> Callable[[FidelityProfile], str]:
    """The declaration of the profile's field `name`."""

    def declared(profile: FidelityProfile) -> str:
        value: object = getattr(profile, name)
        return value.value if isinstance(value, Enum) else repr(value)

    return declared


# Seam for tests: `_TABLE`, read to hold every check to the table's rules.
_TABLE: dict[str, _Entry] = {
    "protocol": _entry(keeping.protocol, _stated(keeping.PROTOCOL)),
    "concurrent_writes": _entry(keeping.concurrent_writes, _stated("no write lost")),
    "text_match": _entry(searching.text_match, _field("text_match")),
    "tag_match": _entry(searching.tag_match, _field("tag_match")),
    "filter_equality": _entry(searching.filter_equality, _field("filter_equality")),
    "none_filter_matches_missing": _entry(searching.none_filter_matches_missing, _field("none_filter_matches_missing")),
    "result_order": _entry(searching.result_order, _field("result_order")),
    "on_existing_id": _entry(keeping.on_existing_id, keeping.on_existing_id_declared),
    "visibility": _entry(keeping.visibility, _field("visibility")),
    "returned_objects": _entry(keeping.returned_objects, _field("returned_objects")),
    "limit_policy": _entry(searching.limit_policy, _field("limit_policy")),
    "durability": _entry(keeping.durability, _field("durability")),
    "content": _entry(keeping.content, _field("content")),
    "created_at": _entry(keeping.created_at, _field("created_at")),
    "metadata": _entry(keeping.metadata, _field("metadata")),
    "tags": _entry(keeping.tags, _field("tags")),
    "forgetting": _entry(forgetting.forgetting, _field("forgetting")),
    "filter_operators": _entry(operators.filter_operators, operators.declared_operators),
    "recall": _entry(recalling.recall, _field("recall")),
    "namespaces": _entry(naming.namespaces, _field("namespaces")),
    "paging": _entry(pages.paging, _field("paging")),
    "expiry": _entry(expiring.expiry, _field("expiry")),
}

CHECKS = (*_TABLE, "stateful")
"""The names of the checks: the protocol fence, concurrent writes, one per profile
dimension (`forgetting` for the [ADR-0100][adr-0100] extension, `filter_operators` for
the [ADR-0099][adr-0099] vocabulary, `recall` for the [ADR-0102][adr-0102] extension,
`namespaces`, `paging` and `expiry` for the [ADR-0105][adr-0105] extensions),
and a stateful comparison with the reference."""


def _known(name: str) -> None:
    if name not in CHECKS:
        raise ValueError(f"unknown check {name!r}; the checks are {', '.join(CHECKS)}")


def _names(names: Sequence[str]) -> Sequence[str]:
    """`names`, every one a check's, before any check runs."""
    if isinstance(names, str):
        raise TypeError(f"run_all takes a sequence of check names, got the str {names!r}; use check()")
    for name in names:
        _known(name)
    return names


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one check; `str()` of it is the report a person reads."""

    dimension: str
    """The profile field or protocol rule checked."""
    declared: str
    """What the profile declares."""
    observed: str
    """What the store did, in the declaration's words when it did that."""
    passed: bool
    """Whether the observation satisfies the declaration."""
    reproduction: str
    """The calls that show the observation, as Python lines."""
    difference: str = ""
    """For a failure, the first call whose result differs: what it found against
    what the declaration expects."""
    ways_out: str = ""
    """For a failure, the two ways to pass: change the store, or declare what it does."""

    def __str__(self) -> str:
        if self.passed:
            return f"{self.dimension}: ok, {self.observed}"
        lines = [f"{self.dimension}: declared {self.declared}, observed {self.observed}"]
        lines += [f"  {text}" for text in (self.difference, self.ways_out and f"to pass: {self.ways_out}") if text]
        if self.reproduction:
            lines.append("  minimal reproduction, on a fresh store:")
            lines += [f"      {line}" for line in self.reproduction.splitlines()]
        return "\n".join(lines)


class ConformanceFailure(LionmemError, AssertionError):
    """A store did not do what its profile declares; a
    [`LionmemError`][lionmem.errors.LionmemError]."""

    def __init__(self, result: CheckResult, *more: CheckResult) -> None:
        self.result = result
        """The (first) failed check."""
        self.results: tuple[CheckResult, ...] = (result, *more)
        """Every failed check."""
        super().__init__("\n\n".join(map(str, self.results)))


def raise_for_failures(results: Iterable[CheckResult]) -> None:
    """Raise one `ConformanceFailure` reporting every failed result, if any failed.

    Examples:
        >>> from lionmem import InMemoryStore
        >>> from lionmem.testing import REFERENCE_PROFILE
        >>> raise_for_failures(ConformanceKit(InMemoryStore, REFERENCE_PROFILE).run_all(["tag_match"]))

    Raises:
        ConformanceFailure: one or more checks failed; `str()` of it reports each.
        TypeError: an entry is not a `CheckResult`.
    """
    failed: list[CheckResult] = []
    for result in results:
        require_type(result, "each result", CheckResult)
        if not result.passed:
            failed.append(result)
    if failed:
        raise ConformanceFailure(*failed)


def _ways_out(name: str, profile: FidelityProfile, observed: str) -> str:
    """The two ways a failed check `name` can pass."""
    if name in ("protocol", "concurrent_writes"):
        return "change the store: every store must do this, whatever its profile"
    if name == "stateful":
        return "change the store where it parts from the reference, or declare what it does in the dimension named"
    if name == "filter_operators":
        return (
            "change the store to apply each declared operator as the reference does, or leave out of "
            "filter_operators the ones it does not (it must then refuse them with NotImplementedError)"
        )
    value: object = getattr(profile, name)
    if isinstance(value, bool):
        other = "True" if observed == "True" else "False" if observed == "False" else None
        change = f"change the store so that {name} holds as {value}"
        return f"{change}, or declare {name}={other}" if other else f"{change}; neither value describes what it does"
    declared = cast(Enum, value)
    kind = type(declared)
    change = f"change the store to do what {kind.__name__}.{declared.name} says"
    if name == "recall" and observed == "offered":
        return f"{change}, or declare recall=Recall.EXACT (or APPROXIMATE, with its minimum_recall)"
    if name in ("namespaces", "paging", "expiry"):
        return f"{change}, or leave {name} undeclared ({kind.__name__}.UNDECLARED)"
    if observed.startswith("replaced ("):
        observed = "replace in place"  # without order, the place of a replacement is not observed
    member = next((m for m in kind if m.value == observed), None)
    if member is None:
        names = ", ".join(m.name for m in kind)
        return f"{change}; no member of {kind.__name__} ({names}) describes what it does"
    return f"{change}, or declare {name}={kind.__name__}.{member.name}"


class ConformanceKit:
    """Runs every check against stores built by `factory`, each on a fresh workspace.

    Examples:
        >>> from lionmem import InMemoryStore
        >>> from lionmem.testing import REFERENCE_PROFILE
        >>> kit = ConformanceKit(InMemoryStore, REFERENCE_PROFILE)
        >>> all(result.passed for result in kit.run_all())
        True
    """

    @overload
    def __init__(
        self,
        factory: StoreFactory,
        profile: FidelityProfile,
        *,
        stateful_examples: int = 60,
        timeout: float | None = 30.0,
        lionagi: Literal[False] = False,
        without_embedder: StoreFactory | None = None,
        recall_notes: int = 5_000,
    ) -> None: ...

    @overload
    def __init__(
        self,
        factory: LionagiStoreFactory,
        profile: FidelityProfile,
        *,
        stateful_examples: int = 60,
        timeout: float | None = 30.0,
        lionagi: Literal[True],
        recall_notes: int = 5_000,
    ) -> None: ...

    def __init__(
        self,
        factory: StoreFactory | LionagiStoreFactory,
        profile: FidelityProfile,
        *,
        stateful_examples: int = 60,
        timeout: float | None = 30.0,
        lionagi: bool = False,
        without_embedder: StoreFactory | None = None,
        recall_notes: int = 5_000,
    ) -> None:
        """Check the arguments; no store is built before a check runs.

        With `lionagi`, the factory's stores take and return lionagi's `MemoryItem`
        and `MemoryQuery`, and each is checked through
        [`from_lionagi`][lionmem.integrations.lionagi.from_lionagi]
        ([ADR-0101][adr-0101]).

        Raises:
            TypeError: `factory` is not callable, `profile` is not a
                `FidelityProfile`, `stateful_examples` is not an int, `timeout`
                is not a number or `None`, `lionagi` is not a bool,
                `without_embedder` is neither callable nor `None`, or
                `recall_notes` is not an int.
            ValueError: `stateful_examples` is less than 1, `recall_notes` is
                less than 100, `without_embedder` is given with `lionagi`, or
                `timeout` is not above 0 and at most
                [`MAX_TIMEOUT`][lionmem.adapters.lifecycle.MAX_TIMEOUT] seconds.
            ImportError: `lionagi` is true but lionagi is not installed.
        """
        if not callable(factory):
            raise TypeError(f"factory must be callable, got {type(factory).__name__}")
        require_type(profile, "profile", FidelityProfile)
        require_type(stateful_examples, "stateful_examples", int)
        if stateful_examples < 1:
            raise ValueError(f"stateful_examples must be at least 1, got {stateful_examples}")
        if timeout is not None:
            milliseconds("timeout", timeout, zero=False)
        require_type(lionagi, "lionagi", bool)
        if without_embedder is not None and not callable(without_embedder):
            raise TypeError(f"without_embedder must be callable or None, got {type(without_embedder).__name__}")
        if without_embedder is not None and lionagi:
            raise ValueError(
                "without_embedder serves the recall check, which a store of lionagi's types does not offer"
            )
        require_type(recall_notes, "recall_notes", int)
        if recall_notes < 100:
            raise ValueError(f"recall_notes must be at least 100, got {recall_notes}")
        # The overloads pair each kind of factory with its flag.
        self._builds = through_lionagi(cast(LionagiStoreFactory, factory)) if lionagi else cast(StoreFactory, factory)
        self._plain = without_embedder
        self.factory = factory
        """Builds each fresh store."""
        self.profile = profile
        """What the stores declare."""
        self.stateful_examples = stateful_examples
        """How many call sequences the stateful comparison tries."""
        self.timeout = timeout
        """Seconds that opening a store, one call on it, or closing it may take before
        the check fails with "did not finish"; `None` waits for ever."""
        self.lionagi = lionagi
        """Whether the stores take lionagi's types, checked through `from_lionagi`."""
        self.without_embedder = without_embedder
        """Opens a second store on a check's workspace without an embedder, as the
        command line and other processes write; the `recall` check replaces an item
        through it ([ADR-0102][adr-0102-d5]). Without it, a store whose data outlives
        it is written through a second store opened by `factory`."""
        self.recall_notes = recall_notes
        """How many everyday notes the `recall` check stores to measure the
        `minimum_recall` an approximate store declares ([ADR-0103][adr-0103-d3])."""

    # -- running --------------------------------------------------------------

    def run_all(self, names: Sequence[str] = CHECKS) -> list[CheckResult]:
        """Run the named checks (all by default), in order, each in its own event loop.

        Raises:
            TypeError: `names` is a single str rather than a sequence of names.
            ValueError: a name is not one of `CHECKS`; no check has run.
            RuntimeError: this thread runs an event loop already (a notebook, `python
                -m asyncio`); `await` [`arun_all`][lionmem.testing.kit.ConformanceKit.arun_all] there.
        """
        outside_a_loop("run_all", "arun_all")
        return [self.check(name) for name in _names(names)]

    async def arun_all(self, names: Sequence[str] = CHECKS) -> list[CheckResult]:
        """Run the named checks (all by default), in order, in the running event loop.

        Raises:
            TypeError: `names` is a single str rather than a sequence of names.
            ValueError: a name is not one of `CHECKS`; no check has run.
        """
        return [await self.acheck(name) for name in _names(names)]

    def check(self, name: str) -> CheckResult:
        """Run one check by name, in its own event loop.

        Raises:
            ValueError: `name` is not one of `CHECKS`.
            RuntimeError: this thread runs an event loop already; `await`
                [`acheck`][lionmem.testing.kit.ConformanceKit.acheck] there.
        """
        outside_a_loop("check", "acheck")
        if name == "stateful":
            return self._stateful()
        return asyncio.run(self.acheck(name))

    def assert_check(self, name: str) -> None:
        """Run one check by name, in its own event loop.

        Raises:
            ConformanceFailure: the check failed; it carries the `CheckResult`.
            ValueError: `name` is not one of `CHECKS`.
        """
        result = self.check(name)
        if not result.passed:
            raise ConformanceFailure(result)

    async def acheck(self, name: str) -> CheckResult:
        """Run one check by name in the running event loop.

        Raises:
            ValueError: `name` is not one of `CHECKS`.
        """
        declared = self.declared(name)
        if name == "stateful":
            # The state machine runs its own event loops, so it cannot share this one.
            return await asyncio.to_thread(self._stateful)
        entry = _TABLE[name]
        probe: Probe | None = None
        observed, passed = "", False
        async with workspace() as path:

            def reopen() -> AbstractAsyncContextManager[MemoryStore]:
                return store_from_factory(self._builds, path, self.timeout)

            def plain(opener: StoreFactory) -> Reopen:
                return lambda: store_from_factory(opener, path, self.timeout)

            given: dict[str, object] = {
                "reopen": reopen,
                "plain": None if self._plain is None else plain(self._plain),
                "notes": self.recall_notes,
            }
            try:
                async with store_from_factory(self._builds, path, self.timeout) as store:
                    given["probe"] = probe = Probe(store, self.profile, self.timeout)
                    try:
                        observed, passed = await entry.run(**{p: given[p] for p in entry.takes})
                    except StoreHung as exc:
                        observed, passed = str(exc), False
                    except Exception as exc:
                        observed, passed = f"raised {type(exc).__name__}: {exc}", False
            except StoreHung as exc:  # opening or closing
                observed, passed = "; then ".join(filter(None, (observed, str(exc)))), False
        steps = "" if probe is None else probe.reproduction()
        if passed:
            return CheckResult(name, declared, observed, passed, steps)
        difference = "" if probe is None else probe.difference
        return CheckResult(name, declared, observed, passed, steps, difference, _ways_out(name, self.profile, observed))

    def declared(self, name: str) -> str:
        """What the profile promises for the check `name`, as its `CheckResult`
        states it, without running the check.

        Raises:
            ValueError: `name` is not one of `CHECKS`.
        """
        _known(name)
        if name == "stateful":
            return "agrees with the reference where the profile says it does"
        return _TABLE[name].declared(self.profile)

    def _stateful(self) -> CheckResult:
        declared = self.declared("stateful")
        try:
            from lionmem.testing.stateful import compare_with_reference
        except ImportError as exc:
            missing = f"needs hypothesis ({exc}); pip install 'lionmem[testing]'"
            return CheckResult("stateful", declared, missing, False, "", ways_out="pip install 'lionmem[testing]'")
        try:
            compare_with_reference(
                self._builds, self.profile, max_examples=self.stateful_examples, timeout=self.timeout
            )
        except AssertionError as exc:
            # A hang's calls are on the StoreHung that caused it.
            steps = "\n".join(getattr(exc, "__notes__", None) or getattr(exc.__cause__, "__notes__", []))
            observed = str(exc).splitlines()[0]
            return CheckResult(
                "stateful", declared, observed, False, steps, ways_out=_ways_out("stateful", self.profile, observed)
            )
        return CheckResult("stateful", declared, declared, True, "")
