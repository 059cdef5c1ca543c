"""What each durable store promises, in one place: the profile every store keeping
items as lionmem's rows shares, and the PostgreSQL store's with an embedder, whose
recall is approximate.

Governed by [ADR-0093][adr-0093]; the durable stores' by [ADR-0096][adr-0096] and
[ADR-0097][adr-0097], recall's by [ADR-0103][adr-0103].
"""

from __future__ import annotations

import dataclasses
from typing import Final

from lionmem.protocols.profile import (
    ContentKind,
    Durability,
    Expiry,
    FidelityProfile,
    Namespaces,
    Paging,
    Recall,
    ReturnedObjects,
)

__all__ = ["DURABLE_PROFILE", "PGVECTOR_PROFILE", "POSTGRES_PROFILE", "SQLITE_PROFILE"]

DURABLE_PROFILE: Final = FidelityProfile(
    returned_objects=ReturnedObjects.COPIES,
    durability=Durability.RESTART,
    content=ContentKind.JSON_VALUES,
    namespaces=Namespaces.REFERENCE,
    paging=Paging.REFERENCE,
    expiry=Expiry.REFERENCE,
)
"""What every store keeping items as these rows promises: the reference's rules,
namespaces, paging and expiry included, except that results are copies, items survive a restart and
content must be a JSON value. Not a dimension of the profile, but a limit all the same: an item may take at
most `MAX_ITEM_BYTES`."""

SQLITE_PROFILE: Final = DURABLE_PROFILE
"""What `SQLiteMemoryStore` promises: the reference's rules, except that results are
copies, items survive a restart and content must be a JSON value. Not a dimension of
the profile, but a limit all the same: an item may take at most 100 MB. The same
profile as every durable store's."""

POSTGRES_PROFILE: Final = DURABLE_PROFILE
"""What `PostgresMemoryStore` promises: the same as the SQLite store, the profile of
every durable store."""

PGVECTOR_PROFILE: Final = dataclasses.replace(POSTGRES_PROFILE, recall=Recall.APPROXIMATE, minimum_recall=0.98)
"""What `PostgresMemoryStore` opened with an embedder promises: recall through an HNSW
index past 2,000 matches, so approximate, finding at least 98% of the exact
top 10 ([ADR-0103][adr-0103])."""
