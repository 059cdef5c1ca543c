"""Values typed on the command line: JSON, pairs and ids, held to a durable store's rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from cli_support import KNOWN, lines_of, run_cli
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)

KEYS = st.text(min_size=1, max_size=8).filter(lambda key: "=" not in key and not key.endswith(":"))


def test_put_refuses_content_a_durable_store_cannot_keep(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Undecodable bytes on a command line reach Python as lone surrogates.
    url = f"sqlite:///{tmp_path / 'n.db'}"
    status, out, err = run_cli(capsys, "put", url, "bad \udcff byte")
    assert (status, out) == (1, "")
    assert "lone surrogate U+DCFF" in err
    assert run_cli(capsys, "search", url)[1] == ""


def test_the_deepest_content_a_store_keeps_goes_in_and_comes_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # pydantic writes at most 255 levels of content; the durable stores keep 500.
    url = f"sqlite:///{tmp_path / 'n.db'}"
    deepest = "[" * 500 + "]" * 500
    assert run_cli(capsys, "put", url, deepest, "--json", "--id", KNOWN)[:2] == (0, KNOWN + "\n")
    status, out, err = run_cli(capsys, "get", url, KNOWN)
    assert (status, err) == (0, "")
    assert lines_of(out)[0]["content"] == json.loads(deepest)
    status, out, err = run_cli(capsys, "search", url, "--filter", "k:=" + deepest)
    assert (status, out, err) == (0, "", "")
    assert [line["content"] for line in lines_of(run_cli(capsys, "search", url)[1])] == [json.loads(deepest)]


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(key=KEYS, value=JSON_VALUES, text=st.text(max_size=10))
def test_values_typed_in_a_shell_round_trip_and_find_their_item(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str, value: Any, text: str
) -> None:
    url = f"sqlite:///{tmp_path / f'{uuid4().hex}.db'}"
    as_json = json.dumps(value)
    # --meta=PAIR, so that a key starting with '-' is not read as an option.
    status, out, err = run_cli(capsys, "put", url, "x", f"--meta={key}:={as_json}", f"--meta={key}_t={text}")
    assert (status, err) == (0, "")
    [stored] = lines_of(run_cli(capsys, "get", url, out.strip())[1])
    assert stored["metadata"] == {key: value, f"{key}_t": text}
    found = run_cli(capsys, "search", url, f"--filter={key}:={as_json}", f"--filter={key}_t={text}")[1]
    assert [line["id"] for line in lines_of(found)] == [out.strip()]
