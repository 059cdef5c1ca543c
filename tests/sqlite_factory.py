"""A store factory for the command-line tests of `python -m lionmem check`."""

from pathlib import Path

from lionmem.adapters.sqlite import SQLiteMemoryStore, PendingOpen


def factory(workspace: Path) -> PendingOpen:
    return SQLiteMemoryStore.open(workspace / "memory.db")
