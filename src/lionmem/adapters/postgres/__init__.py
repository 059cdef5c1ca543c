"""`PostgresMemoryStore`: a durable store in PostgreSQL, shared by many processes.

The store is defined in
[`lionmem.adapters.postgres.store`][lionmem.adapters.postgres.store] and its schema in
[`lionmem.adapters.postgres.schema`][lionmem.adapters.postgres.schema]; this package
names them, and the error an outage raises, where users import them. Governed by
[ADR-0097][adr-0097]. Needs the `postgres` extra; `import lionmem` never imports this
package.
"""

from lionmem.adapters.postgres import _drivers  # noqa: F401  # pyright: ignore[reportUnusedImport]
from lionmem.adapters.postgres.schema import SCHEMA_VERSION
from lionmem.adapters.postgres.store import PGVECTOR_PROFILE, POSTGRES_PROFILE, PostgresMemoryStore
from lionmem.errors import StoreUnavailableError

__all__ = ["PGVECTOR_PROFILE", "POSTGRES_PROFILE", "SCHEMA_VERSION", "PostgresMemoryStore", "StoreUnavailableError"]
