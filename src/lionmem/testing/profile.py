"""`FidelityProfile` and its dimensions, where the kit's users have long imported them.

The promise vocabulary lives in the core, in
[`lionmem.protocols.profile`][lionmem.protocols.profile], so that stores declare
their profile without importing the kit; this module names the same objects. See
[ADR-0093][adr-0093].
"""

from lionmem.protocols.profile import (
    REFERENCE_PROFILE,
    ContentKind,
    Durability,
    FidelityProfile,
    FilterEquality,
    LimitPolicy,
    OnExistingId,
    ResultOrder,
    ReturnedObjects,
    RoundTrip,
    TagMatch,
    TextMatch,
    Visibility,
)

__all__ = [
    "REFERENCE_PROFILE",
    "ContentKind",
    "Durability",
    "FidelityProfile",
    "FilterEquality",
    "LimitPolicy",
    "OnExistingId",
    "ResultOrder",
    "ReturnedObjects",
    "RoundTrip",
    "TagMatch",
    "TextMatch",
    "Visibility",
]
