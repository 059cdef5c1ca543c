"""The command line's arguments: one subcommand each for the demo, `put`, `get`,
`search`, `recall`, `delete`, `forget`, `export`, `import`, `copy` and `check`.

Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# The kit's check names, written out so that building the parser (and so --help)
# loads neither the kit nor the models; a test holds them equal to the kit's CHECKS.
CHECKS = (
    "protocol",
    "concurrent_writes",
    "text_match",
    "tag_match",
    "filter_equality",
    "none_filter_matches_missing",
    "result_order",
    "on_existing_id",
    "visibility",
    "returned_objects",
    "limit_policy",
    "durability",
    "content",
    "created_at",
    "metadata",
    "tags",
    "forgetting",
    "filter_operators",
    "recall",
    "namespaces",
    "paging",
    "expiry",
    "stateful",
)

_HELP = """\
Read and write any lionmem store a URL names, run a demo, or check an adapter.
Items print as JSON lines. In --meta and --filter, KEY=TEXT is a string and
KEY:=JSON any JSON value. Exit status: 0 done, 1 no such item or a store error,
2 bad usage, 130 interrupted (Ctrl-C)."""


def prog() -> str:
    """How the user ran the command line, for its usage and messages: `lionmem`, the
    installed command, or `python -m lionmem`."""
    return "lionmem" if Path(sys.argv[0]).name == "lionmem" else "python -m lionmem"


def _search_options(command: argparse.ArgumentParser, default_limit: str) -> None:
    command.add_argument("--text", help="a substring of the content, any case")
    command.add_argument("--tag", action="append", help="any one of these tags (repeatable)")
    command.add_argument(
        "--filter",
        action="append",
        metavar="EXPR",
        help="metadata[KEY] as EXPR says (repeatable): KEY=TEXT, KEY:=JSON, 'KEY>=3' (also != > < <=), "
        "'KEY in a,b', 'KEY not in a,b', 'KEY present', 'KEY missing'",
    )
    command.add_argument(
        "--limit",
        type=int,
        default=20 if default_limit == "20" else None,
        help=f"results[:LIMIT] (default: {default_limit})",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=prog(), description=_HELP, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    commands = parser.add_subparsers(dest="command", required=True)
    url_help = "the store: memory:, sqlite:///PATH[?namespace=NAME] or postgresql://...?namespace=NAME"
    demo = commands.add_parser("demo", help="store, retrieve and search a few notes")
    demo.add_argument("url", nargs="?", default="memory:", help=url_help + " (default: memory:)")
    put = commands.add_parser(
        "put", help="store items, one for each CONTENT or each JSON line on stdin (-), and print their ids"
    )
    put.add_argument("url", help=url_help)
    put.add_argument(
        "content",
        nargs="+",
        help="the content, a string (or JSON with --json); several store one item each, in one write; "
        '- alone reads items from stdin, a JSON object a line: {"content": ...} and any of id, tags, '
        "metadata, created_at",
    )
    put.add_argument("--json", action="store_true", help="read each CONTENT as a JSON value")
    put.add_argument("--id", help="the item's id, to replace an item in place (default: new)")
    put.add_argument("--tag", action="append", help="a tag (repeatable)")
    put.add_argument("--meta", action="append", metavar="KEY=TEXT|KEY:=JSON", help="metadata (repeatable)")
    get = commands.add_parser("get", help="print the item with an id as JSON")
    get.add_argument("url", help=url_help)
    get.add_argument("id", help="the item's UUID")
    recall = commands.add_parser(
        "recall", help="print the items most like TEXT in meaning, with their scores, as JSON lines"
    )
    recall.add_argument("url", help="the store: sqlite:///PATH or postgresql://...?namespace=NAME")
    recall.add_argument("text", help="what to recall, in any words")
    recall.add_argument("-k", type=int, default=10, help="how many items (default: 10)")
    recall.add_argument("--tag", action="append", help="any one of these tags (repeatable)")
    recall.add_argument("--filter", action="append", metavar="EXPR", help="as in search (repeatable)")
    recall.add_argument(
        "--min-score",
        type=float,
        metavar="SCORE",
        help="leave out items whose cosine similarity is below SCORE, from -1 to 1 (with --hybrid: rank them by words only)",
    )
    recall.add_argument(
        "--hybrid",
        action="store_true",
        help="rank by meaning and by the rare names and numbers the text writes, each line with both ranks (ADR-0104)",
    )
    recall.add_argument(
        "--embedder",
        default="wordllama",
        metavar="NAME",
        help="the model: wordllama (the offline model, 256 dimensions), wordllama:DIMENSIONS, or "
        "module:attribute naming an Embedder or a function of no arguments that makes one "
        "(default: wordllama); a store keeps the model its vectors were made with",
    )
    recall.add_argument(
        "--reembed",
        action="store_true",
        help="make every vector of the store again with this model, when another made them",
    )
    search = commands.add_parser(
        "search",
        help="print the matching items as JSON lines, --limit at a time; when more match, the line "
        "'next page: --after CURSOR' on stderr",
    )
    search.add_argument("url", help=url_help)
    _search_options(search, default_limit="20")
    search.add_argument("--after", metavar="CURSOR", help="the page after this cursor, as the last page named it")
    delete = commands.add_parser("delete", help="delete the items with these ids")
    delete.add_argument("url", help=url_help)
    delete.add_argument("ids", nargs="+", metavar="ID", help="an item's UUID")
    forget = commands.add_parser(
        "forget", help="delete every item a search finds (all of them unless --limit), saying how many first"
    )
    forget.add_argument("url", help=url_help)
    _search_options(forget, default_limit="every match")
    forget.add_argument(
        "--older-than", metavar="DURATION", help="only items created longer ago than this: 90s, 15m, 12h, 30d, 2w"
    )
    forget.add_argument("--dry-run", action="store_true", help="say how many items match; delete nothing")
    forget.add_argument(
        "--expired",
        action="store_true",
        help="delete the items whose expiry has passed, as a sweep does (ADR-0105); takes no other option",
    )
    export = commands.add_parser(
        "export", help="write the items, in insertion order, as a lionmem export: JSON lines after a header"
    )
    export.add_argument("url", help=url_help)
    _search_options(export, default_limit="every match")
    export.add_argument(
        "--output", "-o", metavar="FILE", help="write FILE, whole or not at all, instead of standard output"
    )
    import_ = commands.add_parser(
        "import", help="store the items of a lionmem export, in its order; running it again changes nothing"
    )
    import_.add_argument("url", help=url_help)
    import_.add_argument("file", help="a file `export` wrote")
    import_.add_argument(
        "--no-header",
        action="store_true",
        help="FILE is a plain JSON Lines file of items, as get and search print them, with no export header",
    )
    copy = commands.add_parser(
        "copy",
        help="copy every item of one store into an empty one, in order, then check both hold the same; "
        "run again after an interruption, it goes on where it stopped",
    )
    copy.add_argument("url", metavar="SOURCE", help="the store to read: " + url_help)
    copy.add_argument("target", metavar="DESTINATION", help="an empty store to fill, created if need be")
    stats = commands.add_parser(
        "stats", help="print the number of items, the size on disk, the schema version and the oldest and newest item"
    )
    stats.add_argument(
        "url", help="a durable store: sqlite:///PATH[?namespace=NAME] or postgresql://...?namespace=NAME"
    )
    namespaces = commands.add_parser(
        "namespaces", help="print the namespaces of a durable store's database that hold an item, one a line"
    )
    namespaces.add_argument("url", help="a durable store: sqlite:///PATH or postgresql://...?namespace=NAME")
    verify = commands.add_parser(
        "verify",
        help="check a durable store whole (the file or schema, the indexes, every index row and vector) "
        "and name what is wrong; status 1 if anything is",
    )
    verify.add_argument("url", help="a durable store: sqlite:///PATH or postgresql://...?namespace=NAME")
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
        "--only",
        action="append",
        choices=CHECKS,
        metavar="CHECK",
        help=f"run only this check (repeatable): {', '.join(CHECKS)}",
    )
    check.add_argument(
        "--timeout",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="fail a check whose store takes longer to open, close or answer one call (default: 30)",
    )
    check.add_argument(
        "--lionagi",
        action="store_true",
        help="FACTORY's store takes and returns lionagi's MemoryItem and MemoryQuery (needs lionmem[lionagi])",
    )
    for command in commands.choices.values():
        # Bad usage found after parsing is reported with the command's own usage, as
        # argparse reports what it finds itself.
        command.set_defaults(usage=command)
    return parser
