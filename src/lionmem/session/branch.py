"""`Branch`: one conversation, with the memory store it owns or shares.

Governed by [ADR-0092][adr-0092-d4] (ownership) and [ADR-0092][adr-0092-d5]
(nothing is stored automatically).
"""

from __future__ import annotations

import inspect
from types import GenericAlias
from typing import TYPE_CHECKING, Annotated, Any, Self, TypedDict, Unpack, cast
from uuid import UUID

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
)

from lionmem._internal.arguments import kind_of
from lionmem._internal.pydantic_state import with_private
from lionmem.protocols.generic.element import Element
from lionmem.protocols.generic.pile import Pile
from lionmem.protocols.memory import MemoryStore
from lionmem.protocols.messages import Log, Message, Role
from lionmem.session._ownership import store_of
from lionmem.session._pile_field import PileOf

if TYPE_CHECKING:
    from pydantic import TypeAdapter

__all__ = ["Branch", "BranchFields"]


def require_store(memory: object, owner: str) -> MemoryStore | None:
    """Return `memory` if it is `None` or a `MemoryStore`, else raise `TypeError`."""
    if isinstance(memory, type):
        # A store class has the three methods too; its calls would fail much later.
        raise TypeError(
            f"{owner}(memory=...) needs a store, got the class {memory.__name__}; "
            f"pass an instance, such as {memory.__name__}()"
        )
    if memory is None or isinstance(memory, MemoryStore):
        return memory
    if hasattr(type(memory), "__await__"):
        # `Branch(memory=SQLiteMemoryStore.open(path))`: the store is what it gives.
        if inspect.iscoroutine(memory):
            memory.close()  # it will never run; closing it spares a "never awaited" warning
        raise TypeError(
            f"{owner}(memory=...) got {type(memory).__name__}, which gives a store when awaited; "
            f"pass the store: {owner}(memory=await ...)"
        )
    raise TypeError(
        f"{owner}(memory=...) needs an object with async store, retrieve and search, got {type(memory).__name__}"
    )


_RECORDS: dict[type[Message] | type[Log], TypeAdapter[list[Any]]] = {}


def _records(kind: type[Message] | type[Log]) -> TypeAdapter[list[Any]]:
    """Validates a list of `kind` records or their dumps. Built on first use: importing
    pydantic's TypeAdapter would add about a millisecond to importing lionmem."""
    adapter = _RECORDS.get(kind)
    if adapter is None:
        from pydantic import TypeAdapter

        # `list[kind]` written out needs an ignore for mypy, which pyright finds
        # unneeded with some pydantic versions and not with others.
        records: Any = GenericAlias(list, (kind,))
        adapter = _RECORDS[kind] = TypeAdapter(records)
    return adapter


class BranchFields(TypedDict, total=False):
    """The keyword arguments `Branch` takes besides `memory`: its model fields."""

    id: UUID
    created_at: float
    metadata: dict[str, Any]
    user: UUID | str | None
    name: str | None
    messages: Pile[Message]
    logs: Pile[Log]


class Branch(Element):
    """A conversation: its messages, its logs and a memory store.

    `memory` is read-only. A store passed to the constructor is kept as given; with
    none, the first read creates one private `InMemoryStore` and every later read
    returns it. A session that includes this branch hands it the session's store
    only while no store has been claimed yet. Adding messages or logs never touches
    the store. A copy (`model_copy`, `copy.deepcopy`, a pickle) is in no session
    until one includes it. See [ADR-0092][adr-0092-d4].

    Examples:
        >>> branch = Branch(name="support")
        >>> branch.memory is branch.memory
        True
        >>> branch.add_message("user", "hello").content
        'hello'
    """

    user: UUID | str | None = None
    """Who the branch talks for, if anyone: a session that includes a branch without
    one sets it to the session's id, and removing the branch clears it only if it
    still is ([ADR-0092][adr-0092-d4])."""

    name: str | None = None
    """A label for looking the branch up in its session."""

    messages: Annotated[Pile[Message], PileOf(Message)] = Field(default_factory=lambda: Pile(item_type=Message))
    """The conversation, in order."""

    logs: Annotated[Pile[Log], PileOf(Log)] = Field(default_factory=lambda: Pile(item_type=Log))
    """Records of what happened, in order."""

    _memory: MemoryStore | None = PrivateAttr(None)
    _owner: UUID | None = PrivateAttr(None)

    def __init__(self, *, memory: MemoryStore | None = None, **data: Unpack[BranchFields]) -> None:
        store = require_store(memory, "Branch")
        BaseModel.__init__(self, **data)
        self._memory = store

    @property
    def memory(self) -> MemoryStore:
        """The branch's store; created on first read when none was given."""
        return store_of(self)

    def __copy__(self) -> Self:
        copied = super().__copy__()
        copied._owner = None  # a copy is in no session until one includes it
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        copied = super().__deepcopy__({} if memo is None else memo)  # as Session's
        copied._owner = None
        return copied

    def __getstate__(self) -> dict[Any, Any]:
        return with_private(super().__getstate__(), _owner=None)

    @property
    def session_id(self) -> UUID | None:
        """The id of the session that owns this branch, if any."""
        return self._owner

    def add_message(
        self,
        role: Role,
        content: Any = None,
        *,
        sender: str | None = None,
        recipient: str | None = None,
    ) -> Message:
        """Append a message to the conversation and return it."""
        message = Message(role=role, content=content, sender=sender, recipient=recipient)
        self.messages.include(message)
        return message

    def add_log(self, **content: Any) -> Log:
        """Append a log entry with `content` as its fields and return it."""
        log = Log(content=content)
        self.logs.include(log)
        return log

    @field_validator("messages", "logs", mode="before")
    @classmethod
    def _collect_records(cls, value: object, info: ValidationInfo) -> object:
        """A pile of the field's records as given; a list or tuple of records or their
        dumps (a `model_dump` read back) as a new pile; anything else is refused."""
        kind = Message if info.field_name == "messages" else Log
        if isinstance(value, Pile):
            pile = cast("Pile[Element]", value)
            held = pile.item_type
            if not all(issubclass(admitted, kind) for admitted in held):
                shown = " | ".join(sorted(admitted.__name__ for admitted in held))
                raise ValueError(f"{info.field_name} must be a pile of {kind.__name__}, got a pile of {shown}")
            return pile
        if not isinstance(value, list | tuple):
            raise ValueError(
                f"{info.field_name} must be a pile or a list of {kind.__name__} records "
                f"or their dumps, got {kind_of(value)}"
            )
        return Pile(_records(kind).validate_python(value), item_type=kind)
