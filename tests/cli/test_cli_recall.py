"""`python -m lionmem recall` (ADR-0102): items by meaning with their scores, the
offline model, and what it refuses."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from lionmem import MemoryItem
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.adapters.urls import open_store
from lionmem.embedders import HashingEmbedder
from tests.support.cli_support import fill, run_cli
from tests.support.pg_server import fresh_database

EMBEDDED = (
    "python -m lionmem: embedding the items that have no vector for this model yet\n"
    "python -m lionmem: embedded {} items\n"
)


def test_recall_prints_the_best_items_with_their_scores(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    fact = MemoryItem(content="The customer prefers email", tags=["crm"])
    fill(url, [fact, MemoryItem(content="The office is closed on Fridays"), MemoryItem(content="Renewal in May")])
    status, out, err = run_cli(capsys, "recall", url, "How should we contact the client?", "-k", "2")
    # Written without a model, the items are embedded by the first recall, which says so.
    assert (status, err) == (0, EMBEDDED.format(3))
    assert run_cli(capsys, "recall", url, "How should we contact the client?", "-k", "2") == (0, out, "")
    lines = [json.loads(line) for line in out.splitlines()]
    assert len(lines) == 2 and lines[0]["item"]["id"] == str(fact.id)
    assert lines[0]["score"] >= lines[1]["score"] and set(lines[0]) == {"score", "item"}
    status, out, _ = run_cli(capsys, "recall", url, "contact", "--tag", "crm", "--filter", "missing present")
    assert status == 0 and out == ""


def test_recall_hybrid_prints_each_rankings_part(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    tickets = [MemoryItem(content=f"Ticket {20000 + n} waits on the vendor") for n in range(150)]
    fill(url, tickets)
    status, out, err = run_cli(capsys, "recall", url, "ticket 20140", "-k", "2", "--hybrid")
    assert (status, err) == (0, EMBEDDED.format(150))
    first, second = (json.loads(line) for line in out.splitlines())
    assert first["item"]["id"] == str(tickets[140].id)
    assert (first["words_rank"], first["identified"]) == (1, True) and first["words_score"] > 0
    assert list(first) == ["score", "meaning_rank", "meaning_score", "words_rank", "words_score", "identified", "item"]
    assert second["words_rank"] is None and second["identified"] is False
    assert first["score"] >= second["score"]
    plain = [json.loads(line) for line in run_cli(capsys, "recall", url, "ticket 20140", "-k", "2")[1].splitlines()]
    assert [set(line) for line in plain] == [{"score", "item"}] * 2


def test_min_score_leaves_out_what_scores_below_it(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    tickets = [MemoryItem(content=f"Ticket {20000 + n} waits on the vendor") for n in range(150)]
    fill(url, [*tickets, MemoryItem(content="Lunch on Friday with the design team")])
    every = [
        json.loads(line) for line in run_cli(capsys, "recall", url, "lunch with the team", "-k", "3")[1].splitlines()
    ]
    floor = (every[0]["score"] + every[1]["score"]) / 2
    status, out, err = run_cli(capsys, "recall", url, "lunch with the team", "-k", "3", "--min-score", str(floor))
    assert (status, err) == (0, "") and [json.loads(line)["item"]["id"] for line in out.splitlines()] == [
        every[0]["item"]["id"]
    ]
    status, out, _ = run_cli(capsys, "recall", url, "ticket 20140", "-k", "2", "--hybrid", "--min-score", "1")
    [line] = [json.loads(line) for line in out.splitlines()]
    assert status == 0 and line["item"]["id"] == str(tickets[140].id) and line["meaning_rank"] is None
    for given, message in (("1.5", "min_score must be from -1 to 1, got 1.5"), ("high", "invalid float value: 'high'")):
        with pytest.raises(SystemExit) as exit_info:
            run_cli(capsys, "recall", url, "note", "--min-score", given)
        assert exit_info.value.code == 2 and message in capsys.readouterr().err


def test_recall_on_an_empty_store_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'm.db'}"
    fill(url, [])
    status, out, err = run_cli(capsys, "recall", url, "anything")
    assert (status, out) == (0, "") and "the store holds no items" in err


def test_recall_refuses_memory_which_is_always_empty(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "recall", "memory:", "anything")
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.endswith("error: recall memory: would recall from a new, empty store; name a durable one\n")


def test_a_store_of_another_embedder_is_named_and_bad_arguments_are_usage_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "other.db"

    async def made_with_another() -> None:
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(16)) as store:
            await store.store(MemoryItem(content="note"))

    asyncio.run(made_with_another())
    status, _, err = run_cli(capsys, "recall", f"sqlite:///{path}", "note")
    assert status == 1
    assert "'hashing:16' (16 dimensions), not by 'wordllama:l2_supercat:256' (256)" in err
    assert err.endswith("(on the command line: recall --embedder NAME with that model, or --reembed)\n")
    with pytest.raises(SystemExit) as exit_info:
        run_cli(capsys, "recall", f"sqlite:///{path}", "note", "-k", "0")
    assert exit_info.value.code == 2 and "k must be at least 1, got 0" in capsys.readouterr().err
    status, _, err = run_cli(capsys, "recall", f"sqlite:///{tmp_path / 'none.db'}", "note")
    assert status == 1 and "this command creates none" in err
    assert not (tmp_path / "none.db").exists()


def test_recall_reads_a_postgres_url_with_pgvector(
    capsys: pytest.CaptureFixture[str], pgvector_server_url: str
) -> None:
    url = fresh_database(pgvector_server_url) + "?namespace=cli"

    async def write() -> None:
        async with open_store(url) as store:
            for content in ("The customer prefers email", "Rain"):
                await store.store(MemoryItem(content=content))

    asyncio.run(write())
    status, out, _ = run_cli(capsys, "recall", url, "How should we contact the client?", "-k", "1")
    assert status == 0 and "The customer prefers email" in out


def hashing_16() -> HashingEmbedder:
    return HashingEmbedder(16)


HASHING_16 = HashingEmbedder(16)


def test_embedder_names_the_model_recall_opens_the_store_with(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "hashed.db"

    async def made_with_hashing() -> None:
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(16)) as store:
            await store.store(MemoryItem(content="Renewal is due in May"))

    asyncio.run(made_with_hashing())
    url = f"sqlite:///{path}"
    # A function of no arguments that makes one: the file's own model, nothing to embed.
    status, out, err = run_cli(capsys, "recall", url, "renewal", "--embedder", f"{__name__}:hashing_16")
    assert (status, err) == (0, "") and json.loads(out)["item"]["content"] == "Renewal is due in May"
    # An embedder itself is used as it is.
    assert run_cli(capsys, "recall", url, "renewal", "--embedder", f"{__name__}:HASHING_16") == (0, out, "")
    # A class is made with no arguments (64 dimensions), and the store refuses it.
    status, _, err = run_cli(capsys, "recall", url, "renewal", "--embedder", "lionmem.embedders:HashingEmbedder")
    assert status == 1 and "not by 'hashing:64' (64)" in err
    status, _, err = run_cli(capsys, "recall", url, "renewal", "--embedder", "wordllama:64")
    assert status == 1 and "not by 'wordllama:l2_supercat:64' (64)" in err
    for name, message in [
        ("nope", "--embedder nope: 'nope' is not of the form module:attribute; or wordllama, wordllama:DIMENSIONS"),
        ("wordllama:13", "--embedder wordllama:13: dimensions must be 64, 128 or 256, got 13"),
        ("lionmem:MemoryItem", "--embedder lionmem:MemoryItem gave a MemoryItem, not an Embedder"),
        ("json:dumps", "--embedder json:dumps: making the embedder raised TypeError: "),
        ("lionmem.embedders:nothing", "module 'lionmem.embedders' has no attribute 'nothing'"),
    ]:
        with pytest.raises(SystemExit) as exit_info:
            run_cli(capsys, "recall", url, "renewal", "--embedder", name)
        err = capsys.readouterr().err
        assert exit_info.value.code == 2 and message in err, (name, err)


def test_the_query_is_embedded_once_and_every_other_text_counts_as_an_item(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from lionmem.cli._recall import Telling

    telling = Telling(HashingEmbedder(16), "renewal")
    assert (telling.identity, telling.dimensions) == ("hashing:16", 16)

    async def embed() -> None:
        await telling.embed(["renewal"])  # the query
        assert capsys.readouterr().err == ""
        await telling.embed(["renewal"])  # an item whose text is the query's
        await telling.embed(["a", "b"])

    asyncio.run(embed())
    telling.done()
    assert telling.items == 3
    assert capsys.readouterr().err == EMBEDDED.format(3)


def test_reembed_makes_the_vectors_again_with_the_model_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "other.db"

    async def made_with_another() -> None:
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(16)) as store:
            await store.store(MemoryItem(content="The customer prefers email"))

    asyncio.run(made_with_another())
    url = f"sqlite:///{path}"
    status, out, err = run_cli(capsys, "recall", url, "contact the client", "-k", "1", "--reembed")
    assert (status, err) == (0, EMBEDDED.format(1).replace("1 items", "1 item"))
    assert json.loads(out)["item"]["content"] == "The customer prefers email"
    status, again, err = run_cli(capsys, "recall", url, "contact the client", "-k", "1")
    assert (status, again, err) == (0, out, "")  # the file's vectors are the model's now
