"""A hypothesis state machine that drives a store and the reference side by side.

Only what the profile declares equal to [`InMemoryStore`][lionmem.protocols.memory.InMemoryStore] is
compared; a dimension that differs is left out of the generated queries. Needs
hypothesis (`pip install "lionmem[testing]"`). See [ADR-0093][adr-0093].
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar, cast
from uuid import UUID

from hypothesis import HealthCheck, Phase, settings
from hypothesis.errors import Flaky
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from lionmem.protocols._arguments import kind_of
from lionmem.protocols.memory import InMemoryStore, MemoryItem, MemoryQuery
from lionmem.testing._harness import StoreFactory, StoreHung, open_store, show, within
from lionmem.testing.profile import (
    FidelityProfile,
    FilterEquality,
    LimitPolicy,
    OnExistingId,
    ResultOrder,
    RoundTrip,
    TagMatch,
    TextMatch,
    Visibility,
)

__all__ = ["compare_with_reference"]

T = TypeVar("T")

_EVENTUAL_WAIT = 2.0
_WORDS = ["alpha", "Beta", "gamma", "ü", "50%", "a_b", "x\\y", ""]
_TAGS = ["t1", "t2", "T1", "t3"]
_KEYS = ["k", "j"]
# A query may name what no item holds, such as U+0000 (which some databases cannot
# store) or a lone surrogate (which no UTF-8 text holds); the reference answers it like
# any other value.
_QUERY_TAGS = [*_TAGS, "t\x00", "t\ud800"]
_QUERY_KEYS = [*_KEYS, "k\x00", "k\udfff"]
_QUERY_STRINGS = ["v\x00", "v\udc00"]


def _ordered(profile: FidelityProfile) -> bool:
    """Whether results can be compared with the reference's as lists, not sets."""
    return (
        profile.result_order is ResultOrder.INSERTION
        and profile.on_existing_id is OnExistingId.REPLACE_IN_PLACE
    )


def _strategies(profile: FidelityProfile) -> tuple[st.SearchStrategy[MemoryItem], st.SearchStrategy[MemoryQuery]]:
    plain = [None, 0, 1, 2.5, "v", "V", [1, "v"], {"n": 1}]
    if profile.filter_equality is FilterEquality.PYTHON:
        plain += [True, False, 1.0]
    if not profile.none_filter_matches_missing:
        plain.remove(None)
    values = st.sampled_from(plain)
    content = st.one_of(
        st.sampled_from(_WORDS),
        st.lists(st.sampled_from(_WORDS), max_size=3).map(lambda w: " ".join(w)),
        st.integers(-5, 500),
        st.dictionaries(st.sampled_from(_KEYS), st.sampled_from(_WORDS), max_size=2),
        st.lists(st.sampled_from(_WORDS), max_size=2),
        st.none(),
    )
    items = st.builds(
        MemoryItem,
        content=content,
        tags=st.lists(st.sampled_from(_TAGS), max_size=3),
        metadata=st.dictionaries(st.sampled_from(_KEYS), values, max_size=2),
    )
    text = st.none()
    if profile.text_match is TextMatch.CASE_INSENSITIVE_SUBSTRING:
        needles = ["a", "A", "%", "_", "\\", "Ü", "5", "[", "'", "alpha b", "a\x00", "a\ud800"]
        text = st.one_of(st.none(), st.sampled_from(needles))
    tags = st.none()
    if profile.tag_match is TagMatch.ANY_OF:
        tags = st.one_of(st.none(), st.lists(st.sampled_from(_QUERY_TAGS), max_size=2))
    filters = st.none()
    if profile.filter_equality is not FilterEquality.UNSUPPORTED:
        wanted = st.sampled_from([*plain, *_QUERY_STRINGS])
        filters = st.one_of(st.none(), st.dictionaries(st.sampled_from(_QUERY_KEYS), wanted, max_size=2))
    ordered = _ordered(profile)
    low = -6 if profile.limit_policy is LimitPolicy.SLICE and ordered else 0
    limit = st.integers(low, 8) if ordered else st.just(1000)
    queries = st.builds(MemoryQuery, text=text, tags=tags, filters=filters, limit=limit)
    return items, queries


