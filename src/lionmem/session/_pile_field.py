"""How pydantic dumps and describes a field that holds a `Pile` of models.

Governed by [ADR-0092][adr-0092-d4]: a dump and its JSON schema carry a
session's branches and a branch's records whole.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic_core import core_schema

from lionmem.protocols.generic.pile import Pile

if TYPE_CHECKING:
    from pydantic import BaseModel, GetCoreSchemaHandler, GetJsonSchemaHandler
    from pydantic.json_schema import JsonSchemaValue

__all__ = ["PileOf"]


def _dump(pile: Pile[Any], dump: core_schema.SerializerFunctionWrapHandler) -> Any:
    # `dump` serializes the items with every setting of the whole dump, a nested
    # include or exclude too.
    return dump(pile.values())


class PileOf:
    """Annotates a `Pile[item]` field: it dumps as the list of its items, and its JSON
    schema, in either mode, is an array of `item`.

    pydantic checks a pile with `isinstance`, which has no JSON schema of its own.
    Reading a list of items (or of their dumps) into a pile is the model's own
    validator's work.
    """

    def __init__(self, item: type[BaseModel]) -> None:
        self.item = item

    def __get_pydantic_core_schema__(self, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        # What pydantic makes of an arbitrary type (an isinstance check), with the dump.
        serialization = core_schema.wrap_serializer_function_ser_schema(_dump)
        return core_schema.is_instance_schema(Pile, serialization=serialization)

    def __get_pydantic_json_schema__(
        self, _schema: core_schema.CoreSchema, handler: GetJsonSchemaHandler
    ) -> JsonSchemaValue:
        return handler(core_schema.list_schema(self.item.__pydantic_core_schema__))
