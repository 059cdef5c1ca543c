"""`FidelityProfile`: what a memory store promises, one field per dimension.

Governed by [ADR-0093][adr-0093].
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, fields
from enum import Enum

from lionmem.protocols.filters import OPERATORS, Condition

__all__ = [
    "REFERENCE_PROFILE",
    "ContentKind",
    "Durability",
    "Expiry",
    "FidelityProfile",
    "FilterEquality",
    "Forgetting",
    "LimitPolicy",
    "Namespaces",
    "OnExistingId",
    "Paging",
    "Recall",
    "ResultOrder",
    "ReturnedObjects",
    "RoundTrip",
    "TagMatch",
    "TextMatch",
    "Visibility",
]


class TextMatch(Enum):
    """How `MemoryQuery.text` selects items."""

    CASE_INSENSITIVE_SUBSTRING = "case-insensitive substring of str(content)"
    """The reference rule: `text.lower() in str(content).lower()`."""
    CASE_SENSITIVE_SUBSTRING = "case-sensitive substring of str(content)"
    """`text in str(content)`."""
    OTHER = "another rule"
    """Declare it for a rule the kit cannot predict (semantic, tokenised...): the kit
    checks only that each result is an item that was stored."""
    UNSUPPORTED = "unsupported"
    """A text predicate is refused with `NotImplementedError`."""


class TagMatch(Enum):
    """How `MemoryQuery.tags` selects items."""

    ANY_OF = "any-of, case-sensitive"
    """The reference rule: at least one requested tag is on the item."""
    ALL_OF = "all-of, case-sensitive"
    """Every requested tag is on the item."""
    UNSUPPORTED = "unsupported"
    """A tag predicate is refused with `NotImplementedError`."""


class FilterEquality(Enum):
    """How a `MemoryQuery.filters` value is compared with `metadata[key]`."""

    PYTHON = "Python =="
    """The reference rule: `metadata.get(key) == value`, so `1 == 1.0 == True`."""
    JSON = "JSON value equality"
    """Equal as JSON values: `1 == 1.0`, but `true` is not `1`."""
    UNSUPPORTED = "unsupported"
    """A filter predicate is refused with `NotImplementedError`."""


class ResultOrder(Enum):
    """The order of `search` results. The kit runs each search twice and observes
    which of the three a store keeps."""

    INSERTION = "insertion"
    """The reference rule. Declare it when every search lists its matches in the order
    their ids were first stored, with or without predicates, every time."""
    UNORDERED = "unordered"
    """Declare it when the store promises no order: the same search may list its
    matches differently each time. The kit compares results as sets and never fails
    an order."""
    RANKED = "ranked"
    """Declare it when the store lists matches in an order of its own (relevance,
    recency, ...) that the same search on the same items repeats. The kit compares
    results as sets, and fails the declaration when a search gives two orders
    (declare `UNORDERED`) or every search keeps insertion order (declare `INSERTION`)."""


class OnExistingId(Enum):
    """What `store` does with an id that is already stored."""

    REPLACE_IN_PLACE = "replace in place"
    """The reference rule: the new item replaces the old and keeps its position."""
    MOVE_TO_END = "replace and move to end"
    """The new item replaces the old and is ordered as if stored last."""
    REJECT = "reject"
    """`store` raises `ValueError` and the stored item is unchanged."""


class Visibility(Enum):
    """When a stored item becomes visible to `retrieve` and `search`."""

    IMMEDIATE = "immediate"
    """As soon as `store` returns."""
    EVENTUAL = "eventual"
    """Declare it when a stored item may take a moment to show: the kit waits up to 5
    seconds for `retrieve` and `search` to see each write."""


class ReturnedObjects(Enum):
    """What `retrieve` and `search` hand back."""

    LIVE = "live"
    """The stored objects themselves: in-place changes are seen by the store."""
    COPIES = "copies"
    """Independent copies: changing one never changes the store."""


class LimitPolicy(Enum):
    """What `search` does with `MemoryQuery.limit`."""

    SLICE = "slice"
    """The reference rule: `results[:limit]`, so a negative limit drops trailing matches."""
    REJECT_NEGATIVE = "reject negative"
    """Declare it when `0` gives `[]`, a positive limit caps the results, and a
    negative one raises `ValueError` ([ADR-0095][adr-0095])."""


class Durability(Enum):
    """What survives closing the store and opening it again on the same backing."""

    PROCESS = "process"
    """Nothing: a reopened store is empty."""
    RESTART = "restart"
    """Every item a returned `store` wrote."""


class ContentKind(Enum):
    """Which `MemoryItem.content` values a store accepts."""

    ANY_OBJECT = "any object"
    """Anything, returned as it was given."""
    JSON_VALUES = "JSON values"
    """`None`, bools, finite numbers, strings, lists and string-keyed dicts; anything else
    raises `TypeError` and nothing is written."""


class RoundTrip(Enum):
    """How faithfully a field comes back from `retrieve`."""

    EXACT = "exact"
    """Equal and of the same types (`created_at` bit-exact, tags in order with duplicates)."""
    LOST = "lost"
    """Declare it when the field may come back different, or not at all; the kit then
    does not compare it."""


class Forgetting(Enum):
    """Whether a store offers the [`ForgettingStore`][lionmem.protocols.forgetting.ForgettingStore]
    extension, whose semantics [ADR-0100][adr-0100] fixes."""

    REFERENCE = "a ForgettingStore that deletes as the reference does"
    """The reference rule: `delete`, `delete_many`, `delete_matching`, `count`,
    `delete_created_before` and `scan` as `InMemoryStore` has them, each atomic, and a
    deleted id stored again comes last."""
    NOT_OFFERED = "not a ForgettingStore"
    """The store has only the three methods of `MemoryStore`."""


class Namespaces(Enum):
    """Whether a store offers the [`NamespacedStore`][lionmem.protocols.namespaces.NamespacedStore]
    extension, whose semantics [ADR-0105][adr-0105-d1] fixes."""

    REFERENCE = "a NamespacedStore that keeps its namespaces apart"
    """The reference rule: each namespace of a database is a store of its own, the same
    id in two being two items, and `namespaces()` lists those holding an item."""
    UNDECLARED = "not declared"
    """The store promises nothing about namespaces, and the kit checks none: the
    default, so that a store written before namespaces existed needs no change."""


class Paging(Enum):
    """Whether a store offers the [`PagingStore`][lionmem.protocols.paging.PagingStore]
    extension, whose semantics [ADR-0105][adr-0105-d3] fixes."""

    REFERENCE = "a PagingStore whose cursors are positions"
    """The reference rule: a search's pages join into its matches in insertion order,
    a cursor survives the deletion of its own item, a replacement keeps its place, an
    item stored meanwhile comes at the end, and a page without a limit of at least 1
    or a cursor no page gave is refused with `ValueError`."""
    UNDECLARED = "not declared"
    """The store promises nothing about paging, and the kit checks none: the default,
    as for namespaces."""


class Expiry(Enum):
    """Whether a store offers the [`ExpiringStore`][lionmem.protocols.expiry.ExpiringStore]
    extension, whose semantics [ADR-0105][adr-0105-d2] fixes."""

    REFERENCE = "an ExpiringStore that hides what expired"
    """The reference rule: an item whose expiry is at or before the store's reading of
    the clock is gone from every read until `sweep` deletes it, one expiring later is
    not, an expired item cannot be given a new expiry, and `expire` refuses a call
    naming no expiry, or two, with `TypeError`, and a `ttl` not above 0 with
    `ValueError`."""
    UNDECLARED = "not declared"
    """The store promises nothing about expiry, and the kit checks none: the default,
    as for namespaces."""


class Recall(Enum):
    """Whether a store offers the [`RecallStore`][lionmem.protocols.recall.RecallStore]
    extension, whose semantics [ADR-0102][adr-0102] fixes."""

    NOT_OFFERED = "not offered"
    """The reference rule, for a store made without an embedder. Declare it when the
    store is not a `RecallStore`, or has no embedder."""
    EXACT = "exact"
    """Declare it when `recall` scores every item its tags and filters match: its top
    k equals a brute-force ranking by cosine similarity over the store's own
    embedder, equal scores in insertion order."""
    APPROXIMATE = "approximate"
    """Declare it when `recall` may miss some of the exact top k (an approximate
    index), with `minimum_recall` the share of the exact top 10 it still finds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FidelityProfile:
    """An immutable declaration of what a store promises, checked by the kit.

    Every field but `namespaces`, `paging` and `expiry` (undeclared) defaults to what
    [`InMemoryStore`][lionmem.protocols.in_memory.InMemoryStore] does, so a profile names
    only where a store differs. See [ADR-0093][adr-0093].

    Examples:
        >>> durable = FidelityProfile(
        ...     returned_objects=ReturnedObjects.COPIES,
        ...     durability=Durability.RESTART,
        ...     content=ContentKind.JSON_VALUES,
        ... )
        >>> durable.text_match is TextMatch.CASE_INSENSITIVE_SUBSTRING
        True
    """

    text_match: TextMatch = TextMatch.CASE_INSENSITIVE_SUBSTRING
    """How text is matched."""
    tag_match: TagMatch = TagMatch.ANY_OF
    """How tags are matched."""
    filter_equality: FilterEquality = FilterEquality.PYTHON
    """How filter values are compared."""
    none_filter_matches_missing: bool = True
    """Whether a filter value of `None` matches an item without that key."""
    result_order: ResultOrder = ResultOrder.INSERTION
    """The order of search results."""
    on_existing_id: OnExistingId = OnExistingId.REPLACE_IN_PLACE
    """What storing an existing id does."""
    visibility: Visibility = Visibility.IMMEDIATE
    """When stored items become visible."""
    returned_objects: ReturnedObjects = ReturnedObjects.LIVE
    """Whether results are the stored objects or copies."""
    limit_policy: LimitPolicy = LimitPolicy.SLICE
    """What the limit does, negative values included."""
    durability: Durability = Durability.PROCESS
    """What survives a reopen."""
    content: ContentKind = ContentKind.ANY_OBJECT
    """Which contents are accepted."""
    created_at: RoundTrip = RoundTrip.EXACT
    """Round trip of `created_at`."""
    metadata: RoundTrip = RoundTrip.EXACT
    """Round trip of `metadata`."""
    tags: RoundTrip = RoundTrip.EXACT
    """Round trip of `tags`."""
    forgetting: Forgetting = Forgetting.REFERENCE
    """Whether, and how, the store deletes."""
    recall: Recall = Recall.NOT_OFFERED
    """Whether, and how exactly, the store recalls by meaning."""
    paging: Paging = Paging.UNDECLARED
    """Whether the store pages as the reference does ([ADR-0105][adr-0105-d3]);
    undeclared by default, as `namespaces` is."""
    expiry: Expiry = Expiry.UNDECLARED
    """Whether items expire as the reference's do ([ADR-0105][adr-0105-d2]);
    undeclared by default, as `namespaces` is."""
    namespaces: Namespaces = Namespaces.UNDECLARED
    """Whether the store promises namespaces kept apart. The one field whose default
    is not what `InMemoryStore` does: a store written before namespaces existed
    declares nothing about them, and is not checked for them ([ADR-0105][adr-0105-d1])."""
    minimum_recall: float = 1.0
    """For `Recall.APPROXIMATE`, the least share of the exact top 10 that `recall`
    finds, averaged over the kit's queries; from 0 to 1."""
    filter_operators: frozenset[type[Condition]] = OPERATORS
    """The [filter operators][lionmem.protocols.filters] the store applies as the
    reference does ([ADR-0099][adr-0099]); it refuses every other with
    `NotImplementedError`. A store without filters declares `frozenset()`."""

    def __post_init__(self) -> None:
        """Refuse a value that is not of its field's type, such as an enum's value
        given for the member: the kit would compare it with what it observes and
        report a mismatch that is only a spelling.

        Raises:
            TypeError: naming the field, the type it takes and the value given.
            ValueError: `minimum_recall` is not from 0 to 1.
        """
        for field in fields(self):
            value, kind = getattr(self, field.name), _FIELD_TYPES[field.name]
            if field.name == "filter_operators":
                if type(value) is not frozenset or not value <= OPERATORS:
                    names = ", ".join(sorted(operator.__name__ for operator in OPERATORS))
                    raise TypeError(f"filter_operators must be a frozenset of operators among {names}, got {value!r}")
                continue
            if field.name == "minimum_recall" and type(value) is float and not 0.0 <= value <= 1.0:
                raise ValueError(f"minimum_recall must be from 0 to 1, got {value!r}")
            if type(value) is not kind:
                taken = kind.__name__
                if issubclass(kind, Enum):
                    taken += " (" + ", ".join(f"{kind.__name__}.{member.name}" for member in kind) + ")"
                raise TypeError(f"{field.name} must be a {taken}, got {value!r}")


_FIELD_TYPES: dict[str, type] = typing.get_type_hints(FidelityProfile)


REFERENCE_PROFILE = FidelityProfile()
"""The profile of [`InMemoryStore`][lionmem.protocols.in_memory.InMemoryStore]: every default.
It leaves namespaces undeclared, as every store before them did; the store keeps them
as `Namespaces.REFERENCE` says, which its own tests declare."""
