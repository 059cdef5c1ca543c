"""`copy`: every item of one store into another, in batches and in order, resumable,
and checked at the end by count and digest.

Governed by [ADR-0100][adr-0100].
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import sys
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from functools import partial
from pathlib import Path
from typing import Any

from lionmem.adapters.transfer import BATCH, Check, item_line
from lionmem.cli._output import counted, progress_bar
from lionmem.cli._parser import prog
from lionmem.cli._storing import store_batch
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem, MemoryQuery


def state_path(source_url: str, target_url: str) -> Path:
    """Where a copy between these two stores records how far it got: in the current
    directory, named by a digest of both URLs (which may hold passwords)."""
    digest = hashlib.sha256(f"{source_url}\n{target_url}".encode()).hexdigest()[:16]
    return Path(f".lionmem-copy-{digest}.json")


async def copy(source: ForgettingStore, target: ForgettingStore, state: Path, check: Check) -> int:
    """Copy `source` into `target` and check the result; return the exit status.

    An empty target is filled; one that holds items is refused, unless `state`
    records a copy into it that did not finish, which then goes on after the items
    it had copied, provided the source still has the recorded item at that point
    (else the copy starts over: items are written by id, so nothing doubles). Every
    item is checked by the target's rules (`check`) before any is written, as
    `import` checks its file.
    """
    total = await source.count(MemoryQuery())
    with progress_bar(total, "checking") as bar:
        refused = await _refusal(source, check, bar.update)
    if refused:
        print(f"{prog()}: error: {refused}; nothing was copied", file=sys.stderr)
        return 1
    done, last = _resume_point(state)
    held = await target.count(MemoryQuery())
    if held and not done:
        print(
            f"{prog()}: error: the destination holds {counted(held)}; copy fills an "
            "empty store, or resumes its own interrupted copy. An interrupted copy keeps its "
            f"progress in {state.name} in the directory it ran in: run it again from there",
            file=sys.stderr,
        )
        return 1
    if done and held >= done:
        print(f"resuming: {counted(done)} copied by an earlier run, as {state.absolute()} records")
    else:
        # The progress file is written before any item is, so that a directory it
        # cannot be written in stops the copy before it starts.
        _record(state, 0, "")
    with progress_bar(total) as bar:
        source_digest = await _fill(source, target, state, done if held >= done else 0, last, bar.update)
        if source_digest is None:
            bar.reset()
            source_digest = await _fill(source, target, state, 0, "", bar.update)
    assert source_digest is not None  # a copy from the start has no resume point to miss
    target_digest = await _digest(target)
    state.unlink(missing_ok=True)
    if source_digest != target_digest:
        print(
            f"{prog()}: error: the destination does not hold the source's items exactly: "
            f"{source_digest[0]} items, sha256 {source_digest[1]} in the source; "
            f"{target_digest[0]} items, sha256 {target_digest[1]} in the destination; "
            f"{await _first_difference(source, target)}. Empty the destination ({prog()} "
            "forget TARGET) and copy again",
            file=sys.stderr,
        )
        return 1
    copied = source_digest[0]
    print(f"copied {counted(copied)}; both stores hold {counted(copied)}, sha256 {source_digest[1]}")
    return 0


async def _fill(
    source: ForgettingStore,
    target: ForgettingStore,
    state: Path,
    done: int,
    last: str,
    advance: Callable[[int], object],
) -> tuple[int, str] | None:
    """Write the source's items after the first `done` into the target, recording
    progress after each batch; return the count and digest of every item read from
    the source (see `_digest`), or `None` when the item before the resume point is
    no longer `last`.

    A batch is read and hashed while the one before it is written, so the source's
    time hides behind the target's; writes and records still go one at a time, in order.
    """
    digest = hashlib.sha256()
    position = 0
    writing = asyncio.get_running_loop().create_future()  # the last write: none yet
    writing.set_result(None)
    try:
        async with contextlib.aclosing(_ahead(source.scan(BATCH))) as batches:
            async for batch in batches:
                digest.update(_lines(batch))
                start, position = position, position + len(batch)
                if position < done:
                    advance(len(batch))
                    continue
                skip = 0
                if start < done:  # the batch that holds the resume point
                    if str(batch[done - start - 1].id) != last:
                        return None
                    skip = done - start
                await writing
                writing = asyncio.ensure_future(
                    _write(target, batch[skip:], state, position, str(batch[-1].id), partial(advance, len(batch)))
                )
            await writing
    finally:
        await _settle(writing)
    return (position, digest.hexdigest()) if position >= done else None


async def _refusal(source: ForgettingStore, check: Check, advance: Callable[[int], object]) -> str:
    """The first of the source's items the target's rules refuse, named with its place
    and the rule, or nothing."""
    position = 0
    async with contextlib.aclosing(_ahead(source.scan(BATCH))) as batches:
        async for batch in batches:
            for item in batch:
                position += 1
                try:
                    check(item)
                except (TypeError, ValueError) as rule:
                    return f"the destination refuses item {item.id}, number {position:,} in the source: {rule}"
            advance(len(batch))
    return ""


async def _write(
    target: ForgettingStore,
    items: list[MemoryItem],
    state: Path,
    position: int,
    last: str,
    advance: Callable[[], object],
) -> None:
    """Store `items`, then record that the first `position` source items are copied."""
    if items:
        await store_batch(target, items)
    _record(state, position, last)
    advance()


async def _ahead(batches: AsyncIterator[list[MemoryItem]]) -> AsyncGenerator[list[MemoryItem], None]:
    """The lists `batches` yields, the next one read while the caller handles the last."""
    upcoming = asyncio.ensure_future(anext(batches, None))
    try:
        while (batch := await upcoming) is not None:
            upcoming = asyncio.ensure_future(anext(batches, None))
            yield batch
    finally:
        await _settle(upcoming)


async def _settle(future: asyncio.Future[Any]) -> None:
    """Cancel `future` if it is still running and wait until it ends, leaving any
    error to the one its caller is already handling."""
    if not future.done():
        future.cancel()
        await asyncio.wait([future])
    if not future.cancelled():
        future.exception()  # retrieved: it is not the error to report


async def _first_difference(source: ForgettingStore, target: ForgettingStore) -> str:
    """The first item, in order, where the two stores differ."""
    theirs = _each(target)
    async for position, mine in _enumerate(_each(source)):
        other = await anext(theirs, None)
        if other is None:
            return f"the destination ends before item {mine.id}, number {position + 1} in the source"
        if item_line(other) != item_line(mine):
            return f"item {position + 1} is {mine.id} in the source but {other.id} in the destination"
    extra = await anext(theirs)  # the digests differ, so the destination holds more
    return f"the destination holds item {extra.id}, which the source does not, after the source's last"


async def _each(store: ForgettingStore) -> AsyncIterator[MemoryItem]:
    async for batch in store.scan(BATCH):
        for item in batch:
            yield item


async def _enumerate(items: AsyncIterator[MemoryItem]) -> AsyncIterator[tuple[int, MemoryItem]]:
    position = 0
    async for item in items:
        yield position, item
        position += 1


def _resume_point(state: Path) -> tuple[int, str]:
    try:
        recorded = json.loads(state.read_text(encoding="utf-8"))
        return int(recorded["done"]), str(recorded["last"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0, ""


def _record(state: Path, done: int, last: str) -> None:
    partial = state.with_name(state.name + ".partial")
    partial.write_text(json.dumps({"done": done, "last": last}), encoding="utf-8")
    partial.replace(state)


async def _digest(store: ForgettingStore) -> tuple[int, str]:
    """How many items `store` holds, and the SHA-256 of their export lines in order."""
    digest = hashlib.sha256()
    count = 0
    async with contextlib.aclosing(_ahead(store.scan(BATCH))) as batches:
        async for batch in batches:
            digest.update(_lines(batch))
            count += len(batch)
    return count, digest.hexdigest()


def _lines(batch: list[MemoryItem]) -> bytes:
    """The export lines of `batch`, which the digests cover."""
    return "".join(item_line(item) + "\n" for item in batch).encode()
