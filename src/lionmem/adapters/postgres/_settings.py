"""What `PostgresMemoryStore.open` is given, checked before anything connects, as one
typed record.

Governed by [ADR-0097][adr-0097]; the candidates, by [ADR-0103][adr-0103-d3].
"""

from __future__ import annotations

from dataclasses import dataclass

from lionmem._internal.arguments import require_type
from lionmem._internal.timeouts import milliseconds
from lionmem.adapters._embedding import checked_settings
from lionmem.adapters.postgres._dsn import checked_conninfo
from lionmem.adapters.postgres._recall import MOST_CANDIDATES, PgVectors
from lionmem.protocols.namespaces import check_namespace
from lionmem.protocols.recall import Embedder, TextOf

__all__ = ["OpenSettings", "open_settings"]


@dataclass(frozen=True, slots=True)
class OpenSettings:
    """A store's settings, each checked."""

    conninfo: str
    """The connection string, with the store's own settings added."""
    namespace: str
    min_size: int
    max_size: int
    timeout: float
    """Seconds."""
    statement_ms: int
    """The server's statement timeout, in milliseconds."""
    create: bool
    vectors: PgVectors | None
    """The embedder and what it embeds, or `None` for a store that does not recall."""
    reembed: bool
    """Whether to make every vector of the namespace again as it opens."""


def open_settings(
    dsn: str,
    namespace: str,
    sizes: tuple[int, int],
    timeouts: tuple[float, float],
    create: bool,
    embedder: Embedder | None,
    text_of: TextOf | None,
    candidates: int,
    reembed: bool,
) -> OpenSettings:
    """The settings of `PostgresMemoryStore.open`, in its order: the pool's `(min_size,
    max_size)`, `(timeout, statement_timeout)`.

    Raises:
        ValueError: an invalid namespace, pool size, timeout or connection string,
            or `candidates` not from 1 to `MOST_CANDIDATES`.
        TypeError: an argument of the wrong type.
        ImportError: an embedder was given and numpy is not installed.
    """
    min_size, max_size = sizes
    timeout, statement_timeout = timeouts
    require_type(dsn, "dsn", str)
    require_type(namespace, "namespace", str)
    require_type(min_size, "min_size", int)
    require_type(max_size, "max_size", int)
    require_type(create, "create", bool)
    check_namespace(namespace)
    if not 1 <= min_size <= max_size:
        raise ValueError(f"need 1 <= min_size <= max_size, got {min_size} and {max_size}")
    milliseconds("timeout", timeout, zero=False)
    statement_ms = milliseconds("statement_timeout", statement_timeout, zero=False)
    conninfo = checked_conninfo(dsn, timeout)
    checked = checked_settings(embedder, text_of, reembed)
    require_type(candidates, "candidates", int)
    if not 1 <= candidates <= MOST_CANDIDATES:
        raise ValueError(f"candidates must be from 1 to {MOST_CANDIDATES:,}, got {candidates}")
    vectors = None if checked is None else PgVectors(checked, text_of, candidates)
    return OpenSettings(conninfo, namespace, min_size, max_size, timeout, statement_ms, create, vectors, reembed)
