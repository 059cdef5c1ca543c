"""The reference's tag and filter rules over items, written once for every store.

`InMemoryStore` applies them to its items, and the durable stores to the rows their
SQL cannot decide alone. Governed by [ADR-0092][adr-0092-d3].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

__all__ = ["any_tag_held", "filters_hold", "with_any_tag", "with_filters"]


class _Labelled(Protocol):
    @property
    def tags(self) -> list[str]: ...

    @property
    def metadata(self) -> dict[str, Any]: ...


ItemT = TypeVar("ItemT", bound=_Labelled)


def any_tag_held(tags: list[str], wanted: frozenset[str]) -> bool:
    """Whether `tags` hold at least one of `wanted`, compared case-sensitively."""
    return not wanted.isdisjoint(tags)


def with_any_tag(items: Sequence[ItemT], wanted: frozenset[str]) -> list[ItemT]:
    """The items holding at least one of `wanted` (see `any_tag_held`), in order."""
    # `any_tag_held`'s rule, without a call per item.
    return [item for item in items if not wanted.isdisjoint(item.tags)]


def filters_hold(metadata: dict[str, Any], conditions: Sequence[tuple[str, Any]]) -> bool:
    """Whether `metadata` satisfies every `(key, value)` of `conditions` by Python's
    equality, `metadata.get(key) == value`: so `None` matches a missing key and
    `1 == 1.0 == True`. The stored value is on the left, as the reference compares,
    so a value's reflected `__eq__` takes part."""
    return all(metadata.get(key) == value for key, value in conditions)


def with_filters(items: Sequence[ItemT], conditions: Sequence[tuple[str, Any]]) -> list[ItemT]:
    """The items whose metadata satisfies `conditions` (see `filters_hold`), in order."""
    # `filters_hold`'s rule, written out: a call per item cost a two-filter search of
    # 10,000 items a quarter of its time.
    if len(conditions) == 1:
        ((key, value),) = conditions
        return [item for item in items if item.metadata.get(key) == value]
    return [item for item in items if all(item.metadata.get(k) == v for k, v in conditions)]
