"""The conversation records a `Branch` holds: `Message` and `Log`.

They exist so that a branch carries a real conversation; none of them is ever
written to a memory store on its own. See [ADR-0092][adr-0092-d5].
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from lionmem.protocols.generic.element import Element

__all__ = ["Log", "Message", "Role"]

Role = Literal["system", "user", "assistant", "tool"]
"""Who speaks in a `Message`."""


class Message(Element):
    """One turn of a conversation.

    Examples:
        >>> Message(role="user", content="hi", sender="ada").role
        'user'
    """

    role: Role
    """Who speaks: `system`, `user`, `assistant` or `tool`."""

    content: Any = None
    """What was said."""

    sender: str | None = None
    """The speaker's name or id, when known."""

    recipient: str | None = None
    """The addressee's name or id, when known."""


class Log(Element):
    """A free-form record of something that happened on a branch."""

    content: dict[str, Any] = Field(default_factory=dict)
    """The logged fields."""
