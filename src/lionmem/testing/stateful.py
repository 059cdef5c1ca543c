"""A hypothesis state machine that drives a store and the reference side by side.

Only what the profile declares equal to [`InMemoryStore`][lionmem.protocols.in_memory.InMemoryStore] is
compared; a dimension that differs is left out of the generated queries. Needs
hypothesis (`pip install "lionmem[testing]"`). See [ADR-0093][adr-0093].
"""

from __future__ import annotations

import asyncio
import tempfile
import time
from collections.abc import Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast
from uuid import UUID

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.errors import Flaky
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

if TYPE_CHECKING:
    # The part of its signature the kit uses, as hypothesis annotates it from 6.170.7;
    # the testing extra allows releases from 6.108, where it has no annotations.
    def _run_as_test(
        state_machine_factory: type[RuleBasedStateMachine], *, settings: settings | None = None
    ) -> None: ...
else:
    from hypothesis.stateful import run_state_machine_as_test as _run_as_test

from lionmem._internal.arguments import kind_of
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.in_memory import InMemoryStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore
from lionmem.protocols.profile import (
    Durability,
    FidelityProfile,
    FilterEquality,
    Forgetting,
    OnExistingId,
    RoundTrip,
    TagMatch,
    TextMatch,
    Visibility,
)
from lionmem.testing._blame import likely_dimension
from lionmem.testing._draws import (
    ALL,
    CUTOFFS,
    TAGS,
    conditions_at,
    limits_for,
    numbered_id,
    ordered_results,
    strategies,
    values_near,
)
from lionmem.testing._harness import (
    StoreFactory,
    StoreHung,
    first_difference,
    same_values,
    show,
    store_from_factory,
    within,
)

__all__ = ["compare_with_reference"]

T = TypeVar("T")

_EVENTUAL_WAIT = 2.0


