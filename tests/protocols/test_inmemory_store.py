"""InMemoryStore: one test per recorded store and search rule (ADR-0092 D3)."""

from __future__ import annotations

import asyncio
import math
import threading
import weakref
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery, Pile
from lionmem.protocols import _matching as matching_module
from tests.support.store_contract import (
    assert_call_arguments_checked,
    assert_forgetting_agrees_with_the_reference,
    assert_forgetting_follows_the_reference,
    assert_scan_hands_over_everything_in_order,
    assert_unicode_text_agrees,
    assert_unreadable_content_refused,
)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def filled(*items: MemoryItem) -> InMemoryStore:
    store = InMemoryStore()

    async def fill() -> None:
        for item in items:
            await store.store(item)

    run(fill())
    return store


def search(store: InMemoryStore, **query: Any) -> list[MemoryItem]:
    result: list[MemoryItem] = run(store.search(MemoryQuery(**query)))
    return result


def contents(items: Sequence[MemoryItem]) -> list[Any]:
    return [i.content for i in items]


class SubItem(MemoryItem):
    pass


# -- store / retrieve ---------------------------------------------------------


def test_pile_accepts_memory_item_subclasses() -> None:
    sub = SubItem(content="sub")
    store = filled(sub)
    assert run(store.retrieve(sub.id)) is sub


def test_first_store_appends_to_progression_and_collection() -> None:
    a, b = MemoryItem(content="a"), MemoryItem(content="b")
    store = filled(a, b)
    assert contents(search(store)) == ["a", "b"]


def test_store_returns_the_items_own_id() -> None:
    item = MemoryItem()
    assert run(InMemoryStore().store(item)) == item.id


def test_storing_the_same_id_replaces_without_moving() -> None:
    a, b, c = (MemoryItem(content=n) for n in "abc")
    store = filled(a, b, c)
    newer = MemoryItem(id=a.id, content="A")
    assert run(store.store(newer)) == a.id
    assert contents(search(store)) == ["A", "b", "c"]
    assert run(store.retrieve(a.id)) is newer


def test_a_stored_object_is_visible_immediately() -> None:
    store = InMemoryStore()
    item = MemoryItem(content="now")

    async def scenario() -> None:
        await store.store(item)
        assert await store.retrieve(item.id) is item
        assert await store.search(MemoryQuery(text="now")) == [item]

    run(scenario())


def test_missing_identity_returns_none() -> None:
    assert run(filled(MemoryItem()).retrieve(uuid4())) is None


def test_state_is_per_instance_and_starts_empty() -> None:
    item = MemoryItem()
    filled(item)
    fresh = InMemoryStore()
    assert run(fresh.retrieve(item.id)) is None and search(fresh) == []


def test_store_of_a_non_memory_item_raises_type_error_and_stores_nothing() -> None:
    from lionmem import Element

    store = filled(MemoryItem(content="kept"))
    for bad in (Element(), {"content": "x"}, "x", None):
        with pytest.raises(TypeError, match="MemoryItem"):
            run(store.store(bad))  # type: ignore[arg-type]
    assert contents(search(store)) == ["kept"]


def test_call_arguments_follow_the_rules_of_every_store() -> None:
    run(assert_call_arguments_checked(InMemoryStore()))


def test_content_that_text_search_cannot_read_is_refused() -> None:
    run(assert_unreadable_content_refused(InMemoryStore()))


def test_a_refused_content_names_the_item_and_keeps_what_str_raised() -> None:
    class Unprintable:
        def __str__(self) -> str:
            raise LookupError("no text for this")

    item = MemoryItem(content=Unprintable())
    store = filled(MemoryItem(content="kept"))
    with pytest.raises(ValueError) as caught:
        run(store.store(item))
    assert str(caught.value) == (
        f"item {item.id}: str(content) raised LookupError (no text for this), so no text "
        "search could read it; nothing was stored"
    )
    assert isinstance(caught.value.__cause__, LookupError)
    assert contents(search(store, text="KEPT")) == ["kept"]


