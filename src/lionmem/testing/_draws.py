"""What the kit's state machine draws: the items and queries it compares a store with
the reference on, each value chosen to tell a wrong rule from the reference's.

Governed by [ADR-0093][adr-0093].
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import cast
from uuid import UUID

from hypothesis import strategies as st

from lionmem.protocols.filters import AllOf, AnyOf, Condition, Ge, Gt, In, Le, Lt, Missing, Ne, NotIn, Present
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.profile import (
    FidelityProfile,
    FilterEquality,
    LimitPolicy,
    OnExistingId,
    ResultOrder,
    TagMatch,
    TextMatch,
)

__all__ = [
    "ALL",
    "CUTOFFS",
    "KEYS",
    "NUMBERS",
    "QUERY_KEYS",
    "QUERY_STRINGS",
    "QUERY_TAGS",
    "TAGS",
    "TIMES",
    "WORDS",
    "conditions_at",
    "limits_for",
    "numbered_id",
    "ordered_results",
    "strategies",
    "values_near",
]

# Each value is here to tell a wrong rule from the reference's: "Straße" lower-cases
# as it is but folds to "strasse"; "t12" holds "t1" and "T1" differs from it by case
# only, as "K" does from "k"; True, 1.0, -0.0 and 2**70 are what a store keeping
# bare JSON or SQL numbers gives back changed; lists and objects that hold, reorder or
# nest another's values catch containment, set-like and textual comparisons.
WORDS = ["alpha", "Beta", "gamma", "über", "Straße", "50%", "a_b", "x\\y", ""]
TAGS = ["t1", "t2", "T1", "t12"]
KEYS = ["k", "j", "K"]
NUMBERS = [True, False, 2.5, 1.0, -0.0, 2**70]
TIMES = [1767225600.1234567, 1767225600.0, 0.5, -0.0]
# Each time and the next float above it as a cutoff, so that "before" is told from
# "at or before"; and one as a datetime.
CUTOFFS: list[float | datetime] = [
    *TIMES,
    *(math.nextafter(t, math.inf) for t in TIMES),
    datetime.fromtimestamp(1767225600.0, UTC),
]
ALL = 2**64
"""A limit beyond any SQL LIMIT, which must still mean every match."""
# A query may name what no item holds, such as U+0000 (which some databases cannot
# store) or a lone surrogate (which no UTF-8 text holds); the reference answers it like
# any other value.
QUERY_TAGS = [*TAGS, "t\x00", "t\ud800"]
QUERY_KEYS = [*KEYS, "k\x00", "k\udfff"]
QUERY_STRINGS = ["v\x00", "v\udc00"]


def ordered_results(profile: FidelityProfile) -> bool:
    """Whether results can be compared with the reference's as lists, not sets."""
    return profile.result_order is ResultOrder.INSERTION and profile.on_existing_id is OnExistingId.REPLACE_IN_PLACE


def numbered_id(n: int) -> UUID:
    """The id of the `n`th item stored: numbered for the reports, but not in the
    order stored (5, 10, 4, 9, ...), so a store sorting by id differs from one keeping
    insertion order."""
    return UUID(int=n // 11 * 11 + n * 5 % 11)


# Seam for tests: `strategies`, searched for the queries that tell wrong rules apart.
def strategies(profile: FidelityProfile) -> tuple[st.SearchStrategy[MemoryItem], st.SearchStrategy[MemoryQuery]]:
    plain = [
        None, 0, 1, 2.5, -0.0, 2**70, "v", "V", "", [], {}, [1, "v"], [1], [1.0], [1, 3], [3, 1],
        {"n": 1}, {"n": 1, "m": 2}, {"m": 2, "n": 1},
    ]  # fmt: skip
    if profile.filter_equality is FilterEquality.PYTHON:
        plain += [True, False, 1.0]
    if not profile.none_filter_matches_missing:
        plain.remove(None)
    values = st.sampled_from(plain)
    content = st.one_of(
        st.sampled_from(WORDS),
        st.lists(st.sampled_from(WORDS), max_size=3).map(lambda w: " ".join(w)),
        st.integers(-5, 500),
        st.sampled_from(NUMBERS),
        st.dictionaries(st.sampled_from(KEYS), st.sampled_from(WORDS), max_size=2),
        st.lists(st.sampled_from([*WORDS, *NUMBERS]), max_size=2),
        st.none(),
    )
    items = st.builds(
        MemoryItem,
        content=content,
        tags=st.lists(st.sampled_from(TAGS), max_size=3),
        metadata=st.dictionaries(st.sampled_from(KEYS), values, max_size=2),
        created_at=st.sampled_from(TIMES),
    )
    text = st.none()
    if profile.text_match is TextMatch.CASE_INSENSITIVE_SUBSTRING:
        needles = ["a", "A", "", "a ", "ss", "%", "_", "\\", "Ü", "5", "[", "'", "alpha b", "a\x00", "a\ud800"]
        text = st.one_of(st.none(), st.sampled_from(needles))
    tags = st.none()
    if profile.tag_match is TagMatch.ANY_OF:
        tags = st.one_of(st.none(), st.lists(st.sampled_from(QUERY_TAGS), max_size=2))
    filters = st.none()
    if profile.filter_equality is not FilterEquality.UNSUPPORTED:
        wanted = st.sampled_from([*plain, *QUERY_STRINGS])
        filters = st.one_of(st.none(), st.dictionaries(st.sampled_from(QUERY_KEYS), wanted, max_size=2))
    queries = st.builds(MemoryQuery, text=text, tags=tags, filters=filters, limit=limits_for(profile))
    return items, queries


def limits_for(profile: FidelityProfile) -> st.SearchStrategy[int]:
    """Small limits, negative ones where they slice; every match where results cannot
    be compared in order, since which ones a limit keeps is then the store's choice."""
    if not ordered_results(profile):
        return st.just(ALL)
    return st.integers(-6 if profile.limit_policy is LimitPolicy.SLICE else 0, 8)


def values_near(profile: FidelityProfile, value: object) -> list[object]:
    """`value`, and values a wrong rule would take for it: a list reordered or cut
    short, an object reordered or cut short, integers as floats, and `None` where the
    profile declares that it matches a missing key."""
    near: list[object] = [value]
    if isinstance(value, list):
        values = cast("list[object]", value)
        near += [values[::-1], values[:1], [float(v) if type(v) is int else v for v in values]]
    elif isinstance(value, dict):
        pairs = list(cast("dict[str, object]", value).items())
        near += [dict(pairs[::-1]), dict(pairs[:1])]
    elif type(value) is int and -(2**53) <= value <= 2**53:
        near.append(float(value))
    if profile.none_filter_matches_missing:
        near.append(None)
    return near


def conditions_at(profile: FidelityProfile, value: object) -> list[Condition]:
    """The declared operators at `value`'s edge: an order with it as the bound,
    membership of it and of a string it holds, and presence (`value` may be `None`);
    those the profile declares alone."""
    near: list[Condition] = [Present(), Missing(), Ne(value), In([value]), NotIn([value])]
    if isinstance(value, int | float | str):
        near += [Ge(value), Gt(value), Le(value), Lt(value), AllOf(Ge(value), Le(value))]
    if isinstance(value, str) and value:
        near += [In([value[:-1]]), AnyOf(value[:-1], Gt(value))]
    return [c for c in near if type(c) in profile.filter_operators]
