"""`check --url`: a fresh store per check from a URL template, reported as each check ends."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from lionmem.cli import main
from lionmem.testing import CHECKS
from tests.support.cli_support import PIPED_ENV, run_cli, with_namespace

STUCK_ON_TAGS = textwrap.dedent("""
    import asyncio
    from lionmem import InMemoryStore

    class StuckOnTags(InMemoryStore):
        async def search(self, query):
            if query.tags:
                await asyncio.Event().wait()
            return await super().search(query)
""")
"""A store whose searches by tag never end: `check` holds at `tag_match`."""


def test_check_opens_a_fresh_store_per_check_from_a_url(capsys: pytest.CaptureFixture[str]) -> None:
    # Against the profile the store declares, unless --profile names another.
    status, out, _ = run_cli(capsys, "check", "--url", "sqlite:///{workspace}/kit.db")
    assert status == 0 and out.rstrip().endswith(f"{len(CHECKS)} passed, 0 failed")
    assert re.search(r"^returned_objects +copies +copies +ok$", out, flags=re.MULTILINE)
    # The reference profile does not hold for SQLite: copies, not live objects.
    status, out, _ = run_cli(
        capsys,
        "check",
        "--url",
        "sqlite:///{workspace}/kit.db",
        "--only",
        "returned_objects",
        "--profile",
        "lionmem.testing:REFERENCE_PROFILE",
    )
    assert status == 1 and "returned_objects: declared live, observed copies" in out
    status, out, _ = run_cli(capsys, "check", "--url", "memory:", "--only", "returned_objects")
    assert status == 0 and re.search(r"^returned_objects +live +live +ok$", out, flags=re.MULTILINE)


def test_check_on_a_postgres_url_template(pg_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run_cli(capsys, "check", "--url", with_namespace(pg_url, "kit-{name}"))
    assert status == 0 and out.rstrip().endswith(f"{len(CHECKS)} passed, 0 failed")
    assert re.search(r"^durability +restart +restart +ok$", out, flags=re.MULTILINE)
    postgres_url = with_namespace(pg_url.replace("postgresql://", "postgres://", 1), "kit-{name}")
    status, out, _ = run_cli(capsys, "check", "--url", postgres_url, "--only", "durability")
    assert status == 0 and re.search(r"^durability +restart +restart +ok$", out, flags=re.MULTILINE)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["check"], "give either FACTORY or --url"),
        (["check", "tests.kit_stores:Copying", "--url", "memory:"], "give either FACTORY or --url"),
        (["check", "--url", "sqlite:///kit.db"], "must hold {workspace} or {name}"),
        (["check", "sqlite:///kit.db"], "'sqlite:///kit.db' is a store URL: check takes one as --url, holding"),
        (["check", "memory:"], "'memory:' is a store URL: check takes one as --url"),
        (["check", "postgresql://h/db?namespace=n"], "is a store URL: check takes one as --url"),
        (["check", "memory:make_store"], "cannot import 'memory': No module named 'memory'"),
        (["check", "--url", "sqlite:///{workspace}/{store}.db"], "only the fields {workspace} and {name}"),
        (["check", "--url", "sqlite:///{workspace}/{0}.db"], "only the fields {workspace} and {name}"),
        (["check", "--url", "ftp://{name}"], "starts with one of"),
        (["check", "--url", "memory:", "--only", "text"], "invalid choice: 'text' (choose from 'protocol',"),
    ],
)
def test_check_refuses_a_bad_url_template(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: python -m lionmem check ")
    assert "\npython -m lionmem check: error: " in err and message in err


def test_check_reports_a_store_that_cannot_be_opened(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = run_cli(capsys, "check", "--url", "sqlite:///{workspace}/no/such/kit.db")
    assert (status, out) == (1, "")
    assert err.startswith("python -m lionmem: error: no store to check: FileNotFoundError: ")
    assert "no/such is not a directory" in err


def test_ctrl_c_during_check_ends_it_with_one_line_and_status_130(tmp_path: Path) -> None:
    (tmp_path / "stuck.py").write_text(STUCK_ON_TAGS)
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    checker = subprocess.Popen(
        [sys.executable, "-m", "lionmem", "check", "stuck:StuckOnTags"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**PIPED_ENV, "PYTHONPATH": str(tmp_path), "TMPDIR": str(scratch)},
    )
    assert checker.stdout is not None
    for line in checker.stdout:  # up to the row before the check that never ends
        if line.startswith("text_match "):
            break
    time.sleep(0.3)  # into tag_match's search, which waits for ever
    checker.send_signal(signal.SIGINT)
    out, err = checker.communicate(timeout=30)
    assert checker.returncode == 130
    assert err == "python -m lionmem: interrupted\n"
    assert "tag_match" not in out
    assert list(scratch.iterdir()) == []  # the interrupted check's workspace was removed


def test_check_prints_each_row_as_its_check_ends(tmp_path: Path) -> None:
    """So a store that never answers shows which check it holds up."""
    (tmp_path / "stuck.py").write_text(STUCK_ON_TAGS)
    # The child is killed in the middle of a check, so its workspace is never
    # removed: it makes that workspace under this test's own directory.
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    checker = subprocess.Popen(
        [sys.executable, "-m", "lionmem", "check", "stuck:StuckOnTags"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**PIPED_ENV, "PYTHONPATH": str(tmp_path), "TMPDIR": str(scratch)},
    )
    assert checker.stdout is not None
    lines: list[str] = []
    reading = threading.Thread(target=lambda: lines.extend(checker.stdout or ()))
    reading.start()
    try:
        deadline = time.monotonic() + 60
        while not any(line.startswith("text_match ") for line in lines) and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.3)  # room for a row that should not come
    finally:
        checker.kill()
        reading.join()
        checker.wait()
        checker.stdout.close()
    rows = [line for line in lines if not line.startswith(" ")]  # not a long cell's next line
    assert [line.split()[0] for line in rows] == ["check", "protocol", "concurrent_writes", "text_match"]
    assert rows[3].rstrip().endswith("ok")
    # What the killed child left is here, where pytest removes it, and nowhere else.
    assert [path.name[:12] for path in scratch.iterdir()] == ["lionmem-kit-"]