def test_content_other_than_a_plain_str_is_read_as_text_once_when_stored() -> None:
    class Counted:
        reads = 0

        def __str__(self) -> str:
            Counted.reads += 1
            return "counted"

    class Text(str):
        def __str__(self) -> str:
            raise AssertionError("a str subclass is read like any other object")

    store = InMemoryStore()
    run(store.store(MemoryItem(content=Counted())))
    assert Counted.reads == 1
    with pytest.raises(ValueError, match="AssertionError"):
        run(store.store(MemoryItem(content=Text("x"))))


def test_forgetting_follows_the_rules_every_forgetting_store_shares() -> None:
    run(assert_forgetting_follows_the_reference(InMemoryStore()))
    run(assert_forgetting_agrees_with_the_reference(InMemoryStore()))
    run(assert_scan_hands_over_everything_in_order(InMemoryStore()))


def test_store_holds_a_pile_of_memory_items() -> None:
    pile = InMemoryStore()._items
    assert isinstance(pile, Pile)
    assert pile.item_type == {MemoryItem} and not pile.strict_type


# -- search -------------------------------------------------------------------


def test_search_returns_a_list_in_progression_order() -> None:
    items = [MemoryItem(content=i) for i in range(30)]
    result = search(filled(*items), limit=100)
    assert type(result) is list and result == items


def test_text_is_a_case_insensitive_substring_of_str_content() -> None:
    store = filled(
        MemoryItem(content="The Quick Fox"),
        MemoryItem(content={"Animal": "FOX"}),
        MemoryItem(content=["quick"]),
        MemoryItem(content=12345),
        MemoryItem(content=None),
        MemoryItem(content="quack"),
    )
    assert contents(search(store, text="qUiCk")) == ["The Quick Fox", ["quick"]]
    assert contents(search(store, text="fox")) == ["The Quick Fox", {"Animal": "FOX"}]
    assert contents(search(store, text="234")) == [12345]
    assert contents(search(store, text="none")) == [None]
    assert search(store, text="qu ck") == []


def test_text_follows_lower_on_unicode_not_casefold_or_normalisation() -> None:
    run(assert_unicode_text_agrees(InMemoryStore()))


def test_text_is_not_fuzzy_or_tokenised() -> None:
    store = filled(MemoryItem(content="running"))
    assert search(store, text="run") != [] and search(store, text="runs") == []


def test_text_uses_the_subclass_str() -> None:
    class Shouty(str):
        def __str__(self) -> str:
            return "LOUD"

    store = filled(MemoryItem(content=Shouty("quiet")))
    assert len(search(store, text="loud")) == 1 and search(store, text="quiet") == []


@pytest.mark.parametrize("text", [None, ""])
def test_none_or_empty_text_applies_no_predicate(text: str | None) -> None:
    store = filled(MemoryItem(content="a"), MemoryItem(content=None))
    assert len(search(store, text=text)) == 2


def test_tags_match_any_of() -> None:
    store = filled(
        MemoryItem(content=1, tags=["a", "b"]),
        MemoryItem(content=2, tags=["c"]),
        MemoryItem(content=3, tags=[]),
    )
    assert contents(search(store, tags=["b", "c"])) == [1, 2]
    assert contents(search(store, tags=["z"])) == []


def test_tags_are_case_sensitive_and_duplicate_insensitive() -> None:
    store = filled(MemoryItem(content=1, tags=["Red", "Red"]))
    assert search(store, tags=["red"]) == []
    assert len(search(store, tags=["Red", "Red"])) == 1


@pytest.mark.parametrize("tags", [None, []])
def test_none_or_empty_tags_apply_no_predicate(tags: list[str] | None) -> None:
    store = filled(MemoryItem(tags=["x"]), MemoryItem())
    assert len(search(store, tags=tags)) == 2


