"""Pile: typed, ordered, UUID-keyed and safe under threads and tasks."""

from __future__ import annotations

import asyncio
import copy
import pickle
import threading
import weakref
from typing import Any
from uuid import UUID, uuid4

import pytest

from lionmem import Element, MemoryItem, Pile, Progression


class Other(Element):
    pass


def test_keeps_insertion_order_and_progression() -> None:
    items = [MemoryItem(content=i) for i in range(5)]
    pile = Pile(items, item_type=MemoryItem)
    assert pile.values() == items
    assert pile.keys() == [i.id for i in items]
    assert pile.items() == [(i.id, i) for i in items]
    assert isinstance(pile.progression, Progression)
    assert list(pile.progression) == pile.keys()
    assert list(pile) == items and len(pile) == 5


def test_replacing_an_id_keeps_its_position() -> None:
    a, b, c = (MemoryItem(content=n) for n in "abc")
    pile = Pile([a, b, c], item_type=MemoryItem)
    newer = MemoryItem(id=b.id, content="B")
    pile.include(newer)
    assert pile.keys() == [a.id, b.id, c.id]
    assert pile.get(b.id) is newer and len(pile) == 3


def test_subclasses_are_admitted_unless_strict() -> None:
    item = MemoryItem()
    assert item in Pile([item], item_type=Element)
    strict = Pile(item_type=Element, strict_type=True)
    with pytest.raises(TypeError, match="exactly Element, got MemoryItem"):
        strict.include(item)
    assert strict.strict_type and strict.item_type == {Element}


def test_a_set_of_item_types() -> None:
    pile: Pile[Element] = Pile(item_type={MemoryItem, Other})
    pile.include(Other())
    pile.include(MemoryItem())
    with pytest.raises(TypeError, match="MemoryItem | Other"):
        pile.include(Element())


def test_wrong_type_names_expected_and_given_and_changes_nothing() -> None:
    first = MemoryItem()
    pile = Pile([first], item_type=MemoryItem)
    for bad in (Other(), "text", None, {"id": str(uuid4())}):
        with pytest.raises(TypeError, match=r"Pile expects MemoryItem, got \w+"):
            pile.include(bad)  # type: ignore[arg-type]
    assert pile.values() == [first]


@pytest.mark.parametrize("bad_id", ["abc", "UPPER", 7, None])
def test_an_id_that_is_not_a_uuid_is_refused_and_changes_nothing(bad_id: object) -> None:
    # Only an element built without validation can carry one; as a key it would stand
    # beside the element with the same UUID, out of reach of get().
    kept = MemoryItem(content="kept")
    pile = Pile([kept], item_type=MemoryItem)
    given = str(kept.id).upper() if bad_id == "UPPER" else bad_id
    unvalidated = MemoryItem.model_construct(id=given, content="x")
    kind = type(given).__name__
    with pytest.raises(TypeError, match=f"^Pile keys elements by their UUID id, got an id that is an? {kind}$"):
        pile.include(unvalidated)
    assert pile.keys() == [kept.id] and list(pile.progression) == [kept.id]


def test_an_id_of_a_uuid_subclass_is_a_uuid() -> None:
    # Validation keeps a UUID subclass as it is; the pile must not mistake it for text.
    class TaggedUUID(UUID):
        pass

    plain = uuid4()
    item = MemoryItem(id=TaggedUUID(int=plain.int), content="x")
    pile = Pile([item], item_type=MemoryItem)
    assert type(item.id) is TaggedUUID
    assert pile.get(plain) is item and list(pile.progression) == [plain]


@pytest.mark.parametrize("item_type", [set(), {int}, {"MemoryItem"}])
def test_item_type_must_name_element_classes(item_type: set[object]) -> None:
    with pytest.raises((TypeError, ValueError)):
        Pile(item_type=item_type)  # type: ignore[arg-type]


