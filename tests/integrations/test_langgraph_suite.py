"""LangGraph's own store tests, run against the bridge over each of lionmem's stores
(ADR-0106).

The tests come from the source distribution `constraints/langgraph-tests.txt` pins by
hash; `tests/langgraph_harness/lionmem_langgraph_plugin.py` makes each store they
construct a `StoreForLangGraph` over a lionmem store, and nothing else of them changes.
Every test passes, but those `DECLARED` names: each is a row of
docs/langgraph-differences.md, where a side-by-side test shows both answers, and each
must still fail here, so that a row is dropped once it no longer holds.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.support.pg_server import fresh_database

ROOT = Path(__file__).resolve().parents[2]
PINNED = ROOT / "constraints" / "langgraph-tests.txt"
HARNESS = ROOT / "tests" / "langgraph_harness"
SUITE = "tests/test_store.py"
TESTS = 117
"""How many tests the pinned release's store tests hold."""
DECLARED = {"test_embed_with_path": "One vector for each item"}
"""The tests that fail by design, each with the row of the differences page it is."""


@pytest.fixture(scope="module")
def langgraph_tests(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pinned release's sources, downloaded and checked by their hash."""
    where = tmp_path_factory.mktemp("langgraph")
    download = ["download", "-q", "--no-deps", "--no-binary", ":all:", "--require-hashes", "-r", str(PINNED)]
    subprocess.run([sys.executable, "-m", "pip", *download, "-d", str(where)], check=True)
    [sdist] = where.glob("*.tar.gz")
    with tarfile.open(sdist) as archive:
        archive.extractall(where, filter="data")
    [unpacked] = [path for path in where.iterdir() if path.is_dir()]
    return unpacked


def outcomes(report: Path) -> dict[str, str]:
    """{test name: passed, failed or skipped} from a JUnit XML report."""
    found: dict[str, str] = {}
    for case in ET.parse(report).getroot().iter("testcase"):
        kinds = {child.tag for child in case} & {"failure", "error", "skipped"}
        found[case.attrib["name"]] = "failed" if kinds & {"failure", "error"} else "skipped" if kinds else "passed"
    return found


@pytest.mark.parametrize("kind", ["memory", "sqlite", "postgres"])
def test_langgraphs_own_store_tests_pass_on_the_bridge(
    kind: str, langgraph_tests: Path, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    env = {**os.environ, "LIONMEM_LANGGRAPH_STORE": kind, "PYTHONPATH": str(HARNESS)}
    if kind == "postgres":
        env["LIONMEM_LANGGRAPH_DSN"] = fresh_database(request.getfixturevalue("pgvector_server_url"))
    report = tmp_path / "report.xml"
    plugins = ["-p", "lionmem_langgraph_plugin", "-p", "no:cacheprovider"]
    done = subprocess.run(
        [sys.executable, "-m", "pytest", SUITE, *plugins, "-q", f"--junitxml={report}"],
        cwd=langgraph_tests,
        env=env,
        capture_output=True,
        text=True,
    )
    found = outcomes(report)
    failed = {name.split("[")[0] for name, outcome in found.items() if outcome == "failed"}
    assert failed == DECLARED.keys(), done.stdout[-4000:]
    assert "skipped" not in found.values() and len(found) == TESTS, done.stdout[-4000:]
