"""The lazy top-level surface: what `import lionmem` loads and exports."""

from __future__ import annotations

import compileall
import importlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pydantic
import pytest

import lionmem

LAZY: dict[str, str] = vars(lionmem)["_LAZY"]


def test_every_exported_name_resolves_to_its_defining_object() -> None:
    for name in lionmem.__all__:
        value = getattr(lionmem, name)
        module = importlib.import_module(LAZY[name])
        assert value is getattr(module, name)
        assert value.__name__ == name


def test_all_and_the_lazy_map_name_the_same_objects() -> None:
    assert sorted(lionmem.__all__) == sorted(LAZY) == list(lionmem.__all__)


def test_the_memory_names_are_exported() -> None:
    assert {"MemoryItem", "MemoryQuery", "MemoryStore", "InMemoryStore"} <= set(lionmem.__all__)
    assert {"Element", "Pile", "Progression"} <= set(lionmem.__all__)


def test_unknown_names_raise_attribute_error() -> None:
    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        getattr(lionmem, "Nope")
    assert not hasattr(lionmem, "memory_store")


def test_dir_lists_the_lazy_names_before_they_load() -> None:
    assert set(lionmem.__all__) <= set(dir(lionmem))


def test_the_package_shows_no_public_name_beyond_all_and_its_subpackages() -> None:
    """No helper the package module imports for itself, such as `importlib`."""
    shown = {
        name
        for name in dir(lionmem)
        if not name.startswith("_") and not getattr(getattr(lionmem, name), "__name__", "").startswith("lionmem.")
    }
    assert shown == set(lionmem.__all__)


def _modules_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running `code`."""
    # Without coverage's variables: when it measures child processes, it imports
    # modules of its own (sqlite3 among them) before `code` runs.
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys\nprint('\\n'.join(sys.modules))"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    return set(out.split())


def test_import_lionmem_loads_no_model_module_and_no_pydantic() -> None:
    loaded = _modules_after("import lionmem")
    assert "lionmem" in loaded
    assert not {m for m in loaded if m.startswith(("pydantic", "lionmem."))}


def test_first_use_imports_what_the_name_needs() -> None:
    loaded = _modules_after("import lionmem\nlionmem.Progression")
    assert "lionmem.protocols.generic.progression" in loaded
    assert "pydantic" not in loaded
    loaded = _modules_after("import lionmem\nlionmem.MemoryItem")
    assert {"pydantic", "lionmem.protocols.memory"} <= loaded


def test_the_whole_core_imports_no_adapter_and_no_database_driver() -> None:
    loaded = _modules_after("import lionmem\nlionmem.MemoryItem\nlionmem.Session\nlionmem.Branch")
    assert {"lionmem.session.session", "lionmem.session.branch"} <= loaded
    assert not {m for m in loaded if m.startswith("lionmem.adapters")}
    assert not {"sqlite3", "psycopg", "psycopg_pool"} & loaded


def test_lionagi_loads_only_for_its_integration() -> None:
    # Importing lionagi takes most of a second; only the bridge to it may pay that.
    every_name = "import lionmem\nfor name in lionmem.__all__: getattr(lionmem, name)"
    for code in (
        every_name,
        "import lionmem.integrations, lionmem.testing, lionmem.testing.kit, lionmem.cli",
        "import lionmem.adapters.sqlite, lionmem.adapters.postgres",
    ):
        assert not {m for m in _modules_after(code) if m.split(".")[0] == "lionagi"}, code
    assert "lionagi" in _modules_after("import lionmem.integrations.lionagi")


def test_langgraph_loads_only_for_its_integration() -> None:
    every_name = "import lionmem\nfor name in lionmem.__all__: getattr(lionmem, name)"
    for code in (
        every_name,
        "import lionmem.integrations, lionmem.integrations.lionagi, lionmem.testing.kit, lionmem.cli",
        "import lionmem.adapters.synchronous, lionmem.adapters.sqlite, lionmem.adapters.postgres",
    ):
        assert not {m for m in _modules_after(code) if m.split(".")[0] in {"langgraph", "langchain_core"}}, code
    assert "langgraph.store.base" in _modules_after("import lionmem.integrations.langgraph")


def test_without_langgraph_its_integration_names_the_extra() -> None:
    hidden = "import sys\nsys.modules['langgraph'] = None\nimport lionmem.integrations.langgraph\n"
    done = subprocess.run([sys.executable, "-c", hidden], capture_output=True, text=True)
    assert done.returncode != 0
    assert (
        "ImportError: lionmem.integrations.langgraph needs LangGraph: pip install 'lionmem[langgraph]'" in done.stderr
    )


def test_without_lionagi_its_integration_names_the_extra() -> None:
    """A user without the extra, seen as Python sees a package that is not there."""
    hidden = "import sys\nsys.modules['lionagi'] = None\n"
    for code, message in (
        ("import lionmem.integrations.lionagi", "needs lionagi: pip install 'lionmem[lionagi]'"),
        (
            "from lionmem import InMemoryStore\nfrom lionmem.testing import ConformanceKit, REFERENCE_PROFILE\n"
            "ConformanceKit(InMemoryStore, REFERENCE_PROFILE, lionagi=True)",
            "needs lionagi: pip install 'lionmem[lionagi]'",
        ),
        (
            "from lionmem.cli import main\nmain(['check', 'lionmem:InMemoryStore', '--lionagi'])",
            "error: lionmem.integrations.lionagi needs lionagi",
        ),
    ):
        done = subprocess.run([sys.executable, "-c", hidden + code], capture_output=True, text=True)
        assert done.returncode != 0 and message in done.stderr, (code, done.stderr)


@pytest.mark.parametrize("driver", ["psycopg", "psycopg_pool"])
def test_without_the_postgres_extra_its_store_names_the_extra(driver: str) -> None:
    """As stores.md's PostgreSQL block is run without the extra: once a bare
    `No module named 'psycopg'`."""
    code = f"import sys\nsys.modules[{driver!r}] = None\nfrom lionmem.adapters.postgres import PostgresMemoryStore\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f'ModuleNotFoundError: the PostgreSQL store needs {driver}: pip install "lionmem[postgres]"'
    )


def _lionmem_models() -> list[type[pydantic.BaseModel]]:
    for name in lionmem.__all__:
        getattr(lionmem, name)
    found: list[type[pydantic.BaseModel]] = []
    pending = [pydantic.BaseModel]
    while pending:
        for model in pending.pop().__subclasses__():
            pending.append(model)
            if model.__module__.startswith("lionmem."):
                found.append(model)
    return found


def test_no_default_factory_has_a_signature_read_from_text() -> None:
    # pydantic reads each default factory's signature as it builds a model. A builtin
    # such as `list` has only a text signature, and parsing it compiles tokenize's
    # regular expressions: a quarter of the time importing the models took.
    factories = {
        f"{model.__name__}.{field}": info.default_factory
        for model in _lionmem_models()
        for field, info in model.model_fields.items()
        if info.default_factory is not None
    }
    assert {"MemoryItem.tags", "Element.metadata", "Session.branches"} <= set(factories)
    parsed = [name for name, factory in factories.items() if getattr(factory, "__text_signature__", None)]
    assert parsed == []


_MODEL_FACTS = """\
import json, lionmem, pydantic
facts = {}
for name in lionmem.__all__:
    model = getattr(lionmem, name)
    if isinstance(model, type) and issubclass(model, pydantic.BaseModel):
        facts[name] = {f: info.description for f, info in model.model_fields.items()}
        facts[name + " schema"] = model.model_json_schema()
