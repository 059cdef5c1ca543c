"""What pyproject.toml promises about the releases lionmem runs on."""

from __future__ import annotations

import importlib.metadata
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

from scripts import lock

ROOT = Path(__file__).resolve().parents[2]


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


def test_the_floors_file_pins_exactly_the_floors_pyproject_promises() -> None:
    promised, pinned = _floors_promised(), _floors_pinned()
    assert promised.keys() == pinned.keys()
    assert {k: Version(v) for k, v in promised.items()} == {k: Version(v) for k, v in pinned.items()}
    assert promised["psycopg"] == "3.2.10"  # the first whose cancelled calls raise CancelledError


# -- the locks the test command installs from -----------------------------------------


def _lock(name: str) -> dict[str, str]:
    return lock.pins(lock.lock_path(name).read_text(encoding="utf-8"))


def test_each_lock_pins_what_its_environment_is_resolved_under() -> None:
    for name, sources in lock.ENVIRONMENTS.items():
        pinned = _lock(name)
        for source in sources:
            assert lock.pins(source.read_text(encoding="utf-8")).items() <= pinned.items(), (name, source)
        for line in lock.HOLDS.read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.startswith("#"):
                held = Requirement(line)
                assert held.specifier.contains(pinned[canonicalize_name(held.name)]), (name, line)
    assert _lock("floors")["pydantic"] == "2.9.0" and _lock("lionagi-oldest")["lionagi"] == "0.28.0"


def test_the_test_lock_satisfies_every_requirement_of_the_test_extra() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras, pinned = project["optional-dependencies"], _lock("test")
    wanted, seen = [*project["dependencies"], *extras["test"]], 0
    while wanted:
        requirement = Requirement(wanted.pop())
        if requirement.name == "lionmem":
            wanted += [line for extra in requirement.extras for line in extras[extra]]
            continue
        assert requirement.specifier.contains(pinned[canonicalize_name(requirement.name)]), requirement
        seen += 1
    assert seen >= 20  # the extras were walked, not only the top level


def test_the_tests_run_on_the_locked_releases() -> None:
    """The README's test command installed this venv from the lock: every locked package
    that is here has the locked version."""
    pinned = _lock("test")
    here: dict[str, str] = {
        canonicalize_name(d.metadata["Name"]): d.version for d in importlib.metadata.distributions()
    }
    differ = {name: (version, here[name]) for name, version in pinned.items() if here.get(name, version) != version}
    assert not differ, f"(locked, installed): {differ}; install with -c constraints/test-lock.txt"
    assert pinned.keys() <= here.keys()


def test_every_install_ci_makes_takes_a_lock() -> None:
    ci_run = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    for name in lock.ENVIRONMENTS:
        assert f"-c constraints/{name}-lock.txt -e" in ci_run
    assert "-c constraints/test-lock.txt -e" in (ROOT / "README.md").read_text(encoding="utf-8")
    for path in [ROOT / "scripts" / "check_wheel.py", *(ROOT / ".github" / "workflows").glob("*.yml")]:
        text = path.read_text(encoding="utf-8")
        installs = [line for line in text.splitlines() if "pip" in line and " install" in line]
        assert all("test-lock.txt" in line for line in installs), path
    # The one install without a lock is the scheduled job's, whose point is the newest.
    assert "-c " not in (ROOT / ".ci" / "newest").read_text(encoding="utf-8")


def test_compare_names_each_release_that_differs_from_the_lock() -> None:
    pinned = _lock("test")
    newest = {**pinned, "pydantic": "99.0", "new-package": "1.0"}
    del newest["ruff"]
    frozen = "".join(f"{name}=={version}\n" for name, version in newest.items())
    assert lock.compare(frozen) == [
        ("new-package", "-", "1.0"),
        ("pydantic", pinned["pydantic"], "99.0"),
        ("ruff", pinned["ruff"], "-"),
    ]
