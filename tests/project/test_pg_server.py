"""The tests' own PostgreSQL server: a failure to make one says why and leaves
nothing behind in the temporary directory."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest

from tests.support import pg_server


def test_a_server_that_cannot_be_made_says_why_and_leaves_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    # A directory the postgres user may read, as the real binaries' is.
    tools = Path(tempfile.mkdtemp())
    tools.chmod(0o755)
    try:
        refusal = "initdb: error: could not create directory: Permission denied"
        (tools / "initdb").write_text(f"#!/bin/sh\necho '{refusal}' >&2\nexit 1\n")
        (tools / "initdb").chmod(0o755)
        monkeypatch.setattr(pg_server, "bindir", lambda: tools)
        before = set(Path(tempfile.gettempdir()).glob("lionmem-pg-*"))
        with pytest.raises(RuntimeError, match=f"^initdb failed with status 1: {refusal}$"):
            pg_server.Server()
        assert set(Path(tempfile.gettempdir()).glob("lionmem-pg-*")) == before
    finally:
        shutil.rmtree(tools)
