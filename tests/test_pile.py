"""Pile: typed, ordered, UUID-keyed and safe under threads and tasks."""

from __future__ import annotations

import asyncio
import threading
from uuid import uuid4

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


def test_exclude_removes_and_returns() -> None:
    a, b = MemoryItem(), MemoryItem()
    pile = Pile([a, b], item_type=MemoryItem)
    assert pile.exclude(str(a.id)) is a
    assert pile.keys() == [b.id]
    with pytest.raises(KeyError, match=str(a.id)):
        pile.exclude(a.id)


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
