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
    assert set(errors.__all__) == {"LionmemError"} | {e.__name__ for e in BASES if e.__module__ == "lionmem.errors"}


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
