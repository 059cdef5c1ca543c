"""The layers hold: import-linter's contracts in pyproject.toml pass on the source,
and each of them fails on a copy of the source that breaks it."""

from __future__ import annotations

import ast
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def lint_imports(source: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run the contracts of `cwd`'s pyproject.toml on the `lionmem` package under `source`."""
    command = Path(sys.executable).parent / "lint-imports"
    assert command.exists(), "import-linter is installed by the test extra"
    return subprocess.run(
        [str(command), "--no-cache"],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(source)},
    )


def test_every_contract_is_kept() -> None:
    done = lint_imports(ROOT / "src", ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 6 kept, 0 broken." in done.stdout


# One import per contract, each placed where that contract alone forbids it.
BREAKS: dict[str, tuple[str, str]] = {
    "The command line on top": ("lionmem/session/branch.py", "import lionmem.embedders"),
    "never import the package's lazy face": ("lionmem/session/branch.py", "from lionmem import Pile"),
    "never imports a store": ("lionmem/testing/kit.py", "import lionmem.adapters.urls"),
    "Each durable store stands alone": (
        "lionmem/adapters/sqlite/_planner.py",
        "import lionmem.adapters.postgres.schema",
    ),
    "A private module is imported only": ("lionmem/adapters/urls.py", "import lionmem.adapters.sqlite._writes"),
    "No import cycles": ("lionmem/adapters/sqlite/_writes.py", "import lionmem.adapters.sqlite.schema"),
}


@pytest.mark.parametrize("contract", sorted(BREAKS))
def test_each_contract_fails_when_broken(contract: str, tmp_path: Path) -> None:
    shutil.copytree(ROOT / "src" / "lionmem", tmp_path / "src" / "lionmem")
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    module, line = BREAKS[contract]
    path = tmp_path / "src" / module
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}  # noqa: E402\n", encoding="utf-8")
    done = lint_imports(tmp_path / "src", tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Contracts: 5 kept, 1 broken." in done.stdout, done.stdout
    broken = [line for line in done.stdout.splitlines() if line.endswith("BROKEN")]
    assert len(broken) == 1 and contract in " ".join(done.stdout.split()), done.stdout


def test_the_layers_drawing_is_drawn_from_the_contract() -> None:
    spec = importlib.util.spec_from_file_location("draw_layers", ROOT / "scripts" / "draw_layers.py")
    assert spec is not None and spec.loader is not None
    draw_layers = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(draw_layers)
    assert draw_layers.layers() == [
        ["lionmem.cli"],
        ["lionmem.testing"],
        ["lionmem.integrations", "lionmem.embedders"],
        ["lionmem.adapters"],
        ["lionmem.session"],
        ["lionmem.protocols"],
        ["lionmem._internal"],
        ["lionmem.errors"],
    ]
    committed = draw_layers.DRAWING.read_text(encoding="utf-8")
    assert committed == draw_layers.drawing(), "run scripts/draw_layers.py and commit the drawing"
    for package in ("lionmem.cli", "lionmem.adapters", "lionmem._internal"):
        assert f">{package}<" in committed


NOT_LIONMEM = {"_exit", "_modules_collection", "_t"}
"""Private names the tests reach that are not lionmem's: `os._exit`, griffe's
collection, and a hypothesis label."""


def _private_names_reached(root: Path) -> dict[str, set[str]]:
    """Each private name the tests under `root` reach, with the files reaching it: as
    an attribute of anything but `self` or `cls`, imported from lionmem, or named in
    a string (as monkeypatch and getattr take it)."""
    reached: dict[str, set[str]] = {}
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names: list[str] = []
            if isinstance(node, ast.Attribute):
                if not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
                    names.append(node.attr)
            elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("lionmem"):
                names += [alias.name for alias in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names += re.findall(r"^(_[A-Za-z]\w*)=?$", node.value)
            for name in names:
                if name.startswith("_") and not name.startswith("__") and name not in NOT_LIONMEM:
                    reached.setdefault(name, set()).add(str(path.relative_to(root)))
    return reached


def test_tests_reach_internals_only_through_seams_the_code_documents() -> None:
    """Every private name a test reaches is named in lionmem's source as a seam for
    tests, where it is defined: `Seam for tests: ...`, in a comment or docstring."""
    source = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "src" / "lionmem").rglob("*.py"))
    documented = {
        name
        for listed in re.findall(r"[Ss]eam for tests: (.*?)[.;](?:\s|$)", source, flags=re.DOTALL)
        for name in re.findall(r"`(_[A-Za-z]\w*)`", listed)
    }
    reached = _private_names_reached(ROOT / "tests")
    undocumented = {name: sorted(files) for name, files in reached.items() if name not in documented}
    assert undocumented == {}
    assert documented <= set(reached), "a documented seam no test uses any more"


MOST_LINES = 450
"""The longest a module of lionmem may be, as docs/architecture.md says: past it, a
module holds more than one concept. The two durable stores are the ones near it: each
class is the store's public face, every method documented, whose work lives in the
private modules beside it."""


def test_no_module_is_over_the_line_limit() -> None:
    lengths = {
        str(path.relative_to(ROOT / "src")): len(path.read_text(encoding="utf-8").splitlines())
        for path in (ROOT / "src" / "lionmem").rglob("*.py")
    }
    assert len(lengths) > 60  # the source was found
    assert {path: n for path, n in lengths.items() if n > MOST_LINES} == {}
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    assert f"No module is over {MOST_LINES} lines" in page
