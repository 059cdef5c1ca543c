"""LangGraph's own store tests, run against the bridge over each of lionmem's stores
(ADR-0106).

The tests come from the source distributions `constraints/langgraph-tests.txt` pins by
hash: langgraph-checkpoint's store tests, and its SQLite store's (sync, async and TTL).
`tests/langgraph_harness/lionmem_langgraph_plugin.py` makes each store they construct a
`StoreForLangGraph` over a lionmem store, and nothing else of them changes. Every test
passes, but those a suite declares: each is a row of docs/langgraph-differences.md,
where a side-by-side test shows both answers, and each must still fail here, so that a
row is dropped once it no longer holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integrations.test_langgraph_differences import LEDGER
from tests.support.pg_server import fresh_database

ROOT = Path(__file__).resolve().parents[2]
PINNED = ROOT / "constraints" / "langgraph-tests.txt"
HARNESS = ROOT / "tests" / "langgraph_harness"


@dataclass(frozen=True)
class Suite:
    """Test files of one pinned release, how many tests they hold, and the tests that
    fail by design, each with its row of the differences page."""

    files: tuple[str, ...]
    tests: int
    declared: dict[str, str]


SUITES = {
    "langgraph_checkpoint": Suite(("tests/test_store.py",), 117, {"test_embed_with_path": "one-vector-per-item"}),
    "langgraph_checkpoint_sqlite": Suite(
        ("tests/test_store.py", "tests/test_async_store.py", "tests/test_ttl.py"),
        153,
        {
            "test_embed_with_path": "one-vector-per-item",
            "test_filter_keys_with_hyphens_and_digits": "dotted-filter-key",
            "test_sql_injection_vulnerability": "any-filter-key",
            "test_ttl_override_default": "refresh-on-read",
            "test_vector_store_initialization": "its-own-tables",
            "test_nonnull_migrations": "its-own-tables",
        },
    ),
}


@pytest.fixture(scope="module")
def langgraph_tests(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Each pinned release's sources, downloaded and checked by their hash, by name."""
    where = tmp_path_factory.mktemp("langgraph")
    download = ["download", "-q", "--no-deps", "--no-binary", ":all:", "--require-hashes", "-r", str(PINNED)]
    subprocess.run([sys.executable, "-m", "pip", *download, "-d", str(where)], check=True)
    for sdist in where.glob("*.tar.gz"):
        with tarfile.open(sdist) as archive:
            archive.extractall(where, filter="data")
    return {path.name.rpartition("-")[0]: path for path in where.iterdir() if path.is_dir()}


def outcomes(report: Path) -> dict[str, str]:
    """{test name: passed, failed or skipped} from a JUnit XML report."""
    found: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case} & {"failure", "error", "skipped"}
        name = f"{case.attrib['classname']}::{case.attrib['name']}"
        found[name] = "failed" if kinds & {"failure", "error"} else "skipped" if kinds else "passed"
    return found


def test_each_declared_failure_is_a_row_of_the_differences_page() -> None:
    rows = LEDGER.page_rows()
    assert {row for suite in SUITES.values() for row in suite.declared.values()} <= rows.keys()


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
@pytest.mark.parametrize("release", SUITES)
def test_langgraphs_own_store_tests_pass_on_the_bridge(
    release: str, kind: str, langgraph_tests: dict[str, Path], request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    suite = SUITES[release]
    env = {**os.environ, "LIONMEM_LANGGRAPH_STORE": kind, "PYTHONPATH": str(HARNESS)}
    if kind == "postgres":
        env["LIONMEM_LANGGRAPH_DSN"] = fresh_database(request.getfixturevalue("pgvector_server_url"))
    report = tmp_path / "report.xml"
    plugins = ["-p", "lionmem_langgraph_plugin", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", *suite.files, *plugins, "-q", f"--junitxml={report}"],
        cwd=langgraph_tests[release],
        env=env,
        capture_output=True,
        text=True,
    )
    found = outcomes(report)
    failed = {name.split("::")[-1].split("[")[0] for name, outcome in found.items() if outcome == "failed"}
    assert failed == suite.declared.keys(), done.stdout[-4000:]
    assert "skipped" not in found.values() and len(found) == suite.tests, done.stdout[-4000:]
