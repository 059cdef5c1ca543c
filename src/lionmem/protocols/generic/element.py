"""`Element`: the identity and provenance every lionmem model shares.

Governed by [ADR-0092][adr-0092-d1].
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Annotated, Any, ClassVar, cast
from uuid import UUID, uuid4

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PlainValidator,
    WithJsonSchema,
    field_serializer,
    field_validator,
)

from lionmem._internal.arguments import timestamp_of_datetime, timestamp_of_number

__all__ = ["Element", "utc_timestamp"]


def utc_timestamp() -> float:
    """Return the current time as a POSIX timestamp in UTC."""
    return datetime.now(UTC).timestamp()


def _to_timestamp(value: object) -> float:
    """Coerce the accepted `created_at` inputs to a UTC timestamp."""
    if isinstance(value, bool):
        raise ValueError("created_at must be a timestamp, datetime or ISO string, got a bool")
    if isinstance(value, (int, float)):
        return timestamp_of_number(value, "created_at")
    if isinstance(value, datetime):
        return timestamp_of_datetime(value)
    if isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            pass
        else:
            return timestamp_of_number(number, "created_at")
        try:
            return timestamp_of_datetime(datetime.fromisoformat(value.strip()))
        except ValueError:
            raise ValueError(f"created_at string {value!r} is neither a number nor an ISO 8601 datetime") from None
    raise ValueError(f"created_at must be a timestamp, datetime or ISO string, got {type(value).__name__}")


# What `_to_timestamp` reads, for the validation JSON schema: a plain validator tells
# pydantic nothing about its input. Serialized, `created_at` is always a number.
_CREATED_AT_INPUT = WithJsonSchema(
    {
        "anyOf": [
            {"type": "number", "description": "a POSIX timestamp in seconds"},
            {"type": "string", "description": "an ISO 8601 datetime (UTC unless it names a zone) or a number"},
        ],
        "title": "Created At",
    },
    mode="validation",
)


class Element(BaseModel):
    """A model with a stable identity, a creation time and free-form metadata.

    Equality and hashing use `id` only: two elements with the same id are equal even
    when their other fields differ. See [ADR-0092][adr-0092-d1].

    Examples:
        >>> from uuid import UUID
        >>> e = Element(id="6f1c2a9e-1d1b-4b7e-9a49-8a4c1f0f6a11", created_at="2026-01-01T00:00:00")
        >>> e.id == UUID("6f1c2a9e-1d1b-4b7e-9a49-8a4c1f0f6a11"), e.created_at
        (True, 1767225600.0)
        >>> e.model_dump()["id"]
        '6f1c2a9e-1d1b-4b7e-9a49-8a4c1f0f6a11'
    """

    model_config: ClassVar[ConfigDict] = ConfigDict(extra="forbid")

    id: UUID = Field(default_factory=uuid4, frozen=True)
    """Identity; a UUID or its string form on input, a string when dumped."""

    created_at: Annotated[float, PlainValidator(_to_timestamp), _CREATED_AT_INPUT] = Field(
        default_factory=utc_timestamp, frozen=True
    )
    """UTC POSIX timestamp from a number, a datetime or an ISO 8601 string."""

    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form mapping; `lion_class`, if present, must name this class."""

    @field_validator("metadata", mode="before")
    @classmethod
    def _coerce_metadata(cls, value: object) -> object:
        if type(value) is dict and "lion_class" not in value:
            return cast("dict[object, object]", value)  # the common case; pydantic copies it
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            return value  # pydantic reports the type error
        mapping: dict[object, object] = dict(cast("Mapping[object, object]", value))
        expected = f"{cls.__module__}.{cls.__qualname__}"
        declared = mapping.get("lion_class", expected)
        if declared != expected:
            raise ValueError(f"metadata lion_class {declared!r} does not match {expected!r}")
        return mapping

    @field_serializer("id")
    def _serialize_id(self, value: UUID) -> str:
        return str(value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Element):
            return NotImplemented
        return self.id == other.id

    def __hash__(self) -> int:
        return hash(self.id)