def test_filters_are_all_of_equality() -> None:
    store = filled(
        MemoryItem(content=1, metadata={"a": 1, "b": 2}),
        MemoryItem(content=2, metadata={"a": 1, "b": 3}),
        MemoryItem(content=3, metadata={"a": 1.0, "b": 2}),
    )
    assert contents(search(store, filters={"a": 1})) == [1, 2, 3]
    assert contents(search(store, filters={"a": 1, "b": 2})) == [1, 3]
    assert contents(search(store, filters={"a": 1, "b": 4})) == []
    assert contents(search(store, filters={"a": True})) == [1, 2, 3]  # Python equality


def test_a_none_filter_matches_a_missing_key_and_an_explicit_none() -> None:
    store = filled(
        MemoryItem(content="missing"),
        MemoryItem(content="none", metadata={"k": None}),
        MemoryItem(content="set", metadata={"k": 0}),
    )
    assert contents(search(store, filters={"k": None})) == ["missing", "none"]


@pytest.mark.parametrize("filters", [None, {}])
def test_none_or_empty_filters_apply_no_predicate(filters: dict[str, Any] | None) -> None:
    store = filled(MemoryItem(metadata={"k": 1}), MemoryItem())
    assert len(search(store, filters=filters)) == 2


def test_predicate_groups_combine_with_and() -> None:
    store = filled(
        MemoryItem(content="red apple", tags=["fruit"], metadata={"ripe": True}),
        MemoryItem(content="red car", tags=["thing"], metadata={"ripe": True}),
        MemoryItem(content="red cherry", tags=["fruit"], metadata={"ripe": False}),
        MemoryItem(content="green apple", tags=["fruit"], metadata={"ripe": True}),
    )
    found = search(store, text="red", tags=["fruit"], filters={"ripe": True})
    assert contents(found) == ["red apple"]


def test_predicates_apply_text_then_tags_then_filters() -> None:
    calls: list[str] = []

    class Traced:
        def __init__(self, name: str) -> None:
            self.name = name

        def __str__(self) -> str:
            calls.append(f"text:{self.name}")
            return self.name

    class TracedValue:
        def __init__(self, name: str) -> None:
            self.name = name

        def __eq__(self, other: object) -> bool:
            calls.append(f"filter:{self.name}")
            return True

        __hash__ = object.__hash__

    store = filled(
        MemoryItem(content=Traced("hit-a"), tags=["t"], metadata={"k": TracedValue("a")}),
        MemoryItem(content=Traced("miss"), tags=["t"], metadata={"k": TracedValue("b")}),
        MemoryItem(content=Traced("hit-c"), tags=["u"], metadata={"k": TracedValue("c")}),
    )
    assert calls == ["text:hit-a", "text:miss", "text:hit-c"]  # read once as each is stored
    calls.clear()
    found = search(store, text="hit", tags=["t"], filters={"k": "anything"}, limit=1000)
    assert len(found) == 1
    # Each group runs over what the previous groups let through, text first.
    assert calls == ["text:hit-a", "text:miss", "text:hit-c", "filter:a"]


def test_no_predicates_returns_everything_in_order_up_to_the_limit() -> None:
    items = [MemoryItem(content=i) for i in range(25)]
    store = filled(*items)
    assert search(store) == items[:20]
    assert search(store, limit=25) == items


def test_limit_zero_returns_an_empty_list() -> None:
    store = filled(MemoryItem(content="x"))
    assert search(store, limit=0) == [] and search(store, text="x", limit=0) == []


def test_a_positive_limit_returns_at_most_that_many() -> None:
    items = [MemoryItem(content=f"n{i}") for i in range(10)]
    store = filled(*items)
    assert search(store, text="n", limit=3) == items[:3]
    assert search(store, text="n", limit=50) == items


def test_a_negative_limit_drops_that_many_trailing_matches() -> None:
    items = [MemoryItem(content=f"n{i}", tags=["t"]) for i in range(5)]
    store = filled(*items)
    assert search(store, limit=-2) == items[:3]
    assert search(store, text="n", limit=-1) == items[:4]
    assert search(store, tags=["t"], limit=-5) == []
    assert search(store, limit=-99) == []


