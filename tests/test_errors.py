"""One root for lionmem's own errors, each keeping its builtin base, and the tree the
docs draw is the tree the code defines."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import lionmem
import lionmem.errors as errors
from lionmem.testing import ConformanceFailure

ROOT = Path(__file__).resolve().parent.parent

BASES: dict[type[Exception], type[Exception]] = {
    errors.StoreClosedError: RuntimeError,
    errors.IncompatibleDatabaseError: RuntimeError,
    errors.MissingSchemaError: errors.IncompatibleDatabaseError,
    errors.DatabaseCorruptError: errors.IncompatibleDatabaseError,
    errors.VectorExtensionMissingError: errors.IncompatibleDatabaseError,
    errors.StoreUnavailableError: ConnectionError,
    errors.ImportFileError: ValueError,
    errors.NoEmbedderError: RuntimeError,
    errors.EmbedderMismatchError: ValueError,
    ConformanceFailure: AssertionError,
}


@pytest.mark.parametrize("error", list(BASES), ids=lambda e: e.__name__)
def test_every_error_is_a_lionmem_error_and_keeps_its_builtin_base(error: type[Exception]) -> None:
    assert issubclass(error, lionmem.LionmemError)
    assert issubclass(error, BASES[error])


def test_the_root_is_an_exception_and_the_package_names_it() -> None:
    assert lionmem.LionmemError is errors.LionmemError
    assert errors.LionmemError.__bases__ == (Exception,)
    assert set(errors.__all__) == {"LionmemError", "LionmemWarning"} | {
        e.__name__ for e in BASES if e.__module__ == "lionmem.errors"
    }


def _tree(text: str) -> str:
    found = re.search(r"```text\n(Exception\n.*?)```", text, flags=re.DOTALL)
    assert found is not None, "no tree drawn"
    return found.group(1)


def test_the_docs_page_draws_the_tree_the_docstring_draws() -> None:
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert _tree(page) == _tree(errors.__doc__ or "")


def test_the_tree_names_every_error_under_its_parent() -> None:
    lines = _tree(errors.__doc__ or "").splitlines()[2:]  # below LionmemError
    depth = {
        re.sub(r"\W", "", line.split("...")[0].split(" also")[0]): line.index(next(c for c in line if c.isalpha()))
        for line in lines
    }
    assert set(depth) == {e.__name__ for e in BASES}
    for error in BASES:
        parent = next(base for base in error.__mro__[1:] if base.__name__ in depth or base is lionmem.LionmemError)
        expected = 8 if parent is lionmem.LionmemError else depth[parent.__name__] + 4
        assert depth[error.__name__] == expected, error.__name__
        if BASES[error] is not parent:
            assert any(error.__name__ in line and f"also {BASES[error].__name__}" in line for line in lines)


def _warning_tree(text: str) -> str:
    found = re.search(r"```text\n(UserWarning\n.*?)```", text, flags=re.DOTALL)
    assert found is not None, "no tree of warnings drawn"
    return found.group(1)


def test_every_warning_is_a_lionmem_warning_and_the_docs_draw_them() -> None:
    from lionmem.protocols.forgetting import ErasureWarning

    assert errors.LionmemWarning.__bases__ == (UserWarning,)
    assert ErasureWarning.__bases__ == (errors.LionmemWarning,)
    page = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    assert _warning_tree(page) == _warning_tree(errors.__doc__ or "")
    assert "ErasureWarning" in _warning_tree(page)


def test_every_exception_and_warning_lionmem_defines_has_one_of_the_two_roots() -> None:
    """Imported module by module, every class lionmem defines that can be raised, its
    private ones included (a command's internal signal, the kit's failing embedder),
    is a LionmemError or a LionmemWarning."""
    import importlib
    import inspect
    import pkgutil
    import warnings

    outside: dict[str, type[BaseException]] = {}
    for found in pkgutil.walk_packages(lionmem.__path__, "lionmem."):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # lionmem.testing.profile's
            module = importlib.import_module(found.name)
        for name, value in vars(module).items():
            defined_here = inspect.isclass(value) and value.__module__ == found.name
            if (
                defined_here
                and issubclass(value, BaseException)
                and not issubclass(value, errors.LionmemError | errors.LionmemWarning)
            ):
                outside[f"{found.name}.{name}"] = value
    # The kit's signal that a store hung is no Exception at all, so that hypothesis
    # stops at it instead of shrinking; the kit catches it and reports a failure.
    assert list(outside) == ["lionmem.testing._harness.StoreHung"]
    assert not any(issubclass(signal, Exception) for signal in outside.values())
