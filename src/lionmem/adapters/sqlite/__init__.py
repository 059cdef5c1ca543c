"""`SQLiteMemoryStore`: a durable store in one SQLite file, and its schema.

The store is defined in [`lionmem.adapters.sqlite.store`][lionmem.adapters.sqlite.store]
and its schema and migrations in
[`lionmem.adapters.sqlite.schema`][lionmem.adapters.sqlite.schema]; this package
names them where users import them. Governed by [ADR-0096][adr-0096]. Uses only the
standard library; `import lionmem` never imports this package.
"""

from lionmem.adapters.sqlite.schema import APPLICATION_ID, MIGRATIONS, SCHEMA_VERSION
from lionmem.adapters.sqlite.store import SQLITE_PROFILE, SQLiteMemoryStore

__all__ = ["APPLICATION_ID", "MIGRATIONS", "SCHEMA_VERSION", "SQLITE_PROFILE", "SQLiteMemoryStore"]
