"""The `lionmem` command line: stores named by URL, a demo, and the conformance check.

`put`, `get`, `search`, `delete`, `forget`, `export`, `import`, `copy` and `stats`
work on any store a URL names (see [`open_store`][lionmem.adapters.urls.open_store]
and [ADR-0098][adr-0098]) and print items as JSON lines; `check` runs the kit of
[ADR-0093][adr-0093] against a store factory or URL template. Exit status: 0 done, 1
nothing found or a store error (any `LionmemError`, `OSError` or driver error), 2 bad
usage, 130 interrupted (Ctrl-C). Private modules here hold the parser (`_parser`),
the store commands (`_commands`), `check` (`_check`), `copy` (`_copy`), `export` and
`import` (`_transfer`), `recall` (`_recall`), `stats`, `namespaces` and `verify`
(`_reports`), writes of what the user gave (`_storing`), and reading input and
writing output (`_input`, `_output`). Each command loads only the modules it needs.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, cast

from lionmem.cli._parser import build_parser, prog
from lionmem.errors import EmbedderMismatchError, LionmemError, MissingSchemaError

if TYPE_CHECKING:
    from lionmem.protocols.recall import Embedder

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit status (see [ADR-0098][adr-0098]).

    Ctrl-C ends any command with one line on stderr and status 130, the shell's
    status for a process ended by SIGINT.
    """
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(f"{prog()}: interrupted", file=sys.stderr)
        return 130


def _main(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, unknown = parser.parse_known_args(argv)
    usage: argparse.ArgumentParser = args.usage
    if unknown:
        # The command's own usage, not the top-level one argparse would show.
        usage.error(f"unrecognized arguments: {' '.join(unknown)}")
    for number, given in enumerate(sys.argv[1:] if argv is None else argv, start=1):
        # Python hands on bytes that are not UTF-8 as lone surrogates (PEP 383).
        undecoded = next((character for character in given if "\udc80" <= character <= "\udcff"), None)
        if undecoded is not None:
            usage.error(f"argument {number} is not UTF-8 text (byte 0x{ord(undecoded) - 0xDC00:02x})")
    # Loaded only now, for the command that runs: --help and a usage error load no
    # store, no kit and no model.
    import asyncio

    from lionmem.cli._output import stdout_takes_any_text

    if not stdout_takes_any_text():
        # The demo's and the check's text then shows what stdout cannot take as
        # escapes, as stderr does, instead of failing on it.
        cast(io.TextIOWrapper, sys.stdout).reconfigure(errors="backslashreplace")
    if args.command == "check":
        from lionmem.cli._check import check

        try:
            return check(args.factory, args.url, args.profile, args.only, args.timeout, args.lionagi)
        except (ValueError, ImportError) as exc:
            usage.error(str(exc))
    from lionmem.adapters.urls import open_store
    from lionmem.cli._commands import RefusedOpening, command_for, run

    if argv is None:
        # Run as the program, whose objects so far (modules, classes, pydantic's
        # schemas) live until it exits: out of the collector's sight, they are not
        # scanned again at exit, which took 30 of a search's 220 ms.
        import gc

        gc.freeze()
    try:
        command = command_for(args)
        # Checks the URL and opens nothing yet; reading never creates a database file.
        opening = open_store(
            args.url,
            create=args.command in _CREATING,
            embedder=_embedder_for(args),
            reembed=args.command == "recall" and args.reembed,
        )
    except (ValueError, ImportError) as exc:
        usage.error(str(exc))
    try:
        return asyncio.run(run(opening, command))
    except RefusedOpening as exc:
        usage.error(str(exc))
    except BrokenPipeError:
        # Whoever read the output stopped (`| head`): end quietly, and point stdout at
        # nothing so that Python's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except _store_errors() as exc:
        # Every command but `put` and `demo` opens with create=False, which the user
        # never typed: say instead which command makes the store they expected.
        missing = args.command not in _CREATING and isinstance(exc, (FileNotFoundError, MissingSchemaError))
        hint = " (`put` creates a store; this command creates none)" if missing else _retry_hint(exc)
        print(f"{parser.prog}: error: {exc}{hint}", file=sys.stderr)
        return 1


def _retry_hint(error: Exception) -> str:
    """What to do about a PostgreSQL serialization failure (nothing was done, and a
    second run reads the other client's change), or about vectors another model made."""
    if isinstance(error, EmbedderMismatchError):
        return " (on the command line: recall --embedder NAME with that model, or --reembed)"
    if type(error).__name__ != "SerializationFailure":
        return ""
    return " (another client changed a matching item meanwhile; nothing was deleted: run the command again)"


def _embedder_for(args: argparse.Namespace) -> Embedder | None:
    """The model `recall --embedder` names, which a store needs to recall by
    ([ADR-0102][adr-0102])."""
    if args.command != "recall":
        return None
    from lionmem.cli._recall import embedder_named

    return embedder_named(args.embedder, args.text)


_CREATING = ("put", "demo", "import")
"""The commands that create a store where there is none; the others only open one."""


def _store_errors() -> tuple[type[Exception], ...]:
    """What a command may raise for a bad file, a store's refusal, a server's error or
    an outage: status 1, not a traceback. lionmem's own errors are all
    `LionmemError`s; psycopg's errors count once a URL has made it load. Anything
    else is a bug, and shows its traceback."""
    import sqlite3

    errors: tuple[type[Exception], ...] = (LionmemError, OSError, sqlite3.Error)
    psycopg = sys.modules.get("psycopg")
    return errors if psycopg is None else (*errors, psycopg.Error)
