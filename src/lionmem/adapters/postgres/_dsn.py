"""Reading a connection string, and keeping its password out of everything the
store shows: its `repr`, its errors and libpq's complaints.

Governed by [ADR-0097][adr-0097].
"""

from __future__ import annotations

import re

from psycopg.conninfo import conninfo_to_dict, make_conninfo

from lionmem.adapters.errors import StoreUnavailableError

# A server switch in libpq's `options`: `-c name=value` or `--name=value`, where the
# server reads the name case-insensitively and a '-' in it as '_'.
SETS_STATEMENT_TIMEOUT = re.compile(r"(?:^|\s)(?:-c\s*|--)(?i:statement[-_]timeout)=")


def _url_parts(dsn: str) -> tuple[str, str]:
    """The authority (user info, hosts and ports) and the path of a URL `dsn`, as
    written; two empty strings for a `key=value` string."""
    authority, _, path = dsn.partition("://")[2].partition("?")[0].partition("/")
    return authority, path


def refuse_bare_at(dsn: str) -> None:
    """Refuse a URL with an '@' libpq would not read as the end of the user name and
    password: a second one before the path, or one in it. It comes from a password's
    '@' or '/' left unescaped; libpq would read the rest of the password as the host,
    port or database name, which its errors then show."""
    authority, path = _url_parts(dsn)
    if authority.count("@") > 1 or "@" in path:
        raise ValueError(
            "the dsn has an '@' that is not the one before the host; write an '@' or '/' "
            "in a user name or password (or an '@' in a database name) as %40 or %2F"
        )


_QUOTED = re.compile(r'"([^"]*)"')
_APART = r"""\s"'=:@/,()"""
"""What may stand beside a password where a message shows it whole: its URL's
userinfo, a quoted word or a `key=value` pair."""


def _masked(message: str, password: str) -> str:
    """`message` with `password` masked where it stands apart, not inside a longer
    word: a password of `1` or `pass` masked everywhere would make "127.0.0.1" and
    "password authentication failed" unreadable."""
    return re.sub(rf"(?<![^{_APART}]){re.escape(password)}(?![^{_APART}])", "***", message)


def without_password(message: str, dsn: str) -> str:
    """libpq's complaint about `dsn`, with what may be (part of) its password masked:
    a URL's password as written (libpq quotes a malformed URL whole), or in a
    `key=value` string holding one, each quoted word that the string does not use as
    a key (libpq quotes the word after a space in an unquoted password)."""
    if "://" in dsn:
        userinfo, at, _ = _url_parts(dsn)[0].rpartition("@")
        password = userinfo.partition(":")[2] if at else ""
        return _masked(message, password) if password else message
    if "password" not in dsn:
        return message

    def masked(word: re.Match[str]) -> str:
        text = word.group(1)
        is_key = re.search(rf"(^|\s){re.escape(text)}\s*=", dsn) is not None
        return word.group() if is_key or text == "=" else '"***"'

    return _QUOTED.sub(masked, message)


def redacted(conninfo: str) -> str:
    parts = conninfo_to_dict(conninfo)
    if "password" in parts:
        parts["password"] = "***"
    return make_conninfo("", **parts)


_REFUSED_VALUE = re.compile(r'invalid (?:[a-z_]+ value: "|integer value "[^"]*" for connection option ")')
"""How libpq words its refusal of an option's value (`invalid sslmode value: "x"`,
`invalid integer value "5x" for connection option "port"`), before it connects."""


def unavailable(conninfo: str, error: Exception) -> StoreUnavailableError | ValueError:
    """What a failed connection attempt raises: `ValueError` when libpq refused a value
    of the connection string, which no retry would change, else `StoreUnavailableError`;
    each with the password masked and no exception chained, as that would show it."""
    message = str(error).removeprefix("connection is bad: ")
    password = conninfo_to_dict(conninfo).get("password")
    if password:
        message = _masked(message, str(password))
    if _REFUSED_VALUE.search(message):
        return ValueError(f"the dsn has a value libpq refuses: {message}")
    return StoreUnavailableError(f"PostgreSQL at {redacted(conninfo)} is unavailable: {message}")
