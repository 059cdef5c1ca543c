"""The one place lionmem touches pydantic's per-instance private state.

pydantic keeps a model's field values in `__dict__` and three more attributes beside
it: the names of the fields that were set, extra fields and private attributes. These
are not public API, so everything lionmem does with them is in this module, and the
test suite runs its tests on the oldest and the newest pydantic that lionmem allows.
Governed by [ADR-0096][adr-0096].
"""

from __future__ import annotations

from typing import Any, TypeVar, cast

from pydantic import BaseModel

__all__ = ["construct_unchecked", "private_values", "with_private"]

M = TypeVar("M", bound=BaseModel)

_new = object.__new__
_set = object.__setattr__


def construct_unchecked(model: type[M], values: dict[str, Any], fields_set: set[str]) -> M:
    """A `model` holding `values` as they are, validating nothing: what
    `model.model_construct(_fields_set=fields_set, **values)` makes for a model with
    no extra fields and no private attributes, when `values` names every field.

    The durable stores rebuild each row they read with it: `model_construct` also
    looks up every field's default and alias, which took longer than the rest of
    decoding a row ([ADR-0096][adr-0096] records the measurement). The caller gives
    values that passed validation when they were stored, and a `fields_set` of its
    own for each model. A test holds the result equal, field by field and in every
    pydantic attribute, to `model_construct`'s.
    """
    built = _new(model)
    _set(built, "__dict__", values)
    _set(built, "__pydantic_fields_set__", fields_set)
    _set(built, "__pydantic_extra__", None)
    _set(built, "__pydantic_private__", None)
    return built


def private_values(model: BaseModel) -> dict[str, Any]:
    """`model`'s private attributes by name, as pydantic keeps them: the dict itself,
    so that writing to it sets them.

    Reading `model._name` finds a private attribute only after the ordinary lookup
    fails, many times slower than this dict read ([ADR-0092][adr-0092-d4] records
    the figures); `Branch.memory` and `Session.memory` read their store on every
    call.
    """
    return cast("dict[str, Any]", model.__pydantic_private__)


def with_private(state: dict[Any, Any], **values: Any) -> dict[Any, Any]:
    """`state`, a model's `__getstate__()`, with the private attributes `values` set
    in what it carries, leaving the model itself as it is."""
    return {**state, "__pydantic_private__": {**state["__pydantic_private__"], **values}}
