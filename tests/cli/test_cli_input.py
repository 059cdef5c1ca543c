"""Values typed on the command line: JSON, pairs and ids, held to a durable store's rules."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any
from uuid import uuid4

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from lionmem.cli._input import FORMS, filters
from lionmem.filters import Ge, Gt, In, Le, Lt, Missing, Ne, NotIn, Present
from tests.support.cli_support import KNOWN, lines_of, run_cli

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=8,
)

KEYS = st.text(min_size=1, max_size=8).filter(lambda key: "=" not in key and not key.endswith(":"))


def test_put_refuses_content_a_durable_store_cannot_keep(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Undecodable bytes on a command line reach Python as lone surrogates: a usage
    # error naming the argument; one written as an escape in JSON is the store's refusal.
    url = f"sqlite:///{tmp_path / 'n.db'}"
    with pytest.raises(SystemExit) as usage:
        run_cli(capsys, "put", url, "bad \udcff byte")
    assert usage.value.code == 2
    assert "argument 3 is not UTF-8 text (byte 0xff)" in capsys.readouterr().err
    status, out, err = run_cli(capsys, "put", url, '"bad \\udcff byte"', "--json")
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
    # In --filter a key holding an operator (`>`, ` in `...) is written as a JSON string.
    quoted, quoted_t = json.dumps(key), json.dumps(f"{key}_t")
    # Exact text, spaces and all, is a JSON string: KEY=TEXT trims it (ADR-0099 D8).
    exact = json.dumps(text)
    found = run_cli(capsys, "search", url, f"--filter={quoted}:={as_json}", f"--filter={quoted_t}:={exact}")[1]
    assert [line["id"] for line in lines_of(found)] == [out.strip()]


@pytest.mark.parametrize(
    ("expression", "key", "condition"),
    [
        ("importance>=3", "importance", Ge(3)),
        ("importance>2.5", "importance", Gt(2.5)),
        ("rank<=10", "rank", Le(10)),
        ("name<m", "name", Lt("m")),
        ('name<"3"', "name", Lt("3")),
        ("source!=chat", "source", Ne("chat")),
        ("flag!=true", "flag", Ne(True)),
        ("kind in fact,preference", "kind", In(["fact", "preference"])),
        ('kind not in ["a,b", 1, null]', "kind", NotIn(["a,b", 1, None])),
        ("user id present", "user id", Present()),
        ("deleted_at missing", "deleted_at", Missing()),
        ("k>=nancy", "k", Ge("nancy")),  # not JSON, so the text
        ("importance >= 3", "importance", Ge(3)),  # spaces around the operator
        ("kind  in a , b", "kind", In(["a", "b"])),
        (" kind = fact ", "kind", "fact"),
        ("n:= 3 ", "n", 3),
        ("x  missing", "x", Missing()),
        ("a>=b=c", "a", Ge("b=c")),  # the first operator ends the key
        ("a=b>=c", "a", "b>=c"),
        ("n:=3", "n", 3),
        ('"a>b">=3', "a>b", Ge(3)),  # a key holding an operator, quoted
        ('"x"=y', "x", "y"),
        ('"kind in" in a,b', "kind in", In(["a", "b"])),
    ],
)
def test_each_filter_expression_reads_as_its_condition(expression: str, key: str, condition: object) -> None:
    ((read_key, value),) = filters([expression]).items()
    assert read_key == key
    assert type(value) is type(condition) and value == condition


@pytest.mark.parametrize(
    ("expressions", "message"),
    [
        (["x>=[1]"], "--filter 'x>=[1]': Ge takes a number or a string, got list"),
        (["x<null"], "--filter 'x<null': Lt takes a number or a string, got NoneType"),
        (["x:=[1"], "--filter 'x':=...: the value '[1' is not JSON: Expecting ','"),
        (
            ["kind:=fact"],
            "--filter 'kind':=...: the value 'fact' is not JSON: Expecting value: line 1 column 1 (char 0); for the "
            "text, write kind=TEXT",
        ),
        ([">=3"], "--filter '>=3' names no key; write KEY=TEXT"),
        ([" present"], "--filter ' present' names no key"),
        (["nothing"], "--filter 'nothing' has no operator"),
        (['"a>b"3'], """--filter '"a>b"3': no operator follows the key 'a>b'"""),
        (['"a>b'], """--filter '"a>b' opens a quoted key it does not close"""),
        (["k>1", "k<5"], "--filter gives the key 'k' twice"),
        (["importance=>3"], "--filter 'importance=>3': '=>' is no operator; for '>=' write importance>=V"),
        (["importance=<3"], "--filter 'importance=<3': '=<' is no operator; for '<=' write importance<=V"),
        (["k==3"], "--filter 'k==3': '==' is no operator; for '=' write k=V"),
        # Operators of other languages, doubled or split by a space: each once read as
        # another operator and a value beginning with the rest (`year != "= 2024"`).
        (["year<>2024"], "--filter 'year<>2024': '<>' is no operator; for '!=' write year!=V"),
        (["year><2024"], "--filter 'year><2024': '><' is no operator; for '!=' write year!=V"),
        (["year>==2024"], "--filter 'year>==2024': '>==' is no operator; for '>=' write year>=V"),
        (["year<==2024"], "--filter 'year<==2024': '<==' is no operator; for '<=' write year<=V"),
        (["year !== 2024"], "--filter 'year !== 2024': '!==' is no operator; for '!=' write year!=V"),
        (["year >> 3"], "--filter 'year >> 3': '>>' is no operator; for '>' write year>V"),
        (["year<<3"], "--filter 'year<<3': '<<' is no operator; for '<' write year<V"),
        (["year ! = 3"], "--filter 'year ! = 3': '! =' is no operator; for '!=' write year!=V"),
        (["year < = 3"], "--filter 'year < = 3': '< =' is no operator; for '<=' write year<=V"),
        (["year> =3"], "--filter 'year> =3': '> =' is no operator; for '>=' write year>=V"),
        (["year >=> 3"], "--filter 'year >=> 3': '>=>' is no operator; for '>=' write year>=V"),
        (["kind not  in a,b"], "--filter 'kind not  in a,b': for 'not in' write kind not in V,V, one space apart"),
        (["importance>="], "--filter 'importance>=': gives an empty value"),
        (["k="], "--filter 'k=': gives an empty value"),
        (["k:= "], "--filter 'k:= ': gives an empty value"),
        (["k in 1,,2"], "--filter 'k in 1,,2': gives an empty value"),
        (
            ["importance>=1e999"],
            "--filter 'importance>=1e999': '1e999' is not JSON: 1e999 is beyond the range of a float",
        ),
        (["k>=NaN"], "--filter 'k>=NaN': 'NaN' is not JSON: NaN is not a JSON value"),
        (["k>=Infinity"], "--filter 'k>=Infinity': 'Infinity' is not JSON: Infinity is not a JSON value"),
        (["k > -inf"], "--filter 'k > -inf': '-inf' is not JSON"),
        (["kind in [a,b"], "--filter 'kind in [a,b': the list is not JSON"),
        (['k<"open'], """--filter 'k<"open': '"open' is not JSON"""),
    ],
)
def test_a_filter_that_cannot_be_read_is_a_usage_error_naming_it(expressions: list[str], message: str) -> None:
    with pytest.raises(ValueError) as refused:
        filters(expressions)
    assert str(refused.value).startswith(message)


def test_a_typo_in_forget_deletes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`forget --filter 'year !== 2024'` once read as `year != "= 2024"` and reported the
    one item the user meant to keep; it is refused, and nothing is deleted."""
    url = f"sqlite:///{tmp_path / 'n.db'}"
    run_cli(capsys, "put", url, "kept", "--meta", "year:=2024")
    for typo in ("year !== 2024", "year<>2024", "year>==2024"):
        with pytest.raises(SystemExit) as usage:
            run_cli(capsys, "forget", url, "--filter", typo)
        assert usage.value.code == 2
        assert capsys.readouterr().err.startswith("usage: python -m lionmem forget ")
    status, out, _ = run_cli(capsys, "search", url)
    assert status == 0 and [line["content"] for line in lines_of(out)] == ["kept"]


