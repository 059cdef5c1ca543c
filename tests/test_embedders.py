"""The embedders of `lionmem.embedders` (ADR-0102): the offline model, functions of
your own and the deterministic one, and the recall quality the model reaches."""

from __future__ import annotations

import asyncio
import math
import subprocess
import sys
from typing import Any

import pytest

from lionmem import InMemoryStore, MemoryItem
from lionmem.embedders import FunctionEmbedder, HashingEmbedder, WordLlamaEmbedder
from lionmem.protocols.recall import Embedder
from tests.support.recall_quality import PAIRS, content_words

TOP_1_FLOOR = 35
"""Of the 50 questions, how many find their fact first: 37 measured on 2026-12-03."""
TOP_5_FLOOR = 45
"""How many find it in the first five: 47 measured on 2026-12-03."""


def run(body: Any) -> Any:
    return asyncio.run(body)


def test_each_embedder_is_an_embedder_with_its_identity() -> None:
    assert isinstance(WordLlamaEmbedder(), Embedder)
    assert WordLlamaEmbedder().identity == "wordllama:l2_supercat:256"
    assert WordLlamaEmbedder(64).dimensions == 64 and repr(WordLlamaEmbedder(64)) == "WordLlamaEmbedder(64)"
    assert HashingEmbedder(8).identity == "hashing:8" and repr(HashingEmbedder(8)) == "HashingEmbedder(8)"
    made = FunctionEmbedder(lambda texts: [[1.0] for _ in texts], dimensions=1, identity="ones")
    assert isinstance(made, Embedder)
    assert (made.identity, made.dimensions) == ("ones", 1)
    assert repr(made).startswith("FunctionEmbedder(<function") and "identity='ones'" in repr(made)


def test_a_function_may_be_async_and_may_give_a_numpy_array() -> None:
    import numpy as np

    async def remote(texts: list[str]) -> list[list[float]]:
        await asyncio.sleep(0)
        return [[float(len(t)), 0.0] for t in texts]

    assert run(FunctionEmbedder(remote, dimensions=2, identity="len").embed(["ab"])) == [[2.0, 0.0]]
    as_array = FunctionEmbedder(lambda texts: np.ones((len(texts), 3)), dimensions=3, identity="np")
    assert run(as_array.embed(["a", "b"])) == [[1.0, 1.0, 1.0]] * 2
    wrong = FunctionEmbedder(lambda texts: "vectors", dimensions=3, identity="bad")  # type: ignore[arg-type, return-value]
    with pytest.raises(TypeError, match="an embedder must give a sequence of vectors, got a str"):
        run(wrong.embed(["a"]))


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ((5,), TypeError, "function must be callable, got an int"),
        ((len,), TypeError, "dimensions must be an int"),
        ((len, 0, "x"), ValueError, "dimensions must be at least 1, got 0"),
        ((len, 2, " "), ValueError, "identity must name the model"),
        ((len, 2, 3), TypeError, "identity must be a str"),
    ],
)
def test_a_function_embedder_refuses_bad_arguments(arguments: tuple[Any, ...], error: type, message: str) -> None:
    function, *rest = arguments
    options = dict(zip(("dimensions", "identity"), rest, strict=False))
    options.setdefault("identity", "x")
    if "dimensions" not in options:
        options["dimensions"] = "2"
    with pytest.raises(error, match=message):
        FunctionEmbedder(function, **options)


def test_the_hashing_embedder_is_deterministic_and_refuses_bad_dimensions() -> None:
    first, second = run(HashingEmbedder(16).embed(["Hello, hello world", "world HELLO hello"]))
    assert first == second and sum(first) == 3.0
    with pytest.raises(ValueError, match="at least 1"):
        HashingEmbedder(0)
    with pytest.raises(TypeError, match="dimensions must be an int"):
        HashingEmbedder(1.5)  # type: ignore[arg-type]
    for wrong in (100, "256"):
        with pytest.raises((TypeError, ValueError), match="dimensions must be"):
            WordLlamaEmbedder(wrong)  # type: ignore[arg-type]


