"""`stats`, `namespaces` and `verify`: what a durable store says of itself.

Governed by [ADR-0098][adr-0098].
"""

from __future__ import annotations

from datetime import UTC, datetime

from lionmem.cli._storing import CommandError
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.namespaces import NamespacedStore
from lionmem.protocols.stats import StatsStore
from lionmem.protocols.verifying import VerifyingStore


async def stats(store: ForgettingStore) -> int:
    if not isinstance(store, StatsStore):
        raise CommandError("stats reads a durable store; memory: holds nothing between commands")
    stats = await store.stats()
    rows = [
        ("items", f"{stats.items:,}"),
        ("size on disk", f"{_size(stats.bytes_on_disk)}: {stats.size_covers}"),
        ("schema version", str(stats.schema_version)),
        ("oldest", _when(stats.oldest)),
        ("newest", _when(stats.newest)),
    ]
    for name, value in rows:
        print(f"{name:<16}{value}")
    return 0


async def namespaces(store: ForgettingStore) -> int:
    if not isinstance(store, StatsStore) or not isinstance(store, NamespacedStore):
        raise CommandError("namespaces reads a durable store; memory: holds nothing between commands")
    for name in await store.namespaces():
        print(name)
    return 0


async def verify(store: ForgettingStore) -> int:
    if not isinstance(store, VerifyingStore):
        raise CommandError("verify checks a durable store; memory: holds nothing between commands")
    found = await store.verify()
    for problem in found.damage:
        print(f"damaged: {problem}")
    for problem in found.stale:
        print(f"stale: {problem} (the next recall that meets it makes it again)")
    if not found.whole:
        print(f"{len(found.damage):,} problems: the store refuses writes until the damage is repaired (ADR-0096)")
        return 1
    print(f"whole{f', {len(found.stale):,} stale vectors' if found.stale else ''}")
    return 0


def _size(count: int) -> str:
    return f"{count:,} bytes ({count / 2**20:.1f} MiB)"


def _when(created_at: float | None) -> str:
    """`created_at` exactly, with the UTC time it stands for where a datetime can say it."""
    if created_at is None:
        return "none: the store is empty"
    try:
        moment = datetime.fromtimestamp(created_at, UTC).strftime("%Y-%m-%d %H:%M:%S.%f UTC")
    except (OverflowError, ValueError, OSError):  # beyond the years 1 to 9999
        return f"created_at {created_at!r}"
    return f"{moment} (created_at {created_at!r})"
