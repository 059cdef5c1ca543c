"""`export` and `import` on the command line, over
[`lionmem.adapters.transfer`][lionmem.adapters.transfer], which reads and writes the
format: export to a file or stdout, import in batches, and the check that an export
is not written over the store it reads. Governed by [ADR-0100][adr-0100].
"""

from __future__ import annotations

import sys
from pathlib import Path

from lionmem.adapters.transfer import batches, export_items, write_export
from lionmem.adapters.urls import sqlite_file
from lionmem.cli._output import counted, progress_bar, stdout_takes_any_text
from lionmem.cli._storing import store_batch
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryQuery


async def export_command(query: MemoryQuery | None, output: Path | None, store: ForgettingStore) -> int:
    """Write the header and the items (all of them in order, or those `query` finds)
    to `output`, whole or not at all, or to stdout."""
    matching = await store.count(query or MemoryQuery())
    with progress_bar(matching if query is None else len(range(matching)[: query.limit])) as bar:
        if output is None:
            written = await write_export(
                store, query, sys.stdout, ascii_only=not stdout_takes_any_text(), progress=bar.update
            )
        else:
            written = await export_items(store, output, query=query, progress=bar.update)
    # On stderr when the export itself is on stdout, which must hold nothing else.
    print(f"exported {counted(written)}", file=sys.stderr if output is None else sys.stdout)
    return 0


async def import_command(path: Path, header: bool, total: int, store: ForgettingStore) -> int:
    """Store the `total` items of `path`, checked already, in batches; by id, so a
    second run replaces each item by itself, and a run after an interrupted one
    completes it."""
    imported = 0
    with progress_bar(total) as bar:
        for batch in batches(path, header=header):
            await store_batch(store, batch.items, first_line=batch.first_line)
            imported += len(batch.items)
            bar.update(len(batch.items))
    print(f"imported {counted(imported)}")
    return 0


def refuse_overwriting_the_store(url: str, output: Path | None) -> None:
    """Refuse an export written over the SQLite store it reads, or over its log or
    journal: renaming it into place would replace the database under its own store."""
    database = sqlite_file(url)
    if output is None or database is None:
        return
    own = [database, *(database.with_name(database.name + end) for end in ("-wal", "-shm", "-journal"))]
    if output.resolve() in {path.resolve() for path in own}:
        raise ValueError(f"--output {output} is the store's own file; write the export to another")