class _AgainstReference(RuleBasedStateMachine):
    """Drives `factory`'s store and an `InMemoryStore` with the same calls."""

    factory: StoreFactory
    profile: FidelityProfile
    items: st.SearchStrategy[MemoryItem]
    queries: st.SearchStrategy[MemoryQuery]
    ordered: bool
    timeout: float | None

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.workspace = tempfile.TemporaryDirectory(prefix="lionmem-kit-")
        self.opened = open_store(type(self).factory, Path(self.workspace.name), self.timeout)
        self.calls: list[str] = []
        """The calls on the store so far, for the report of one that hangs."""
        self.hung = False
        self.store = self.run(self.opened.__aenter__())
        self.reference = InMemoryStore()
        self.ids: list[UUID] = []

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coroutine)

    def on_store(
        self,
        coroutine: Coroutine[Any, Any, T],
        call: Callable[[], str],
        allowed: tuple[type[Exception], ...] = (),
    ) -> T:
        """Run a call on the store under test. An exception other than `allowed` is a
        difference from the reference, reported with the `call` that raised it and
        shrunk like any other, not an error of the kit."""
        shown = f"store.{call()}"
        self.calls.append(f"await {shown}")

        async def timed() -> T:
            async with within(self.timeout, shown):
                return await coroutine

        try:
            return self.run(timed())
        except StoreHung as hung:
            self.hung = True
            hung.add_note("\n".join(self.calls))
            raise
        except allowed:
            raise
        except Exception as exc:
            raise AssertionError(f"{call()} raised {type(exc).__name__}: {exc}") from exc

    def teardown(self) -> None:
        try:
            self.run(self.opened.__aexit__(None, None, None))
        except StoreHung:
            if not self.hung:
                raise
            # A store that hung on a call may hang on closing too; the call is the report.
        finally:
            self.loop.close()
            self.workspace.cleanup()

    def _settled(self, compare: Callable[[], str | None]) -> None:
        """Assert `compare()` finds no difference; an eventual store gets time to converge."""
        difference = compare()
        if self.profile.visibility is Visibility.EVENTUAL:
            deadline = time.monotonic() + _EVENTUAL_WAIT
            while difference is not None and time.monotonic() < deadline:
                self.run(asyncio.sleep(0.005))
                difference = compare()
        assert difference is None, difference

    @rule(data=st.data())
    def store_new(self, data: st.DataObject) -> None:
        drawn = data.draw(self.items)
        # Numbered ids, so that a report names the items it is about (UUID(int=2)).
        item = MemoryItem(
            id=UUID(int=len(self.ids) + 1),
            content=drawn.content,
            tags=drawn.tags,
            metadata=drawn.metadata,
        )
        stored = self.on_store(self.store.store(item.model_copy(deep=True)), lambda: f"store({show(item)})")
        assert stored == item.id, f"store({show(item)}) returned {stored!r}, not the item's id"
        self.run(self.reference.store(item))
        self.ids.append(item.id)

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def replace(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(self.ids))
        fresh = data.draw(self.items)
        newer = MemoryItem(id=target, content=fresh.content, tags=fresh.tags, metadata=fresh.metadata)

        def call() -> str:
            return f"store({show(newer)})"

        if self.profile.on_existing_id is OnExistingId.REJECT:
            try:
                self.on_store(self.store.store(newer.model_copy(deep=True)), call, (ValueError,))
            except ValueError:
                return
            raise AssertionError(f"on_existing_id: {call()} was not rejected")
        self.on_store(self.store.store(newer.model_copy(deep=True)), call)
        self.run(self.reference.store(newer))

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def retrieve(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(self.ids))
        want = self.run(self.reference.retrieve(target))
        assert want is not None
        fields = ["content"]
        fields += [f for f in ("tags", "metadata") if getattr(self.profile, f) is RoundTrip.EXACT]

        def compare() -> str | None:
            # `object`: a store that breaks the protocol may answer with anything.
            got: object = self.on_store(self.store.retrieve(target), lambda: f"retrieve({show(target)})")
            if got is None:
                return f"retrieve({show(target)}) returned None"
            if not isinstance(got, MemoryItem):
                return f"retrieve({show(target)}) returned {kind_of(got)}, not a MemoryItem or None"
            if [getattr(got, f) for f in fields] != [getattr(want, f) for f in fields]:
                return f"retrieve({show(target)}) returned {show(got)}, the reference {show(want)}"
            return None

        self._settled(compare)

    @rule(data=st.data())
    def search(self, data: st.DataObject) -> None:
        query = data.draw(self.queries)
        want = [i.id.int for i in self.run(self.reference.search(query))]

        def compare() -> str | None:
            results: Sequence[object] = self.on_store(self.store.search(query), lambda: f"search({show(query)})")
            items = [r for r in results if isinstance(r, MemoryItem)]
            if len(items) < len(results):
                wrong = next(r for r in results if not isinstance(r, MemoryItem))
                return f"search({show(query)}) gave {kind_of(wrong)} among its results, not a MemoryItem"
            found = [i.id.int for i in items]
            agrees = found == want if self.ordered else sorted(found) == sorted(want)
            if agrees:
                return None
            return f"search({show(query)}) returned ids {found}, the reference {want}"

        self._settled(compare)

    @invariant()
    def nothing_lost(self) -> None:
        if self.profile.visibility is Visibility.IMMEDIATE and self.ids:
            last = self.ids[-1]
            found = self.on_store(self.store.retrieve(last), lambda: f"retrieve({show(last)})")
            assert found is not None, f"retrieve({show(last)}) returned None after it was stored"


