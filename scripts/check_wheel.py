"""Check a built lionmem wheel as its users meet it: installed, away from any work tree.

Run: python scripts/check_wheel.py dist/lionmem-VERSION-py3-none-any.whl
It makes a fresh venv, installs the wheel with the `testing`, `postgres`, `lionagi`,
`langgraph` and `recall` extras and the test extra's mypy, pytest and Sybil, then runs
each check. `--python PATH` skips the install and checks the venv that interpreter
belongs to; `--only NAME` runs one check
(repeatable). `.ci/run` runs it after the test suite; tests/project/test_distributions.py
runs it against wheels with a file taken out, which must fail.

The checks, each in a temporary folder so that nothing from this tree is importable:

- `files`: every file of `src/lionmem` is installed, from the wheel, not an editable
  install;
- `readme`: the README's example;
- `demo`: `lionmem demo`, the installed command, and `python -m lionmem demo`;
- `mypy`: `mypy --strict` on a copy of `typing_tests/`, so the shipped stub and
  `py.typed` are what it reads;
- `kit`: a pytest run of the kit on the reference store, through the `memory_store`
  marker, which exists only when pytest loads the plugin by its `pytest11` entry point;
- `docs`: every Python and console example of `docs/`, as written, run by Sybil with
  the installed `lionmem` command first on the PATH; the repository lends only its test
  support (the throwaway PostgreSQL server), never `src/`.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
import venv
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "src" / "lionmem"

KIT_TEST = """\
import pytest

from lionmem import InMemoryStore
from lionmem.testing import REFERENCE_PROFILE
from lionmem.testing.pytest_plugin import MemoryStoreContract


@pytest.mark.memory_store(InMemoryStore, REFERENCE_PROFILE, stateful_examples=10)
class TestReferenceStore(MemoryStoreContract):
    pass
"""

INSTALLED = """\
import importlib.metadata, json, lionmem, pathlib
dist = importlib.metadata.distribution("lionmem")
direct = dist.read_text("direct_url.json")
print(json.dumps({
    "module": lionmem.__file__,
    "editable": bool(direct and json.loads(direct).get("dir_info", {}).get("editable")),
    "files": sorted(str(f) for f in dist.files or () if str(f).startswith("lionmem/")),
}))
"""


DOCS_CONFTEST = """\
import importlib.util
import sys

from sybil import Sybil
from sybil.parsers.markdown import CodeBlockParser

# The repository's test support (its PostgreSQL server, its evaluators); lionmem
# itself comes from the installed wheel, since src/ is not on the path.
sys.path.insert(0, {root!r})
spec = importlib.util.spec_from_file_location("lionmem_docs_support", {conftest!r})
support = importlib.util.module_from_spec(spec)
spec.loader.exec_module(support)

