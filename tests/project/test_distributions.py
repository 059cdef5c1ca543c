"""The distributions a release publishes: what they hold, the metadata PyPI shows, and
the installed wheel checked as users meet it (scripts/check_wheel.py)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import tarfile
import tomllib
import zipfile
from email.message import Message
from email.parser import Parser
from pathlib import Path

import pytest

from tests.support.linked_venv import linked_venv
from tests.support.project import classifier_pythons, site_url

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
CHECK = ROOT / "scripts" / "check_wheel.py"
_spec = importlib.util.spec_from_file_location("check_wheel", CHECK)
assert _spec is not None and _spec.loader is not None
check_wheel = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(check_wheel)
PACKAGES = sorted(
    path.parent.relative_to(ROOT / "src").as_posix() for path in (ROOT / "src" / "lionmem").rglob("__init__.py")
)


class Built:
    """The sdist and the wheel `python -m build` made, and what it printed."""

    def __init__(self, folder: Path, log: str) -> None:
        (self.sdist,) = folder.glob("*.tar.gz")
        (self.wheel,) = folder.glob("*.whl")
        self.log = log


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    # Without isolation, so that no index is asked for hatchling: the test extra has it.
    # With neither --sdist nor --wheel, build makes the sdist, then the wheel from it.
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return Built(out, done.stdout + done.stderr)


def _metadata(wheel: Path) -> Message:
    with zipfile.ZipFile(wheel) as archive:
        [name] = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        return Parser().parsestr(archive.read(name).decode())


def test_twine_check_strict_passes_on_the_sdist_and_the_wheel(built: Built) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(built.sdist), str(built.wheel)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("PASSED") == 2


def test_the_wheel_was_built_from_the_sdist(built: Built) -> None:
    # What a packager does with the sdist alone, done here by build itself.
    assert "Building wheel from sdist" in built.log


def test_the_wheel_holds_the_types_every_package_the_plugin_and_the_license(built: Built) -> None:
    with zipfile.ZipFile(built.wheel) as archive:
        names = set(archive.namelist())
        entry_points = next(archive.read(n).decode() for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert {"lionmem/py.typed", "lionmem/__init__.pyi"} <= names
    assert len(PACKAGES) >= 10
    for package in PACKAGES:
        assert f"{package}/__init__.py" in names, package
    assert check_wheel.shipped_files() <= names
    assert any(re.fullmatch(r"lionmem-[^/]+\.dist-info/licenses/LICENSE", n) for n in names)
    assert "[pytest11]\nlionmem = lionmem.testing.pytest_plugin" in entry_points
    # Nothing but the package and its metadata: no tests, docs or benchmarks.
    assert {n.split("/")[0] for n in names} == {"lionmem", built.wheel.name.split("-py3")[0] + ".dist-info"}


def test_the_sdist_holds_what_a_packager_needs_to_rebuild_and_test(built: Built) -> None:
    with tarfile.open(built.sdist) as archive:
        top, *_ = archive.getnames()
        names = {name.partition("/")[2] for name in archive.getnames()}
    for needed in (
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "mkdocs.yml",
        "overrides/partials/source.html",
        "src/lionmem/py.typed",
        "src/lionmem/__init__.pyi",
        "tests/project/test_distributions.py",
        "typing_tests/accepted.py",
        "typing_tests/rejected.py",
        "docs/index.md",
        "api/lionmem.json",
        "scripts/check_wheel.py",
        ".ci/run",
    ):
        assert needed in names, needed
    assert top.startswith("lionmem-")
    assert not [n for n in names if n.startswith((".venv/", ".git/", "artifacts/")) or "__pycache__" in n]


def test_pypi_shows_the_urls_keywords_license_and_the_readme(built: Built) -> None:
    metadata = _metadata(built.wheel)
    urls = dict(value.split(", ", 1) for value in metadata.get_all("Project-URL") or [])
    assert sorted(urls) == ["Changelog", "Documentation", "Issues", "Source"]
    assert all(url.startswith("https://") for url in urls.values())
    assert urls["Documentation"] == site_url()
    assert urls["Source"] in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")  # the site's repository link
    keywords = (metadata["Keywords"] or "").split(",")
    assert {"memory", "agents", "lionagi", "sqlite", "postgresql"} <= set(keywords)
    assert metadata["License-Expression"] == "Apache-2.0"
    assert metadata["Description-Content-Type"] == "text/markdown"
    payload = metadata.get_payload()
    assert isinstance(payload, str) and "pip install lionmem" in payload


def test_the_wheel_names_the_pythons_ci_runs_and_requires_the_oldest(built: Built) -> None:
    metadata = _metadata(built.wheel)
    classifiers = metadata.get_all("Classifier") or []
    named = classifier_pythons(classifiers)
    # ci.yml runs on these: tests/project/test_static_analysis.py holds the matrix to pyproject's.
    assert named == classifier_pythons(PROJECT["classifiers"]) == ["3.11", "3.12"]
    assert metadata["Requires-Python"] == f">={named[0]}"
    assert {"Typing :: Typed", "Framework :: Pytest", "Framework :: AsyncIO"} <= set(classifiers)


def test_one_version_in_pyproject_the_wheel_and_the_changelogs_newest_heading(built: Built) -> None:
    version = PROJECT["version"]
    assert _metadata(built.wheel)["Version"] == version
    assert built.wheel.name.startswith(f"lionmem-{version}-")
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    newest = re.search(r"^## (\S+)", changelog, flags=re.MULTILINE)
    assert newest is not None and newest[1] == version
    # Nowhere else: the package does not repeat the version in its code.
    sources = [path for path in (ROOT / "src").rglob("*.py*") if path.suffix in {".py", ".pyi"}]  # no bytecode
    assert not [path for path in sources if f'"{version}"' in path.read_text(encoding="utf-8")]


def test_the_install_page_documents_every_extra_and_no_other() -> None:
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    documented = re.findall(r"^\| `([a-z]+)` \| `[^`]*pip install [^`]*\[\1\]", page, flags=re.MULTILINE)
    assert documented == list(PROJECT["optional-dependencies"])
    assert "```bash\npip install lionmem\n```" in page


# -- the installed wheel ----------------------------------------------------------


@pytest.fixture(scope="module")
def offline_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A venv that sees this one's packages but lionmem, as links, so that a wheel is
    installed into it and checked without asking an index for anything."""
    editable = re.compile(r"(_editable_impl_)?lionmem\b")
    return linked_venv(tmp_path_factory.mktemp("venv"), lambda name: editable.match(name) is not None)