def test_get_by_uuid_or_string_with_and_without_default() -> None:
    item = MemoryItem()
    pile = Pile([item], item_type=MemoryItem)
    assert pile.get(item.id) is item
    assert pile.get(str(item.id)) is item
    assert pile[item.id] is item
    missing = uuid4()
    assert pile.get(missing, None) is None
    with pytest.raises(KeyError, match=str(missing)):
        pile.get(missing)
    with pytest.raises(ValueError, match="Pile key 'nope' is not a UUID"):
        pile.get("nope")
    with pytest.raises(TypeError, match="Pile key must be a UUID or its string form, got int"):
        pile.get(7)  # type: ignore[call-overload]


def test_exclude_ids_removes_those_present_and_a_returning_one_comes_last() -> None:
    a, b, c = Element(), Element(), Element()
    pile = Pile([a, b, c], item_type=Element)
    assert pile.exclude_ids([c.id, uuid4(), a.id, a.id]) == [c, a]
    assert pile.keys() == [b.id]
    pile.include(a)
    assert pile.keys() == [b.id, a.id]


def test_exclude_where_picks_from_the_elements_in_order_and_removes_nothing_if_it_raises() -> None:
    elements = [Element(metadata={"n": n}) for n in range(5)]
    pile = Pile(elements, item_type=Element)
    seen: list[list[Element]] = []

    def odd(current: list[Element]) -> list[Element]:
        seen.append(current)
        return [e for e in current if e.metadata["n"] % 2]

    assert pile.exclude_where(odd) == [elements[1], elements[3]]
    assert seen == [elements] and pile.values() == [elements[0], elements[2], elements[4]]

    def fails(current: list[Element]) -> list[Element]:
        raise LookupError("no")

    with pytest.raises(LookupError):
        pile.exclude_where(fails)
    assert pile.values() == [elements[0], elements[2], elements[4]]


def test_exclude_removes_and_returns() -> None:
    a, b = MemoryItem(), MemoryItem()
    pile = Pile([a, b], item_type=MemoryItem)
    assert pile.exclude(str(a.id)) is a
    assert pile.keys() == [b.id]
    with pytest.raises(KeyError, match=str(a.id)):
        pile.exclude(a.id)
    with pytest.raises(ValueError, match="Pile key 'nope' is not a UUID"):
        pile.exclude("nope")
    with pytest.raises(TypeError, match="Pile key must be a UUID or its string form, got int"):
        pile.exclude(7)  # type: ignore[arg-type]
    assert pile.keys() == [b.id]


def test_membership_by_id_string_or_element() -> None:
    item = MemoryItem()
    pile = Pile([item], item_type=MemoryItem)
    assert item in pile and item.id in pile and str(item.id) in pile
    assert "garbage" not in pile and MemoryItem() not in pile and 3 not in pile


def test_iteration_is_a_snapshot() -> None:
    pile = Pile([MemoryItem()], item_type=MemoryItem)
    for _ in pile:
        pile.include(MemoryItem())
    assert len(pile) == 2


def test_values_up_to_a_stop_are_the_slice_of_all_of_them() -> None:
    elements = [Element() for _ in range(5)]
    pile = Pile(elements, item_type=Element)
    for stop in (0, 1, 3, 5, 9, -1, -4, -5, -9, 2**70, -(2**70)):
        got = pile.values(stop)
        assert got == pile.values()[:stop] and all(a is b for a, b in zip(got, elements, strict=False)), stop
    snapshot = pile.values(3)
    snapshot.append(Element())  # a snapshot: the pile is not changed through it
    assert len(pile) == 5
    for bad in (True, "3", 2.0):
        with pytest.raises(TypeError, match=f"^stop must be an int, got {type(bad).__name__}$"):
            pile.values(bad)  # type: ignore[arg-type]


def test_repr() -> None:
    assert repr(Pile([MemoryItem()], item_type=MemoryItem)) == "Pile[MemoryItem](len=1)"


