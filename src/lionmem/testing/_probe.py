"""A store under one check: its recorded calls, its declared profile, and the
waits and comparisons every check shares.

Governed by [ADR-0093][adr-0093].
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from contextlib import AbstractAsyncContextManager
from enum import Enum
from typing import Any, TypeAlias, TypeVar
from uuid import UUID

from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore
from lionmem.protocols.profile import FidelityProfile, FilterEquality, ResultOrder, TagMatch, TextMatch, Visibility
from lionmem.testing._harness import Recorder

__all__ = ["ALL", "POSITIVE_LIMITS", "Probe", "Reopen", "Verdict", "described", "extension_verdict", "ids", "numbered"]

T = TypeVar("T")
R = TypeVar("R", bound=Enum)

EVENTUAL_WAIT = 5.0
"""Seconds an eventually visible store is given to show what it was sent."""

ALL = 10_000
"""A limit above the number of items any check stores."""

POSITIVE_LIMITS = (0, 2, 5, 50, 2**64)
"""Limits the kit tries; the last is beyond any SQL LIMIT and must still mean "all"."""

Verdict: TypeAlias = tuple[str, bool]
"""What a check observed, and whether that is what the profile declares."""

Reopen: TypeAlias = Callable[[], AbstractAsyncContextManager[MemoryStore]]
"""Opens the store again on the same workspace, for the checks that need a second one."""


def numbered(n: int, **fields: Any) -> MemoryItem:
    """A `MemoryItem` whose id is `UUID(int=n)`, so that reproductions stay short."""
    return MemoryItem(id=UUID(int=n), **fields)


def ids(items: Sequence[MemoryItem]) -> list[int]:
    """The integers of the items' ids, in order."""
    return [i.id.int for i in items]


class Probe(Recorder):
    """The recorder of one check's calls, with what the store declares."""

    def __init__(self, store: MemoryStore, profile: FidelityProfile, timeout: float | None) -> None:
        super().__init__(store, timeout)
        self.profile = profile
        """What the store declares."""
        self.difference = ""
        """For a failing check, the first call whose result differs from what the
        declaration predicts: what it found against what was expected."""

    def differs(self, query: MemoryQuery, found: list[int], expected: str) -> None:
        """Note the first difference: `query` found the ids `found`, where `expected`."""
        if not self.difference:
            self.difference = f"{described(query)} found {found}, where {expected}"

    @property
    def ordered(self) -> bool:
        """Whether the profile promises insertion order."""
        return self.profile.result_order is ResultOrder.INSERTION

    @staticmethod
    def same_results(found: Sequence[MemoryItem], expected: Sequence[MemoryItem]) -> bool:
        """Whether two results hold the same items, in any order: order is
        `result_order`'s to judge, so a misordered search is named there."""
        return sorted(ids(found)) == sorted(ids(expected))

    def each_predicate(self, text: str, tag: str, filters: dict[str, Any]) -> dict[str, MemoryQuery]:
        """A search for each predicate the profile supports, by how a result names it."""
        queries: dict[str, MemoryQuery] = {}
        if self.profile.text_match is not TextMatch.UNSUPPORTED:
            queries[f"text {text!r}"] = MemoryQuery(text=text, limit=ALL)
        if self.profile.tag_match is not TagMatch.UNSUPPORTED:
            queries[f"tags {[tag]!r}"] = MemoryQuery(tags=[tag], limit=ALL)
        if self.profile.filter_equality is not FilterEquality.UNSUPPORTED:
            queries[f"filters {filters!r}"] = MemoryQuery(filters=filters, limit=ALL)
        return queries

    async def eventually(
        self,
        first: Awaitable[T],
        again: Callable[[], Awaitable[T]],
        settled: Callable[[T], bool],
    ) -> T:
        """`first`, then, for an eventually visible store, `again()` until `settled`.

        Only `first` goes through the recorder, so a reproduction shows one call.
        """
        value = await first
        deadline = asyncio.get_running_loop().time() + EVENTUAL_WAIT
        while (
            self.profile.visibility is Visibility.EVENTUAL
            and not settled(value)
            and asyncio.get_running_loop().time() < deadline
        ):
            await asyncio.sleep(0.005)
            value = await again()
        return value

    async def visible(self, query: MemoryQuery, want: int) -> list[MemoryItem]:
        """Search, waiting for `want` results when the store declares eventual visibility."""
        return await self.eventually(
            self.search(query), lambda: self.search(query, record=False), lambda found: len(found) >= want
        )

    async def retrieved(self, item_id: UUID, content: object = None) -> MemoryItem | None:
        """Retrieve, waiting (for an eventual store) until the item, or that content, shows."""
        return await self.eventually(
            self.retrieve(item_id),
            lambda: self.retrieve(item_id, record=False),
            lambda got: got is not None and (content is None or got.content == content),
        )

    async def fill(self, items: Sequence[MemoryItem]) -> None:
        """Store `items` in order and wait until a search lists them all."""
        for stored in items:
            await self.store(stored)
        await self.visible(MemoryQuery(limit=ALL), len(items))

    async def refusal(self, query: MemoryQuery) -> Verdict:
        """The verdict on a predicate declared unsupported: it must raise
        NotImplementedError, never be dropped."""
        try:
            found = await self.search(query)
        except NotImplementedError:
            return "refused", True
        self.differs(query, ids(found), "a predicate declared unsupported raises NotImplementedError")
        return f"the predicate was not refused: it returned {ids(found)}", False

    async def rule_that_holds(
        self,
        items: Sequence[MemoryItem],
        queries: Iterable[MemoryQuery],
        rules: dict[R, Callable[[MemoryQuery, MemoryItem], bool]],
        declared: Enum,
    ) -> R | None:
        """Run every query and return the first rule predicting all the results,
        noting the first query whose results the `declared` rule does not predict."""
        holds = dict.fromkeys(rules, True)
        for query in queries:
            found = await self.search(query)
            for rule, predicate in rules.items():
                expected = [stored for stored in items if predicate(query, stored)]
                same = self.same_results(found, expected)
                holds[rule] = holds[rule] and same
                if rule is declared and not same:
                    self.differs(query, sorted(ids(found)), f"{rule.value} finds {sorted(ids(expected))}")
        return next((rule for rule, held in holds.items() if held), None)


async def extension_verdict(
    probe: Probe, declared: Enum, protocol: type, differs: Callable[[Probe, Any], Awaitable[str | None]]
) -> Verdict:
    """The verdict on an extension a profile leaves `UNDECLARED` by default, as
    [ADR-0105][adr-0105]'s are: unchecked when undeclared; else the store must be a
    `protocol`, and `differs(probe, store)` says how it parts from the reference
    (`None`: it does not), `declared` naming the reference when it passes."""
    if declared is type(declared)["UNDECLARED"]:
        return declared.value, True
    probe.note(f"isinstance(store, {protocol.__name__})")
    if not isinstance(probe.inner, protocol):
        article = "an" if protocol.__name__[0] in "AEIOU" else "a"
        return f"not {article} {protocol.__name__}", False
    difference = await differs(probe, probe.inner)
    return difference or declared.value, difference is None


def described(query: MemoryQuery) -> str:
    """A query as a failure names it, by its predicates; the checks ask for every match."""
    parts = [
        f"{name} {value!r}"
        for name, value in (("text", query.text), ("tags", query.tags), ("filters", query.filters))
        if value is not None
    ]
    return "a search with " + (", ".join(parts) or "no predicate")