def compare_with_reference(
    factory: StoreFactory,
    profile: FidelityProfile,
    *,
    max_examples: int = 60,
    step_count: int = 20,
    timeout: float | None = None,
) -> None:
    """Drive a store built by `factory` and an `InMemoryStore` with the same calls.

    Raises:
        AssertionError: a call disagrees on a dimension the profile declares equal,
            even once: a difference that does not repeat when replayed is reported
            as such. Or opening the store, closing it or one call took more than
            `timeout` seconds; that ends the comparison at once, unshrunk, and
            the exception's `__cause__` has the calls so far as its `__notes__`.
    """
    items, queries = _strategies(profile)
    machine = type(
        "AgainstReference",
        (_AgainstReference,),
        {
            "factory": staticmethod(factory),
            "profile": profile,
            "items": items,
            "queries": queries,
            "ordered": _ordered(profile),
            "timeout": timeout,
        },
    )
    try:
        run_state_machine_as_test(
            machine,
            settings=settings(
                max_examples=max_examples,
                stateful_step_count=step_count,
                deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
                database=None,
                # The same examples every run: a conformance verdict must not flicker.
                derandomize=True,
                # One difference, the simplest found, is the verdict: hypothesis would
                # raise several distinct ones together, as an ExceptionGroup.
                report_multiple_bugs=False,
                # Shrinking gives the short reproduction a report prints; explaining which
                # steps could vary took two thirds of a failing run and is not printed.
                phases=[phase for phase in Phase if phase is not Phase.explain],
            ),
        )
    except StoreHung as hung:
        raise AssertionError(str(hung)) from hung
    except Flaky as exc:
        raise AssertionError(
            f"a difference that did not repeat when the calls were replayed: {_first_difference(exc)}"
        ) from exc


def _first_difference(error: BaseException) -> str:
    """The first line of the first AssertionError within `error`, else of `error`."""
    pending = [error]
    while pending:
        current = pending.pop(0)
        if isinstance(current, AssertionError):
            return next(iter(str(current).splitlines()), "AssertionError")
        if isinstance(current, BaseExceptionGroup):
            pending[:0] = cast("BaseExceptionGroup[BaseException]", current).exceptions
    return next(iter(str(error).splitlines()), type(error).__name__)
