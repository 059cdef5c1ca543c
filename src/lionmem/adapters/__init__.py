"""Durable stores behind optional extras; `import lionmem` never imports them.

- `lionmem.adapters.sqlite.SQLiteMemoryStore`: one file, many tasks and processes.
- `lionmem.adapters.postgres.PostgresMemoryStore`: many processes and machines.
"""
