"""The JSON schema of a field that holds a `Pile` of models."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic_core import core_schema

if TYPE_CHECKING:
    from pydantic import BaseModel, GetJsonSchemaHandler
    from pydantic.json_schema import JsonSchemaValue

__all__ = ["PileOf"]


class PileOf:
    """Describes a `Pile[item]` field as an array of `item` models: pydantic checks a
    pile with `isinstance`, which has no JSON schema of its own, so the validation
    schema of `Branch` and `Session` failed. A pile field reads a list of the items
    or of their dumps; its serializer dumps it as that list.
    """

    def __init__(self, item: type[BaseModel]) -> None:
        self.item = item

    def __get_pydantic_json_schema__(
        self, _schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return handler(core_schema.list_schema(self.item.__pydantic_core_schema__))
