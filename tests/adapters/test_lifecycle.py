"""What every durable store shares when opened: tracking the process it was opened in,
and saying how to get the store from its opening."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from lionmem.adapters import lifecycle


def test_the_fork_hook_tracks_the_process_and_the_refusal_names_both() -> None:
    # Both run for real only in a forked child (assert_forked_child_refused), which
    # coverage does not follow.
    lifecycle._forked()
    assert lifecycle.process_id() == os.getpid()
    lifecycle.refuse_forked(os.getpid(), "the store")
    with pytest.raises(
        RuntimeError, match=rf"^the store was opened in process 1, and this is process {os.getpid()}, forked"
    ):
        lifecycle.refuse_forked(1, "the store")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_a_store_used_before_it_is_opened_says_how_to_open_it(
    backend: str, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """`open()` gives the opening, not the store: a store's method asked of it names the
    two ways to get the store, and opens nothing meanwhile."""
    from lionmem import MemoryItem, MemoryStore
    from lionmem.adapters.postgres import PostgresMemoryStore
    from lionmem.adapters.sqlite import SQLiteMemoryStore

    if backend == "sqlite":
        pending: Any = SQLiteMemoryStore.open(tmp_path / "m.db")
        name = "SQLiteMemoryStore"
    else:
        pending = PostgresMemoryStore.open(request.getfixturevalue("pg_url"), namespace="never-opened")
        name = "PostgresMemoryStore"
    with pytest.raises(
        AttributeError, match=rf"'store' is the store's, and {name}\.open\(\.\.\.\) is not the store yet"
    ):
        pending.store(MemoryItem(content="x"))
    with pytest.raises(AttributeError, match=rf"`async with {name}\.open\(\.\.\.\) as store:` or `store = await"):
        getattr(pending, "search")
    assert not isinstance(pending, MemoryStore) and not hasattr(pending, "retrieve")
    hidden = "_" + "hidden"  # a name of the kind copy, pickle and asyncio look for
    with pytest.raises(AttributeError, match=f"^{hidden}$"):
        getattr(pending, hidden)
    assert list(tmp_path.iterdir()) == []  # nothing was opened
