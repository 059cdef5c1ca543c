"""Opening the SQLite store's connections: the writer on its worker thread, with
the write-ahead log and the schema, and the read-only reader.

Governed by [ADR-0096][adr-0096].

Seam for tests: `_connect`, whose steps the tests replace to hold or fail an open.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from lionmem.adapters.sqlite._files import damage, log_files, not_writable, refuse_foreign_file, refuse_non_database
from lionmem.adapters.sqlite.schema import APPLICATION_ID, migrate, refuse_older
from lionmem.errors import IncompatibleDatabaseError, MissingSchemaError

# SQLite's default page cache holds a small part of a large database, so a search
# joining thousands of index hits to their rows would read pages from the OS (ADR-0096
# measured it). A limit, not an allocation.
_CACHE_SIZE = "PRAGMA cache_size = -65536"

# Seconds between tries of a lock SQLite will not wait for itself.
_BUSY_RETRY = 0.005
# Seam for tests: `_WRITER_CHECKPOINT_PAGES`, read to check the writer's own bound.
_WRITER_CHECKPOINT_PAGES = 4_000
WAL_LIMIT = 16 * 1024 * 1024
"""The bytes a write-ahead log keeps when a checkpoint restarts it (`journal_size_limit`):
about the log of the writer's own checkpoint. Without a limit the file keeps the
largest size it ever reached."""


async def connect(
    path: Path, busy_ms: int, synchronous: str, create: bool
) -> tuple[ThreadPoolExecutor, sqlite3.Connection, sqlite3.Connection]:
    """Open (creating or migrating) the database at `path`: the worker thread, the
    writer's connection on it, and the read-only connection for `retrieve`."""
    # Both connections name the file by a URI, so that it is exactly `path`: an SQLite
    # built with SQLITE_USE_URI, as Debian's is, reads a plain name that starts with
    # "file:" as a URI, and "file:notes.db?mode=memory" would keep nothing.
    location = path.absolute().as_uri()
    executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lionmem-sqlite")
    writer_uri = f"{location}?mode={'rwc' if create else 'rw'}"
    connecting = executor.submit(_connect_and_migrate, path, writer_uri, busy_ms, synchronous, create)
    try:
        writer = await asyncio.wrap_future(connecting)
        # A store may be used from event loops on other threads, as its worker thread
        # allows; the store's lock lets one thread at a time use the reader.
        reader = sqlite3.connect(f"{location}?mode=rw", uri=True, isolation_level=None, check_same_thread=False)
    except BaseException:
        # Cancelled, or no reader: the writer the worker opens, or has opened, is
        # closed there, once it exists; nothing stays open.
        executor.submit(_close_writer, connecting)
        executor.shutdown(wait=False)
        raise
    reader.execute(f"PRAGMA busy_timeout = {busy_ms}")
    reader.execute("PRAGMA query_only = 1")
    reader.execute(_CACHE_SIZE)
    return executor, writer, reader


def _close_writer(connecting: Future[sqlite3.Connection]) -> None:
    """On the worker thread, after `connecting` ran or was cancelled."""
    if not connecting.cancelled() and connecting.exception() is None:
        connecting.result().close()


# Seam for tests: `_connect_and_migrate` and `_connect_writer`, replaced to hold an
# open at a chosen point or to make it fail.
def _connect_and_migrate(path: Path, uri: str, busy_ms: int, synchronous: str, create: bool) -> sqlite3.Connection:
    refuse_foreign_file(path, create)
    # SQLite opens a file it cannot write read-only, fails at the first write with
    # "attempt to write a readonly database", and leaves a log and an index beside it.
    for place in (path, *log_files(path)):
        if place.exists() and not os.access(place, os.W_OK):
            raise not_writable(path, place)
    refuse_non_database(path)
    try:
        return _connect_writer(path, uri, busy_ms, synchronous, create)
    except sqlite3.OperationalError as exc:
        # The directory is asked only now: SQLite needs it only to create the log and
        # its index, which a running writer may already have made.
        if not os.access(path.parent, os.W_OK):
            raise not_writable(path, path.parent) from exc
        raise


def _connect_writer(path: Path, uri: str, busy_ms: int, synchronous: str, create: bool) -> sqlite3.Connection:
    db = sqlite3.connect(uri, uri=True, isolation_level=None)
    try:
        db.execute(f"PRAGMA busy_timeout = {busy_ms}")
        _refuse_foreign_schema(db, path, create)
        if not create:
            refuse_older(db, path)
        _switch_to_wal(db, busy_ms)
        db.execute(f"PRAGMA synchronous = {synchronous}")
        # Deleted and replaced rows, and freed pages, are overwritten with zeros, so
        # that what a store forgets leaves the file (ADR-0100).
        db.execute("PRAGMA secure_delete = ON")
        db.execute(f"PRAGMA wal_autocheckpoint = {_WRITER_CHECKPOINT_PAGES}")
        db.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT}")
        db.execute(_CACHE_SIZE)
        migrate(db, path)
    except sqlite3.DatabaseError as exc:
        db.close()
        damaged = damage(path, exc)
        if damaged is not None:
            raise damaged from None
        raise
    except BaseException:
        db.close()
        raise
    return db


def _switch_to_wal(db: sqlite3.Connection, busy_ms: int) -> None:
    # SQLite refuses the switch at once, without its busy handler, while another
    # connection holds a write lock on a rollback-journal file (another process
    # migrating it), so wait here for up to the same timeout.
    deadline = time.monotonic() + busy_ms / 1000
    while True:
        try:
            db.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(_BUSY_RETRY)


def _refuse_foreign_schema(db: sqlite3.Connection, path: Path, create: bool) -> None:
    # One statement reads both from one snapshot: read apart, another process's
    # migration could commit between them and make a new file look foreign.
    application_id, tables = db.execute(
        "SELECT (SELECT application_id FROM pragma_application_id), (SELECT count(*) FROM sqlite_schema)"
    ).fetchone()
    if application_id != APPLICATION_ID and (application_id != 0 or tables):
        raise IncompatibleDatabaseError(
            f"{path} is an SQLite database but not a lionmem one "
            f"(application_id {application_id:#x}, {tables} schema objects); left untouched"
        )
    if application_id != APPLICATION_ID and not create:  # empty, or SQLite with no tables
        raise MissingSchemaError(f"{path} holds no lionmem schema; nothing was created")
