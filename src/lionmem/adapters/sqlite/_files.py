"""What the SQLite store checks of a path before SQLite opens it, so that a file it
should not touch is left as it was and an error names the file.

Governed by [ADR-0096][adr-0096].
"""

from __future__ import annotations

import os
import sqlite3
import stat
from pathlib import Path
from typing import Final

from lionmem.errors import DatabaseCorruptError, IncompatibleDatabaseError


def database_path(path: object) -> Path:
    """`path` as the database file's path, checked as `SQLiteMemoryStore.open` documents:
    a str or a path, naming a file."""
    try:
        named: object = os.fspath(path)  # type: ignore[call-overload]
    except TypeError:
        named = None
    if not isinstance(named, str):  # bytes too, which Path() refuses
        raise TypeError(f"path must be a str or a path, got {type(path).__name__}")
    if named == "":
        # Path("") is the current directory, which the file checks would report.
        raise ValueError("path is empty; name the database file")
    if "\0" in named:
        raise ValueError(f"path {named!r} holds a NUL character, which no file name can")
    if named.endswith(("/", os.sep)):
        # Path() would drop the separator, which says the name is a directory's.
        raise ValueError(f"path {named!r} ends with a separator, as a directory's does; name the file")
    if named == ":memory:":
        raise ValueError(
            "an SQLite store needs a file: ':memory:' would give its writer and its reader "
            "separate databases; use memory: (InMemoryStore) for memory that ends with the process"
        )
    return Path(named)


def log_files(path: Path) -> tuple[Path, Path]:
    """The write-ahead log and its index that SQLite keeps beside the database at `path`."""
    return path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")


def not_writable(path: Path, place: Path) -> PermissionError:
    return PermissionError(
        f"cannot open {path}: {place} is not writable here, and the store writes the "
        "database file and keeps its write-ahead log beside it, even to read"
    )


_NOT_FILES: Final = {
    stat.S_IFDIR: "a directory",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFIFO: "a named pipe",
    stat.S_IFSOCK: "a socket",
}


def refuse_foreign_file(path: Path, create: bool) -> None:
    # SQLite opens a device, a pipe or a socket too, fails with "disk I/O error", and
    # may leave a journal beside it (as /dev/null-journal).
    if path.exists() and not path.is_file():
        kind = _NOT_FILES.get(stat.S_IFMT(path.stat().st_mode), "a special file")
        raise IncompatibleDatabaseError(f"{path} is {kind}, not a database file")
    if not path.parent.is_dir():
        raise FileNotFoundError(
            f"{path.parent} is not a directory; the store creates its database file, not the directories above it"
        )
    if not create and not path.exists():
        raise FileNotFoundError(f"there is no database at {path}; nothing was created")
    if path.exists() and 0 < path.stat().st_size < _SMALLEST_DATABASE:
        raise IncompatibleDatabaseError(f"{path} is not an SQLite database; left untouched")


_SMALLEST_DATABASE = 512
"""No SQLite database file is shorter than one page, and no page shorter than this."""


def refuse_non_database(path: Path) -> None:
    """Refuse a file that is not an SQLite database, read through SQLite.

    Not with Python's `open()`: closing any descriptor of a file drops every POSIX
    lock this process holds on it, so reading the file of a store open in this
    process would let other processes write past its locks and corrupt it. SQLite
    shares one descriptor per file among a process's connections, and keeps it open
    while any of them holds a lock. A read-only connection writes nothing, and a
    file that is not a database fails at its header, before any log is made; any
    other failure is left for the writer's open to report.
    """
    if not path.exists() or path.stat().st_size == 0:
        return
    probe = sqlite3.connect(f"{path.absolute().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        probe.execute("PRAGMA schema_version").fetchone()
    except sqlite3.DatabaseError as exc:
        foreign = exc.sqlite_errorcode == sqlite3.SQLITE_NOTADB
    else:
        foreign = False
    finally:
        probe.close()
    if foreign:
        raise IncompatibleDatabaseError(f"{path} is not an SQLite database; left untouched")


def damage(path: Path, error: sqlite3.Error) -> DatabaseCorruptError | None:
    """The `DatabaseCorruptError` that `error` means for the file at `path`, or `None`
    when it is not damage: a page SQLite cannot read, a header that is no database's,
    or a text column that is not UTF-8, which lionmem never writes."""
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF
    undecodable = isinstance(error, sqlite3.OperationalError) and str(error).startswith("Could not decode to UTF-8")
    if code not in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB) and not undecodable:
        return None
    return DatabaseCorruptError(
        f"{path} is damaged (SQLite: {error}); left as it was. Restore it from a "
        f"backup, or see what can be saved with: sqlite3 {path} .recover"
    )
