from pathlib import Path
from lionmem.adapters.sqlite import SQLiteMemoryStore
def factory(workspace: Path):
    return SQLiteMemoryStore.open(workspace / "memory.db")
