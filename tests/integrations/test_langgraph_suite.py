"""LangGraph's own store tests, run against the bridge over each of lionmem's stores
(ADR-0106).

The tests come from the source distributions `constraints/langgraph-tests.txt` pins by
hash: langgraph-checkpoint's store tests, its SQLite store's (sync, async and TTL) and
its PostgreSQL store's (sync and async, on the test server).
`tests/langgraph_harness/lionmem_langgraph_plugin.py` makes each store they construct a
`StoreForLangGraph` over a lionmem store, and nothing else of them changes. Every test
passes, but those a suite declares: each is a row of docs/langgraph-differences.md,
where a side-by-side test shows both answers, and each must still fail here, so that a
row is dropped once it no longer holds. A release's tests run over the three stores at
once, since much of their time is spent waiting for TTLs to pass.
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
KINDS = ("memory", "sqlite", "postgres")


@dataclass(frozen=True)
class Suite:
    """Tests of one pinned release (its `files`, those `selected` by a `-k` expression),
    how many they are, how many of them fail by design, and the tests that do, each
    with its row of the differences page."""

    release: str
    files: tuple[str, ...]
    tests: int
    failing: int
    declared: dict[str, str]
    selected: str = ""


# The PostgreSQL store's tests in four parts, each well within the test command's limit
# for one test: its TTL tests wait out their TTLs, the others keep a core busy.
TIMED = "ttl or expired"
EXPIRED_ROWS = {
    "test_omit_expired_disabled_preserves_expired_rows": "expired-rows",
    "test_omit_expired_filters_read_paths": "its-own-tables",
    "test_omit_expired_refresh_ttl_only_refreshes_live_rows": "its-own-tables",
    "test_omit_expired_search_pagination": "its-own-tables",
}
POSTGRES = "langgraph_checkpoint_postgres"
SUITES = {
    "checkpoint": Suite(
        "langgraph_checkpoint", ("tests/test_store.py",), 117, 1, {"test_embed_with_path": "one-vector-per-item"}
    ),
    "sqlite": Suite(
        "langgraph_checkpoint_sqlite",
        ("tests/test_store.py", "tests/test_async_store.py", "tests/test_ttl.py"),
        153,
        9,
        {
            "test_embed_with_path": "one-vector-per-item",
            "test_filter_keys_with_hyphens_and_digits": "dotted-filter-key",
            "test_sql_injection_vulnerability": "any-filter-key",
            "test_ttl_override_default": "refresh-on-read",
            "test_vector_store_initialization": "its-own-tables",
            "test_nonnull_migrations": "its-own-tables",
        },
    ),
    "postgres-sync": Suite(
        POSTGRES,
        ("tests/test_store.py",),
        175,
        13,
        {
            "test_embed_with_path_sync": "one-vector-per-item",
            "test_embed_with_path_operation_config": "one-vector-per-item",
            "test_scores": "distance-type",
        },
        f"not ({TIMED})",
    ),
    "postgres-sync-ttl": Suite(POSTGRES, ("tests/test_store.py",), 18, 15, EXPIRED_ROWS, TIMED),
    "postgres-async": Suite(
        POSTGRES,
        ("tests/test_async_store.py",),
        88,
        7,
        {"test_embed_with_path": "one-vector-per-item", "test_abatch_uses_single_pool_checkout": "its-own-tables"},
        f"not ({TIMED})",
    ),
    "postgres-async-ttl": Suite(POSTGRES, ("tests/test_async_store.py",), 18, 15, EXPIRED_ROWS, TIMED),
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
    """{file::test name: passed, failed or skipped} from a JUnit XML report."""
    found: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case} & {"failure", "error", "skipped"}
        name = f"{case.attrib['classname']}::{case.attrib['name']}"
        found[name] = "failed" if kinds & {"failure", "error"} else "skipped" if kinds else "passed"
    return found


def test_each_declared_failure_is_a_row_of_the_differences_page() -> None:
    rows = LEDGER.page_rows()
    assert {row for suite in SUITES.values() for row in suite.declared.values()} <= rows.keys()


@pytest.mark.parametrize("name", SUITES)
def test_langgraphs_own_store_tests_pass_on_the_bridge(
    name: str, langgraph_tests: dict[str, Path], pgvector_server_url: str, tmp_path: Path
) -> None:
    suite = SUITES[name]
    runs: dict[str, tuple[subprocess.Popen[str], Path]] = {}
    for kind in KINDS:
        env = {
            **os.environ,
            "LIONMEM_LANGGRAPH_STORE": kind,
            "LIONMEM_LANGGRAPH_SERVER": pgvector_server_url,
            "PYTHONPATH": str(HARNESS),
        }
        if kind == "postgres":
            env["LIONMEM_LANGGRAPH_DSN"] = fresh_database(pgvector_server_url)
        report = tmp_path / f"{kind}.xml"
        plugins = ["-p", "lionmem_langgraph_plugin", "-p", "no:cacheprovider"]
        selected = ["-k", suite.selected] if suite.selected else []
        command = [sys.executable, "-m", "pytest", *suite.files, *selected, *plugins, "-q", f"--junitxml={report}"]
        running = subprocess.Popen(
            command,
            cwd=langgraph_tests[suite.release],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        runs[kind] = (running, report)
    try:
        for kind, (running, report) in runs.items():
            printed, _ = running.communicate()
            found = outcomes(report)
            failed = [test for test, outcome in found.items() if outcome == "failed"]
            said = f"{name} on the {kind} store:\n{printed[-4000:]}"
            assert {test.split("::")[-1].split("[")[0] for test in failed} == suite.declared.keys(), said
            assert len(failed) == suite.failing, said
            assert "skipped" not in found.values() and len(found) == suite.tests, said
    finally:
        for running, _ in runs.values():
            if running.poll() is None:  # another store's run failed first
                running.kill()
                running.communicate()