def _install(python: Path, wheel: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index",
         "--force-reinstall", str(wheel)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr


def _check(python: Path, *only: str) -> subprocess.CompletedProcess[str]:
    # Coverage's variables stay out: the checks import the installed copy of lionmem,
    # which is not the source tree this run measures.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    options = [f"--only={name}" for name in only]
    return subprocess.run(
        [sys.executable, str(CHECK), "--python", str(python), *options], capture_output=True, text=True, env=env
    )


def _without(wheel: Path, left_out: str, into: Path) -> Path:
    """A copy of `wheel` without one file, its RECORD line gone too."""
    doctored = into / wheel.name
    with zipfile.ZipFile(wheel) as source, zipfile.ZipFile(doctored, "w") as target:
        for info in source.infolist():
            if info.filename == left_out:
                continue
            data = source.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                data = b"".join(
                    line for line in data.splitlines(keepends=True) if not line.startswith(left_out.encode())
                )
            target.writestr(info, data)
    return doctored


def test_the_installed_wheel_passes_every_check(built: Built, offline_venv: Path) -> None:
    _install(offline_venv, built.wheel)
    done = _check(offline_venv)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == ["files: ok", "readme: ok", "demo: ok", "mypy: ok", "kit: ok", "docs: ok"]


@pytest.mark.parametrize(
    ("left_out", "check"),
    [
        ("lionmem/py.typed", "mypy"),  # mypy will not read an untyped package
        ("lionmem/__init__.pyi", "mypy"),  # the lazy module's names become Any
        ("lionmem/testing/pytest_plugin.py", "kit"),  # the entry point names a missing module
        ("lionmem/session/branch.py", "readme"),  # the example's Branch
        ("lionmem/cli/_commands.py", "demo"),  # the command line's commands
    ],
)
def test_a_file_left_out_of_the_wheel_fails_the_check(
    built: Built, offline_venv: Path, tmp_path: Path, left_out: str, check: str
) -> None:
    _install(offline_venv, _without(built.wheel, left_out, tmp_path))
    try:
        done = _check(offline_venv, "files", check)
    finally:
        _install(offline_venv, built.wheel)
    assert done.returncode == 1
    assert f"files: FAILED\nthe wheel lacks {left_out}" in done.stdout
    assert f"{check}: FAILED" in done.stdout
    assert f"the installed wheel failed: files, {check}" in done.stderr


def test_the_check_refuses_an_editable_install() -> None:
    # This test run's own lionmem is the editable install of the work tree.
    done = _check(Path(sys.executable), "files")
    assert done.returncode == 1
    assert "lionmem is an editable install, not the wheel" in done.stdout
