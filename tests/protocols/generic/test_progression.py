"""Progression: ordered unique UUIDs with O(1) membership."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from uuid import UUID, uuid4

import pytest

from lionmem import Progression


def test_keeps_order_of_first_appearance() -> None:
    ids = [uuid4() for _ in range(5)]
    p = Progression(ids)
    assert list(p) == ids and len(p) == 5


def test_membership() -> None:
    a = uuid4()
    p = Progression([a])
    assert a in p and uuid4() not in p and str(a) not in p


def test_append_refuses_duplicates_and_non_uuids() -> None:
    a = uuid4()
    p = Progression([a])
    with pytest.raises(ValueError, match=str(a)):
        p.append(a)
    with pytest.raises(TypeError, match="str"):
        p.append(str(a))  # type: ignore[arg-type]
    assert list(p) == [a]


def test_remove_keeps_the_rest_in_order() -> None:
    a, b, c = uuid4(), uuid4(), uuid4()
    p = Progression([a, b, c])
    p.remove(b)
    assert list(p) == [a, c]
    with pytest.raises(ValueError, match=str(b)):
        p.remove(b)


@pytest.mark.parametrize("key", ["not-a-uuid", [1]])
def test_remove_refuses_what_is_not_a_uuid_as_append_does(key: object) -> None:
    p = Progression([uuid4()])
    before = list(p)
    with pytest.raises(TypeError, match=f"^Progression holds UUIDs, got {type(key).__name__}$"):
        p.remove(key)  # type: ignore[arg-type]
    assert list(p) == before


def test_iteration_is_a_snapshot() -> None:
    a, b = uuid4(), uuid4()
    p = Progression([a])
    seen = []
    for item in p:
        seen.append(item)
        p.append(b)
    assert seen == [a] and list(p) == [a, b]


def test_membership_is_constant_time() -> None:
    # Membership goes through a hash table, never a scan: a UUID whose __eq__ would
    # be called by a linear search is never compared.
    class Loud(UUID):
        def __eq__(self, other: object) -> bool:
            raise AssertionError("linear scan")

        __hash__ = UUID.__hash__

    p = Progression(uuid4() for _ in range(1000))
    assert Loud(int=7) not in p


def test_repr_lists_the_ids() -> None:
    a = UUID(int=1)
    assert repr(Progression([a])) == f"Progression([{a!r}])"


@pytest.mark.parametrize(
    "duplicate",
    [copy.copy, copy.deepcopy, lambda p: pickle.loads(pickle.dumps(p))],
    ids=["copy", "deepcopy", "pickle"],
)
def test_a_copy_is_independent_and_keeps_the_order(duplicate: Callable[[Progression], Progression]) -> None:
    ids = [uuid4() for _ in range(3)]
    p = Progression(ids)
    copied = duplicate(p)
    assert list(copied) == ids
    copied.append(uuid4())
    copied.remove(ids[0])
    assert list(p) == ids, "changing the copy changed the original"
    p.remove(ids[1])
    assert list(copied)[:1] == [ids[1]]
