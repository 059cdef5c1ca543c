"""The type checkers' verdicts are part of the test suite."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import yaml

import lionmem
from lionmem import testing
from tests.support.linked_venv import linked_venv
from tests.support.project import classifier_pythons

ROOT = Path(__file__).resolve().parents[2]
STUB = ROOT / "src" / "lionmem" / "__init__.pyi"


def run(*command: str) -> subprocess.CompletedProcess[str]:
    # The venv's own executables first on PATH, as pyright --verifytypes needs (it
    # finds the package through that interpreter, not through --pythonpath).
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    return subprocess.run(
        command, cwd=ROOT, capture_output=True, text=True, timeout=600, env={**os.environ, "PATH": path}
    )


def pyright() -> str:
    found = shutil.which("pyright", path=str(Path(sys.executable).parent))
    assert found is not None, "pyright is installed by the test extra"
    return found


def test_mypy_strict_passes_on_src_tests_typing_tests_benchmarks_and_scripts() -> None:
    done = run(sys.executable, "-m", "mypy")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Success" in done.stdout


def test_the_adapters_pages_examples_pass_mypy_strict(tmp_path: Path) -> None:
    """The page's Python blocks, in order, as one module, as an adapter's author would
    copy them; its embedder annotated `list[str]` instead fails where the page says."""
    page = (ROOT / "docs" / "adapters.md").read_text(encoding="utf-8")
    module = "\n\n".join(re.findall(r"```python\n(.*?)```", page, flags=re.DOTALL))
    wrong = module.replace("async def embed(self, texts: Sequence[str])", "async def embed(self, texts: list[str])")
    assert wrong != module
    (tmp_path / "adapters_page.py").write_text(module, encoding="utf-8")
    (tmp_path / "adapters_page_wrong.py").write_text(wrong, encoding="utf-8")
    strict = [sys.executable, "-m", "mypy", "--strict", "--disable-error-code", "top-level-await", "--no-incremental"]
    done = run(*strict, str(tmp_path / "adapters_page.py"))
    assert done.returncode == 0, done.stdout + done.stderr
    done = run(*strict, str(tmp_path / "adapters_page_wrong.py"))
    assert 'Argument 1 to "RecallingDictStore" has incompatible type "LetterCounts"; expected "Embedder"' in done.stdout
    assert "def embed(self, texts: list[str])" in done.stdout


def test_mypy_checks_the_lazy_init_module_itself() -> None:
    # With __init__.pyi beside it, mypy reads only the stub; name the .py explicitly.
    done = run(sys.executable, "-m", "mypy", "src/lionmem/__init__.py")
    assert done.returncode == 0, done.stdout + done.stderr


def test_pyright_strict_passes_on_src_and_typing_tests() -> None:
    done = run(pyright(), "--pythonpath", sys.executable)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 errors" in done.stdout


def test_pyright_finds_every_public_symbol_typed_and_documented() -> None:
    # Types from pydantic, which lionmem cannot annotate, are left out.
    done = run(pyright(), "--verifytypes", "lionmem", "--ignoreexternal", "--outputjson")
    report = json.loads(done.stdout)["typeCompleteness"]
    assert Path(report["pyTypedPath"]) == ROOT / "src" / "lionmem" / "py.typed"
    untyped = [
        f"{symbol['name']}: {diagnostic['message']}"
        for symbol in report["symbols"]
        for diagnostic in symbol.get("diagnostics", [])
        if diagnostic["severity"] == "error"
    ]
    assert untyped == []
    assert report["exportedSymbolCounts"]["withKnownType"] > 300  # the package was found
    assert report["completenessScore"] == 1
    assert report["missingFunctionDocStringCount"] == 0
    assert report["missingClassDocStringCount"] == 0


def test_the_kits_types_are_whole_without_lionagi(tmp_path: Path) -> None:
    """The kit's public names, `memory_store_contract` among them, are fully known
    without the lionagi extra: a strict user importing them gets no error."""
    # As a machine with only `lionmem[testing]` installed.
    python = linked_venv(tmp_path / "venv", lambda name: name.startswith("lionagi"))
    assert subprocess.run([python, "-c", "import lionagi"], capture_output=True).returncode != 0
    user = tmp_path / "user"
    user.mkdir()
    (user / "pyrightconfig.json").write_text('{"typeCheckingMode": "strict"}', encoding="utf-8")
    (user / "adapter_test.py").write_text(
        f"from lionmem.testing import {', '.join(testing.__all__)}\n"
        "from lionmem.testing.pytest_plugin import MemoryStoreContract, memory_store_contract\n"
        "from lionmem import InMemoryStore\n"
        "TestStore = memory_store_contract(InMemoryStore, REFERENCE_PROFILE)\n"
        f"print({', '.join(testing.__all__)}, MemoryStoreContract)\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [pyright(), "--pythonpath", str(python), "adapter_test.py"], cwd=user, capture_output=True, text=True
    )
    assert done.returncode == 0 and "0 errors" in done.stdout, done.stdout + done.stderr
    path = f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}"
    verified = subprocess.run(
        [pyright(), "--verifytypes", "lionmem.testing", "--ignoreexternal", "--outputjson"],
        cwd=user,
        capture_output=True,
        text=True,
        env={**os.environ, "PATH": path},
    )
    report = json.loads(verified.stdout)["typeCompleteness"]
    unknown = [
        f"{symbol['name']}: {diagnostic['message']}"
        for symbol in report["symbols"]
        for diagnostic in symbol.get("diagnostics", [])
        if diagnostic["severity"] == "error"
    ]
    assert unknown == [] and report["completenessScore"] == 1
    assert report["exportedSymbolCounts"]["withKnownType"] > 50  # the package was found


def test_stubtest_finds_the_stub_equal_to_the_runtime() -> None:
    done = run(sys.executable, "-m", "mypy.stubtest", "lionmem", "--allowlist", "stubtest-allowlist.txt")
    assert done.returncode == 0, done.stdout + done.stderr


def _stub_imports() -> dict[str, str]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                assert alias.asname == alias.name, "re-export as X as X"
                found[alias.name] = node.module or ""
    return found


def _stub_all() -> list[str]:
    tree = ast.parse(STUB.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__":
            value = ast.literal_eval(node.value)
            assert isinstance(value, list)
            return [str(v) for v in value]
    raise AssertionError("the stub has no __all__")  # pragma: no cover


def test_stub_all_and_lazy_map_name_the_same_objects() -> None:
    lazy: dict[str, str] = vars(lionmem)["_LAZY"]
    assert _stub_imports() == lazy
    assert _stub_all() == lionmem.__all__ == sorted(lazy)


LINTED = ("src", "tests", "typing_tests", "scripts", "benchmarks", "conftest.py")


def ruff() -> str:
    found = shutil.which("ruff", path=str(Path(sys.executable).parent))
    assert found is not None, "ruff is installed by the test extra"
    return found


def test_ruff_finds_nothing_to_lint() -> None:
    done = run(ruff(), "check", "--no-cache", *LINTED)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "All checks passed!" in done.stdout


def test_ruff_finds_every_file_formatted() -> None:
    done = run(ruff(), "format", "--check", "--no-cache", *LINTED)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "already formatted" in done.stdout


def test_ruff_reads_the_projects_rules(tmp_path: Path) -> None:
    # Unsorted imports and a mutable default: the configured rule set finds both,
    # so the two tests above do run the project's rules on the files named.
    bad = tmp_path / "bad.py"
    bad.write_text("import sys\nimport os\n\n\ndef f(x=[]):\n    return x, os, sys\n", encoding="utf-8")
    done = run(ruff(), "check", "--no-cache", "--config", str(ROOT / "pyproject.toml"), str(bad))
    assert done.returncode == 1
    assert "I001" in done.stdout and "B006" in done.stdout


# -- the forge's workflows ----------------------------------------------------------

WORKFLOWS = ROOT / ".github" / "workflows"


def _workflow(name: str) -> dict[str, Any]:
    loaded: dict[Any, Any] = yaml.safe_load((WORKFLOWS / name).read_text(encoding="utf-8"))
    # YAML 1.1 reads the key `on` as True.
    loaded["on"] = loaded.pop(True)
    return loaded


def actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    found = shutil.which("actionlint", path=str(Path(sys.executable).parent))
    assert found is not None, "actionlint is installed by the test extra"
    # ShellCheck checks each step's script; without it, actionlint skips them silently.
    assert shutil.which("shellcheck"), "shellcheck is installed by .ci/system-deps"
    return run(found, "-no-color", "-oneline", *map(str, files))


def test_actionlint_finds_nothing_wrong_in_the_workflows() -> None:
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert [f.name for f in files] == ["ci.yml", "docs.yml", "newest.yml", "release.yml"]
    done = actionlint(*files)
    assert done.returncode == 0, done.stdout + done.stderr


def test_actionlint_finds_an_unquoted_variable_and_an_undefined_matrix_key(tmp_path: Path) -> None:
    # So that the test above runs checks that can fail, ShellCheck's included.
    bad = tmp_path / "bad.yml"
    bad.write_text(
        (WORKFLOWS / "ci.yml").read_text(encoding="utf-8").replace("bash .ci/run", 'echo $HOME "${{ matrix.nope }}"'),
        encoding="utf-8",
    )
    done = actionlint(bad)
    assert done.returncode == 1
    assert "SC2086" in done.stdout and 'property "nope" is not defined' in done.stdout


def test_the_ci_workflow_runs_ci_run_itself_on_every_python_the_classifiers_name() -> None:
    workflow = _workflow("ci.yml")
    assert set(workflow["on"]) == {"push", "pull_request"}
    (job,) = workflow["jobs"].values()
    runs = [step["run"] for step in job["steps"] if "run" in step]
    assert runs == ["bash .ci/run"], "ci.yml runs .ci/run and nothing else, not a copy of its steps"
    classifiers = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["classifiers"]
    pythons = classifier_pythons(classifiers)
    assert job["strategy"]["matrix"]["python"] == pythons
    assert job["container"] == "python:${{ matrix.python }}-bookworm"


def test_the_newest_workflow_runs_the_suite_weekly_without_the_lock() -> None:
    workflow = _workflow("newest.yml")
    assert set(workflow["on"]) == {"schedule", "workflow_dispatch"}
    (job,) = workflow["jobs"].values()
    assert [step["run"] for step in job["steps"] if "run" in step] == ["bash .ci/newest"]
    newest = (ROOT / ".ci" / "newest").read_text(encoding="utf-8")
    assert 'pip install -e ".[test]"' in newest and "scripts/lock.py --compare" in newest
    assert "python -m pytest -n auto --dist loadfile" in newest


def test_the_release_workflow_publishes_by_trusted_publishing_with_no_token() -> None:
    text = (WORKFLOWS / "release.yml").read_text(encoding="utf-8")
    workflow = _workflow("release.yml")
    assert workflow["on"] == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {"contents": "read"}
    publish = workflow["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"}
    assert publish["environment"]["name"] == "pypi"
    assert publish["needs"] == "build"
    assert publish["steps"][-1] == {"uses": "pypa/gh-action-pypi-publish@release/v1"}
    assert "secrets." not in text and "password" not in text
    build = "\n".join(step.get("run", "") for step in workflow["jobs"]["build"]["steps"])
    assert "python -m build" in build and "twine check --strict" in build
    assert "scripts/check_wheel.py dist/*.whl" in build
    assert '"${TAG}" != "v${version}"' in build  # the tag must name pyproject's version


def test_the_docs_workflow_deploys_the_tagged_version_with_mike_and_moves_latest() -> None:
    workflow = _workflow("docs.yml")
    assert workflow["on"] == {"push": {"tags": ["v*"]}}
    assert workflow["permissions"] == {"contents": "write"}
    (job,) = workflow["jobs"].values()
    steps = "\n".join(step.get("run", "") for step in job["steps"])
    assert 'python -m pip install -c constraints/test-lock.txt ".[docs]"' in steps
    assert 'mike deploy --push --update-aliases "${version%.*}" latest' in steps
    assert "mike set-default --push latest" in steps
    assert job["steps"][0] == {"uses": "actions/checkout@v5", "with": {"fetch-depth": 0}}
