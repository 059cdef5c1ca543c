"""Connection strings: what is refused before connecting, and passwords kept out of every message."""

from __future__ import annotations

import re
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from lionmem.adapters.postgres import (
    PostgresMemoryStore,
    StoreUnavailableError,
)
from lionmem.adapters.postgres._dsn import SECRET_OPTIONS, masked_secrets, redacted
from lionmem.adapters.urls import open_store
from lionmem.cli import main
from tests.support.postgres_support import execute, open_only, run, unused_port, with_store


def test_a_malformed_dsn_is_refused_before_connecting() -> None:
    with pytest.raises(ValueError, match='invalid URI query parameter: "colour"') as refused:
        PostgresMemoryStore.open("postgresql://me:s3cret@db.invalid/x?colour=red", namespace="n")
    assert "s3cret" not in str(refused.value)
    with pytest.raises(ValueError, match="not a libpq connection string"):
        PostgresMemoryStore.open("host=h password=s3cret dangling", namespace="n")


@pytest.mark.parametrize(
    "dsn",
    [
        "postgresql://me:Qx7@Zp4@db.invalid/x",  # libpq: password "Qx7", host "Zp4@db.invalid"
        "postgresql://me:Qx7/Zp4@db.invalid/x",  # libpq: host "me", port "Qx7", database "Zp4@..."
        "postgresql://me@db.invalid:Qx7@db.invalid/x",  # libpq: port "Qx7@db.invalid"
    ],
)
def test_a_url_password_with_a_bare_at_or_slash_is_refused_without_showing_it(dsn: str) -> None:
    # libpq would read the rest of such a password as the host, port or database,
    # which the connection's error message then shows.
    with pytest.raises(ValueError, match="%40") as refused:
        PostgresMemoryStore.open(dsn, namespace="n")
    assert "Qx7" not in str(refused.value) and "Zp4" not in str(refused.value)


def test_an_at_after_the_host_is_refused_but_not_in_the_query() -> None:
    with pytest.raises(ValueError, match="%40"):
        PostgresMemoryStore.open("postgresql://me@db.invalid/my@db", namespace="n")
    PostgresMemoryStore.open("postgresql://me@db.invalid/my%40db?application_name=a@b", namespace="n")


@pytest.mark.parametrize(
    ("dsn", "complaint"),
    [
        ("host=db.invalid password=Qx7 Zp4!", 'missing "=" after "***"'),
        ("postgresql://me:Qx7Zp4@[::1/db", 'matching "]" in IPv6 host address in URI: "postgresql://me:***@[::1/db"'),
        ("postgresql://me:Qx7Zp4@[::1]x/db", 'unexpected character "x"'),
        # A short password is masked where it stands apart, not inside other words.
        ("postgresql://me:e@[::1/db", 'matching "]" in IPv6 host address in URI: "postgresql://me:***@[::1/db"'),
        ("postgresql://me:e@db.invalid/db%ZZ", 'invalid percent-encoded token: "db%ZZ"'),
        # With no password, nothing is masked.
        ("host=db.invalid port", 'missing "=" after "port"'),
        ("postgresql://db.invalid/x?colour=red", 'invalid URI query parameter: "colour"'),
    ],
)
def test_a_dsn_libpq_cannot_read_is_refused_without_its_password(dsn: str, complaint: str) -> None:
    with pytest.raises(ValueError, match=re.escape(complaint)) as refused:
        PostgresMemoryStore.open(dsn, namespace="n")
    assert "Qx7" not in str(refused.value) and "Zp4" not in str(refused.value)


def test_a_short_password_is_masked_only_where_it_stands_apart(pg_url: str) -> None:
    """Not inside the words and addresses of the server's answer."""
    for password, intact in [("pass", "password authentication failed"), ("1", '"127.0.0.1"')]:
        dsn = psycopg.conninfo.make_conninfo(pg_url, password=password, host="127.0.0.1")
        with pytest.raises(StoreUnavailableError) as failure:
            run(open_only(dsn, namespace="n", timeout=5))
        assert intact in str(failure.value) and "password=***" in str(failure.value)