@pytest.mark.parametrize("limit", [-1, 0, 1, 20])
def test_an_empty_store_finds_nothing(limit: int) -> None:
    assert search(InMemoryStore(), limit=limit) == []
    assert search(InMemoryStore(), text="x", limit=limit) == []


def test_results_are_live_objects() -> None:
    item = MemoryItem(content="draft", tags=["a"], metadata={"v": 1})
    store = filled(item)
    (found,) = search(store, text="draft")
    assert found is item
    found.tags.append("b")
    found.metadata["v"] = 2
    found.content = "final"
    assert search(store, tags=["b"]) == [item]
    assert search(store, filters={"v": 2}) == [item]
    assert search(store, text="final") == [item] and search(store, text="draft") == []
    assert run(store.retrieve(item.id)).content == "final"


def test_in_place_mutation_of_content_is_matched() -> None:
    box: list[str] = ["old"]
    store = filled(MemoryItem(content=box))
    assert len(search(store, text="old")) == 1
    box[0] = "new"
    assert search(store, text="old") == [] and len(search(store, text="new")) == 1


def test_reassigned_string_contents_are_matched() -> None:
    items = [MemoryItem(content="Alpha") for _ in range(3)]
    store = filled(*items)
    assert len(search(store, text="alpha")) == 3
    items[1].content = "Beta"
    assert search(store, text="alpha") == [items[0], items[2]]
    assert search(store, text="beta") == [items[1]]


@pytest.mark.parametrize("limit", [1, 7, 128, 129, 600, 2047, 2048, 5000])
def test_early_stop_returns_the_same_as_a_full_scan(limit: int) -> None:
    # Matches are sparse and cross the chunk boundaries of the early-stopping scan.
    items = [MemoryItem(content=f"{'hit' if i % 3 == 0 else 'miss'} {i}") for i in range(3000)]
    store = filled(*items)
    expected = [i for i in items if "hit" in i.content][:limit]
    assert search(store, text="HIT", limit=limit) == expected


class Counted:
    """Content that counts how often the text predicate reads it."""

    reads = 0

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        Counted.reads += 1
        return self.text


@pytest.mark.parametrize("limit", [0, 1, 5])
def test_a_small_limit_stops_the_scan_after_the_chunk_that_fills_it(limit: int) -> None:
    # The first chunk ends on the `limit`-th match; more matches follow it.
    chunk = matching_module.MIN_CHUNK
    hits = {chunk - 1 - k for k in range(limit)} | {chunk, 2 * chunk + 3}
    items = [MemoryItem(content=Counted("hit" if i in hits else "miss")) for i in range(3 * chunk)]
    store = filled(*items)
    Counted.reads = 0
    assert search(store, text="hit", limit=limit) == [items[i] for i in sorted(hits)][:limit]
    assert Counted.reads == chunk


def test_a_negative_limit_reads_every_item() -> None:
    items = [MemoryItem(content=Counted("hit" if i % 2 else "miss")) for i in range(2000)]
    store = filled(*items)
    Counted.reads = 0
    assert search(store, text="hit", limit=-1) == items[1::2][:-1]
    assert Counted.reads == len(items)


def test_search_is_a_snapshot() -> None:
    store = filled(*(MemoryItem(content=i) for i in range(3)))

    async def scenario() -> list[MemoryItem]:
        found = await store.search(MemoryQuery(limit=100))
        await store.store(MemoryItem(content=99))
        return found

    assert contents(run(scenario())) == [0, 1, 2]


# -- concurrency --------------------------------------------------------------


def test_a_thousand_concurrent_store_tasks_lose_nothing() -> None:
    store = InMemoryStore()
    items = [MemoryItem(content=i) for i in range(1000)]

    async def scenario() -> list[Any]:
        ids = await asyncio.gather(*(store.store(i) for i in items))
        assert ids == [i.id for i in items]
        return await store.search(MemoryQuery(limit=5000))

    assert sorted(contents(run(scenario()))) == list(range(1000))


