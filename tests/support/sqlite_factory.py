"""A store factory for the command-line tests of `python -m lionmem check`."""

from pathlib import Path

from lionmem.adapters.lifecycle import PendingOpen
from lionmem.adapters.sqlite import SQLiteMemoryStore


def factory(workspace: Path) -> PendingOpen[SQLiteMemoryStore]:
    return SQLiteMemoryStore.open(workspace / "memory.db")