pg_url = support.pg_url
_close_sqlite_test_connections = support._close_sqlite_test_connections
pytest_collect_file = Sybil(
    parsers=[
        CodeBlockParser(language="python", evaluator=support.evaluate_with_await),
        CodeBlockParser(language="console", evaluator=support.run_console),
    ],
    patterns=["*.md"],
    path="docs",
    teardown=support.teardown,
    fixtures=["pg_url"],
).pytest()
"""


class CheckFailed(Exception):
    """A check found the installed wheel wanting; the message says how."""


def run(command: list[str], cwd: Path) -> str:
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise CheckFailed(f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}")
    return done.stdout


def shipped_files() -> set[str]:
    """Every file of `src/lionmem`, named as the wheel names it (`lionmem/...`)."""
    return {
        f"lionmem/{path.relative_to(PACKAGE).as_posix()}"
        for path in PACKAGE.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    }


def check_files(python: Path, work: Path) -> None:
    report = json.loads(run([str(python), "-c", INSTALLED], work))
    if report["editable"]:
        raise CheckFailed("lionmem is an editable install, not the wheel")
    if not Path(report["module"]).is_relative_to(python.parent.parent):
        raise CheckFailed(f"lionmem was imported from {report['module']}, outside the venv")
    missing = sorted(shipped_files() - set(report["files"]))
    if missing:
        raise CheckFailed(f"the wheel lacks {', '.join(missing)}")


def check_readme(python: Path, work: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    (example,) = re.findall(r"```python\n(.*?)```", readme, flags=re.DOTALL)
    (work / "example.py").write_text(example, encoding="utf-8")
    run([str(python), "example.py"], work)


def check_demo(python: Path, work: Path) -> None:
    for command in ([str(python.with_name("lionmem"))], [str(python), "-m", "lionmem"]):
        if "stored 4 items" not in run([*command, "demo"], work):
            raise CheckFailed(f"{' '.join(command)} demo printed no stored items")


def check_mypy(python: Path, work: Path) -> None:
    shutil.copytree(ROOT / "typing_tests", work / "typing_tests")
    # The project's own settings (strict, the extra error codes), without its `files`.
    options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    codes = [f"--enable-error-code={code}" for code in options["enable_error_code"]]
    run([str(python), "-m", "mypy", "--strict", "--warn-unreachable", *codes, "typing_tests"], work)


def check_kit(python: Path, work: Path) -> None:
    (work / "test_kit.py").write_text(KIT_TEST, encoding="utf-8")
    output = run([str(python), "-m", "pytest", "-p", "no:cacheprovider", "--strict-markers", "test_kit.py"], work)
    if not re.search(r"^plugins: .*lionmem-", output, flags=re.MULTILINE):
        raise CheckFailed(f"pytest did not list lionmem among its plugins:\n{output}")


def check_docs(python: Path, work: Path) -> None:
    shutil.copytree(ROOT / "docs", work / "docs")
    (work / "conftest.py").write_text(
        DOCS_CONFTEST.format(root=str(ROOT), conftest=str(ROOT / "conftest.py")), encoding="utf-8"
    )
    output = run([str(python), "-m", "pytest", "-q", "-p", "no:cacheprovider", "docs"], work)
    if not re.search(r"^\d+ passed", output.splitlines()[-1]):
        raise CheckFailed(f"the documentation's examples did not all pass:\n{output}")


CHECKS: dict[str, Callable[[Path, Path], None]] = {
    "files": check_files,
    "readme": check_readme,
    "demo": check_demo,
    "mypy": check_mypy,
    "kit": check_kit,
    "docs": check_docs,
}


def install(wheel: Path, into: Path) -> Path:
    """A fresh venv with the wheel, its extras and the test extra's mypy, pytest and Sybil,
    at the versions the test lock pins."""
    venv.create(into, with_pip=True, clear=True)
    python = into / "bin" / "python"
    test_extra = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]["test"]
    tools = [line for line in test_extra if re.match(r"(mypy|pytest|sybil)\b(?![-\w])", line)]
    lock = ["-c", str(ROOT / "constraints" / "test-lock.txt")]
    run(
        [
            str(python),
            "-m",
            "pip",
            "install",
            "-q",
            *lock,
            f"{wheel.resolve()}[testing,postgres,lionagi,langgraph,recall]",
            *tools,
        ],
        into,
    )
    return python


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("wheel", nargs="?", type=Path, help="the wheel to install in a fresh venv")
    parser.add_argument("--python", type=Path, help="check this venv's interpreter instead of installing")
    parser.add_argument("--only", action="append", choices=sorted(CHECKS), help="run this check alone")
    args = parser.parse_args(argv)
    if (args.wheel is None) == (args.python is None):
        parser.error("give either a wheel or --python")
    with tempfile.TemporaryDirectory(prefix="lionmem-wheel-") as scratch:
        python = args.python.absolute() if args.python else install(args.wheel, Path(scratch) / "venv")
        failed: list[str] = []
        for name in args.only or CHECKS:
            work = Path(scratch) / name
            work.mkdir()
            try:
                CHECKS[name](python, work)
            except CheckFailed as failure:
                failed.append(name)
                print(f"{name}: FAILED\n{failure}", flush=True)
            else:
                print(f"{name}: ok", flush=True)
    if failed:
        print(f"the installed wheel failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