def test_a_server_message_quoting_the_password_is_masked(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever the reason a connection fails, its message never shows the password,
    even where the driver's message quotes it."""

    async def quoting(*args: object, **kwargs: object) -> None:
        raise psycopg.OperationalError('connection failed: bad option "Qx7Zp4" for "me"')

    monkeypatch.setattr(psycopg.AsyncConnection, "connect", quoting)
    with pytest.raises(StoreUnavailableError) as failure:
        run(open_only("postgresql://me:Qx7Zp4@db.invalid/x", namespace="n"))
    assert str(failure.value).endswith('is unavailable: connection failed: bad option "***" for "me"')


def test_a_key_value_dsn_error_still_names_an_unknown_key() -> None:
    # A key libpq does not know is still named: it is no secret.
    with pytest.raises(ValueError, match='invalid connection option "colour"'):
        PostgresMemoryStore.open("host=db.invalid password=Qx7 colour=red", namespace="n")


def test_options_in_the_dsn_are_kept_beside_the_statement_timeout(pg_url: str) -> None:
    dsn = psycopg.conninfo.make_conninfo(pg_url, options="-c application_name=kept-by-lionmem")

    async def settings(store: PostgresMemoryStore) -> list[tuple[Any, ...]]:
        return await execute(store, "SELECT current_setting('application_name'), current_setting('statement_timeout')")

    assert with_store(dsn, settings, statement_timeout=7) == [("kept-by-lionmem", "7s")]


@pytest.mark.parametrize(
    ("dsn", "message"),
    [
        ("postgresql://db.invalid/x?connect_timeout=3", "the dsn sets connect_timeout"),
        ("host=db.invalid connect_timeout=3", "the dsn sets connect_timeout"),
        ("host=db.invalid options='-c statement_timeout=5s'", "the dsn's options set statement_timeout"),
        ("host=db.invalid options='-cstatement_timeout=5s'", "the dsn's options set statement_timeout"),
        ("host=db.invalid options='--statement-timeout=5s'", "the dsn's options set statement_timeout"),
        ("host=db.invalid options='-c lock_timeout=1s -c Statement_Timeout=5s'", "options set statement_timeout"),
        ("postgresql://db.invalid/x?options=-c%20statement_timeout%3D5s", "options set statement_timeout"),
    ],
)
def test_a_dsn_setting_a_timeout_that_open_sets_is_refused(dsn: str, message: str) -> None:
    """`open` would replace the dsn's value with its own argument's, unseen."""
    with pytest.raises(ValueError, match=re.escape(message)):
        PostgresMemoryStore.open(dsn, namespace="n")
    PostgresMemoryStore.open("host=db.invalid options='-c lock_timeout=5s'", namespace="n")
    # Only a switch sets it, not the words inside another setting's value.
    words = "host=db.invalid options='-c application_name=a--statement-timeout=1'"
    PostgresMemoryStore.open(words, namespace="n")


def test_options_from_the_environment_or_a_service_file_are_kept(
    pg_url: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """libpq reads PGOPTIONS, or a service file's `options`, only when the connection
    string has none of its own; the statement timeout is still `open`'s."""

    async def settings(store: PostgresMemoryStore) -> list[tuple[Any, ...]]:
        return await execute(store, "SELECT current_setting('application_name'), current_setting('statement_timeout')")

    monkeypatch.setenv("PGOPTIONS", "-c application_name=from-pgoptions -c statement_timeout=1s")
    assert with_store(pg_url, settings, statement_timeout=7) == [("from-pgoptions", "7s")]
    services = tmp_path / "pg_service.conf"
    services.write_text("[lionmem]\noptions=-c application_name=from-service -c statement_timeout=1s\n")
    monkeypatch.setenv("PGSERVICEFILE", str(services))
    dsn = psycopg.conninfo.make_conninfo(pg_url, service="lionmem")
    assert with_store(dsn, settings, statement_timeout=7) == [("from-service", "7s")]


LIBPQ_SECRETS = sorted(o.keyword.decode() for o in psycopg.pq.Conninfo.get_defaults() if o.dispchar == b"*")
"""The options this libpq marks as secret, asked of libpq as the store asks it."""


def _chained(error: BaseException) -> list[BaseException]:
    """`error` and every exception reachable from it as a cause or a context."""
    found: list[BaseException] = []
    pending: list[BaseException | None] = [error]
    while pending:
        current = pending.pop()
        if current is not None and all(current is not seen for seen in found):
            found.append(current)
            pending += [current.__cause__, current.__context__]
    return found


def _shown(error: BaseException, secret: str) -> list[str]:
    """Where `secret` shows in `error` or anything chained to it: its text, its
    arguments, or the libpq connection a psycopg error keeps."""
    return [
        f"{type(each).__name__}: {place}"
        for each in _chained(error)
        for place, text in (
            ("str", str(each)),
            ("args", repr(each.args)),
            ("pgconn", repr(getattr(each, "pgconn", None))),
        )
        if secret in text
    ]


def test_the_store_masks_what_this_libpq_marks_as_secret() -> None:
    # libpq 18 adds oauth_client_secret; the floor's bundled libpq has the first two.
    assert {"password", "sslpassword"} <= set(LIBPQ_SECRETS)
    assert SECRET_OPTIONS == set(LIBPQ_SECRETS)


@pytest.mark.parametrize("option", LIBPQ_SECRETS)
def test_each_secret_option_stays_out_of_repr_errors_and_their_chains(
    pg_url: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = f"S3cret-{option}-KEYPASS"
    unreachable = make_conninfo(f"postgresql://me@127.0.0.1:{unused_port()}/db", **{option: secret})
    with pytest.raises(StoreUnavailableError) as failure:
        run(open_only(unreachable, namespace="n", timeout=5))
    assert _shown(failure.value, secret) == []
    assert f"{option}=***" in str(failure.value)
    # A broken percent-escape: libpq quotes the token whole.
    with pytest.raises(ValueError) as refused:
        run(open_only(f"postgresql://me@127.0.0.1/db?{option}={secret}%ZZ", namespace="n"))
    assert _shown(refused.value, secret) == []
    assert "invalid percent-encoded token" in str(refused.value)
    # An open store shows none in its repr, nor the command line in its errors.
    given = secret if option != "password" else str(conninfo_to_dict(pg_url)["password"])
    reachable = make_conninfo(pg_url, **{option: given})

    async def shown(store: PostgresMemoryStore) -> str:
        return repr(store)

    described = with_store(reachable, shown)
    assert given not in described and f"{option}=***" in described
    url = f"postgresql://me@127.0.0.1:{unused_port()}/db?namespace=n&{option}={secret}&connect_timeout=5"
    assert main(["search", url.replace("&connect_timeout=5", "")]) == 1
    out, err = capsys.readouterr()
    assert secret not in out + err and "is unavailable" in err


def test_an_empty_secret_masks_nothing() -> None:
    # Masking the empty string would put *** between every two characters.
    message = 'connection to server at "127.0.0.1", port 1 failed'
    assert masked_secrets(message, "host=127.0.0.1 password='' sslpassword=''") == message
    assert masked_secrets(message + " KEY", "host=127.0.0.1 sslpassword=KEY") == message + " ***"


def _refusal(call: Callable[[], object]) -> ValueError:
    try:
        call()
    except ValueError as refused:
        return refused
    raise AssertionError("not refused")  # pragma: no cover


def _everything_shown(error: BaseException) -> str:
    """What an error tracker shows but the source lines: the message and its chain,
    and every local of every frame the traceback passed through, as
    `TracebackException(capture_locals=True)` gives them."""
    shown: traceback.TracebackException | None = traceback.TracebackException.from_exception(error, capture_locals=True)
    parts: list[str] = []
    while shown is not None:
        parts.append("".join(shown.format_exception_only()))
        parts += [repr(frame.locals) for frame in shown.stack]
        shown = shown.__cause__ or shown.__context__
    return "\n".join(parts)


@pytest.mark.parametrize(
    "call",
    [
        # Each password is written in two pieces, so that no source line a traceback
        # shows holds it whole.
        lambda: PostgresMemoryStore.open("host=db.invalid password=a" + 'bc de"Quot' + '_k25"fg', namespace="n"),
        lambda: open_store("postgresql://me:Quot" + "_k25abc@db.invalid/x?namespace=n&colour=red"),
        lambda: PostgresMemoryStore.open(
            "postgresql://me:Quot" + "_k25abc@db.invalid/x?connect_timeout=3", namespace="n"
        ),
    ],
    ids=["quotes and a space in a key=value password", "a URL with an unknown option", "a timeout the store sets"],
)
def test_no_part_of_a_password_is_in_the_message_or_any_frame(call: Callable[[], object]) -> None:
    refused = _refusal(call)
    shown = _everything_shown(refused)
    assert "Quot_k25" not in shown and "abc" not in shown, shown
    assert "fg" not in str(refused) and " de" not in str(refused)


def test_messages_show_only_the_options_known_to_be_safe() -> None:
    conninfo = make_conninfo(
        "host=db.example port=5433 dbname=notes user=me password=pw sslrootcert=/secret/ca.pem",
        options="-c search_path=tenant_42",
    )
    shown = redacted(conninfo)
    assert conninfo_to_dict(shown) == {
        "host": "db.example",
        "port": "5433",
        "dbname": "notes",
        "user": "me",
        "password": "***",
        "sslrootcert": "***",
        "options": "***",
    }