def test_stores_from_several_threads_lose_nothing() -> None:
    store = InMemoryStore()
    barrier = threading.Barrier(6)

    def worker(offset: int) -> None:
        async def body() -> None:
            barrier.wait()
            for i in range(300):
                await store.store(MemoryItem(content=offset + i))
                await store.search(MemoryQuery(text="1", limit=-1))

        asyncio.run(body())

    threads = [threading.Thread(target=worker, args=(n * 1000,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    found = contents(search(store, limit=10_000))
    assert sorted(found) == [n * 1000 + i for n in range(6) for i in range(300)]


def test_the_store_can_be_weakly_referenced() -> None:
    # As the durable stores can: a wrapper may keep per-store state in a
    # WeakKeyDictionary without keeping the store alive.
    state: weakref.WeakKeyDictionary[InMemoryStore, str] = weakref.WeakKeyDictionary()
    store = InMemoryStore()
    state[store] = "calls: 0"
    assert weakref.ref(store)() is store and state[store] == "calls: 0"
    del store
    assert len(state) == 0


def test_delete_matching_by_age_deletes_what_a_search_of_the_older_items_returns() -> None:
    async def scenario() -> None:
        store = InMemoryStore()
        items = [MemoryItem(content=f"n{n}", tags=["odd" if n % 2 else "even"], created_at=float(n)) for n in range(8)]
        for item in items:
            await store.store(item)
        # Of the items created before 6, the odd ones, the first two: 1 and 3; 5 stays.
        odd = MemoryQuery(tags=["odd"], limit=2)
        assert await store.delete_matching(odd, created_before=6) == 2
        left = [i.content for i in await store.search(MemoryQuery(limit=100))]
        assert left == ["n0", "n2", "n4", "n5", "n6", "n7"]
        moment = datetime(1970, 1, 1, 0, 0, 5, tzinfo=UTC)  # 5.0: n4 is before it, n5 is not
        assert await store.delete_matching(MemoryQuery(limit=100), created_before=moment) == 3
        assert [i.content for i in await store.search(MemoryQuery(limit=100))] == ["n5", "n6", "n7"]
        assert (
            await store.delete_matching(MemoryQuery(limit=-1), created_before=7) == 1
        )  # n5, n6 older; all but the last
        with pytest.raises(ValueError, match="^created_before must be a finite timestamp, got nan$"):
            await store.delete_matching(MemoryQuery(), created_before=math.nan)
        with pytest.raises(TypeError, match="^created_before must be a timestamp or a datetime, got a str$"):
            await store.delete_matching(MemoryQuery(), created_before="5")  # type: ignore[arg-type]
        assert [i.content for i in await store.search(MemoryQuery(limit=100))] == ["n6", "n7"]

    asyncio.run(scenario())


def test_store_many_checks_the_batch_and_stores_all_or_none() -> None:
    from tests.support.store_contract import UNREADABLE_CONTENT, assert_batches_checked

    run(assert_batches_checked(InMemoryStore()))
    kept = MemoryItem(content="kept")
    store = filled(kept)
    for content in UNREADABLE_CONTENT:
        with pytest.raises(ValueError, match="content"):
            run(store.store_many([MemoryItem(content="fine"), MemoryItem(content=content)]))
    with pytest.raises(TypeError, match="^every item must be a MemoryItem, got dict$"):
        run(store.store_many([MemoryItem(content="fine"), {"content": "a dict"}]))  # type: ignore[list-item]
    assert run(store.search(MemoryQuery())) == [kept]


def test_store_many_gives_what_storing_one_at_a_time_gives() -> None:
    first, second = MemoryItem(content="a"), MemoryItem(content="b")
    again = MemoryItem(id=first.id, content="a, replaced")
    batch = [first, second, again, MemoryItem(content="c")]
    one_at_a_time = filled(*batch)
    together = InMemoryStore()
    assert run(together.store_many(iter(batch))) == [i.id for i in batch]
    assert run(together.search(MemoryQuery())) == run(one_at_a_time.search(MemoryQuery()))
    assert [i.content for i in run(together.search(MemoryQuery()))] == ["a, replaced", "b", "c"]
