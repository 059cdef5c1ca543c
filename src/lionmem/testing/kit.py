"""The conformance kit: checks a store against the fidelity profile it declares.

Governed by [ADR-0093][adr-0093].
"""

from __future__ import annotations

import asyncio
import inspect
import math
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from functools import partial
from pathlib import Path
from typing import Any, TypeVar, cast
from uuid import UUID

from lionmem.adapters.lifecycle import milliseconds
from lionmem.protocols._arguments import require_type
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.testing._harness import Recorder, StoreFactory, StoreHung, open_store, same_values, show, workspace
from lionmem.testing.profile import (
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

__all__ = ["CHECKS", "CheckResult", "ConformanceFailure", "ConformanceKit"]

CHECKS = (
    "protocol",
    "concurrent_writes",
    "text_match",
    "tag_match",
    "filter_equality",
    "none_filter_matches_missing",
    "result_order",
    "on_existing_id",
    "visibility",
    "returned_objects",
    "limit_policy",
    "durability",
    "content",
    "created_at",
    "metadata",
    "tags",
    "stateful",
)
"""The names of the checks: the protocol fence, concurrent writes, one per profile
dimension, and a stateful comparison with the reference."""


def _known(name: str) -> None:
    if name not in CHECKS:
        raise ValueError(f"unknown check {name!r}; the checks are {', '.join(CHECKS)}")


T = TypeVar("T")
R = TypeVar("R", bound=Enum)

_EVENTUAL_WAIT = 5.0
_ALL = 10_000


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of one check."""

    dimension: str
    """The profile field or protocol rule checked."""
    declared: str
    """What the profile declares."""
    observed: str
    """What the store did."""
    passed: bool
    """Whether the observation satisfies the declaration."""
    reproduction: str
    """The calls that show the observation, as Python lines."""


class ConformanceFailure(AssertionError):
    """A store did not do what its profile declares."""

    def __init__(self, result: CheckResult) -> None:
        self.result = result
        """The failed check."""
        steps = "\n".join(f"    {line}" for line in result.reproduction.splitlines())
        super().__init__(
            f"{result.dimension}: declared {result.declared}, observed {result.observed}\n"
            f"minimal reproduction, on a fresh store:\n{steps}"
        )


def _item(n: int, **fields: Any) -> MemoryItem:
    return MemoryItem(id=UUID(int=n), **fields)


def _ids(items: Sequence[MemoryItem]) -> list[int]:
    return [i.id.int for i in items]


_POSITIVE_LIMITS = (0, 2, 5, 50, 2**64)
"""Limits the kit tries; the last is beyond any SQL LIMIT and must still mean "all"."""


Check = Callable[["ConformanceKit", Recorder, Path], Awaitable[tuple[str, bool]]]


class ConformanceKit:
    """Runs every check against stores built by `factory`, each on a fresh workspace.

    Examples:
        >>> from lionmem import InMemoryStore
        >>> from lionmem.testing import REFERENCE_PROFILE
        >>> kit = ConformanceKit(InMemoryStore, REFERENCE_PROFILE)
        >>> all(result.passed for result in kit.run_all())
        True
    """

    def __init__(
        self,
        factory: StoreFactory,
        profile: FidelityProfile,
        *,
        stateful_examples: int = 60,
        timeout: float | None = 30.0,
    ) -> None:
        """Check the arguments; no store is built before a check runs.

        Raises:
            TypeError: `factory` is not callable, `profile` is not a
                `FidelityProfile`, `stateful_examples` is not an int, or `timeout`
                is not a number or `None`.
            ValueError: `stateful_examples` is less than 1, or `timeout` is not
                above 0 and at most
                [`MAX_TIMEOUT`][lionmem.adapters.lifecycle.MAX_TIMEOUT] seconds.
        """
        if not callable(factory):
            raise TypeError(f"factory must be callable, got {type(factory).__name__}")
        require_type(profile, "profile", FidelityProfile)
        require_type(stateful_examples, "stateful_examples", int)
        if stateful_examples < 1:
            raise ValueError(f"stateful_examples must be at least 1, got {stateful_examples}")
        if timeout is not None:
            milliseconds("timeout", timeout, zero=False)
        self.factory = factory
        """Builds each fresh store."""
        self.profile = profile
        """What the stores declare."""
        self.stateful_examples = stateful_examples
        """How many call sequences the stateful comparison tries."""
        self.timeout = timeout
        """Seconds that opening a store, one call on it, or closing it may take before
        the check fails with "did not finish"; `None` waits for ever."""

    # -- running --------------------------------------------------------------

    def run_all(self, names: Sequence[str] = CHECKS) -> list[CheckResult]:
        """Run the named checks (all by default), in order.

        Raises:
            TypeError: `names` is a single str rather than a sequence of names.
            ValueError: a name is not one of `CHECKS`; no check has run.
        """
        if isinstance(names, str):
            raise TypeError(f"run_all takes a sequence of check names, got the str {names!r}; use check()")
        for name in names:
            _known(name)
        return [self.check(name) for name in names]

    def check(self, name: str) -> CheckResult:
        """Run one check by name, in its own event loop.

        Raises:
            ValueError: `name` is not one of `CHECKS`.
        """
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
        check: Check = getattr(ConformanceKit, f"_{name}")
        recorder: Recorder | None = None
        observed, passed = "", False
        async with workspace() as path:
            try:
                async with open_store(self.factory, path, self.timeout) as store:
                    recorder = Recorder(store, self.timeout)
                    try:
                        observed, passed = await check(self, recorder, path)
                    except StoreHung as exc:
                        observed, passed = str(exc), False
                    except Exception as exc:
                        observed, passed = f"raised {type(exc).__name__}: {exc}", False
            except StoreHung as exc:  # opening or closing
                observed, passed = "; then ".join(filter(None, (observed, str(exc)))), False
        steps = "" if recorder is None else recorder.reproduction()
        return CheckResult(name, declared, observed, passed, steps)

    def declared(self, name: str) -> str:
        """What the profile promises for the check `name`, as its `CheckResult`
        states it, without running the check.

        Raises:
            ValueError: `name` is not one of `CHECKS`.
        """
        _known(name)
        if name == "protocol":
            return "async store(item), retrieve(item_id), search(query)"
        if name == "concurrent_writes":
            return "no write lost"
        if name == "stateful":
            return "agrees with the reference where the profile says it does"
        value = getattr(self.profile, name)
        return value.value if hasattr(value, "value") else repr(value)

    def _stateful(self) -> CheckResult:
        declared = self.declared("stateful")
        try:
            from lionmem.testing.stateful import compare_with_reference
        except ImportError as exc:
            missing = f"needs hypothesis ({exc}); pip install 'lionmem[testing]'"
            return CheckResult("stateful", declared, missing, False, "")
        try:
            compare_with_reference(
                self.factory, self.profile, max_examples=self.stateful_examples, timeout=self.timeout
            )
        except AssertionError as exc:
            # A hang's calls are on the StoreHung that caused it.
            steps = "\n".join(getattr(exc, "__notes__", None) or getattr(exc.__cause__, "__notes__", []))
            return CheckResult("stateful", declared, str(exc).splitlines()[0], False, steps)
        return CheckResult("stateful", declared, "agrees", True, "")

    @property
    def _ordered(self) -> bool:
        return self.profile.result_order is ResultOrder.INSERTION

    @staticmethod
    def _same_results(found: Sequence[MemoryItem], expected: Sequence[MemoryItem]) -> bool:
        # Order is result_order's to judge, so a misordered search is named there.
        return sorted(_ids(found)) == sorted(_ids(expected))

    def _each_predicate(self, text: str, tag: str, filters: dict[str, Any]) -> dict[str, MemoryQuery]:
        """A search for each predicate the profile supports, by how a result names it."""
        queries: dict[str, MemoryQuery] = {}
        if self.profile.text_match is not TextMatch.UNSUPPORTED:
            queries[f"text {text!r}"] = MemoryQuery(text=text, limit=_ALL)
        if self.profile.tag_match is not TagMatch.UNSUPPORTED:
            queries[f"tags {[tag]!r}"] = MemoryQuery(tags=[tag], limit=_ALL)
        if self.profile.filter_equality is not FilterEquality.UNSUPPORTED:
            queries[f"filters {filters!r}"] = MemoryQuery(filters=filters, limit=_ALL)
        return queries

    async def _eventually(
        self,
        first: Awaitable[T],
        again: Callable[[], Awaitable[T]],
        settled: Callable[[T], bool],
    ) -> T:
        """`first`, then, for an eventually visible store, `again()` until `settled`.

        Only `first` goes through the recorder, so a reproduction shows one call.
        """
        value = await first
        deadline = asyncio.get_running_loop().time() + _EVENTUAL_WAIT
        while (
            self.profile.visibility is Visibility.EVENTUAL
            and not settled(value)
            and asyncio.get_running_loop().time() < deadline
        ):
            await asyncio.sleep(0.005)
            value = await again()
        return value

    async def _visible(self, rec: Recorder, query: MemoryQuery, want: int) -> list[MemoryItem]:
        """Search, waiting for `want` results when the store declares eventual visibility."""
        return await self._eventually(
            rec.search(query), lambda: rec.search(query, record=False), lambda found: len(found) >= want
        )

    async def _retrieved(
        self, rec: Recorder, item_id: UUID, content: object = None
    ) -> MemoryItem | None:
        """Retrieve, waiting (for an eventual store) until the item, or that content, shows."""
        return await self._eventually(
            rec.retrieve(item_id),
            lambda: rec.retrieve(item_id, record=False),
            lambda got: got is not None and (content is None or got.content == content),
        )

    async def _fill(self, rec: Recorder, items: Sequence[MemoryItem]) -> None:
        for item in items:
            await rec.store(item)
        await self._visible(rec, MemoryQuery(limit=_ALL), len(items))

    async def _refusal(self, rec: Recorder, query: MemoryQuery) -> tuple[str, bool]:
        """The verdict on a predicate declared unsupported: it must raise
        NotImplementedError, never be dropped."""
        try:
            found = await rec.search(query)
        except NotImplementedError:
            return "refused", True
        return f"the predicate was not refused: it returned {_ids(found)}", False

    async def _rule_that_holds(
        self,
        rec: Recorder,
        items: Sequence[MemoryItem],
        queries: Iterable[MemoryQuery],
        rules: dict[R, Callable[[MemoryQuery, MemoryItem], bool]],
    ) -> R | None:
        """Run every query and return the first rule predicting all the results."""
        holds = dict.fromkeys(rules, True)
        for query in queries:
            found = await rec.search(query)
            for rule, predicate in rules.items():
                expected = [item for item in items if predicate(query, item)]
                holds[rule] = holds[rule] and self._same_results(found, expected)
        return next((rule for rule, held in holds.items() if held), None)

    # -- the checks -----------------------------------------------------------

    async def _protocol(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        store = rec.inner
        problems: list[str] = []
        for name, parameter in (("store", "item"), ("retrieve", "item_id"), ("search", "query")):
            method = getattr(store, name, None)
            if method is None:
                problems.append(f"{name} is missing")
                continue
            if not inspect.iscoroutinefunction(method):
                problems.append(f"{name} is not a coroutine function")
                continue
            signature = inspect.signature(method)
            parameters = list(signature.parameters.values())
            takes_it = [p.name for p in parameters[:1]] == [parameter]
            if not takes_it or any(p.default is p.empty for p in parameters[1:]):
                problems.append(f"{name}{signature} does not take ({parameter})")
        if problems:
            rec.note("# inspect the three methods")
            return "; ".join(problems), False
        item = _item(1, content="fence", tags=["t"], metadata={"k": 1})
        # Typed as object: the point is to find out what the store really returns.
        returned: object = await rec.store(item)
        if not (isinstance(returned, UUID) and returned == item.id):
            return f"store returned {returned!r}, not the item's own UUID", False
        await self._visible(rec, MemoryQuery(limit=_ALL), 1)
        got: object = await rec.retrieve(item.id)
        if not isinstance(got, MemoryItem) or got != item or got.content != item.content:
            return f"retrieve after store returned {got!r}", False
        missing = await rec.retrieve(UUID(int=999))
        if missing is not None:
            return f"retrieve of an unknown id returned {missing!r}, not None", False
        found: object = await rec.search(MemoryQuery())
        if not isinstance(found, list) or not all(
            isinstance(i, MemoryItem) for i in cast("list[object]", found)
        ):
            return f"search returned {type(found).__name__}, not a list of MemoryItem", False
        return "as declared; own UUID, equal retrieve, None, a list", True

    async def _concurrent_writes(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        items = [_item(n, content=f"c{n}") for n in range(1, 201)]
        rec.note("await asyncio.gather(*(store.store(i) for i in items))  # 200 items")
        await asyncio.gather(*(rec.store(item, record=False) for item in items))
        found = await self._visible(rec, MemoryQuery(limit=_ALL), len(items))
        missing = [i.id.int for i in items if await rec.retrieve(i.id, record=False) is None]
        listed = len({i.id for i in found})
        if missing or listed != len(items):
            return f"{len(missing)} of 200 not retrievable, {listed} listed by search", False
        return "no write lost", True

    async def _text_match(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        items = [
            _item(1, content="Hello World"),
            _item(2, content={"greeting": "HELLO there"}),
            _item(3, content=["hello"]),
            _item(4, content="nothing here"),
            _item(5, content="100% sure_thing\\ok"),
            # str.lower() keeps ß, which casefold() and upper() make "ss"; SQL's LIKE
            # folds only ASCII letters; a needle's spaces are part of it; str() of a
            # dict quotes its keys with ', where JSON text has "; and "" is no
            # predicate at all.
            _item(6, content="Straße"),
            _item(7, content="Éclair"),
            _item(8, content="pineapple"),
        ]
        await self._fill(rec, items)
        declared = self.profile.text_match
        if declared is TextMatch.UNSUPPORTED:
            return await self._refusal(rec, MemoryQuery(text="hello", limit=_ALL))
        needles = ("hello", "HELLO", "o w", "0% s", "%", "_", "\\", "SS", "éCLAIR", " apple", "'greeting'", "")
        observed = await self._rule_that_holds(
            rec,
            items,
            (MemoryQuery(text=needle, limit=_ALL) for needle in needles),
            {
                TextMatch.CASE_INSENSITIVE_SUBSTRING: lambda q, i: str(q.text).lower()
                in str(i.content).lower(),
                TextMatch.CASE_SENSITIVE_SUBSTRING: lambda q, i: str(q.text) in str(i.content),
            },
        )
        if observed is None:
            # Another rule: nothing to predict, but results must be stored items.
            known = {i.id for i in items}
            for needle in needles:
                found = await rec.search(MemoryQuery(text=needle, limit=_ALL))
                if not all(i.id in known for i in found):
                    return f"text {needle!r} returned items that were never stored", False
            observed = TextMatch.OTHER
        return observed.value, observed is declared or declared is TextMatch.OTHER

    async def _tag_match(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        items = [
            _item(1, tags=["a", "b"]),
            _item(2, tags=["c"]),
            _item(3, tags=["A"]),
            _item(4, tags=[]),
            _item(5, tags=["b", "b"]),
            _item(6, tags=["cd"]),  # holds "c" as text, not as a tag
        ]
        await self._fill(rec, items)
        if self.profile.tag_match is TagMatch.UNSUPPORTED:
            return await self._refusal(rec, MemoryQuery(tags=["a"], limit=_ALL))
        # [] is no predicate at all, as "" is for text.
        wanted: list[list[str]] = [["b", "c"], ["a"], ["A"], ["a", "b"], ["b", "b"], ["z"], []]
        observed = await self._rule_that_holds(
            rec,
            items,
            (MemoryQuery(tags=tags, limit=_ALL) for tags in wanted),
            {
                TagMatch.ANY_OF: lambda q, i: not q.tags or bool(set(q.tags) & set(i.tags)),
                TagMatch.ALL_OF: lambda q, i: set(q.tags or ()) <= set(i.tags),
            },
        )
        shown = "another rule" if observed is None else observed.value
        return shown, observed is self.profile.tag_match

    async def _filter_equality(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        items = [
            _item(1, metadata={"n": 1}),
            _item(2, metadata={"n": 1.0}),
            _item(3, metadata={"n": True}),
            _item(4, metadata={"n": "1"}),
            _item(5, metadata={"n": 1, "m": "x"}),
            _item(6, metadata={"n": {"deep": [1, "two", None]}}),
            _item(7, metadata={"n": 2}),
            # The rules differ inside lists and objects as they do at the top.
            _item(8, metadata={"n": {"deep": [True, "two", None]}}),
            _item(9, metadata={"n": {"deep": [1.0, "two", None]}}),
            _item(10, metadata={"n": [1, 3]}),
            _item(11, metadata={"n": {"a": 1, "b": 3}}),
            _item(12, metadata={"n": ["1"]}),
            _item(13, metadata={"N": 1}),  # another key: keys compare as written
        ]
        await self._fill(rec, items)
        if self.profile.filter_equality is FilterEquality.UNSUPPORTED:
            return await self._refusal(rec, MemoryQuery(filters={"n": 1}, limit=_ALL))
        # Items 10 and 11 hold [1] and {"a": 1} without equalling them, as JSONB
        # containment (@>) would match; they equal {"b": 3, "a": 1}, whose keys
        # come in another order, and differ from [3, 1], whose elements do. {} is no
        # predicate at all.
        probes: list[dict[str, Any]] = [
            {"n": 1}, {"n": 1, "m": "x"}, {"n": {"deep": [1, "two", None]}}, {"n": "1"}, {"n": False},
            {"n": True}, {"n": [1, 2]}, {"n": {"a": 1, "b": 2}}, {"n": [1]}, {"n": {"a": 1}},
            {"n": {"b": 3, "a": 1}}, {"n": [3, 1]}, {},
        ]
        observed = await self._rule_that_holds(
            rec,
            items,
            (MemoryQuery(filters=filters, limit=_ALL) for filters in probes),
            {
                FilterEquality.PYTHON: lambda q, i: all(
                    i.metadata.get(k) == v for k, v in (q.filters or {}).items()
                ),
                FilterEquality.JSON: lambda q, i: all(
                    _json_equal(i.metadata.get(k), v) for k, v in (q.filters or {}).items()
                ),
            },
        )
        shown = "another rule" if observed is None else observed.value
        return shown, observed is self.profile.filter_equality

    async def _none_filter_matches_missing(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        items = [_item(1), _item(2, metadata={"k": None}), _item(3, metadata={"k": 0})]
        await self._fill(rec, items)
        if self.profile.filter_equality is FilterEquality.UNSUPPORTED:
            return await self._refusal(rec, MemoryQuery(filters={"k": None}, limit=_ALL))
        found = sorted(_ids(await rec.search(MemoryQuery(filters={"k": None}, limit=_ALL))))
        verdicts: dict[tuple[int, ...], str] = {(1, 2): "True", (2,): "False"}
        observed = verdicts.get(tuple(found), f"matched ids {found}")
        return observed, observed == str(self.profile.none_filter_matches_missing)

    async def _result_order(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        # Ids and timestamps run against the insertion order, so neither sort fakes it.
        # Every item meets each predicate, whose searches a store may answer from an
        # index in another order than its plain listing.
        items = [
            _item(100 - n, content=f"o{n}", tags=["o"], metadata={"o": 1}, created_at=1000.0 - n)
            for n in range(6)
        ]
        await self._fill(rec, items)
        stored = _ids(items)
        found = _ids(await rec.search(MemoryQuery(limit=_ALL)))
        if sorted(found) != sorted(stored):
            return f"returned {found}, not the stored set", False
        misordered: list[str] = []
        for described, query in self._each_predicate("o", "o", {"o": 1}).items():
            matched = _ids(await rec.search(query))
            # Which items match is for the match checks (a text rule the kit cannot
            # predict may leave some out); here they must keep the stored order.
            if matched != [n for n in stored if n in matched]:
                misordered.append(described)
        if found != stored:
            observed = "some other order"
        elif misordered:
            observed = f"{ResultOrder.INSERTION.value} when listing, another with {', '.join(misordered)}"
        else:
            observed = ResultOrder.INSERTION.value
        if self.profile.result_order is ResultOrder.INSERTION:
            return observed, observed == ResultOrder.INSERTION.value
        return observed, True

    async def _on_existing_id(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        items = [
            _item(1, content="a1", tags=["old"], metadata={"v": "old"}),
            _item(2, content="b"),
            _item(3, content="c"),
        ]
        await self._fill(rec, items)
        newer = _item(1, content="a2", tags=["new"], metadata={"v": "new"})
        try:
            await rec.store(newer)
        except ValueError:
            got = await rec.retrieve(newer.id)
            kept = got is not None and got.content == "a1"
            observed = OnExistingId.REJECT.value if kept else "raised, but changed the item"
            return observed, observed == self.profile.on_existing_id.value
        got = await self._retrieved(rec, newer.id, content="a2")
        found = await rec.search(MemoryQuery(limit=_ALL))
        if got is None or got.content != "a2":
            return f"store returned, but retrieve gives {got!r}", False
        if sorted(_ids(found)) != [1, 2, 3]:
            return f"search lists ids {_ids(found)} after a replacement", False
        # An index that keeps what the old version held finds the new one by it. A
        # text rule of the store's own may find anything.
        stale: list[str] = []
        for described, query in self._each_predicate("a1", "old", {"v": "old"}).items():
            if query.text and self.profile.text_match is TextMatch.OTHER:
                continue
            matched = await self._eventually(
                rec.search(query), partial(rec.search, query, record=False), lambda got: 1 not in _ids(got)
            )
            if 1 in _ids(matched):
                stale.append(described)
        if stale:
            return f"replaced, but {', '.join(stale)} still found it", False
        if not self._ordered:
            replaced = {OnExistingId.REPLACE_IN_PLACE, OnExistingId.MOVE_TO_END}
            return "replaced", self.profile.on_existing_id in replaced
        position: dict[tuple[int, ...], str] = {
            (1, 2, 3): OnExistingId.REPLACE_IN_PLACE.value,
            (2, 3, 1): OnExistingId.MOVE_TO_END.value,
        }
        observed = position.get(tuple(_ids(found)), f"replaced, order {_ids(found)}")
        return observed, observed == self.profile.on_existing_id.value

    async def _visibility(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        item = _item(1, content="fresh", tags=["v"])
        await rec.store(item)
        got = await rec.retrieve(item.id)
        found = await rec.search(MemoryQuery(limit=_ALL))
        if got is not None and _ids(found) == [1]:
            return Visibility.IMMEDIATE.value, True
        if self.profile.visibility is Visibility.IMMEDIATE:
            return f"not yet visible: retrieve gave {got!r}, search {_ids(found)}", False
        found = await self._visible(rec, MemoryQuery(limit=_ALL), 1)
        got = await rec.retrieve(item.id)
        visible = got is not None and _ids(found) == [1]
        return (Visibility.EVENTUAL.value if visible else "never visible"), visible

    async def _returned_objects(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        item = _item(1, content=["original"])
        await self._fill(rec, [item])
        got = await rec.retrieve(item.id)
        assert got is not None, "retrieve returned None after store"
        rec.note("(await store.retrieve(UUID(int=1))).content.append('retrieved')")
        got.content.append("retrieved")
        (listed,) = await rec.search(MemoryQuery(limit=_ALL))
        rec.note("(await store.search(MemoryQuery()))[0].content.append('searched')")
        listed.content.append("searched")
        again = await rec.retrieve(item.id)
        assert again is not None
        live = again.content == ["original", "retrieved", "searched"]
        untouched = again.content == ["original"]
        observed = "mixed: some changes were seen"
        if live:
            observed = ReturnedObjects.LIVE.value
        elif untouched:
            observed = ReturnedObjects.COPIES.value
        return observed, observed == self.profile.returned_objects.value

    async def _limit_policy(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        # Untagged items come first, so that a store cutting at the limit before the
        # tag predicate returns fewer tagged items than a search asked for.
        tagged = [_item(n, content=f"lim{n}", tags=["l"]) for n in range(1, 6)]
        items = [i for n, item in enumerate(tagged, 11) for i in (_item(n, content=f"lim{n}"), item)]
        await self._fill(rec, items)
        # Each search with every item it matches, in insertion order.
        searches: list[tuple[list[str] | None, list[int]]] = [(None, _ids(items))]
        if self.profile.tag_match is not TagMatch.UNSUPPORTED:
            searches.append((["l"], _ids(tagged)))
        limits = (*_POSITIVE_LIMITS, -2, -10)
        # Per limit, what each search gave and whether that is the slice asked for.
        gave: dict[int, list[tuple[list[int] | None, str]]] = {limit: [] for limit in limits}
        for limit in limits:
            for tags, matches in searches:
                try:
                    found: list[int] | None = _ids(await rec.search(MemoryQuery(tags=tags, limit=limit)))
                except ValueError:
                    found = None
                gave[limit].append((found, self._as_sliced(found, matches, limit)))
        outcomes = {limit: gave[limit][0][0] for limit in limits}
        sliced = {limit: gave[limit][0][1] == "sliced" for limit in limits}
        if not all(sliced[n] for n in _POSITIVE_LIMITS):
            shown = ", ".join(map(str, _POSITIVE_LIMITS))
            return f"limits {shown} gave {[outcomes[n] for n in _POSITIVE_LIMITS]}", False
        for limit in limits:
            if len({verdict for _, verdict in gave[limit]}) > 1:
                return f"limit {limit} gave {' and '.join(str(found) for found, _ in gave[limit])}", False
        if sliced[-2] and sliced[-10]:
            observed = LimitPolicy.SLICE.value
        elif outcomes[-2] is None and outcomes[-10] is None:
            observed = LimitPolicy.REJECT_NEGATIVE.value
        else:
            observed = f"negative limits gave {outcomes[-2]} and {outcomes[-10]}"
        return observed, observed == self.profile.limit_policy.value

    def _as_sliced(self, found: list[int] | None, matches: list[int], limit: int) -> str:
        """Whether a search gave the slice of its `matches` that `limit` asks for (of
        that size, from any of them, for a store without an order)."""
        if found is None:
            return "refused"
        want = matches[:limit]
        if self._ordered:
            return "sliced" if found == want else "other"
        some = len(set(found)) == len(found) and set(found) <= set(matches)
        return "sliced" if some and len(found) == len(want) else "other"

    async def _durability(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        item = _item(1, content="durable", tags=["d"], metadata={"k": "v"})
        await self._fill(rec, [item])
        rec.note("# close the store and open it again on the same backing")
        async with open_store(self.factory, path, self.timeout) as reopened:
            again = await Recorder(reopened, self.timeout).retrieve(item.id)
        rec.note("await store.retrieve(UUID(int=1))")
        if again is None:
            observed = Durability.PROCESS.value
        elif again == item and again.content == item.content:
            observed = Durability.RESTART.value
        else:
            observed = f"reopened store returned {again!r}"
        return observed, observed == self.profile.durability.value

    async def _content(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        json_value = {
            "a": [1, 2.5, None, True, "ü✓"],
            "b": {"c": ""},
            "big": 2**60,
            # Beyond a 64-bit integer, and a zero with a sign, which SQL numerics drop.
            "huge": -(2**100),
            "zero": -0.0,
        }
        plain = _item(1, content=json_value)
        await self._fill(rec, [plain])
        got = await rec.retrieve(plain.id)
        if got is None or not same_values(got.content, json_value):
            return f"JSON content came back as {None if got is None else got.content!r}", False
        refused: list[int] = []
        for n, odd in ((2, {1, 2}), (3, math.nan), (4, math.inf), (5, {"k": Decimal("1.5")}), (6, (1, 2))):
            item = _item(n, content=odd)
            try:
                await rec.store(item)
            except TypeError:
                refused.append(n)
                if await rec.retrieve(item.id) is not None:
                    return f"store raised TypeError for {odd!r} but wrote the item", False
                continue
            back = await self._retrieved(rec, item.id)
            if back is None or not (back.content is odd or same_values(back.content, odd)):
                shown = None if back is None else back.content
                return f"accepted {show(odd)} but returned {shown!r}", False
        if refused == [2, 3, 4, 5, 6]:
            observed = ContentKind.JSON_VALUES.value
        elif not refused:
            observed = ContentKind.ANY_OBJECT.value
        else:
            observed = f"refused some non-JSON contents only (items {refused})"
        return observed, observed == self.profile.content.value

    async def _round_trip(
        self, rec: Recorder, field: str, value: Any, declared: RoundTrip
    ) -> tuple[str, bool]:
        item = _item(1, content="rt", **{field: value})
        await self._fill(rec, [item])
        got = await rec.retrieve(item.id)
        assert got is not None, "retrieve returned None after store"
        observed = RoundTrip.EXACT if same_values(getattr(got, field), value) else RoundTrip.LOST
        detail = "" if observed is RoundTrip.EXACT else f" ({getattr(got, field)!r})"
        return observed.value + detail, observed is declared

    async def _created_at(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        # Bits a database may lose: digits beyond microseconds, the sign of a zero
        # (SQLite writes whole-number REALs as integers), a subnormal.
        times = [1767225600.1234567, -0.0, 5e-324]
        items = [_item(n + 1, content="rt", created_at=t) for n, t in enumerate(times)]
        await self._fill(rec, items)
        lost: list[str] = []
        for item, sent in zip(items, times, strict=True):
            got = await rec.retrieve(item.id)
            assert got is not None, "retrieve returned None after store"
            if not same_values(got.created_at, sent):
                lost.append(f"{sent!r} came back as {got.created_at!r}")
        observed = RoundTrip.LOST if lost else RoundTrip.EXACT
        detail = f" ({'; '.join(lost)})" if lost else ""
        return observed.value + detail, observed is self.profile.created_at

    async def _metadata(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        value: dict[str, Any] = {
            "nested": {"list": [1, 2.5, None, True, "ü✓"]},
            "quote'\"key": "v",
            "": 0,
            "empty": ["", [], {}],
            "blank": "",
        }
        return await self._round_trip(rec, "metadata", value, self.profile.metadata)

    async def _tags(self, rec: Recorder, path: Path) -> tuple[str, bool]:
        return await self._round_trip(rec, "tags", ["b", "a", "a", "ü"], self.profile.tags)


def _json_equal(a: object, b: object) -> bool:
    """Equality of JSON values: numbers by value, but a bool is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        left, right = cast("dict[object, object]", a), cast("dict[object, object]", b)
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(a, list) and isinstance(b, list):
        xs, ys = cast("list[object]", a), cast("list[object]", b)
        return len(xs) == len(ys) and all(_json_equal(x, y) for x, y in zip(xs, ys, strict=True))
    return bool(a == b)