def test_search_applies_the_operators_on_a_durable_store(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    for importance, kind in ((5, "fact"), (2, "preference"), (3.5, "event")):
        run_cli(
            capsys, "put", url, f"{kind} {importance}", "--meta", f"importance:={importance}", "--meta", f"kind={kind}"
        )
    status, out, _ = run_cli(capsys, "search", url, "--filter", "importance>=3", "--filter", "kind in fact,event")
    assert status == 0 and [line["content"] for line in lines_of(out)] == ["fact 5", "event 3.5"]
    with pytest.raises(SystemExit) as usage:
        run_cli(capsys, "search", url, "--filter", "importance>=[3]")
    assert usage.value.code == 2
    assert "error: --filter 'importance>=[3]': Ge takes a number or a string, got list" in capsys.readouterr().err


@pytest.mark.parametrize(
    "expression", ["importance=>3", "importance>=", "importance>=1e999", "k>=NaN", "kind in [a,b", "k in a,,b"]
)
def test_a_filter_outside_the_rule_is_a_usage_error_showing_the_valid_forms(
    capsys: pytest.CaptureFixture[str], expression: str
) -> None:
    # Each of these once matched nothing, or the wrong items, with status 0.
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "search", "memory:", "--filter", expression)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.startswith("usage: python -m lionmem search ")
    assert err.rstrip().endswith(f"; {FORMS}")


def test_spaces_around_an_operator_find_what_the_expression_means(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path / 'n.db'}"
    for n, kind in enumerate(["a", "b", "c"]):
        run_cli(capsys, "put", url, f"item {n}", "--meta", f"importance:={n + 2}", "--meta", f"kind={kind}")
    found = run_cli(capsys, "search", url, "--filter", "importance >= 3", "--filter", "kind  in  a , b")[1]
    assert [line["content"] for line in lines_of(found)] == ["item 1"]


def test_an_argument_that_is_not_utf8_is_a_usage_error() -> None:
    """Bytes that are not UTF-8 reach Python as lone surrogates; `put` once stored
    nothing and exited 1 with a message about surrogates."""
    done = subprocess.run(
        [sys.executable, "-m", "lionmem", "put", b"memory:", b"caf\xe9"], capture_output=True, check=False
    )
    assert done.returncode == 2
    assert done.stderr.decode().splitlines()[-1] == (
        "python -m lionmem put: error: argument 3 is not UTF-8 text (byte 0xe9)"
    )