def test_async_methods_mirror_the_sync_ones() -> None:
    async def scenario() -> None:
        pile = Pile(item_type=MemoryItem)
        item = MemoryItem()
        await pile.ainclude(item)
        assert await pile.aget(item.id) is item
        assert await pile.aget(uuid4(), "absent") == "absent"
        assert await pile.aexclude(item.id) is item
        with pytest.raises(KeyError):
            await pile.aget(item.id)
        with pytest.raises(TypeError):
            await pile.ainclude(Other())  # type: ignore[arg-type]
        assert len(pile) == 0

    asyncio.run(scenario())


def test_concurrent_tasks_lose_nothing() -> None:
    async def scenario() -> Pile[MemoryItem]:
        pile = Pile(item_type=MemoryItem)
        await asyncio.gather(*(pile.ainclude(MemoryItem(content=i)) for i in range(1000)))
        return pile

    pile = asyncio.run(scenario())
    assert sorted(i.content for i in pile) == list(range(1000))


def test_concurrent_threads_lose_nothing_and_snapshots_stay_consistent() -> None:
    pile = Pile(item_type=MemoryItem)
    barrier = threading.Barrier(8)
    errors: list[BaseException] = []

    def writer(offset: int) -> None:
        barrier.wait()
        try:
            for i in range(500):
                pile.include(MemoryItem(content=offset + i))
                assert all(key == value.id for key, value in pile.items())
        except BaseException as exc:  # pragma: no cover - only on failure
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(n * 1000,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(pile) == 4000
    assert sorted(i.content for i in pile) == [n * 1000 + i for n in range(8) for i in range(500)]


def test_a_copy_is_a_new_pile_of_the_same_elements() -> None:
    items = [MemoryItem(content=n) for n in "abc"]
    pile = Pile(items, item_type=MemoryItem, strict_type=True)
    copied = copy.copy(pile)
    assert copied.values() == items and all(a is b for a, b in zip(copied, items, strict=True))
    assert copied.item_type == pile.item_type and copied.strict_type
    copied.include(MemoryItem(content="d"))
    copied.exclude(items[0].id)
    assert pile.values() == items, "changing the copy changed the original"
    pile.exclude(items[1].id)
    assert [i.content for i in copied] == ["b", "c", "d"]


def test_a_deep_copy_copies_the_elements_in_order() -> None:
    items = [MemoryItem(content=n, tags=[n]) for n in "abc"]
    pile = Pile[Element](items, item_type={MemoryItem, Other})
    copied = copy.deepcopy(pile)
    assert copied.keys() == pile.keys() and copied.item_type == pile.item_type
    assert all(a is not b and a == b for a, b in zip(copied, items, strict=True))
    assert [i.tags for i in copied if isinstance(i, MemoryItem)] == [["a"], ["b"], ["c"]]
    first = copied[items[0].id]
    assert isinstance(first, MemoryItem)
    first.tags.append("x")
    assert items[0].tags == ["a"]
    copied.include(MemoryItem())
    assert len(pile) == 3


def test_a_pickled_pile_comes_back_whole_and_usable() -> None:
    items = [MemoryItem(content=n) for n in "abc"]
    pile = Pile(items, item_type=MemoryItem, strict_type=True)
    back: Pile[MemoryItem] = pickle.loads(pickle.dumps(pile))
    assert back.keys() == pile.keys() and [i.content for i in back] == ["a", "b", "c"]
    assert back.item_type == pile.item_type and back.strict_type
    with pytest.raises(TypeError, match="exactly MemoryItem"):
        back.include(Other())  # type: ignore[arg-type]
    back.include(MemoryItem())
    assert len(back) == 4 and len(pile) == 3


def test_a_pile_and_a_progression_can_be_weakly_referenced() -> None:
    pile = Pile([MemoryItem()], item_type=MemoryItem)
    progression = pile.progression
    refs: list[weakref.ref[Any]] = [weakref.ref(pile), weakref.ref(progression)]
    assert [ref() for ref in refs] == [pile, progression]
    # The weak reference slot is no state: copies and pickles are as before.
    assert copy.copy(pile).keys() == pickle.loads(pickle.dumps(pile)).keys() == list(progression)
    del pile, progression
    assert [ref() for ref in refs] == [None, None]
