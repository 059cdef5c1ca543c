"""How a LangGraph item is kept as a `MemoryItem`, and LangGraph's filters and namespace
conditions as lionmem's. Governed by [ADR-0106][adr-0106].

An item's id comes from its namespace and key, so a `get` is a `retrieve`. Its
metadata holds the key, the namespace a label per key (so that a namespace prefix is
a filter on each label), the time of the last write, the TTL it was written with, and
the value by path: each field at its path's JSON text, and each field of a nested
object again at its own path, so that LangGraph's filter on a nested field is an
equality of one key. The bridge's own keys start with `langgraph:`, a path's with
`[`: neither can be taken for the other. The content is the text LangGraph would
embed, which the store embeds and finds words in.
"""

from __future__ import annotations

import functools
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, Final, cast

from langgraph.store.base import Item, MatchCondition, SearchItem
from langgraph.store.base.embed import get_text_at_path

from lionmem.protocols.filters import AllOf, Ge, Gt, Le, Lt, Ne
from lionmem.protocols.memory import MemoryItem

__all__ = [
    "NOT_INDEXED",
    "TTL",
    "filters_of",
    "item_id",
    "langgraph_item",
    "matches",
    "memory_item",
    "namespace_of",
    "search_item",
    "text_to_index",
]

_ITEM_IDS: Final = uuid.UUID("6c1b2f8e-5b7a-4f0e-9d3c-2a4e6f8b0c1d")
KEY: Final = "langgraph:key"
DEPTH: Final = "langgraph:depth"
UPDATED_AT: Final = "langgraph:updated_at"
TTL: Final = "langgraph:ttl"
NOT_INDEXED: Final = "langgraph:not_indexed"
_OPERATORS: Final = {"$eq": None, "$ne": Ne, "$gt": Gt, "$gte": Ge, "$lt": Lt, "$lte": Le}


def _label(depth: int) -> str:
    return f"langgraph:ns:{depth}"


def _path(path: Sequence[str]) -> str:
    return _path_text(tuple(path))


@functools.lru_cache(maxsize=4096)  # items of one kind repeat their paths
def _path_text(path: tuple[str, ...]) -> str:
    return json.dumps(list(path), ensure_ascii=False)


@functools.lru_cache(maxsize=65_536)  # a key read or written lately: no SHA-1 again
def item_id(namespace: tuple[str, ...], key: str) -> uuid.UUID:
    """The id of the item at `key` in `namespace`: the same in every store and run."""
    return uuid.uuid5(_ITEM_IDS, json.dumps([list(namespace), key], ensure_ascii=False))


def text_to_index(value: Mapping[str, Any], fields: Sequence[str] | None) -> str:
    """The text LangGraph embeds for `value`: each of `fields` (the whole value, as
    sorted JSON, when none are given), one per line."""
    return "\n".join(text for field in fields or ["$"] for text in get_text_at_path(value, field))


def memory_item(
    namespace: tuple[str, ...],
    key: str,
    value: Mapping[str, Any],
    *,
    text: str | None,
    created_at: float,
    updated_at: float,
    ttl: float | None,
) -> MemoryItem:
    """The `MemoryItem` keeping a LangGraph item; `text` is `None` for an item put
    with `index=False`, which no `query=` finds."""
    metadata: dict[str, Any] = {KEY: key, DEPTH: len(namespace), UPDATED_AT: updated_at}
    metadata.update((_label(depth), label) for depth, label in enumerate(namespace))
    if ttl is not None:
        metadata[TTL] = ttl
    if text is None:
        metadata[NOT_INDEXED] = True
    _flatten(value, [], metadata)
    return MemoryItem(
        id=item_id(namespace, key), content="" if text is None else text, metadata=metadata, created_at=created_at
    )


def _flatten(value: Mapping[str, Any], at: list[str], into: dict[str, Any]) -> None:
    for field, held in value.items():
        if not isinstance(field, str):
            raise TypeError(f"a LangGraph value's keys are strings; {field!r} at {_path(at)} is not")
        path = [*at, field]
        into[_path(path)] = held
        if isinstance(held, Mapping) and held:
            _flatten(cast("Mapping[str, Any]", held), path, into)


