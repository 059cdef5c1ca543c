"""The `lionmem` command line: stores named by URL, a demo, and the conformance check.

`put`, `get` and `search` work on any store a URL names (see
[`open_store`][lionmem.adapters.urls.open_store] and [ADR-0098][adr-0098]) and print
items as JSON lines; `check` runs the kit of [ADR-0093][adr-0093] against a store
factory or URL template. Exit status: 0 done, 1 nothing found or a store error, 2 bad
usage.
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import importlib
import io
import json
import math
import os
import sqlite3
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from pathlib import Path
from typing import Any, NoReturn, cast
from uuid import UUID, uuid5

from lionmem.adapters._encoding import MAX_NESTING, dumps
from lionmem.adapters.urls import SCHEMES, open_store
from lionmem.protocols._arguments import kind_of
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore
from lionmem.testing import (
    CHECKS,
    REFERENCE_PROFILE,
    CheckResult,
    ConformanceKit,
    FidelityProfile,
    StoreFactory,
)

__all__ = ["main"]

_DEMO_IDS = UUID("5f0c3d9e-4b1a-4e8f-9a2b-6c7d8e9f0a1b")

_DEMO_NOTES: list[tuple[str, list[str], dict[str, str]]] = [
    ("Paris is the capital of France", ["geo", "europe"], {"source": "atlas"}),
    ("The Seine flows through Paris", ["geo"], {"source": "atlas"}),
    ("Water boils at 100 °C at sea level", ["science"], {"source": "textbook"}),
    ("Remember to water the plants", ["todo"], {}),
]


async def _demo(store: MemoryStore) -> int:
    # Ids named by the notes: run again on a durable store, the demo replaces its own
    # notes in place rather than adding four more each time.
    ids = [
        await store.store(
            MemoryItem(id=uuid5(_DEMO_IDS, content), content=content, tags=tags, metadata=metadata)
        )
        for content, tags, metadata in _DEMO_NOTES
    ]
    print(f"stored {len(ids)} items")
    first = await store.retrieve(ids[0])
    print(f"retrieve {ids[0]} -> {first.content if first else None!r}")
    for query in (
        MemoryQuery(text="paris"),
        MemoryQuery(tags=["science", "todo"]),
        MemoryQuery(text="water", filters={"source": "textbook"}),
        MemoryQuery(limit=-3),
    ):
        found = await store.search(query)
        shown = query.model_dump(exclude_defaults=True) or "everything"
        print(f"search {shown} -> {[item.content for item in found]}")
    return 0


def _load(reference: str) -> Any:
    """Import `module:attribute`, raising `ValueError` with what was wrong."""
    module_name, sep, attribute = reference.partition(":")
    if not sep or not module_name or not attribute:
        raise ValueError(f"{reference!r} is not of the form module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ValueError(f"cannot import {module_name!r}: {exc}") from None
    try:
        return getattr(module, attribute)
    except AttributeError:
        raise ValueError(f"module {module_name!r} has no attribute {attribute!r}") from None


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


def _declared_profile(url: str) -> FidelityProfile:
    """The profile the store a URL names declares, which its check is against unless
    `--profile` says otherwise: against the reference, a durable store's declared
    differences would fail."""
    scheme = url.partition(":")[0]
    if scheme == "sqlite":
        from lionmem.adapters.sqlite import SQLITE_PROFILE

        return SQLITE_PROFILE
    if scheme in ("postgresql", "postgres"):
        from lionmem.adapters.postgres import POSTGRES_PROFILE

        return POSTGRES_PROFILE
    return REFERENCE_PROFILE  # memory:, an InMemoryStore


def _check(
    factory_ref: str | None,
    url: str | None,
    profile_ref: str | None,
    names: list[str] | None,
    timeout: float,
) -> int:
    if (factory_ref is None) == (url is None):
        raise ValueError("give either FACTORY or --url")
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
        factory = _load(factory_ref)
        if not callable(factory):
            raise ValueError(f"{factory_ref} is not callable")
    if profile_ref is not None:
        profile = _load(profile_ref)
    elif url is not None:
        profile = _declared_profile(url)
    else:
        profile = REFERENCE_PROFILE
    if not isinstance(profile, FidelityProfile):
        raise ValueError(f"{profile_ref} is {kind_of(profile)}, not a FidelityProfile")
    kit = ConformanceKit(cast("StoreFactory", factory), profile, timeout=timeout)
    selected = names or list(CHECKS)
    # Each row prints as its check ends, so a slow or stuck check shows where it is;
    # the widths come from what is known before any runs (observed is cut to declared's).
    declared = ("declared", *(kit.declared(name) for name in selected))
    widths = [max(len(name) for name in ("check", *selected)), min(48, max(map(len, declared)))]
    widths.append(widths[1])

    def row(cells: tuple[str, str, str], status: str) -> None:
        padded = [cell[:width].ljust(width) for cell, width in zip(cells, widths, strict=True)]
        print("  ".join([*padded, status]).rstrip(), flush=True)

    results: list[CheckResult] = []
    for name in selected:
        try:
            result = kit.check(name)
        except Exception as exc:  # the factory's own code, outside any check
            print(
                f"python -m lionmem: error: no store to check: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            return 1
        if not results:
            row(("check", "declared", "observed"), "")
        row((name, result.declared, result.observed), "ok" if result.passed else "MISMATCH")
        results.append(result)
    failed = [r for r in results if not r.passed]
    for result in failed:
        print(f"\n{result.dimension}: declared {result.declared}, observed {result.observed}")
        print("\n".join(f"    {line}" for line in result.reproduction.splitlines()))
    print(f"\n{len(results) - len(failed)} passed, {len(failed)} failed")
    return 1 if failed else 0


def _not_json(constant: str) -> NoReturn:
    raise ValueError(f"{constant} is not a JSON value")


def _finite(number: str) -> float:
    value = float(number)
    if math.isinf(value):
        raise ValueError(f"{number} is beyond the range of a float")
    return value


def _json(text: str, what: str) -> Any:
    """Read a JSON value typed on the command line; a durable store's rules on depth
    apply to every store, so that what is accepted does not depend on the Python
    version (from 3.12 the parser reads deeper than the recursion limit)."""
    too_deep = f"{what} nests lists and objects more than {MAX_NESTING} levels deep"
    try:
        value = json.loads(text, parse_constant=_not_json, parse_float=_finite)
    except ValueError as exc:
        raise ValueError(f"{what} is not JSON: {exc}") from None
    except RecursionError:
        raise ValueError(too_deep) from None
    if _nesting(value) > MAX_NESTING:
        raise ValueError(too_deep)
    return value


def _nesting(value: object) -> int:
    """How many lists and objects deep a parsed JSON value is, without recursion."""
    depth = 0
    level: list[object] = [value]
    while containers := [
        cast("list[object] | dict[str, object]", v) for v in level if isinstance(v, (list, dict))
    ]:
        depth += 1
        level = [child for c in containers for child in (c.values() if isinstance(c, dict) else c)]
    return depth


def _pairs(given: list[str] | None, option: str) -> dict[str, Any]:
    """`KEY=TEXT` gives a string, `KEY:=JSON` any JSON value; each key once."""
    pairs: dict[str, Any] = {}
    for pair in given or ():
        key, equals, value = pair.partition("=")
        is_json = key.endswith(":")
        key = key.removesuffix(":")
        if not equals or not key:
            raise ValueError(f"{option} {pair!r} is not KEY=TEXT or KEY:=JSON")
        if key in pairs:
            raise ValueError(f"{option} gives the key {key!r} twice")
        pairs[key] = _json(value, f"{option} {key!r}") if is_json else value
    return pairs


def _item_id(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise ValueError(f"{text!r} is not a UUID") from None


# JSON leaves these unescaped, but many line readers (Python's `splitlines` among them)
# end a line at each; escaped, one item is always one line.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


_ascii_dumps = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":")).encode


def _stdout_takes_any_text() -> bool:
    """Whether stdout encodes every character: UTF-8, or a stream of str with no
    encoding at all. A pipe on Windows, or PYTHONIOENCODING=latin-1, does not."""
    encoding = getattr(sys.stdout, "encoding", None)
    return encoding is None or codecs.lookup(encoding).name == "utf-8"


def _print_items(items: list[MemoryItem]) -> None:
    # Not model_dump_json: pydantic writes at most 255 levels of content, and the
    # durable stores keep up to MAX_NESTING. Where stdout cannot take every character,
    # JSON's own escapes keep each line valid JSON of the same value.
    encode = dumps if _stdout_takes_any_text() else _ascii_dumps
    for item in items:
        fields = {name: getattr(item, name) for name in MemoryItem.model_fields}
        fields["id"] = str(item.id)
        print(encode(fields).translate(_LINE_BREAKS))


def _command(args: argparse.Namespace) -> Callable[[MemoryStore], Awaitable[int]]:
    """What to do with the opened store; every argument is checked here, before."""
    if args.command == "demo":
        return _demo
    if args.command == "put":
        fields: dict[str, Any] = {
            "content": _json(args.content, "CONTENT") if args.json else args.content,
            "tags": args.tag or [],
            "metadata": _pairs(args.meta, "--meta"),
        }
        if args.id is not None:
            fields["id"] = _item_id(args.id)
        item = MemoryItem(**fields)

        async def put(store: MemoryStore) -> int:
            print(await store.store(item))
            return 0

        return put
    if args.command == "get":
        item_id = _item_id(args.id)

        async def get(store: MemoryStore) -> int:
            found = await store.retrieve(item_id)
            if found is None:
                print(f"no item {item_id}", file=sys.stderr)
                await _note_if_empty(store)
                return 1
            _print_items([found])
            return 0

        return get
    query = MemoryQuery(
        text=args.text, tags=args.tag, filters=_pairs(args.filter, "--filter") or None, limit=args.limit
    )

    async def search(store: MemoryStore) -> int:
        found = await store.search(query)
        _print_items(found)
        if not found:
            await _note_if_empty(store)
        return 0

    return search


async def _note_if_empty(store: MemoryStore) -> None:
    """Say on stderr when a read found nothing because the store holds nothing: a
    mistyped PostgreSQL namespace is not an error, only an empty namespace."""
    if not await store.search(MemoryQuery(limit=1)):
        print("python -m lionmem: note: the store holds no items; is its name right?", file=sys.stderr)


async def _run(
    opening: AbstractAsyncContextManager[MemoryStore], command: Callable[[MemoryStore], Awaitable[int]]
) -> int:
    async with opening as store:
        return await command(store)


_HELP = """\
Read and write any lionmem store a URL names, run a demo, or check an adapter.
Items print as JSON lines. In --meta and --filter, KEY=TEXT is a string and
KEY:=JSON any JSON value. Exit status: 0 done, 1 no such item or a store error,
2 bad usage."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m lionmem", description=_HELP, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    url_help = "the store: memory:, sqlite:///PATH or postgresql://...?namespace=NAME"
    demo = commands.add_parser("demo", help="store, retrieve and search a few notes")
    demo.add_argument("url", nargs="?", default="memory:", help=url_help + " (default: memory:)")
    put = commands.add_parser("put", help="store one item and print its id")
    put.add_argument("url", help=url_help)
    put.add_argument("content", help="the content, a string (or JSON with --json)")
    put.add_argument("--json", action="store_true", help="read CONTENT as a JSON value")
    put.add_argument("--id", help="the item's id, to replace an item in place (default: new)")
    put.add_argument("--tag", action="append", help="a tag (repeatable)")
    put.add_argument("--meta", action="append", metavar="KEY=TEXT|KEY:=JSON", help="metadata (repeatable)")
    get = commands.add_parser("get", help="print the item with an id as JSON")
    get.add_argument("url", help=url_help)
    get.add_argument("id", help="the item's UUID")
    search = commands.add_parser("search", help="print the matching items as JSON lines")
    search.add_argument("url", help=url_help)
    search.add_argument("--text", help="a substring of the content, any case")
    search.add_argument("--tag", action="append", help="any one of these tags (repeatable)")
    search.add_argument(
        "--filter", action="append", metavar="KEY=TEXT|KEY:=JSON", help="metadata[KEY] equals (repeatable)"
    )
    search.add_argument("--limit", type=int, default=20, help="results[:LIMIT] (default: 20)")
    check = commands.add_parser("check", help="check a store against its fidelity profile")
    check.add_argument("factory", nargs="?", help="module:callable that builds a fresh store")
    check.add_argument(
        "--url",
        help="instead of FACTORY, a store URL holding {workspace} or {name} "
        "(e.g. sqlite:///{workspace}/kit.db), opened fresh for each check",
    )
    check.add_argument(
        "--profile",
        help="module:NAME of its FidelityProfile (default: the reference, or with --url the "
        "profile its store declares)",
    )
    check.add_argument(
        "--only", action="append", choices=CHECKS, metavar="CHECK",
        help=f"run only this check (repeatable): {', '.join(CHECKS)}",
    )
    check.add_argument(
        "--timeout", type=float, default=30.0, metavar="SECONDS",
        help="fail a check whose store takes longer to open, close or answer one call (default: 30)",
    )
    for command in (demo, put, get, search, check):
        # Bad usage found after parsing is reported with the command's own usage, as
        # argparse reports what it finds itself.
        command.set_defaults(usage=command)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status (see [ADR-0098][adr-0098])."""
    parser = _parser()
    args = parser.parse_args(argv)
    usage: argparse.ArgumentParser = args.usage
    if not _stdout_takes_any_text():
        # The demo's and the check's text then shows what stdout cannot take as
        # escapes, as stderr does, instead of failing on it.
        cast(io.TextIOWrapper, sys.stdout).reconfigure(errors="backslashreplace")
    if args.command == "check":
        try:
            return _check(args.factory, args.url, args.profile, args.only, args.timeout)
        except ValueError as exc:
            usage.error(str(exc))
    try:
        command = _command(args)
        # Checks the URL and opens nothing yet; reading never creates a database file.
        opening = open_store(args.url, create=args.command in ("put", "demo"))
    except (ValueError, ModuleNotFoundError) as exc:
        usage.error(str(exc))
    try:
        return asyncio.run(_run(opening, command))
    except BrokenPipeError:
        # Whoever read the output stopped (`| head`): end quietly, and point stdout at
        # nothing so that Python's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except _store_errors() as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1


def _store_errors() -> tuple[type[Exception], ...]:
    """What a store may raise for a bad file, a server's refusal or an outage: status
    1, not a traceback. psycopg's errors count once a URL has made it load."""
    errors: tuple[type[Exception], ...] = (OSError, RuntimeError, TypeError, ValueError, sqlite3.Error)
    psycopg = sys.modules.get("psycopg")
    return errors if psycopg is None else (*errors, psycopg.Error)
