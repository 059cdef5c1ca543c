"""What `demo`, `put`, `get`, `search`, `delete`, `forget`, `export`, `import`,
`copy` and `stats` do with the store a URL names.

Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import time
import warnings
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager
from functools import partial
from pathlib import Path
from typing import Protocol, cast
from uuid import UUID, uuid5

from lionmem.adapters.urls import item_check, open_store
from lionmem.cli._input import filters, seconds_of, uuid_of
from lionmem.cli._output import counted, note_if_empty, print_items
from lionmem.cli._parser import prog
from lionmem.cli._storing import put_command
from lionmem.errors import LionmemError
from lionmem.protocols.expiry import ExpiringStore
from lionmem.protocols.forgetting import ErasureWarning, ForgettingStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery, MemoryStore
from lionmem.protocols.paging import PagingStore, position_of
from lionmem.protocols.recall import check_k, check_min_score

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
        await store.store(MemoryItem(id=uuid5(_DEMO_IDS, content), content=content, tags=tags, metadata=metadata))
        for content, tags, metadata in _DEMO_NOTES
    ]
    print(f"stored {len(ids)} items")
    first = await store.retrieve(ids[0])
    print(f"retrieve {ids[0]} -> {first.content if first else None!r}")
    for query, rule in _DEMO_QUERIES:
        found = await store.search(query)
        print(f"search {query.model_dump(exclude_defaults=True)} -> {[item.content for item in found]}")
        print(f"  ({rule})")
    return 0


_DEMO_QUERIES: list[tuple[MemoryQuery, str]] = [
    (MemoryQuery(text="paris"), "text: a case-insensitive substring of the content"),
    (MemoryQuery(tags=["science", "todo"]), "tags: items with any one of them"),
    (
        MemoryQuery(text="water", filters={"source": "textbook"}),
        "text and filters: both must hold; a filter is metadata equal to the value",
    ),
    (MemoryQuery(limit=-3), "a negative limit drops that many of the last matches, as items[:-3] does"),
]
"""The demo's searches, each with the rule it shows (ADR-0092, D3)."""


def command_for(args: argparse.Namespace) -> Callable[[ForgettingStore], Awaitable[int]]:
    """What to do with the opened store; every argument is checked here, before."""
    if args.command == "demo":
        return _demo
    if args.command == "put":
        return put_command(args, item_check(args.url))
    if args.command == "get":
        item_id = uuid_of(args.id)

        async def get(store: MemoryStore) -> int:
            found = await store.retrieve(item_id)
            if found is None:
                print(f"no item {item_id}", file=sys.stderr)
                await note_if_empty(store)
                return 1
            print_items([found])
            return 0

        return get
    if args.command == "delete":
        ids = list(dict.fromkeys(uuid_of(text) for text in args.ids))

        async def delete(store: ForgettingStore) -> int:
            missing = [item_id for item_id in ids if await store.retrieve(item_id) is None]
            deleted = await store.delete_many(ids)
            print(f"deleted {deleted} of {counted(len(ids))}")
            for item_id in missing:
                print(f"no item {item_id}", file=sys.stderr)
            return 1 if missing else 0

        return delete
    if args.command == "copy":
        from lionmem.cli._copy import copy, state_path

        target = open_store(args.target)  # the URL is checked now; nothing opens yet
        check = item_check(args.target)
        state = state_path(args.url, args.target)

        async def copy_into(store: ForgettingStore) -> int:
            async with contextlib.AsyncExitStack() as stack:
                destination = await _entered(stack, target)
                return await copy(store, destination, state, check)

        return copy_into
    if args.command in ("stats", "namespaces", "verify"):
        from lionmem.cli import _reports

        report: Callable[[ForgettingStore], Awaitable[int]] = getattr(_reports, args.command)
        return report
    if args.command == "import":
        from lionmem.adapters.transfer import check_file
        from lionmem.cli._transfer import import_command

        path = Path(args.file)
        try:
            # every line, by the store's rules, before a store is opened
            total = check_file(path, item_check(args.url), header=not args.no_header)
        except OSError as exc:
            raise ValueError(f"cannot read {path}: {exc.strerror}") from None
        return partial(import_command, path, not args.no_header, total)
    if args.command == "recall":
        from lionmem.cli._recall import Asked, recall

        if args.url == "memory:":
            raise ValueError("recall memory: would recall from a new, empty store; name a durable one")

        asked = Asked(
            args.text, check_k(args.k), args.tag, filters(args.filter) or None, check_min_score(args.min_score)
        )
        return partial(recall, asked, args.hybrid)
    query = MemoryQuery(
        text=args.text,
        tags=args.tag,
        filters=filters(args.filter) or None,
        limit=_EVERY if args.limit is None else args.limit,
    )
    if args.command == "export":
        from lionmem.cli._transfer import export_command, refuse_overwriting_the_store

        # With no search option, every item, read in batches (scan) rather than at once.
        everything = not (args.text or args.tag or args.filter or args.limit is not None)
        output = None if args.output is None else Path(args.output)
        refuse_overwriting_the_store(args.url, output)
        return partial(export_command, None if everything else query, output)
    if args.command == "forget":
        if args.expired:
            _alone_with_expired(args)
            return _sweep
        older_than = None if args.older_than is None else seconds_of(args.older_than)
        return partial(_forget, query, older_than, args.dry_run)

    position_of(args.after)  # a cursor that is not one is refused before a store opens
    if args.after is not None and query.limit < 1:
        raise ValueError(f"--after reads a page, which needs a --limit of at least 1, got {query.limit}")

    async def search(store: MemoryStore) -> int:
        if query.limit < 1:  # a slice of the matches, which no page is
            found = await store.search(query)
        else:
            assert isinstance(store, PagingStore)  # every store a URL names pages
            page = await store.search_page(query, args.after)
            found = page.items
            if page.next is not None:
                print(f"next page: --after {page.next}", file=sys.stderr)
        print_items(found)
        if not found and args.after is None:
            await note_if_empty(store)
        return 0

    return search