print(json.dumps(facts, sort_keys=True))
"""


def _model_facts(pythonpath: Path) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_")}
    env["PYTHONPATH"] = str(pythonpath)
    out = subprocess.run(
        [sys.executable, "-c", _MODEL_FACTS], check=True, capture_output=True, text=True, env=env
    ).stdout
    facts: dict[str, object] = json.loads(out)
    return facts


def test_the_models_are_the_same_where_only_bytecode_ships(tmp_path: Path) -> None:
    # Nothing in a model may come from reading lionmem's source at import (as
    # pydantic's use_attribute_docstrings does): that nearly tripled the core's import
    # time, and it silently changes the models where no .py file is installed.
    installed = Path(lionmem.__file__).parent
    bytecode = tmp_path / "lionmem"
    shutil.copytree(installed, bytecode, ignore=shutil.ignore_patterns("__pycache__"))
    assert compileall.compile_dir(bytecode, legacy=True, quiet=1)
    for source in bytecode.rglob("*.py"):
        source.unlink()
    facts = _model_facts(installed.parent)
    assert set(facts) >= {"MemoryItem", "MemoryItem schema", "Branch", "Session"}
    assert _model_facts(tmp_path) == facts


def test_recall_loads_numpy_and_the_model_only_when_a_store_is_given_an_embedder() -> None:
    every_name = "import lionmem\nfor name in lionmem.__all__: getattr(lionmem, name)"
    for code in (
        every_name,
        "import lionmem.embedders, lionmem.protocols.recall, lionmem.testing.kit\nlionmem.InMemoryStore()",
        "import lionmem.embedders\nlionmem.embedders.WordLlamaEmbedder()",
    ):
        loaded = _modules_after(code)
        assert not {m for m in loaded if m.split(".")[0] in {"numpy", "wordllama", "tokenizers"}}, code
    assert "numpy" in _modules_after(
        "import lionmem, lionmem.embedders\nlionmem.InMemoryStore(embedder=lionmem.embedders.HashingEmbedder())"
    )
