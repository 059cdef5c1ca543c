"""Every public name keeps the import paths it was documented under before the
packages were layered: each old path gives the very object the new one does."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

MOVED: list[tuple[str, str, str]] = [
    *(
        (name, "lionmem.testing.profile", "lionmem.protocols.profile")
        for name in (
            "REFERENCE_PROFILE",
            "ContentKind",
            "Durability",
            "FidelityProfile",
            "FilterEquality",
            "LimitPolicy",
            "OnExistingId",
            "ResultOrder",
            "ReturnedObjects",
            "RoundTrip",
            "TagMatch",
            "TextMatch",
            "Visibility",
        )
    ),
    ("FidelityProfile", "lionmem.testing", "lionmem.protocols.profile"),
    ("APPLICATION_ID", "lionmem.adapters.sqlite", "lionmem.adapters.sqlite.schema"),
    ("MIGRATIONS", "lionmem.adapters.sqlite", "lionmem.adapters.sqlite.schema"),
    ("SCHEMA_VERSION", "lionmem.adapters.sqlite", "lionmem.adapters.sqlite.schema"),
    ("SCHEMA_VERSION", "lionmem.adapters.postgres", "lionmem.adapters.postgres.schema"),
    ("StoreUnavailableError", "lionmem.adapters.postgres", "lionmem.errors"),
    *(
        (name, "lionmem.adapters.errors", "lionmem.errors")
        for name in ("IncompatibleDatabaseError", "MissingSchemaError", "StoreClosedError", "StoreUnavailableError")
    ),
    ("StoreStats", "lionmem.adapters.stats", "lionmem.protocols.stats"),
    ("MAX_TIMEOUT", "lionmem.adapters.lifecycle", "lionmem._internal.timeouts"),
    ("milliseconds", "lionmem.adapters.lifecycle", "lionmem._internal.timeouts"),
    ("main", "lionmem.cli", "lionmem.cli"),
    ("InMemoryStore", "lionmem.protocols.memory", "lionmem.protocols.in_memory"),
]


@pytest.mark.parametrize(("name", "old", "new"), MOVED, ids=[f"{old}.{name}" for name, old, new in MOVED])
def test_a_moved_name_is_the_same_object_at_its_old_path(name: str, old: str, new: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the deprecated path warns; tested below
        old_module = importlib.import_module(old)
    new_module = importlib.import_module(new)
    assert getattr(old_module, name) is getattr(new_module, name)
    assert name in old_module.__all__


def test_the_memory_module_names_only_what_it_hands_on() -> None:
    """The contract's module hands on the reference store it once defined, and no
    other name: a misspelt one is an AttributeError naming the module."""
    from lionmem.protocols import memory

    with pytest.raises(AttributeError, match="module 'lionmem.protocols.memory' has no attribute 'InMemoryStor'"):
        memory.InMemoryStor  # type: ignore[attr-defined]  # noqa: B018


def test_both_durable_stores_declare_the_one_durable_profile() -> None:
    from lionmem.adapters._profiles import DURABLE_PROFILE
    from lionmem.adapters.postgres import POSTGRES_PROFILE
    from lionmem.adapters.sqlite import SQLITE_PROFILE

    assert SQLITE_PROFILE is POSTGRES_PROFILE is DURABLE_PROFILE


def test_the_profile_alias_module_warns_that_it_is_deprecated() -> None:
    # In a fresh interpreter: the warning comes once, at the first import.
    code = (
        "import warnings; warnings.simplefilter('error')\n"
        "try:\n    import lionmem.testing.profile\n"
        "except DeprecationWarning as w:\n    print(w)\n"
        "import lionmem.protocols.types  # the record's own re-export path: no warning"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == (
        "lionmem.testing.profile is deprecated; import the profile from lionmem.testing or lionmem.protocols.profile\n"
    )
