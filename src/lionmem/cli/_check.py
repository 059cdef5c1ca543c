"""`check`: the conformance kit against a store factory or a URL template, printed
as a table that grows as each check ends.

Governed by [ADR-0093][adr-0093] and [ADR-0098][adr-0098].
"""

from __future__ import annotations

import sys
import tempfile
import textwrap
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, cast

from lionmem._internal.arguments import kind_of
from lionmem.adapters.urls import SCHEMES, open_store, profile_of
from lionmem.cli._input import load_reference
from lionmem.cli._parser import prog
from lionmem.protocols.memory import MemoryStore
from lionmem.protocols.profile import REFERENCE_PROFILE, FidelityProfile
from lionmem.testing import CHECKS, CheckResult, ConformanceKit, LionagiStoreFactory, StoreFactory

_PLACES = ("{workspace}", "{name}")


def _url_factory(template: str) -> Callable[[Path], AbstractAsyncContextManager[MemoryStore]]:
    """A store factory from a URL template: `{workspace}` becomes the check's fresh
    directory and `{name}` its name, so that every check gets a store of its own."""
    if template != "memory:" and not any(place in template for place in _PLACES):
        raise ValueError("--url must hold {workspace} or {name}, so that each check gets a fresh store")

    def url_for(workspace: Path) -> str:
        try:
            return template.format(workspace=workspace, name=workspace.name)
        except (KeyError, IndexError, ValueError):
            raise ValueError("--url may hold only the fields {workspace} and {name}") from None

    open_store(url_for(Path(tempfile.gettempdir()) / "lionmem-kit-example"))  # check it now
    return lambda workspace: open_store(url_for(workspace))


_WIDEST = 48
"""The most characters a line of the declared or observed column takes."""

_NARROWEST = 32
"""The fewest characters a line of the observed column may take."""


def check(
    factory_ref: str | None,
    url: str | None,
    profile_ref: str | None,
    names: list[str] | None,
    timeout: float,
    lionagi: bool = False,
) -> int:
    if (factory_ref is None) == (url is None):
        raise ValueError("give either FACTORY or --url")
    if lionagi and url is not None:
        raise ValueError("--lionagi checks a FACTORY's store; a store a URL names takes lionmem's types")
    if url is not None:
        factory: Any = _url_factory(url)
    else:
        assert factory_ref is not None  # one of the two, checked above
        scheme, _, rest = factory_ref.partition(":")
        if scheme in SCHEMES and not rest.isidentifier():  # `memory:make` may be a module
            raise ValueError(
                f"{factory_ref!r} is a store URL: check takes one as --url, holding {{workspace}}"
                " or {name} so that each check gets a fresh store"
            )
        factory = load_reference(factory_ref)
        if not callable(factory):
            raise ValueError(f"{factory_ref} is not callable")
    if profile_ref is not None:
        profile = load_reference(profile_ref)
    elif url is not None:
        # The store's own declaration: against the reference, a durable store's
        # declared differences would fail.
        profile = profile_of(url)
    else:
        profile = REFERENCE_PROFILE
    if not isinstance(profile, FidelityProfile):
        raise ValueError(f"{profile_ref} is {kind_of(profile)}, not a FidelityProfile")
    if lionagi:
        kit = ConformanceKit(cast("LionagiStoreFactory", factory), profile, timeout=timeout, lionagi=True)
    else:
        kit = ConformanceKit(cast("StoreFactory", factory), profile, timeout=timeout)
    selected = names or list(CHECKS)
    # Each row prints as its check ends, so a slow or stuck check shows where it is;
    # the widths come from what is known before any runs. An observation is as long as
    # a store makes it: its column is at least _NARROWEST wide, however short the
    # declarations are.
    declared = ("declared", *(kit.declared(name) for name in selected))
    widths = [max(len(name) for name in ("check", *selected)), min(_WIDEST, max(map(len, declared)))]
    widths.append(max(widths[1], _NARROWEST))

    def row(cells: tuple[str, str, str], status: str) -> None:
        # A long cell goes on over more lines, broken between words; the status
        # stays on the row's first line.
        wrapped = [textwrap.wrap(cell, width) or [""] for cell, width in zip(cells, widths, strict=True)]
        for n in range(max(map(len, wrapped))):
            parts = [lines[n] if n < len(lines) else "" for lines in wrapped]
            padded = [part.ljust(width) for part, width in zip(parts, widths, strict=True)]
            print("  ".join([*padded, status if n == 0 else ""]).rstrip(), flush=True)

    results: list[CheckResult] = []
    for name in selected:
        try:
            result = kit.check(name)
        except Exception as exc:  # the factory's own code, outside any check
            print(
                f"{prog()}: error: no store to check: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            return 1
        if not results:
            row(("check", "declared", "observed"), "")
        row((name, result.declared, result.observed), "ok" if result.passed else "MISMATCH")
        results.append(result)
    failed = [r for r in results if not r.passed]
    for result in failed:
        print(f"\n{result}")
    print(f"\n{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0
