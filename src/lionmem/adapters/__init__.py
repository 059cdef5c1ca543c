"""Durable stores behind optional extras; `import lionmem` never imports them.

See [ADR-0096][adr-0096] and [ADR-0097][adr-0097].

- `lionmem.adapters.sqlite.SQLiteMemoryStore`: one file, many tasks and processes.
- `lionmem.adapters.postgres.PostgresMemoryStore`: many processes and machines.
"""