_EVERY = 2**63 - 1
"""`forget`'s limit when none is given: every match."""


class _ForgettingByAge(ForgettingStore, Protocol):
    """A `ForgettingStore` whose `delete_matching` also takes an age, as each of
    lionmem's stores does, and so every store a URL names ([ADR-0100][adr-0100-d10])."""

    async def delete_matching(self, query: MemoryQuery, *, created_before: float | None = None) -> int: ...


async def _forget(query: MemoryQuery, older_than: float | None, dry_run: bool, store: ForgettingStore) -> int:
    """Say how many items `query` (and the age) selects, then delete them unless
    `dry_run`: those `delete_matching` deletes, of the items older than the age when
    given, which it decides in the same step as the delete, so that an item replaced
    by a newer one since the count is kept (ADR-0100 D10)."""
    if older_than is None:
        cutoff = None
        selected = len(range(await store.count(query))[: query.limit])
    else:
        cutoff = time.time() - older_than
        every = await store.search(query.model_copy(update={"limit": _EVERY}))
        selected = len([item for item in every if item.created_at < cutoff][: query.limit])
    print(f"{counted(selected)} match" if selected != 1 else "1 item matches")
    if dry_run:
        print("dry run: nothing deleted")
        return 0
    if cutoff is None:
        deleted = await store.delete_matching(query)
    else:
        deleted = await cast(_ForgettingByAge, store).delete_matching(query, created_before=cutoff)
    print(f"deleted {counted(deleted)}")
    return 0


def _alone_with_expired(args: argparse.Namespace) -> None:
    """Refuse another option beside `forget --expired`: a sweep takes none, and
    counts nothing before it deletes."""
    given = {
        "--text": args.text is not None,
        "--tag": bool(args.tag),
        "--filter": bool(args.filter),
        "--limit": args.limit is not None,
        "--older-than": args.older_than is not None,
        "--dry-run": args.dry_run,
    }
    named = [name for name, present in given.items() if present]
    if named:
        raise ValueError(
            f"forget --expired deletes every expired item and takes no other option, got {', '.join(named)}"
        )


async def _sweep(store: MemoryStore) -> int:
    assert isinstance(store, ExpiringStore)  # every store a URL names expires
    print(f"deleted {counted(await store.sweep())} that had expired")
    return 0


class RefusedOpening(LionmemError):
    """The store a URL names refused a value of it as it opened: a usage error, which
    the command line turns into one."""


async def _entered(
    stack: contextlib.AsyncExitStack, opening: AbstractAsyncContextManager[ForgettingStore]
) -> ForgettingStore:
    """The store `opening` opens, closed with `stack`.

    Raises:
        RefusedOpening: opening refused a value of the URL only a connection could
            check, such as libpq's `sslmode=bogus`.
    """
    try:
        return await stack.enter_async_context(opening)
    except ValueError as exc:
        if isinstance(exc, LionmemError):  # the store's refusal: status 1, as any store error
            raise
        raise RefusedOpening(str(exc)) from None


async def run(
    opening: AbstractAsyncContextManager[ForgettingStore], command: Callable[[ForgettingStore], Awaitable[int]]
) -> int:
    """Open the store, run `command` on it and close it. Erasure that closing cannot
    prove is said on stderr and makes the status 1 (ADR-0100 D3).

    Raises:
        RefusedOpening: as `_entered`.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ErasureWarning)
        async with contextlib.AsyncExitStack() as stack:
            status = await command(await _entered(stack, opening))
    for warning in caught:
        if issubclass(warning.category, ErasureWarning):
            print(f"{prog()}: warning: {warning.message}", file=sys.stderr)
            status = status or 1
        else:
            warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    return status
