"""The SQLite store's checkpoint thread: it copies the write-ahead log into the
database file beside the writes.

SQLite runs a checkpoint inside the write that fills the log to 1,000 pages, which
then waits for all of it ([ADR-0096][adr-0096] gives the cost). This thread copies
the log instead, every `CHECKPOINT_AFTER` items written. The writer still
checkpoints at a larger size, by then with little left to copy: only its own
checkpoint restarts the log from the beginning under a stream of writes.

A log restarts only once no reader is reading it; under writers in many processes
one always is, and the file grew to 10-50 times the database (139 MB for 2.4 MB).
So once the file passes twice `WAL_LIMIT`, this thread waits a moment for the
readers and for other checkpoints, and restarts and truncates it (`TRUNCATE`):
writers wait that moment too. And the writer that finds the file past that size
waits for the checkpoint before it writes again: under a loaded disk, copying the
log took longer than the writers of three processes took to fill it, and the file
grew to 130-340 MB for as long as they wrote. SQLite's own checkpoints hold up the
writer the same way; here only an overgrown log does.

The tests trace, break or wait for a store's `Checkpoints` to show what the thread
does. Seam for tests: `_checkpoint`, whose `WAL_LIMIT` a test lowers to make any log
overgrown, and `_overgrown`, which a test answers to end a truncation early.
"""

from __future__ import annotations

import sqlite3
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from lionmem.adapters.sqlite._connect import WAL_LIMIT

__all__ = ["CHECKPOINT_AFTER", "Checkpoints"]

CHECKPOINT_AFTER = 32
"""Items written between two checkpoints the thread is asked for."""

_TRUNCATE_WAIT_MS = 200
"""How long the thread waits for readers to leave a log it would truncate."""


class Checkpoints:
    """One store's checkpoint thread and its connection, both made by the first write
    that asks for a checkpoint: a store that only reads has neither."""

    def __init__(self, path: Path) -> None:
        # The thread's connection opens the file the store's did, even after a change
        # of directory, and never creates one.
        self._uri = path.absolute().as_uri() + "?mode=rw"
        self._log = path.absolute().with_name(path.name + "-wal")
        self.thread: ThreadPoolExecutor | None = None
        """The checkpoint thread, once a write has asked for a checkpoint."""
        self.db: sqlite3.Connection | None = None
        """The thread's connection, made by its first checkpoint."""
        self.running: Future[None] | None = None
        """The checkpoint last asked for, done or not."""
        self._sync = 0  # the writer's PRAGMA synchronous, read with the thread
        self._written = 0

    def wrote(self, count: int, writer: sqlite3.Connection) -> None:
        """Count `count` items the writer committed, on the writer's thread, and ask for
        a checkpoint every `CHECKPOINT_AFTER` of them, one queued at a time; when the log
        is past twice `WAL_LIMIT`, ask for one at once and wait until it has run."""
        self._written += count
        overgrown = self._overgrown()
        if self.running is not None and not self.running.done():
            if not overgrown:
                return
            # Begun before this write's frames: the next checkpoint must copy them too.
            self.running.result()
        if self._written < CHECKPOINT_AFTER and not overgrown:
            return
        self._written = 0
        if self.thread is None:
            self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="lionmem-sqlite-checkpoint")
            # As the writer's, so that a checkpoint syncs the file as hard.
            (self._sync,) = writer.execute("PRAGMA synchronous").fetchone()
        self.running = self.thread.submit(self.run)
        if overgrown:
            self.running.result()

    def run(self) -> None:
        """Copy what the log holds into the database file, as far as readers allow,
        without waiting for a lock or holding up writers; on the checkpoint thread."""
        try:
            db = self.db
            if db is None:
                db = sqlite3.connect(self._uri, uri=True, isolation_level=None)
                db.execute(f"PRAGMA synchronous = {self._sync}")
                db.execute(f"PRAGMA journal_size_limit = {WAL_LIMIT}")
                db.execute(f"PRAGMA busy_timeout = {_TRUNCATE_WAIT_MS}")
                self.db = db
            db.execute("PRAGMA wal_checkpoint(PASSIVE)")
            if self._overgrown():
                self._truncate(db)
        except (sqlite3.Error, OSError):
            # As with SQLite's own checkpoints, a failure loses nothing: the log keeps
            # its pages for the next checkpoint, and readers and writers use it meanwhile.
            pass

    def _overgrown(self) -> bool:
        """Whether the log is past twice `WAL_LIMIT`: then a checkpoint is asked for at
        once, not after `CHECKPOINT_AFTER` items, since other processes fill it too."""
        try:
            return self._log.stat().st_size > 2 * WAL_LIMIT
        except FileNotFoundError:
            return False

    def _truncate(self, db: sqlite3.Connection) -> None:
        """Restart and truncate the log, trying again for `_TRUNCATE_WAIT_MS` or until
        another connection has: while another connection checkpoints (another process's
        thread, say), SQLite refuses at once rather than wait, and four writing
        processes refused every try."""
        deadline = time.monotonic() + _TRUNCATE_WAIT_MS / 1000
        while db.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0] and time.monotonic() < deadline:
            if not self._overgrown():
                return
            time.sleep(0.005)

    def close(self) -> None:
        """Close the thread's connection and end the thread, once the writer is closed.
        Closed last, the connection copies what the log still holds into the file and
        removes the log."""
        if self.thread is not None:
            self.thread.submit(self._close_db).result()
            self.thread.shutdown(wait=True)

    def _close_db(self) -> None:
        if self.db is not None:
            self.db.close()
