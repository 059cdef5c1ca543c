"""Reading a connection string, and keeping its secrets out of everything the store
shows: its `repr`, its errors and libpq's complaints. A secret is whatever libpq
marks as one (its password fields: `password`, `sslpassword`, ...), asked of libpq
itself, not listed here.

Governed by [ADR-0097][adr-0097].
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import unquote

import psycopg
from psycopg import pq
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from lionmem.errors import StoreUnavailableError

# A server switch in libpq's `options`: `-c name=value` or `--name=value`, where the
# server reads the name case-insensitively and a '-' in it as '_'.
SETS_STATEMENT_TIMEOUT = re.compile(r"(?:^|\s)(?:-c\s*|--)(?i:statement[-_]timeout)=")


SECRET_OPTIONS: frozenset[str] = frozenset(
    option.keyword.decode() for option in pq.Conninfo.get_defaults() if option.dispchar == b"*"
)
"""The connection options this libpq marks as secret, to be shown as `***`."""


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


def checked_conninfo(dsn: str, timeout: float) -> str:
    """`dsn` as the connection string the store's pool connects with, its attempts
    bounded by `timeout` seconds; `ValueError` for a string libpq does not read, or one
    that sets a timeout the store sets itself. No message shows a password."""
    refuse_bare_at(dsn)
    refusal: str | None = None
    parsed: dict[str, Any] = {}
    try:
        parsed = conninfo_to_dict(dsn)
    except psycopg.ProgrammingError as exc:
        refusal = without_password(str(exc), dsn)
    if refusal is not None:
        # Raised here, not in the handler, so that libpq's unmasked words are not
        # chained to it as its context.
        raise ValueError(f"dsn is not a libpq connection string or URL: {refusal}")
    # Both are set from the arguments, which would replace the dsn's own unseen.
    if "connect_timeout" in parsed:
        raise ValueError("the dsn sets connect_timeout, which lionmem sets from timeout; give the seconds as timeout")
    if SETS_STATEMENT_TIMEOUT.search(str(parsed.get("options", ""))):
        raise ValueError(
            "the dsn's options set statement_timeout, which lionmem sets from "
            "statement_timeout; give the seconds as statement_timeout"
        )
    return make_conninfo(dsn, connect_timeout=max(1, round(timeout)))


_QUOTED = re.compile(r'"([^"]*)"')
_APART = r"""\s"'=:@/,()"""
"""What may stand beside a password where a message shows it whole: its URL's
userinfo, a quoted word or a `key=value` pair."""


def _masked(message: str, password: str) -> str:
    """`message` with `password` masked where it stands apart, not inside a longer
    word: a password of `1` or `pass` masked everywhere would make "127.0.0.1" and
    "password authentication failed" unreadable."""
    return re.sub(rf"(?<![^{_APART}]){re.escape(password)}(?![^{_APART}])", "***", message)


def _written_secrets(dsn: str) -> list[str]:
    """The secrets of a URL `dsn` as written, unparsed: its userinfo's password and
    each secret option of its query, raw and percent-decoded (libpq quotes either)."""
    userinfo, at, _ = _url_parts(dsn)[0].rpartition("@")
    found = [userinfo.partition(":")[2]] if at else []
    for pair in dsn.partition("?")[2].split("&"):
        key, _, value = pair.partition("=")
        if unquote(key) in SECRET_OPTIONS:
            found.append(value)
    return [text for value in found if value for text in {value, unquote(value, errors="replace")}]


def without_password(message: str, dsn: str) -> str:
    """libpq's complaint about `dsn`, with what may be (part of) a secret masked: in
    a URL, each secret as written (libpq quotes a malformed URL or a bad
    percent-escape whole); in a `key=value` string holding one, each quoted word
    that the string does not use as a key (libpq quotes the word after a space in an
    unquoted password)."""
    if "://" in dsn:
        for secret in sorted(_written_secrets(dsn), key=len, reverse=True):
            message = _masked(message, secret)
        return message
    if not any(option in dsn for option in SECRET_OPTIONS):
        return message

    def masked(word: re.Match[str]) -> str:
        text = word.group(1)
        is_key = re.search(rf"(^|\s){re.escape(text)}\s*=", dsn) is not None
        return word.group() if is_key or text == "=" else '"***"'

    # Where libpq cannot read a string, it cannot say where a password ends either:
    # every word from a secret key to the next key is masked where it stands apart,
    # quotes and all.
    for key in SECRET_OPTIONS:
        for tail in re.findall(rf"(?:^|\s){key}\s*=\s*(.*?)(?=\s+\w+\s*=|$)", dsn):
            for word in sorted(set(re.split(r"[\s\"'=\\]+", tail)) - {""}, key=len, reverse=True):
                message = _masked(message, word)
    return _QUOTED.sub(masked, message)


SAFE_OPTIONS: frozenset[str] = frozenset(
    {"host", "hostaddr", "port", "dbname", "user", "connect_timeout", "sslmode", "target_session_attrs"}
)
"""The connection options a message may show: where the server is and who connects.
Any other (`options`, which may set a search path; a certificate's file; a
password) shows as `***`."""


def redacted(conninfo: str) -> str:
    """`conninfo` with the value of every option but the `SAFE_OPTIONS` shown as `***`."""
    parts = conninfo_to_dict(conninfo)
    return make_conninfo("", **{key: value if key in SAFE_OPTIONS else "***" for key, value in parts.items()})


def masked_secrets(message: str, conninfo: str) -> str:
    """`message` with every secret value of `conninfo` masked where it stands apart."""
    parts = conninfo_to_dict(conninfo)
    for secret in sorted((str(parts[o]) for o in SECRET_OPTIONS & parts.keys()), key=len, reverse=True):
        if secret:
            message = _masked(message, secret)
    return message


_REFUSED_VALUE = re.compile(r'invalid (?:[a-z_]+ value: "|integer value "[^"]*" for connection option ")')
"""How libpq words its refusal of an option's value (`invalid sslmode value: "x"`,
`invalid integer value "5x" for connection option "port"`), before it connects."""


def _one_line(message: str) -> str:
    """libpq's message in one line: it puts a hint ("Is the server running...?"), and
    each host it tried, on lines of their own, which split a log line or an error."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    ended = [line if line.endswith((".", "?", ":")) else f"{line}." for line in lines[:-1]]
    return " ".join([*ended, *lines[-1:]])


def unavailable(conninfo: str, error: Exception) -> StoreUnavailableError | ValueError:
    """What a failed connection attempt raises: `ValueError` when libpq refused a value
    of the connection string, which no retry would change, else `StoreUnavailableError`;
    each with the password masked and no exception chained, as that would show it."""
    message = _one_line(masked_secrets(str(error).removeprefix("connection is bad: "), conninfo))
    if _REFUSED_VALUE.search(message):
        return ValueError(f"the dsn has a value libpq refuses: {message}")
    return StoreUnavailableError(f"PostgreSQL at {redacted(conninfo)} is unavailable: {message}")
