"""Hybrid recall's quality (ADR-0104): recall@5 and NDCG@10 per kind of question on the
retrieval set of `benchmarks/support/retrieval_set.py`, for words alone (BM25 over
every term), meaning alone (`recall`), lionmem's hybrid (`recall_hybrid`), and the
other fusions ADR-0104 weighed, all from the same two rankings in one run.

Run: python -m benchmarks.bench_hybrid [--sessions 200]
Results go to benchmarks/results/hybrid.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from uuid import UUID

from benchmarks.support.retrieval_set import KINDS, retrieval_set
from lionmem import InMemoryStore, MemoryItem
from lionmem.embedders import WordLlamaEmbedder
from lionmem.protocols.hybrid import BM25_K1, IDENTIFIER_WEIGHT, RRF_K, named_terms, rare_bound, terms_of

RESULTS = Path(__file__).resolve().parent / "results" / "hybrid.json"
K = 10
"""How deep each ranking is read and judged: recall@5 and NDCG@10 of the top 10."""
Ranking = list[UUID]


class Words:
    """BM25 over every term (k1 = 1.2, b = 0.75), the usual ranking by words."""

    def __init__(self, items: list[MemoryItem]) -> None:
        self.terms = {item.id: Counter(terms_of(str(item.content))) for item in items}
        self.df: Counter[str] = Counter()
        for counts in self.terms.values():
            self.df.update(counts.keys())
        self.total = len(items)
        self.average = sum(sum(c.values()) for c in self.terms.values()) / len(items)

    def idf(self, term: str) -> float:
        df = self.df[term]
        return math.log(1 + (self.total - df + 0.5) / (df + 0.5))

    def ranked(self, question: str) -> Ranking:
        asked = [t for t in dict.fromkeys(terms_of(question)) if self.df[t]]
        scores: dict[UUID, float] = {}
        for item_id, counts in self.terms.items():
            length = sum(counts.values())
            score = 0.0
            for term in asked:
                tf = counts[term]
                if tf:
                    norm = tf + BM25_K1 * (1 - 0.75 + 0.75 * length / self.average)
                    score += self.idf(term) * tf * (BM25_K1 + 1) / norm
            if score:
                scores[item_id] = score
        return sorted(scores, key=lambda i: -scores[i])[:K]

    def has_rare(self, question: str) -> bool:
        return any(0 < self.df[t] <= rare_bound(self.total) for t in named_terms(question))

    def gated(self, question: str, terms: list[str], bound: int) -> tuple[Ranking, set[UUID]]:
        """ADR-0104's ranking by words over those of `terms` at most `bound` items hold
        (BM25, b = 0, ties newest first), with the items a rare term with a digit
        brought."""
        rare = [t for t in dict.fromkeys(terms) if 0 < self.df[t] <= bound]
        scores: dict[UUID, float] = {}
        named: set[UUID] = set()
        for item_id in reversed(list(self.terms)):
            for term in rare:
                tf = self.terms[item_id][term]
                if tf:
                    scores[item_id] = scores.get(item_id, 0.0) + self.idf(term) * tf * (BM25_K1 + 1) / (tf + BM25_K1)
                    if any(c.isdigit() for c in term):
                        named.add(item_id)
        return sorted(scores, key=lambda i: -scores[i])[:K], named


def fused(meaning: Ranking, gated: tuple[Ranking, set[UUID]]) -> Ranking:
    """ADR-0104's fusion: reciprocal ranks, a rare identifier counting twice, equal
    scores to the better meaning rank."""
    words, named = gated
    scores: dict[UUID, float] = {}
    for rank, item_id in enumerate(meaning, 1):
        scores[item_id] = 1 / (RRF_K + rank)
    for rank, item_id in enumerate(words, 1):
        weight = IDENTIFIER_WEIGHT if item_id in named else 1
        scores[item_id] = scores.get(item_id, 0.0) + weight / (RRF_K + rank)
    place = {item_id: rank for rank, item_id in enumerate(meaning)}
    return sorted(scores, key=lambda i: (-scores[i], place.get(i, len(meaning))))[:K]


def rrf(meaning: Ranking, words: Ranking, weight: float = 1.0) -> Ranking:
    scores: dict[UUID, float] = {}
    for rank, item_id in enumerate(meaning, 1):
        scores[item_id] = scores.get(item_id, 0.0) + 1 / (RRF_K + rank)
    for rank, item_id in enumerate(words, 1):
        scores[item_id] = scores.get(item_id, 0.0) + weight / (RRF_K + rank)
    return sorted(scores, key=lambda i: -scores[i])


def recall_at(ranking: Ranking, answers: set[UUID], n: int) -> float:
    return len(answers.intersection(ranking[:n])) / len(answers)


def ndcg_at(ranking: Ranking, answers: set[UUID], n: int) -> float:
    gained = sum(1 / math.log2(at + 2) for at, item_id in enumerate(ranking[:n]) if item_id in answers)
    ideal = sum(1 / math.log2(at + 2) for at in range(min(n, len(answers))))
    return gained / ideal


async def measure(sessions: int) -> dict[str, object]:
    data = retrieval_set(sessions)
    items = [MemoryItem(content=turn) for turn in data.turns]
    store = InMemoryStore(embedder=WordLlamaEmbedder())
    await store.store_many(items)
    words = Words(items)
    rankings: dict[str, list[Ranking]] = {}
    for question in data.questions:
        meaning = [hit.item.id for hit in await store.recall(question.text, K)]
        hybrid = [hit.item.id for hit in await store.recall_hybrid(question.text, K)]
        full = words.ranked(question.text)
        ways: dict[str, Callable[[], Ranking]] = {
            "words (BM25)": lambda: full,
            "meaning": lambda: meaning,
            "hybrid (lionmem)": lambda: hybrid,
            "RRF, k = 60": lambda: rrf(meaning, full),
            "RRF, words weighted 0.2": lambda: rrf(meaning, full, 0.2),
            "RRF when a name is rare (full BM25)": lambda: (
                rrf(meaning, full) if words.has_rare(question.text) else meaning
            ),
            "every rare term, at most 8 and 1 in 100": lambda: fused(
                meaning, words.gated(question.text, terms_of(question.text), min(8, max(1, words.total // 100)))
            ),
            "names and numbers, at most 8 and 1 in 100": lambda: fused(
                meaning, words.gated(question.text, named_terms(question.text), min(8, max(1, words.total // 100)))
            ),
        }
        for name, ranked in ways.items():
            rankings.setdefault(name, []).append(ranked())
    table: dict[str, dict[str, dict[str, float]]] = {}
    for name, ranked_all in rankings.items():
        per_kind: dict[str, list[tuple[float, float, float]]] = {}
        for question, ranking in zip(data.questions, ranked_all, strict=True):
            answers = {items[i].id for i in question.answers}
            top1 = 1.0 if ranking and ranking[0] in answers else 0.0
            per_kind.setdefault(question.kind, []).append(
                (recall_at(ranking, answers, 5), ndcg_at(ranking, answers, 10), top1)
            )
        every = [row for rows in per_kind.values() for row in rows]
        table[name] = {
            kind: {
                "recall@5": sum(r[0] for r in rows) / len(rows),
                "ndcg@10": sum(r[1] for r in rows) / len(rows),
                "top1": sum(r[2] for r in rows),
                "questions": len(rows),
            }
            for kind, rows in [*((k, per_kind[k]) for k in KINDS), ("all", every)]
        }
    return {"turns": len(items), "questions": len(data.questions), "table": table}


def table(results: dict[str, object]) -> str:
    """The Performance page's table: recall@5, NDCG@10 and answers first, per kind."""
    rows = results["table"]
    assert isinstance(rows, dict)
    lines = [
        "| ranking | " + " | ".join([*KINDS, "all"]) + " |",
        "| --- |" + " --- |" * (len(KINDS) + 1),
    ]
    for name, kinds in rows.items():
        cells = [
            f"{c['recall@5']:.3f}, {c['ndcg@10']:.3f}, {int(c['top1'])}/{int(c['questions'])}" for c in kinds.values()
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    args = parser.parse_args()
    results = asyncio.run(measure(args.sessions))
    print(f"{results['turns']} turns, {results['questions']} questions; recall@5, NDCG@10, answers first")
    print(table(results))
    RESULTS.parent.mkdir(exist_ok=True)
    RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
