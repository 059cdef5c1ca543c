"""What pyproject.toml promises about the releases lionmem runs on."""

from __future__ import annotations

import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent


def _floors_promised() -> dict[str, str]:
    """{package: lowest version} for the dependencies and the extras users install
    (postgres, testing, recall)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    floors: dict[str, str] = {}
    for line in [*project["dependencies"], *extras["postgres"], *extras["testing"], *extras["recall"]]:
        requirement = Requirement(line)
        [lowest] = [s.version for s in requirement.specifier if s.operator == ">="]
        names = [requirement.name] + [f"{requirement.name}-{extra}" for extra in requirement.extras]
        for name in names:
            floors[canonicalize_name(name)] = lowest
    return floors


def _floors_pinned() -> dict[str, str]:
    pinned: dict[str, str] = {}
    for line in (ROOT / "constraints" / "floors.txt").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, _, version = line.partition("==")
            pinned[canonicalize_name(name)] = version
    return pinned


def test_the_oldest_lionagi_ci_tests_is_the_extras_floor() -> None:
    # lionagi 0.28.0 fails to import under pydantic's floor, so CI tests it beside
    # the newest of everything else rather than in the floors' run.
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    [requirement] = [Requirement(line) for line in extras["lionagi"]]
    [lowest] = [s.version for s in requirement.specifier if s.operator == ">="]
    pinned = (ROOT / "constraints" / "lionagi-oldest.txt").read_text(encoding="utf-8").splitlines()
    assert f"lionagi=={lowest}" in pinned
    assert "constraints/lionagi-oldest.txt" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_floors_file_pins_exactly_the_floors_pyproject_promises() -> None:
    promised, pinned = _floors_promised(), _floors_pinned()
    assert promised.keys() == pinned.keys()
    assert {k: Version(v) for k, v in promised.items()} == {k: Version(v) for k, v in pinned.items()}
    assert promised["psycopg"] == "3.2.10"  # the first whose cancelled calls raise CancelledError
