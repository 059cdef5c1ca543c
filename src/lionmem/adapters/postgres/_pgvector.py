"""pgvector's `vector` on the wire: an item's unit vector as the binary form the server
reads, sent as a parameter cast to `vector`.

numpy loads only when a store given an embedder writes or recalls. Governed by
[ADR-0103][adr-0103-d3].
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import psycopg
from psycopg.adapt import Dumper
from psycopg.pq import Format

if TYPE_CHECKING:
    from lionmem._internal.vectors import Matrix

__all__ = ["PgVector", "pg_vectors", "send_vectors_binary"]


class PgVector:
    """A vector in pgvector's binary form: dimensions and a reserved zero as two
    big-endian 16-bit ints, then each float as a big-endian float32."""

    __slots__ = ("data",)

    data: bytes

    def __init__(self, data: bytes) -> None:
        self.data = data


class _PgVectorDumper(Dumper):
    # No oid: `vector`'s differs from database to database, so each statement casts
    # its parameter (`%b::vector`) and the server reads the bytes as that type.
    format = Format.BINARY

    def dump(self, obj: PgVector) -> bytes:
        return obj.data


def send_vectors_binary(conn: psycopg.AsyncConnection[Any]) -> None:
    """Let `conn` send `PgVector` parameters. Sent as text, a 256-float vector cost
    about 120 µs to write out in Python and more for the server to parse."""
    conn.adapters.register_dumper(PgVector, _PgVectorDumper)


def pg_vectors(matrix: Matrix) -> list[PgVector]:
    """Each float32 row of `matrix` as a `PgVector`."""
    import numpy as np

    head = np.array([matrix.shape[1], 0], dtype=">u2").tobytes()
    big_endian = matrix.astype(">f4")
    return [PgVector(head + row.tobytes()) for row in big_endian]