class _AgainstReference(RuleBasedStateMachine):
    """Drives `factory`'s store and an `InMemoryStore` with the same calls."""

    factory: StoreFactory
    profile: FidelityProfile
    items: st.SearchStrategy[MemoryItem]
    queries: st.SearchStrategy[MemoryQuery]
    limits: st.SearchStrategy[int]
    ordered: bool
    timeout: float | None

    def __init__(self) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.workspace = tempfile.TemporaryDirectory(prefix="lionmem-kit-")
        self.opened: AbstractAsyncContextManager[MemoryStore] | None = self._open()
        self.calls: list[str] = []
        """The calls on the store so far, for the report of one that hangs."""
        self.hung = False
        self.store = self.run(self.opened.__aenter__())
        self.reference = InMemoryStore()
        self.ids: list[UUID] = []

    def _open(self) -> AbstractAsyncContextManager[MemoryStore]:
        return store_from_factory(type(self).factory, Path(self.workspace.name), self.timeout)

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
            if self.opened is not None:  # None once a reopening failed
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
        item = MemoryItem(
            id=numbered_id(len(self.ids) + 1),
            content=drawn.content,
            tags=drawn.tags,
            metadata=drawn.metadata,
            created_at=drawn.created_at,
        )
        stored = self.on_store(self.store.store(item.model_copy(deep=True)), lambda: f"store({show(item)})")
        assert stored == item.id, f"store({show(item)}) returned {stored!r}, not the item's id"
        self.run(self.reference.store(item))
        self.ids.append(item.id)

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def replace(self, data: st.DataObject, target: UUID | None = None) -> None:
        """Store a new version of a stored item (`target`, or one drawn), or store a
        deleted one again."""
        target = data.draw(st.sampled_from(self.ids)) if target is None else target
        fresh = data.draw(self.items)
        newer = MemoryItem(
            id=target, content=fresh.content, tags=fresh.tags, metadata=fresh.metadata, created_at=fresh.created_at
        )

        def call() -> str:
            return f"store({show(newer)})"

        deleted = self.run(self.reference.retrieve(target)) is None
        if self.profile.on_existing_id is OnExistingId.REJECT and not deleted:
            try:
                self.on_store(self.store.store(newer.model_copy(deep=True)), call, (ValueError,))
            except ValueError:
                return
            raise AssertionError(f"on_existing_id: {call()} was not rejected")
        self.on_store(self.store.store(newer.model_copy(deep=True)), call)
        self.run(self.reference.store(newer))

    @precondition(lambda self: self.profile.durability is Durability.RESTART)
    @rule()
    def reopen(self) -> None:
        """Close the store and open another on the same backing, as a restart does: a
        store that keeps every item must go on agreeing with the reference, in order
        and with its replacements, beginning with a search for everything."""
        self.calls.append("# close the store and open it again on the same backing")
        opened, self.opened = self.opened, None
        assert opened is not None
        try:
            self.run(opened.__aexit__(None, None, None))
            reopened = self._open()
            self.store = self.run(reopened.__aenter__())
        except StoreHung as hung:
            hung.add_note("\n".join(self.calls))
            raise
        except Exception as exc:
            raise AssertionError(f"closing the store and opening it again raised {type(exc).__name__}: {exc}") from exc
        self.opened = reopened
        self._search(MemoryQuery(limit=ALL), restarted=True)

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def retrieve(self, data: st.DataObject) -> None:
        target = data.draw(st.sampled_from(self.ids))
        self._settled(lambda: self._retrieved_differently(target, "returned None"))

    def _retrieved_differently(self, target: UUID, none: str) -> str | None:
        """How `retrieve(target)` differs from the reference's, saying `none` if it
        gives `None`; compared like the round-trip checks, types and all."""
        want = self.run(self.reference.retrieve(target))
        fields = ["content"]
        fields += [f for f in ("tags", "metadata", "created_at") if getattr(self.profile, f) is RoundTrip.EXACT]
        # `object`: a store that breaks the protocol may answer with anything.
        got: object = self.on_store(self.store.retrieve(target), lambda: f"retrieve({show(target)})")
        if want is None:  # deleted
            return None if got is None else f"retrieve({show(target)}) of a deleted id returned {show(got)}"
        if got is None:
            return f"retrieve({show(target)}) {none}"
        if not isinstance(got, MemoryItem):
            return f"retrieve({show(target)}) returned {kind_of(got)}, not a MemoryItem or None"
        if not same_values([getattr(got, f) for f in fields], [getattr(want, f) for f in fields]):
            return f"retrieve({show(target)}) returned {show(got)}, the reference {show(want)}"
        return None

    @rule()
    def retrieve_unknown(self) -> None:
        # The id the next new item will get: a store may answer from a key it made up.
        unknown = numbered_id(len(self.ids) + 1)

        def compare() -> str | None:
            got: object = self.on_store(self.store.retrieve(unknown), lambda: f"retrieve({show(unknown)})")
            return None if got is None else f"retrieve({show(unknown)}) of an id never stored returned {show(got)}"

        self._settled(compare)

    @rule(data=st.data())
    def search(self, data: st.DataObject) -> None:
        self._search(data.draw(self.queries))

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def search_near_an_item(self, data: st.DataObject) -> None:
        """Search by each predicate alone with a value taken from a stored item, as it
        is or changed where a wrong rule would still take it for the same (case, a
        shorter or reordered value), since random values rarely meet what was stored."""
        item = self.run(self.reference.retrieve(data.draw(st.sampled_from(self.ids))))
        if item is None:  # deleted
            return
        predicates: dict[str, Any] = {}
        if self.profile.text_match is TextMatch.CASE_INSENSITIVE_SUBSTRING:
            held = str(item.content)
            start = data.draw(st.integers(0, len(held) - 1)) if held else 0
            part = held[start : data.draw(st.integers(start + 1, start + 6))]
            predicates["text"] = data.draw(st.sampled_from([part.upper(), part.swapcase(), part, f"{part} "]))
        if self.profile.tag_match is TagMatch.ANY_OF and item.tags:
            tag = data.draw(st.sampled_from(item.tags))
            predicates["tags"] = [data.draw(st.sampled_from([tag, tag.swapcase(), tag[:-1]]))]
        if self.profile.filter_equality is not FilterEquality.UNSUPPORTED and item.metadata:
            key = data.draw(st.sampled_from(sorted(item.metadata)))
            value = data.draw(st.sampled_from(values_near(self.profile, item.metadata[key])))
            predicates["filters"] = {data.draw(st.sampled_from([key, key.swapcase()])): value}
        for name, predicate in predicates.items():
            self._search(MemoryQuery(**{name: predicate}, limit=ALL))
        lacking = next((t for t in TAGS if t not in item.tags), None)
        if "tags" in predicates and lacking is not None:
            # With a tag the item lacks as well, any-of still finds it and all-of does not.
            self._search(MemoryQuery(tags=[*predicates["tags"], lacking], limit=ALL))
        # Then all of them at once, under a limit, which a store may apply too early.
        self._search(MemoryQuery(**predicates, limit=data.draw(self.limits)))
        if "filters" in predicates:
            # And each declared operator at the edge of the value, where a wrong one
            # parts from the right: random bounds rarely fall there.
            ((key, _),) = predicates["filters"].items()
            for edge in conditions_at(self.profile, item.metadata.get(key)):
                self._search(MemoryQuery(filters={key: edge}, limit=ALL))

    def _search(self, query: MemoryQuery, *, restarted: bool = False) -> None:
        """Compare one search with the reference's; `restarted`, just after a reopening,
        blames a difference on durability, which the store declared RESTART."""
        want = [i.id.int for i in self.run(self.reference.search(query))]

        def compare() -> str | None:
            results: object = self.on_store(self.store.search(query), lambda: f"search({show(query)})")
            if not isinstance(results, list):
                return f"search({show(query)}) returned {kind_of(results)}, not a list"
            listed = cast("list[object]", results)
            items = [r for r in listed if isinstance(r, MemoryItem)]
            if len(items) < len(listed):
                wrong = next(r for r in listed if not isinstance(r, MemoryItem))
                return f"search({show(query)}) gave {kind_of(wrong)} among its results, not a MemoryItem"
            found = [i.id.int for i in items]
            if self._agree(found, want):
                return None
            if restarted:
                return (
                    f"after closing the store and opening it again, search({show(query)}) returned ids {found}, "
                    f"the reference {want} (durability: the profile declares Durability.RESTART)"
                )
            likely = likely_dimension(query, found, want, self._reference_ids)
            return f"search({show(query)}) returned ids {found}, the reference {want} (most likely {likely})"

        self._settled(compare)

    def _reference_ids(self, query: MemoryQuery) -> list[int]:
        return [i.id.int for i in self.run(self.reference.search(query))]

    def _agree(self, found: list[int], want: list[int]) -> bool:
        """Whether ids a store listed are the reference's, in order where the profile
        promises the reference's order."""
        return found == want if self.ordered else sorted(found) == sorted(want)

    @precondition(lambda self: self.profile.forgetting is Forgetting.REFERENCE)
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        """One call of the `ForgettingStore` extension, compared with the reference's;
        a deletion shows in the searches and retrieves that follow."""
        store = self.store
        assert isinstance(store, ForgettingStore), "declares Forgetting.REFERENCE but is not a ForgettingStore"
        if self.profile.visibility is Visibility.EVENTUAL:
            # A deletion concerns the items a store shows: wait until it shows every write.
            for item_id in self.ids:
                self._settled(partial(self._retrieved_differently, item_id, "returned None"))
        known = st.sampled_from([*self.ids, numbered_id(len(self.ids) + 1)])
        call = data.draw(st.sampled_from(["delete", "delete_many", "delete_matching", "count", "scan", "age"]))
        if call == "delete":
            target = data.draw(known)
            existed = self.on_store(store.delete(target), lambda: f"delete({show(target)})")
            self._returned(f"delete({show(target)})", existed, self.run(self.reference.delete(target)))
            if existed and data.draw(st.booleans()):
                # Stored again at once, as a new item: it must come last.
                self.replace(data, target)
                self._search(MemoryQuery(limit=ALL))
        elif call == "delete_many":
            targets = data.draw(st.lists(known, min_size=1, max_size=4))
            deleted = self.on_store(store.delete_many(targets), lambda: f"delete_many({show(targets)})")
            self._returned(f"delete_many({show(targets)})", deleted, self.run(self.reference.delete_many(targets)))
        elif call in ("delete_matching", "count"):
            # Half of them match everything, so that the limit decides what goes.
            query = data.draw(st.one_of(st.builds(MemoryQuery, limit=self.limits), self.queries))
            method = store.delete_matching if call == "delete_matching" else store.count
            done = self.on_store(method(query), lambda: f"{call}({show(query)})")
            want = getattr(self.reference, call)(query)
            self._returned(f"{call}({show(query)})", done, self.run(want))
        elif call == "scan":
            self._scan(store, data.draw(st.integers(1, 4)))
        elif self.profile.created_at is RoundTrip.EXACT:
            cutoff = data.draw(st.sampled_from(CUTOFFS))
            deleted = self.on_store(store.delete_created_before(cutoff), lambda: f"delete_created_before({cutoff!r})")
            want = self.run(self.reference.delete_created_before(cutoff))
            self._returned(f"delete_created_before({cutoff!r})", deleted, want)

    @staticmethod
    def _returned(call: str, got: object, want: object) -> None:
        assert type(got) is type(want) and got == want, f"{call} returned {got!r}, the reference {want!r}"

    def _scan(self, store: ForgettingStore, batch_size: int) -> None:
        want = [i.id.int for i in self.run(self.reference.search(MemoryQuery(limit=ALL)))]

        async def every_batch() -> list[list[MemoryItem]]:
            return [batch async for batch in store.scan(batch_size)]

        batches = self.on_store(every_batch(), lambda: f"scan({batch_size})")
        sizes = [len(batch) for batch in batches]
        assert all(0 < size <= batch_size for size in sizes), f"scan({batch_size}) gave batches of {sizes} items"
        found = [i.id.int for batch in batches for i in batch]
        assert self._agree(found, want), f"scan({batch_size}) gave ids {found}, the reference {want}"

    @invariant()
    def last_stored_comes_back(self) -> None:
        if self.profile.visibility is Visibility.IMMEDIATE and self.ids:
            difference = self._retrieved_differently(self.ids[-1], "returned None after it was stored")
            assert difference is None, difference


