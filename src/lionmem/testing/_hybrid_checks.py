"""The check of hybrid recall against a reference fusion of the store's own ranking
by meaning and a brute-force ranking by rare words. See [ADR-0104][adr-0104].
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any
from uuid import UUID

from lionmem.protocols.hybrid import (
    BM25_K1,
    COUNTED_UP_TO,
    IDENTIFIER_WEIGHT,
    RRF_K,
    HybridRecalled,
    HybridStore,
    rare_bound,
)
from lionmem.protocols.memory import MemoryItem, MemoryQuery
from lionmem.protocols.rules import matches
from lionmem.testing._brute import Brute
from lionmem.testing._probe import Probe, numbered

K = 10

ORDERS = [f"order 70{n:02d}, {state}." for n, state in enumerate(["shipped", "held at customs", "shipped", "lost"])]
"""Items that differ by a number: the check's identifiers."""

ASKED: list[tuple[str, list[str] | None, dict[str, Any] | None]] = [
    ("Order, 7001?", None, None),
    ("where is order 7003", None, {"even": False}),
    ("order 7002 held", ["rare"], None),
    ("the Lantern ember quartz", None, None),
    ("order 7009 at the Depot", None, None),
    ("apple river", ["rare"], {"even": True}),
]
"""Questions: identifiers, one whose holder the tag leaves out, filtered, a name
among the six twins, and the old and new text of a replaced item."""

_Shape = tuple[int, float, int | None, int | None, bool]


async def hybrid(probe: Probe, store: Any, brute: Brute) -> str | None:
    """What a hybrid store gave that its definition does not, or `None`; a store that
    is not a `HybridStore` passes untested. Run after the recall check has replaced,
    twinned and deleted items, so that words must follow each of those."""
    if not isinstance(store, HybridStore):
        return None
    orders = [
        numbered(300 + n, content=text, tags=["common"], metadata={"n": 300 + n, "even": n % 2 == 0})
        for n, text in enumerate(ORDERS)
    ]
    # The last order is replaced at once: its words must be its new text's.
    orders.append(orders[-1].model_copy(update={"content": "order 7009 found at the depot"}))
    for order in orders:
        await probe.store(order)
    await brute.add(orders)
    probe.note("every = await store.search(MemoryQuery(limit=10_000))")
    every = await store.search(MemoryQuery(limit=10_000))
    for text, tags, filters in ASKED:
        options = "".join(f", {name}={value!r}" for name, value in (("tags", tags), ("filters", filters)) if value)
        probe.note(f"await store.recall_hybrid({text!r}, {K}{options})")
        got: list[HybridRecalled] = await store.recall_hybrid(text, K, tags=tags, filters=filters)
        meaning = await store.recall(text, K, tags=tags, filters=filters)
        want = _reference(every, [r.item.id for r in meaning], text, MemoryQuery(tags=tags, filters=filters))
        given = [(h.item.id.int, h.score, h.meaning_rank, h.words_rank, h.identified) for h in got]
        if not _alike(given, want):
            probe.difference = (
                f"store.recall_hybrid({text!r}, {K}{options}) gave (id, score, meaning rank, words rank, "
                f"identified) {given}, where the fusion of its recall and the rare words gives {want}"
            )
            return "hybrid recall not the fusion of its two rankings"
    return None


def _alike(given: list[_Shape], want: list[_Shape]) -> bool:
    """Equal, scores within a rounding of the last bits."""
    return len(given) == len(want) and all(
        g[0] == w[0] and g[2:] == w[2:] and math.isclose(g[1], w[1], rel_tol=1e-12)
        for g, w in zip(given, want, strict=True)
    )


def _reference(every: list[MemoryItem], meaning: list[UUID], text: str, wanted: MemoryQuery) -> list[_Shape]:
    """ADR-0104's fused top k, from the store's ranking by meaning and its items."""
    held = [Counter(_terms(str(item.content))) for item in every]
    total = min(len(every), COUNTED_UP_TO)
    bound = rare_bound(total)
    scores: dict[UUID, float] = {}
    found: list[MemoryItem] = []
    named: set[UUID] = set()
    for term in _named(text):
        holders = [(item, counts[term]) for item, counts in zip(every, held, strict=True) if counts[term]]
        if not 0 < len(holders) <= bound:
            continue
        idf = math.log(1 + (total - len(holders) + 0.5) / (len(holders) + 0.5))
        for item, tf in reversed(holders):
            if matches(item, wanted):
                if item.id not in scores:
                    found.append(item)
                scores[item.id] = scores.get(item.id, 0.0) + idf * tf * (BM25_K1 + 1) / (tf + BM25_K1)
                named |= {item.id} if any(c.isdigit() for c in term) else set()
    words = [i.id for i in sorted(found, key=lambda i: -scores[i.id])][:K]
    by_meaning = {item_id: rank for rank, item_id in enumerate(meaning, 1)}
    by_words = {item_id: rank for rank, item_id in enumerate(words, 1)}
    fused: dict[UUID, float] = {}
    for item_id in dict.fromkeys([*meaning, *words]):
        weight = IDENTIFIER_WEIGHT if item_id in named else 1
        fused[item_id] = (1 / (RRF_K + by_meaning[item_id]) if item_id in by_meaning else 0.0) + (
            weight / (RRF_K + by_words[item_id]) if item_id in by_words else 0.0
        )
    order = sorted(fused, key=lambda i: (-fused[i], by_meaning.get(i, math.inf), by_words.get(i, math.inf)))
    return [(i.int, fused[i], by_meaning.get(i), by_words.get(i), i in named and i in by_words) for i in order[:K]]


def _named(text: str) -> list[str]:
    """The runs of word characters `text` writes with a digit, or with a capital other
    than a sentence's first letter, lowered, each once: the reference's own reading
    of ADR-0104 D1."""
    named: list[str] = []
    current: list[str] = []
    opens = True
    for character in f"{text} ":
        if character.isalnum() or character == "_":
            current.append(character)
            continue
        if current:
            run = "".join(current)
            capital = any(c.isupper() for c in run[1:]) or (run[0].isupper() and not opens)
            if (any(c.isdigit() for c in run) or capital) and run.lower() not in named:
                named.append(run.lower())
            current, opens = [], False
        if character in ".!?":
            opens = True
    return named


def _terms(text: str) -> list[str]:
    """Runs of word characters, lowered: the reference's own reading of ADR-0104 D1."""
    words: list[str] = []
    current: list[str] = []
    for character in text.lower():
        if character.isalnum() or character == "_":
            current.append(character)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return words
