"""The conformance kit: declared fidelity profiles and the checks that verify them.

Governed by [ADR-0093][adr-0093]. The pytest integration lives in
`lionmem.testing.pytest_plugin`; the stateful comparison needs hypothesis.
"""

from lionmem.protocols.profile import (
    REFERENCE_PROFILE,
    ContentKind,
    Durability,
    Expiry,
    FidelityProfile,
    FilterEquality,
    Forgetting,
    LimitPolicy,
    Namespaces,
    OnExistingId,
    Paging,
    Recall,
    ResultOrder,
    ReturnedObjects,
    RoundTrip,
    TagMatch,
    TextMatch,
    Visibility,
)
from lionmem.testing._harness import LionagiStore, LionagiStoreFactory, StoreFactory
from lionmem.testing.kit import CHECKS, CheckResult, ConformanceFailure, ConformanceKit, raise_for_failures
from lionmem.testing.notes import everyday_notes, everyday_questions

__all__ = [
    "CHECKS",
    "REFERENCE_PROFILE",
    "CheckResult",
    "ConformanceFailure",
    "ConformanceKit",
    "ContentKind",
    "Durability",
    "Expiry",
    "FidelityProfile",
    "FilterEquality",
    "Forgetting",
    "LimitPolicy",
    "LionagiStore",
    "LionagiStoreFactory",
    "Namespaces",
    "OnExistingId",
    "Paging",
    "Recall",
    "ResultOrder",
    "ReturnedObjects",
    "RoundTrip",
    "StoreFactory",
    "TagMatch",
    "TextMatch",
    "Visibility",
    "everyday_notes",
    "everyday_questions",
    "raise_for_failures",
]