def compare_with_reference(
    factory: StoreFactory,
    profile: FidelityProfile,
    *,
    max_examples: int = 60,
    step_count: int = 20,
    timeout: float | None = None,
) -> None:
    """Drive a store built by `factory` and an `InMemoryStore` with the same calls:
    `max_examples` sequences of up to `step_count` calls, each on fresh stores. A
    store whose profile declares `Durability.RESTART` is also closed and opened
    again on its workspace between calls, then searched for everything. The
    conformance kit runs this as its `stateful` check, with its own
    `stateful_examples` (by default the same 60) and `timeout`.

    Raises:
        AssertionError: a call disagrees on a dimension the profile declares equal,
            even once: a difference that does not repeat when replayed is reported
            as such. Or opening the store, closing it or one call took more than
            `timeout` seconds; that ends the comparison at once, unshrunk, and
            the exception's `__cause__` has the calls so far as its `__notes__`.
    """
    items, queries = strategies(profile)
    machine = type(
        "AgainstReference",
        (_AgainstReference,),
        {
            "factory": staticmethod(factory),
            "profile": profile,
            "items": items,
            "queries": queries,
            "limits": limits_for(profile),
            "ordered": ordered_results(profile),
            "timeout": timeout,
        },
    )
    try:
        _run_as_test(
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
            f"a difference that did not repeat when the calls were replayed: {first_difference(exc)}"
        ) from exc