def test_the_model_loads_from_its_wheel_and_never_touches_the_network() -> None:
    code = """
import asyncio, socket
def refused(*args, **kwargs):
    raise OSError("the network was used")
class Local(socket.socket):
    def __init__(self, family=socket.AF_INET, *args, **kwargs):
        if family in (socket.AF_INET, socket.AF_INET6):
            refused()
        super().__init__(family, *args, **kwargs)
socket.socket = Local
socket.create_connection = refused
socket.getaddrinfo = refused
from lionmem.embedders import WordLlamaEmbedder
vectors = asyncio.run(WordLlamaEmbedder().embed(["The customer prefers email"] * 100))
print(len(vectors), len(vectors[0]), round(sum(v * v for v in vectors[0]), 4))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["100", "256", "1.0"]


def test_without_wordllama_the_model_names_the_extra() -> None:
    code = (
        "import sys; sys.modules['wordllama'] = None\n"
        "from lionmem.embedders import WordLlamaEmbedder\n"
        "try:\n    WordLlamaEmbedder().model()\nexcept ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("WordLlamaEmbedder needs wordllama: pip install 'lionmem[recall]'")


def test_small_and_large_batches_give_the_same_vectors() -> None:
    embedder = WordLlamaEmbedder(64)
    texts = [f"note number {n}" for n in range(100)]
    many = run(embedder.embed(texts))  # in a worker thread
    one = run(embedder.embed(texts[:1]))
    assert len(many) == 100 and len(many[0]) == 64
    assert one[0] == pytest.approx(many[0], abs=1e-6)
    assert math.isclose(sum(v * v for v in one[0]), 1.0, abs_tol=1e-5)
    assert run(embedder.embed([])) == []


def test_no_question_shares_a_content_word_with_its_fact() -> None:
    assert len(PAIRS) == 50
    assert [(f, q) for f, q in PAIRS if content_words(f) & content_words(q)] == []


def test_the_offline_model_recalls_the_labelled_facts_above_its_floor() -> None:
    async def body() -> tuple[int, int]:
        store = InMemoryStore(embedder=WordLlamaEmbedder())
        items = [MemoryItem(content=fact) for fact, _ in PAIRS]
        for item in items:
            await store.store(item)
        first = five = 0
        for (_, question), item in zip(PAIRS, items, strict=True):
            found = [r.item.id for r in await store.recall(question, 5)]
            first += found[0] == item.id
            five += item.id in found
        return first, five

    first, five = run(body())
    assert first >= TOP_1_FLOOR and five >= TOP_5_FLOOR, (first, five)


def test_hybrid_recall_ranks_each_labelled_fact_first_as_often_as_meaning_does() -> None:
    """Words count only through names and numbers (ADR-0104 D1): none of the fifty
    questions names one, so hybrid recall (k = 10) must put each fact first wherever recall by
    meaning does, alone and among 2,000 everyday notes. Before names were required, an
    everyday word the store held once ("often", "morning") cost four of them."""
    from lionmem.testing.notes import everyday_notes

    async def body(notes: int) -> tuple[int, int]:
        store = InMemoryStore(embedder=WordLlamaEmbedder())
        await store.store_many([MemoryItem(content=note) for note in everyday_notes(notes)])
        facts = [MemoryItem(content=fact) for fact, _ in PAIRS]
        await store.store_many(facts)
        meaning = hybrid = 0
        for (_, question), fact in zip(PAIRS, facts, strict=True):
            meaning += (await store.recall(question, 10))[0].item.id == fact.id
            hybrid += (await store.recall_hybrid(question, 10))[0].item.id == fact.id
        return meaning, hybrid

    for notes in (0, 2_000):
        meaning, hybrid = run(body(notes))
        assert hybrid >= meaning >= TOP_1_FLOOR - 10, (notes, meaning, hybrid)
