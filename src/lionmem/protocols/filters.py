"""Filter operators: conditions on a metadata value, given where a filter value goes.

A search keeps an item when `metadata.get(key) == value` for each filter
([ADR-0092][adr-0092-d3]). An operator is a value whose equality is its condition:
`metadata.get("importance") == Ge(3)` asks Python for `Ge(3).__eq__(held)`, the
reflected comparison, and so means "the held value is at least 3". Every store that
applies the reference rule applies the operators with it. Governed by
[ADR-0099][adr-0099].
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, TypeAlias

__all__ = [
    "OPERATORS",
    "AllOf",
    "AnyOf",
    "Condition",
    "Ge",
    "Gt",
    "In",
    "Le",
    "Lt",
    "Missing",
    "Ne",
    "NotIn",
    "Present",
]

Bound: TypeAlias = int | float | str
"""What an order comparison compares with: a number (a bool is one, as in Python) or a string."""

Members: TypeAlias = list[Any] | tuple[Any, ...] | set[Any] | frozenset[Any]
"""The values `In` and `NotIn` take: a collection, never a string, whose characters
would be taken one by one."""


class Condition(ABC):
    """A condition on one metadata value, given as a filter's value.

    Equal to a held value that meets it; equal to another condition only of the same
    kind with equal arguments, so that two queries asking the same are equal.
    Unhashable, and not a JSON value: a store that would put it in a set, a dict or a
    JSON column raises instead of answering something else ([ADR-0099][adr-0099-d4]).
    """

    __slots__ = ()

    def holds(self, held: object) -> bool:
        """Whether `held`, what `metadata.get(key)` gives (`None` for a missing key),
        meets the condition. Never raises for a JSON value."""
        return self._holds(held)

    @property
    def arguments(self) -> tuple[Any, ...]:
        """What the condition was built from, as its `repr` shows it."""
        return self._arguments()

    @abstractmethod
    def _holds(self, held: object) -> bool: ...

    @abstractmethod
    def _arguments(self) -> tuple[Any, ...]: ...

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Condition):
            return type(other) is type(self) and other.arguments == self.arguments
        return self._holds(other)

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(map(repr, self.arguments))})"


class Ne(Condition):
    """Not equal to `value`, as `held != value`: an item without the key matches
    unless `value` is `None`."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value: Any = value
        """The value the held one must differ from: a JSON value, or a condition."""

    def _arguments(self) -> tuple[Any, ...]:
        return (self.value,)

    def _holds(self, held: object) -> bool:
        return bool(held != self.value)


class _Order(Condition):
    """An order comparison with `bound`: numbers with numbers, exactly, whatever
    their types; strings with strings, by code point; anything else never matches."""

    __slots__ = ("bound",)

    def __init__(self, bound: Bound) -> None:
        if isinstance(bound, float) and math.isnan(bound):
            raise ValueError(f"{type(self).__name__} of NaN would match nothing; give a number or a string")
        if not isinstance(bound, int | float | str):
            raise TypeError(f"{type(self).__name__} takes a number or a string, got {type(bound).__name__}")
        self.bound: Bound = bound
        """What the held value is compared with."""

    def _arguments(self) -> tuple[Any, ...]:
        return (self.bound,)

    def _holds(self, held: object) -> bool:
        if isinstance(self.bound, str):
            return isinstance(held, str) and self._compare(held, self.bound)
        return isinstance(held, int | float) and self._compare(held, self.bound)

    @staticmethod
    @abstractmethod
    def _compare(held: Any, bound: Any) -> bool: ...


class Gt(_Order):
    """Greater than `bound`: `held > bound` for two numbers or two strings."""

    __slots__ = ()

    @staticmethod
    def _compare(held: Any, bound: Any) -> bool:
        return bool(held > bound)


class Ge(_Order):
    """At least `bound`: `held >= bound` for two numbers or two strings."""

    __slots__ = ()

    @staticmethod
    def _compare(held: Any, bound: Any) -> bool:
        return bool(held >= bound)


class Lt(_Order):
    """Less than `bound`: `held < bound` for two numbers or two strings."""

    __slots__ = ()

    @staticmethod
    def _compare(held: Any, bound: Any) -> bool:
        return bool(held < bound)


class Le(_Order):
    """At most `bound`: `held <= bound` for two numbers or two strings."""

    __slots__ = ()

    @staticmethod
    def _compare(held: Any, bound: Any) -> bool:
        return bool(held <= bound)


class _Membership(Condition):
    """A condition on whether the held value equals one of `values`."""

    __slots__ = ("values",)

    def __init__(self, values: Members) -> None:
        if not isinstance(values, list | tuple | set | frozenset):
            raise TypeError(f"{type(self).__name__} takes a list, tuple or set of values, got {type(values).__name__}")
        for value in values:
            if isinstance(value, Condition):
                raise TypeError(f"{type(self).__name__} takes values, not the condition {value!r}; use AnyOf")
        self.values: tuple[Any, ...] = tuple(values)
        """The values, in the order given."""

    def _arguments(self) -> tuple[Any, ...]:
        return (list(self.values),)

    def _member(self, held: object) -> bool:
        return any(held == value for value in self.values)


class In(_Membership):
    """Equal (`==`) to one of `values`: `In([1])` holds for `1.0` and `True`, as in
    Python."""

    __slots__ = ()

    def _holds(self, held: object) -> bool:
        return self._member(held)


class NotIn(_Membership):
    """Equal (`==`) to none of `values`: an item without the key matches unless
    `None` is among them."""

    __slots__ = ()

    def _holds(self, held: object) -> bool:
        return not self._member(held)


class Present(Condition):
    """The key holds a value other than `None` (JSON `null`)."""

    __slots__ = ()

    def _arguments(self) -> tuple[Any, ...]:
        return ()

    def _holds(self, held: object) -> bool:
        return held is not None


class Missing(Condition):
    """The key is missing or holds `None`: what the filter value `None` asks, by name."""

    __slots__ = ()

    def _arguments(self) -> tuple[Any, ...]:
        return ()

    def _holds(self, held: object) -> bool:
        return held is None


class _Combined(Condition):
    """A condition made of others, each a value or a `Condition`."""

    __slots__ = ("conditions",)

    def __init__(self, *conditions: Any) -> None:
        if not conditions:
            raise ValueError(f"{type(self).__name__} needs at least one condition")
        self.conditions: tuple[Any, ...] = conditions
        """The conditions, each a value (met by an equal one) or a `Condition`."""

    def _arguments(self) -> tuple[Any, ...]:
        return self.conditions


class AnyOf(_Combined):
    """Meets at least one of `conditions`: `AnyOf(Lt(3), Gt(10), "unknown")`."""

    __slots__ = ()

    def _holds(self, held: object) -> bool:
        return any(held == condition for condition in self.conditions)


class AllOf(_Combined):
    """Meets every one of `conditions`, such as a range: `AllOf(Ge(3), Lt(5))`."""

    __slots__ = ()

    def _holds(self, held: object) -> bool:
        return all(held == condition for condition in self.conditions)


OPERATORS: frozenset[type[Condition]] = frozenset({Ne, Gt, Ge, Lt, Le, In, NotIn, Present, Missing, AnyOf, AllOf})
"""Every operator of the vocabulary: what a store applying the reference rule supports,
and the default of `FidelityProfile.filter_operators` ([ADR-0099][adr-0099-d4])."""
