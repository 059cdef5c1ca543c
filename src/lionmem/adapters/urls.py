"""Naming a store by URL, as the command line and configuration files do.

| URL | Store |
| --- | --- |
| `memory:` | a new `InMemoryStore`, gone when the process ends |
| `sqlite:///notes.db`, `sqlite:////var/lib/notes.db` | `SQLiteMemoryStore` on a relative or absolute path, namespace `default` |
| `sqlite:///notes.db?namespace=ana` | the same file's namespace `ana` ([ADR-0105][adr-0105-d1]) |
| `postgresql://user:pw@host/db?namespace=notes` | `PostgresMemoryStore` bound to that namespace |

A SQLite URL takes the `synchronous` (`NORMAL` or `FULL`), `busy_timeout`
(seconds) and `namespace` options as query parameters; a PostgreSQL URL (also `postgres://`) needs
`namespace`, takes `timeout` and `statement_timeout` (seconds) and passes its other
parameters to libpq. Either takes `ttl`, the seconds each item it stores lasts
([ADR-0105][adr-0105-d2]). Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Final
from urllib.parse import parse_qsl, quote, unquote, urlencode, urlsplit

from lionmem._internal.arguments import require_type
from lionmem._internal.tracebacks import without_locals_on_refusal
from lionmem.adapters._codec import encode_item
from lionmem.adapters._profiles import DURABLE_PROFILE
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem
from lionmem.protocols.profile import REFERENCE_PROFILE, FidelityProfile
from lionmem.protocols.recall import Embedder
from lionmem.protocols.rules import check_matchable

__all__ = ["SCHEMES", "item_check", "open_store", "profile_of", "rules_for", "sqlite_file"]

SCHEMES: Final = ("memory", "sqlite", "postgresql", "postgres")
"""The URL schemes `open_store` knows."""

_SQLITE_OPTIONS = frozenset({"synchronous", "busy_timeout", "namespace", "ttl"})


@without_locals_on_refusal
def open_store(
    url: str, *, create: bool = True, embedder: Embedder | None = None, reembed: bool = False
) -> contextlib.AbstractAsyncContextManager[ForgettingStore]:
    """The store `url` names, to open with `async with`, which also closes it.

    With an `embedder`, the store can also recall by meaning ([ADR-0102][adr-0102]);
    PostgreSQL needs pgvector for that ([ADR-0103][adr-0103]). With `reembed`, a
    durable store whose vectors another embedder made makes every vector again with
    this one, as its `open` does.

    The URL is checked before anything is opened; no error message repeats it, so a
    password in it stays out of logs. With `create=False`, a SQLite file that does
    not exist or holds no lionmem schema, or a PostgreSQL database without lionmem's
    schema, is an error rather than a new database. See [ADR-0098][adr-0098].

    Examples:
        ```python
        import tempfile
        from pathlib import Path

        from lionmem import MemoryItem
        from lionmem.adapters.urls import open_store

        url = f"sqlite:///{Path(tempfile.mkdtemp()) / 'notes.db'}"
        async with open_store(url) as store:
            item = MemoryItem(content="kept")
            await store.store(item)
        async with open_store(url) as store:
            assert (await store.retrieve(item.id)).content == "kept"
        ```

    Raises:
        TypeError: `url` is not a str, or `create` or `reembed` is not a bool.
        ValueError: an unknown scheme, a URL without what its store needs, an
            unknown or malformed option, or `reembed` with `memory:`.
        ModuleNotFoundError: a PostgreSQL URL without the `postgres` extra installed.
        FileNotFoundError: on entering, with `create=False`, a SQLite file that does
            not exist.
        MissingSchemaError: on entering, with `create=False`, an empty SQLite file
            or a PostgreSQL database without lionmem's schema.
    """
    require_type(create, "create", bool)
    require_type(reembed, "reembed", bool)
    scheme = _scheme(url)
    if scheme == "memory":
        if url != "memory:":
            raise ValueError("a memory: URL takes nothing after the colon")
        if reembed:
            raise ValueError("reembed makes a durable store's vectors again; a new memory: store holds none")
        from lionmem.protocols.in_memory import InMemoryStore

        store: ForgettingStore = InMemoryStore(embedder=embedder) if embedder is not None else InMemoryStore()
        return contextlib.nullcontext(store)
    if scheme == "sqlite":
        return _sqlite(url, create, embedder, reembed)
    return _postgres(url, create, embedder, reembed)


def profile_of(url: str) -> FidelityProfile:
    """The fidelity profile the store `url` names declares, without opening it or
    importing its adapter: the reference's for `memory:`, the durable stores' one
    profile for SQLite and PostgreSQL ([ADR-0093][adr-0093]).

    Raises:
        TypeError: `url` is not a str.
        ValueError: an unknown scheme.
    """
    return REFERENCE_PROFILE if _scheme(url) == "memory" else DURABLE_PROFILE


def item_check(url: str) -> Callable[[MemoryItem], object]:
    """What the store `url` names refuses at `store`, without opening it: a function
    that raises the `TypeError` or `ValueError` that store's `store` would raise for
    an item, naming the rule, and returns otherwise. `memory:` refuses content whose
    `str()` raises; SQLite refuses what is not a JSON value within the nesting and size
    limits; PostgreSQL refuses that and U+0000 as well, which its text cannot hold
    ([ADR-0096][adr-0096], [ADR-0097][adr-0097]).

    Raises:
        TypeError: `url` is not a str.
        ValueError: an unknown scheme.
    """
    return rules_for(_scheme(url))


def rules_for(scheme: str) -> Callable[[MemoryItem], object]:
    """What the stores of `scheme`, one of `SCHEMES`, refuse at `store`, as
    [`item_check`][lionmem.adapters.urls.item_check] describes it."""
    if scheme == "memory":
        return check_matchable
    return partial(encode_item, allow_nul=scheme == "sqlite")


_A_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]{0,30}")


def _scheme(url: str) -> str:
    """The scheme of `url`, one of `SCHEMES`.

    Raises:
        ValueError: any other; the message shows the scheme given, if it reads as one,
            and nothing else of the string, which may hold a password.
    """
    require_type(url, "url", str)
    scheme, colon, _ = url.partition(":")
    if colon and scheme in SCHEMES:
        return scheme
    known = ", ".join(f"{name}:" for name in SCHEMES)
    if colon and _A_SCHEME.fullmatch(scheme):
        got = repr(f"{scheme}:")
    elif "=" in url:
        got = "what reads as a libpq key=value string; write it as postgresql://HOST/DB?namespace=NAME"
    else:
        got = "no scheme"
    raise ValueError(
        f"a store URL starts with one of {known}; got {got} (the rest is not shown: it may hold a password)"
    )


def sqlite_file(url: str) -> Path | None:
    """The database file a `sqlite:///` URL names, as written (relative to the current
    directory or absolute); `None` for a URL of another scheme. The URL's options are
    not checked here; `open_store` checks them."""
    if not url.startswith("sqlite:///"):
        return None
    return Path(unquote(url[len("sqlite:///") :].partition("?")[0].partition("#")[0]))


def _sqlite(
    url: str, create: bool, embedder: Embedder | None, reembed: bool
) -> contextlib.AbstractAsyncContextManager[ForgettingStore]:
    parts = urlsplit(url)
    if not url.startswith("sqlite:///"):
        raise ValueError("a sqlite URL names a local file: sqlite:///relative.db or sqlite:////absolute.db")
    if parts.fragment:
        # Most often a file name's own #, which would otherwise be cut off unseen.
        raise ValueError("a sqlite URL takes no #fragment; write a # in the path as %23")
    path = unquote(url[len("sqlite:///") :].partition("?")[0])
    if not path:
        raise ValueError("the sqlite URL names no file")
    options = _options(parts.query, "sqlite")
    unknown = sorted(set(options) - _SQLITE_OPTIONS)
    if unknown:
        raise ValueError(f"unknown sqlite URL option {unknown[0]!r}; known: {', '.join(sorted(_SQLITE_OPTIONS))}")
    settings: dict[str, Any] = _seconds(options, "sqlite", "busy_timeout", "ttl")
    if "synchronous" in options:
        settings["synchronous"] = options["synchronous"].upper()
    if "namespace" in options:
        settings["namespace"] = options["namespace"]
    from lionmem.adapters.sqlite import SQLiteMemoryStore

    return SQLiteMemoryStore.open(path, create=create, embedder=embedder, reembed=reembed, **settings)


def _postgres(
    url: str, create: bool, embedder: Embedder | None, reembed: bool
) -> contextlib.AbstractAsyncContextManager[ForgettingStore]:
    parts = urlsplit(url)
    if parts.fragment:
        # libpq gives a fragment no meaning; more often it is a password's unescaped #.
        raise ValueError("a postgresql URL takes no #fragment; write a # in a value as %23")
    options = _options(parts.query, "postgresql")
    namespace = options.pop("namespace", None)
    if not namespace:
        raise ValueError("a postgresql URL needs ?namespace=NAME, the namespace its items live in")
    settings: dict[str, Any] = _seconds(options, "postgresql", "timeout", "statement_timeout", "ttl")
    try:
        from lionmem.adapters.postgres import PostgresMemoryStore
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"postgresql URLs need the postgres extra (pip install 'lionmem[postgres]'): {exc}"
        ) from None
    # The URL up to its query as written (urlunsplit would drop the "//" of a URL
    # with no host), then the query with %20 for a space: libpq reads "+" as itself.
    dsn = url.partition("?")[0]
    if options:
        dsn += "?" + urlencode(options, quote_via=quote)
    return PostgresMemoryStore.open(
        dsn, namespace=namespace, create=create, embedder=embedder, reembed=reembed, **settings
    )


def _seconds(options: dict[str, str], scheme: str, *names: str) -> dict[str, float]:
    """Take the options of `names` out of `options`, as numbers of seconds for the
    store's `open` to check."""
    settings: dict[str, float] = {}
    for name in names:
        if name in options:
            try:
                settings[name] = float(options.pop(name))
            except ValueError:
                raise ValueError(f"the {scheme} URL option {name} must be a number of seconds") from None
    return settings


def _options(query: str, scheme: str) -> dict[str, str]:
    """The query parameters, each given once, percent-decoded as libpq does: a `+`
    is a plus sign, not a space as in an HTML form."""
    try:
        pairs = parse_qsl(query.replace("+", "%2B"), keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ValueError(f"the {scheme} URL's query is not name=value pairs joined by &") from None
    options: dict[str, str] = {}
    for name, value in pairs:
        if name in options:
            raise ValueError(f"the {scheme} URL gives the option {name!r} twice")
        options[name] = value
    return options
