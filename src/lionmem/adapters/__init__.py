"""Durable stores behind optional extras; `import lionmem` never imports them.

See [ADR-0096][adr-0096], [ADR-0097][adr-0097], [ADR-0098][adr-0098] and
[ADR-0107][adr-0107].

- `lionmem.adapters.sqlite.SQLiteMemoryStore`: one file, many tasks and processes.
- `lionmem.adapters.postgres.PostgresMemoryStore`: many processes and machines.
- `lionmem.adapters.urls.open_store`: any store, named by a URL.
- `lionmem.adapters.transfer`: export a store's items to a file, and import them back.
- `lionmem.adapters.synchronous.SyncStore`: any store, called without `await`.
"""
