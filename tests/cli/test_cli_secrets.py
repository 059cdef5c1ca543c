"""No message shows a password, whatever string a user passes where a URL goes, and a
value libpq refuses is a usage error of one line (ADR-0098)."""

from __future__ import annotations

from pathlib import Path

import pytest

from lionmem.adapters.urls import open_store
from tests.support.cli_support import KNOWN, run_cli

SECRET = "hunter2"

# Each a way to pass a password where a URL goes: a libpq key/value string, URLs of
# other schemes or none, and PostgreSQL URLs that cannot connect, lack a namespace,
# hold a value libpq refuses, or give the password as an option.
STRINGS = [
    f"host=db password={SECRET} dbname=x",
    f"password={SECRET}",
    f"mysql://u:{SECRET}@h/db",
    f"u:{SECRET}@host/db",
    f":{SECRET}",
    f"postgres://u:{SECRET}@127.0.0.1:1/db",
    f"postgresql://u:{SECRET}@127.0.0.1:1/db?namespace=n&connect_timeout=1",
    f"postgresql://u:{SECRET}@127.0.0.1:1/db?namespace=n&sslmode=bogus",
    f"postgresql://u:{SECRET}@127.0.0.1:1/db?namespace=n&target_session_attrs=bogus",
    f"postgresql://u@127.0.0.1:1/db?namespace=n&password={SECRET}&timeout=1",
    f"postgresql://u:{SECRET}@127.0.0.1:1/db?namespace=n#frag",
]

COMMANDS = [
    ["put", "{url}", "content"],
    ["get", "{url}", KNOWN],
    ["search", "{url}"],
    ["delete", "{url}", KNOWN],
    ["forget", "{url}", "--all"],
    ["export", "{url}"],
    ["stats", "{url}"],
    ["copy", "{url}", "memory:"],
    ["copy", "memory:", "{url}"],
]


@pytest.mark.parametrize("url", STRINGS, ids=range(len(STRINGS)))
@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c[:1] + c[2:]))
def test_no_command_shows_a_password_given_where_a_url_goes(
    capsys: pytest.CaptureFixture[str], url: str, command: list[str]
) -> None:
    argv = [part.format(url=url) for part in command]
    try:
        status, out, err = run_cli(capsys, *argv)
    except SystemExit as exit_info:
        status, (out, err) = int(str(exit_info.code)), capsys.readouterr()
    assert status in (1, 2), (status, out, err)
    assert SECRET not in out + err
    assert len(err.strip().splitlines()[-1]) > 20 and "Traceback" not in err, err


@pytest.mark.parametrize("url", STRINGS, ids=range(len(STRINGS)))
def test_the_import_recall_and_check_commands_and_open_store_show_no_password(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, url: str
) -> None:
    export = tmp_path / "items.jsonl"
    export.write_text('{"lionmem_export": 1}\n', encoding="utf-8")
    for argv in (["import", url, str(export)], ["check", "--url", url + "{name}", "--only", "protocol"]):
        try:
            status, out, err = run_cli(capsys, *argv)
        except SystemExit as exit_info:
            status, (out, err) = int(str(exit_info.code)), capsys.readouterr()
        assert status in (1, 2) and SECRET not in out + err, (argv, out, err)
    try:
        shown = repr(open_store(url))  # a URL only a connection can check: nothing opens yet
    except ValueError as refused:
        shown = str(refused)
    assert SECRET not in shown


@pytest.mark.parametrize(
    ("option", "named"),
    [
        ("sslmode=bogus", 'invalid sslmode value: "bogus"'),
        ("target_session_attrs=bogus", "invalid target_session_attrs"),
    ],
)
def test_a_value_libpq_refuses_is_one_line_and_status_2(
    capsys: pytest.CaptureFixture[str], option: str, named: str
) -> None:
    with pytest.raises(SystemExit) as usage:
        run_cli(capsys, "search", f"postgresql://u:{SECRET}@127.0.0.1:1/db?namespace=n&{option}")
    err = capsys.readouterr().err
    assert usage.value.code == 2
    assert err.startswith("usage: python -m lionmem search ")
    (message,) = [line for line in err.splitlines() if "error:" in line]
    assert named in message and SECRET not in err