@functools.lru_cache(maxsize=4096)  # items of one kind repeat their paths
def _top_level(path: str) -> str | None:
    """The field a top-level path names, or `None` for a nested one."""
    fields: list[str] = json.loads(path)
    return fields[0] if len(fields) == 1 else None


def namespace_of(item: MemoryItem) -> tuple[str, ...]:
    """The LangGraph namespace `item` is kept under."""
    return tuple(item.metadata[_label(depth)] for depth in range(item.metadata[DEPTH]))


def langgraph_item(item: MemoryItem) -> Item:
    """The LangGraph item `item` keeps."""
    return Item(**_fields(item))


def search_item(item: MemoryItem, score: float | None) -> SearchItem:
    """The LangGraph search result `item` keeps, with its `score` (`None` unless found
    by `query=`)."""
    return SearchItem(**_fields(item), score=score)


def _fields(item: MemoryItem) -> dict[str, Any]:
    metadata = item.metadata
    value: dict[str, Any] = {}
    for path, held in metadata.items():
        if path.startswith("[") and (field := _top_level(path)) is not None:
            value[field] = held
    return {
        "namespace": namespace_of(item),
        "key": metadata[KEY],
        "value": value,
        "created_at": datetime.fromtimestamp(item.created_at, UTC),
        "updated_at": datetime.fromtimestamp(metadata[UPDATED_AT], UTC),
    }


def filters_of(prefix: tuple[str, ...], given: Mapping[str, Any] | None) -> dict[str, Any]:
    """lionmem's filters for LangGraph's namespace `prefix` and `filter`.

    Raises:
        ValueError: an operator LangGraph does not define (a typo, `$and`, `$or`), or
            an empty object as a condition.
        TypeError: a field name that is not a string.
    """
    filters: dict[str, Any] = {_label(depth): label for depth, label in enumerate(prefix)}
    for name, condition in (given or {}).items():
        field = _field(name)
        if field.startswith("$"):
            raise ValueError(
                f"filter operator {field!r} at the top of a filter: LangGraph's operators go on a field, "
                "{'field': {'$gt': 1}}, and filters of several fields all hold; $and and $or are not defined"
            )
        _conditions([field], condition, filters)
    return filters


def _conditions(path: list[str], condition: object, into: dict[str, Any]) -> None:
    if isinstance(condition, tuple):
        into[_path(path)] = list(cast("Iterable[object]", condition))
        return
    if not isinstance(condition, Mapping):
        into[_path(path)] = condition
        return
    given = cast("Mapping[object, Any]", condition)
    if not given:
        raise ValueError(f"an empty object as the filter of {_path(path)}: give the fields it must hold")
    if not any(isinstance(name, str) and name.startswith("$") for name in given):
        for field, inner in given.items():
            _conditions([*path, _field(field)], inner, into)
        return
    unknown = sorted(str(name) for name in given if name not in _OPERATORS)
    if unknown:
        raise ValueError(
            f"unknown filter operator(s) {', '.join(unknown)} on {_path(path)}; LangGraph's are {', '.join(_OPERATORS)}"
        )
    held: list[object] = []
    for name, value in given.items():
        kind = _OPERATORS[str(name)]
        held.append(value if kind is None else kind(value))
    into[_path(path)] = held[0] if len(held) == 1 else AllOf(*held)


def _field(name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"a filter's field names are strings; got {name!r}")
    return name


def matches(condition: MatchCondition, namespace: tuple[str, ...]) -> bool:
    """Whether `namespace` meets a `list_namespaces` condition: its first (prefix) or
    last (suffix) labels are the condition's, `*` standing for any one label."""
    path = condition.path
    if len(namespace) < len(path):
        return False
    if condition.match_type == "prefix":
        pairs = zip(namespace, path, strict=False)
    elif condition.match_type == "suffix":
        pairs = zip(reversed(namespace), reversed(path), strict=False)
    else:
        raise ValueError(f"a namespace condition matches by 'prefix' or 'suffix', not {condition.match_type!r}")
    return all(wanted in ("*", label) for label, wanted in pairs)
