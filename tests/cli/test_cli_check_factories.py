"""`python -m lionmem check FACTORY`: the table it prints, its exit status, and bad references."""

from __future__ import annotations

import subprocess
from uuid import UUID

import pytest

from lionmem import InMemoryStore, MemoryItem
from lionmem.testing import CHECKS, REFERENCE_PROFILE, ConformanceKit
from tests.support.kit_doubles import DICT_PROFILE, CaseSensitiveText, DictStore


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m lionmem check ARGS` in this process, as the shell would see it."""
    from contextlib import redirect_stderr, redirect_stdout
    from io import StringIO

    from lionmem.cli import main

    out, err = StringIO(), StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(["check", *args])
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_cli_check_prints_a_table_and_exits_zero_when_clean() -> None:
    done = run_cli("lionmem:InMemoryStore")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["check", "declared", "observed"]
    assert len([line for line in lines if line.endswith("  ok")]) == len(CHECKS)
    assert lines[-1] == f"{len(CHECKS)} passed, 0 failed"


def test_cli_check_wraps_a_long_cell_between_words() -> None:
    done = run_cli("lionmem:InMemoryStore", "--only", "protocol")
    lines = done.stdout.splitlines()
    declared_at, observed_at = lines[0].index("declared"), lines[0].index("observed")
    row = lines[1 : lines.index("")]
    assert len(row) > 1 and row[0].endswith("  ok") and all(line.startswith(" ") for line in row[1:])
    row[0] = row[0].removesuffix("ok")
    declared = [line[declared_at:observed_at].strip() for line in row]
    observed = [line[observed_at:].strip() for line in row]
    result = ConformanceKit(InMemoryStore, REFERENCE_PROFILE).check("protocol")
    # Joined again, each column is the whole text: no word was cut or dropped.
    assert " ".join(filter(None, declared)) == result.declared
    assert " ".join(filter(None, observed)) == result.observed


class RetrieveRaises(DictStore):
    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        raise RuntimeError("this store reads items back through a service that is not running in the tests")


def test_cli_check_wraps_an_observation_at_the_columns_width_whatever_was_declared() -> None:
    # `--only` a check whose declaration is one short word once wrapped the
    # observation to that word's width: a word a line.
    done = run_cli(
        f"{__name__}:RetrieveRaises",
        "--profile",
        "tests.support.kit_doubles:DICT_PROFILE",
        "--only",
        "returned_objects",
    )
    lines = done.stdout.splitlines()
    observed_at = lines[0].index("observed")
    observed = [line[observed_at:].removesuffix("MISMATCH").strip() for line in lines[1 : lines.index("")]]
    assert " ".join(observed).startswith("raised RuntimeError: this store reads items back")
    assert len(observed) > 1 and all(len(line) > 20 for line in observed[:-1]), observed


def test_cli_check_exits_non_zero_on_a_mismatch() -> None:
    done = run_cli(
        "tests.support.kit_doubles:CaseSensitiveText",
        "--profile",
        "tests.support.kit_doubles:DICT_PROFILE",
        "--only",
        "text_match",
        "--only",
        "tag_match",
    )
    assert done.returncode == 1
    assert done.stdout.splitlines()[-1] == "1 passed, 1 failed"
    assert "text_match" in done.stdout and "MISMATCH" in done.stdout
    assert "await store.search(MemoryQuery(text='hello'" in done.stdout
    # Each failure is its result's report, found against expected and the ways out.
    result = ConformanceKit(CaseSensitiveText, DICT_PROFILE).check("text_match")
    assert f"\n{result}\n" in done.stdout and "\n  to pass: change the store" in done.stdout


def test_cli_check_fails_a_store_that_hangs_after_its_timeout() -> None:
    done = run_cli(
        "tests.support.kit_doubles:HangingSearch",
        "--profile",
        "tests.support.kit_doubles:DICT_PROFILE",
        "--only",
        "text_match",
        "--only",
        "protocol",
        "--timeout",
        "0.2",
    )
    assert done.returncode == 1
    assert "did not finish within 0.2 s" in done.stdout
    assert done.stdout.splitlines()[-1] == "1 passed, 1 failed"


@pytest.mark.parametrize(
    ("args", "error"),
    [
        (["lionmem:InMemoryStore", "--timeout", "soon"], "argument --timeout: invalid float value: 'soon'"),
        (
            ["lionmem:InMemoryStore", "--timeout", "0"],
            "timeout must be more than 0 and at most 2147483.647 seconds, got 0.0",
        ),
        (["lionmem:InMemoryStore", "--timeout", "inf"], "at most 2147483.647 seconds, got inf"),
        (["lionmem:InMemoryStore", "--timeout", "nan"], "at most 2147483.647 seconds, got nan"),
        (["nocolon"], "not of the form module:attribute"),
        (["lionmem:"], "'lionmem:' is not of the form module:attribute"),
        ([":InMemoryStore"], "':InMemoryStore' is not of the form module:attribute"),
        (["no_such_module_xyz:f"], "cannot import"),
        (["lionmem:Nope"], "has no attribute 'Nope'"),
        (["lionmem:__all__"], "is not callable"),
        (["lionmem:InMemoryStore", "--profile", "lionmem:InMemoryStore"], "not a FidelityProfile"),
    ],
)
def test_cli_check_reports_bad_references(args: list[str], error: str) -> None:
    done = run_cli(*args)
    assert done.returncode == 2 and error in done.stderr
