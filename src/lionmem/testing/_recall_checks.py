"""The check of semantic recall against a brute-force ranking over the store's own
embedder. See [ADR-0102][adr-0102].
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any
from uuid import UUID

from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem
from lionmem.protocols.profile import Recall
from lionmem.protocols.recall import Embedder, Recalled, RecallStore
from lionmem.testing._probe import Probe, Verdict, numbered

WORDS = ["apple", "river", "stone", "cloud", "ember", "frost", "maple", "orbit"]
"""Words whose mixes make texts of every degree of likeness."""

K = 10


def _items() -> list[MemoryItem]:
    """Forty items: four words each of `WORDS`, rotating, every fifth tagged `rare`,
    every other one with an even `n`."""
    return [
        numbered(
            n,
            content=" ".join(WORDS[(n * step) % len(WORDS)] for step in (1, 2, 3, 5)),
            tags=["rare"] if n % 5 == 0 else ["common"],
            metadata={"n": n, "even": n % 2 == 0},
        )
        for n in range(1, 41)
    ]


QUERIES = ["apple river", "stone cloud ember", "frost", "maple orbit apple", "river river stone"]


async def recall(probe: Probe) -> Verdict:
    store: object = probe.inner
    embedder = getattr(store, "embedder", None) if isinstance(store, RecallStore) else None
    probe.note("isinstance(store, RecallStore) and store.embedder is not None")
    declared = probe.profile.recall
    offered = isinstance(embedder, Embedder)
    if declared is Recall.NOT_OFFERED or not offered:
        observed = Recall.NOT_OFFERED.value if not offered else "offered"
        return observed, observed == declared.value
    assert isinstance(embedder, Embedder)
    recalling: Any = store
    items = _items()
    await probe.fill(items)
    brute = _Brute(embedder)
    await brute.add(items)
    exact = declared is Recall.EXACT
    scores: list[float] = []
    for text in QUERIES:
        for tags, filters in ((None, None), (["rare"], None), (None, {"even": True}), (["rare"], {"even": True})):
            got = await _recalled(probe, recalling, text, tags, filters)
            want, every = await brute.top(text, K, _holding(tags, filters))
            if [r.score for r in got] != sorted((r.score for r in got), reverse=True):
                probe.difference = f"recall({text!r}) gave scores {[round(r.score, 4) for r in got]}, not highest first"
                return "scores out of order", False
            if exact and len(got) != len(want):
                probe.difference = f"{_call(text, tags, filters)} gave {len(got)} items where {len(want)} match"
                return "fewer than k of the items the filter matches", False
            if exact and not _same(got, want, every):
                probe.difference = (
                    f"{_call(text, tags, filters)} gave {_shown(got)}, where brute force gives {_shown(want)}"
                )
                return "not the exact top k", False
            found = {r.item.id for r in got} & {i.id for i, _ in want}
            scores.append(len(found) / max(1, len(want)))
    if not exact and sum(scores) / len(scores) < probe.profile.minimum_recall:
        share = sum(scores) / len(scores)
        probe.difference = f"recall@{K} averaged {share:.2f} over {len(scores)} recalls"
        return f"recall@{K} {share:.2f}", False
    # A replaced item is found by its new text only.
    replaced = numbered(3, content="zephyr quartz", tags=["common"], metadata={"n": 3, "even": False})
    await probe.store(replaced)
    await brute.add([replaced])
    for text in ("zephyr quartz", items[2].content):
        got = await _recalled(probe, recalling, str(text), None, None)
        want, every = await brute.top(str(text), K, _holding(None, None))
        if exact and not _same(got, want, every):
            probe.difference = (
                f"after replacing item 3, recall({text!r}) gave {_shown(got)}, where brute force gives {_shown(want)}"
            )
            return "a stale vector after a replacement", False
    if isinstance(store, ForgettingStore):
        top = (await _recalled(probe, recalling, "zephyr quartz", None, None))[0].item.id
        await probe.delete(top)
        brute.remove(top)
        again = await _recalled(probe, recalling, "zephyr quartz", None, None)
        if top in {r.item.id for r in again}:
            probe.difference = f"recall('zephyr quartz') after delete({top.int}) still gave it"
            return "a deleted item recalled", False
    refusal = await _refusals(probe, recalling, embedder.dimensions)
    if refusal:
        probe.difference = refusal
        return "a bad argument not refused", False
    kept = await _kept_when_the_embedder_fails(probe, embedder, items[4])
    if kept:
        probe.difference = kept
        return "a write whose embedding failed", False
    return declared.value, True


class _EmbedderDown(Exception):
    """What the kit's failing embedder raises."""


async def _kept_when_the_embedder_fails(probe: Probe, embedder: Embedder, stored: MemoryItem) -> str | None:
    """What a store wrote although its embedder raised, or `None`. The kit makes the
    store's own embedder fail for a moment, by shadowing its `embed` on the instance;
    an embedder that does not allow that is not checked."""

    async def failing(texts: Sequence[str]) -> list[list[float]]:
        raise _EmbedderDown("the kit's embedder failure")

    try:
        vars(embedder)["embed"] = failing
    except TypeError:  # no instance dict: a slotted or frozen embedder
        return None
    try:
        for item in (numbered(stored.id.int, content="lost words"), numbered(77, content="lost words")):
            probe.note(f"# embedder.embed raises from here on, then: await store.store({item.id.int}, ...)")
            try:
                await probe.store(item)
            except _EmbedderDown:
                continue
            return f"store of item {item.id.int} returned although the embedder raised"
    finally:
        del vars(embedder)["embed"]
    if await probe.retrieve(numbered(77).id) is not None:
        return "a new item was stored although its embedding failed"
    replaced = await probe.retrieve(stored.id)
    if replaced is None or replaced.content != stored.content:
        return f"item {stored.id.int} became {replaced!r} although the embedding of its replacement failed"
    return None


def _holding(tags: list[str] | None, filters: dict[str, Any] | None) -> Callable[[MemoryItem], bool]:
    """Whether an item meets `tags` and `filters` by the reference rule."""

    def held(item: MemoryItem) -> bool:
        if tags and not set(tags) & set(item.tags):
            return False
        return all(item.metadata.get(k) == v for k, v in (filters or {}).items())

    return held


async def _recalled(
    probe: Probe, store: Any, text: str, tags: list[str] | None, filters: dict[str, Any] | None
) -> list[Recalled]:
    probe.note(f"await {_call(text, tags, filters)}")
    got: list[Recalled] = await store.recall(text, K, tags=tags, filters=filters)
    return got


def _call(text: str, tags: list[str] | None, filters: dict[str, Any] | None) -> str:
    options = "".join(f", {name}={value!r}" for name, value in (("tags", tags), ("filters", filters)) if value)
    return f"store.recall({text!r}, {K}{options})"


TOLERANCE = 1e-4
"""How far a score may stray from the brute-force one: float32 vectors round."""


def _same(got: list[Recalled], want: list[tuple[MemoryItem, float]], brute: dict[UUID, float]) -> bool:
    """Whether `got` is an exact top k: each score the brute-force one, and no item
    left out scoring above the lowest one given. Scores within `TOLERANCE` are ties,
    which rounding may order either way."""
    given = {r.item.id for r in got}
    if any(abs(r.score - brute.get(r.item.id, 2.0)) > TOLERANCE for r in got):
        return False
    lowest = min((r.score for r in got), default=1.0)
    return not any(score > lowest + TOLERANCE for item_id, score in brute.items() if item_id not in given) or (
        len(got) == len(want) == 0
    )


def _shown(results: Sequence[Recalled] | Sequence[tuple[MemoryItem, float]]) -> list[str]:
    pairs = [(r.item, r.score) if isinstance(r, Recalled) else r for r in results]
    return [f"{item.id.int}: {score:.3f}" for item, score in pairs]


async def _refusals(probe: Probe, store: Any, dimensions: int) -> str | None:
    """What a bad argument did that it should not, or `None`."""
    for arguments, error in (
        (([0.0] * (dimensions + 1), K), ValueError),
        (("apple", 0), ValueError),
        (("apple", -1), ValueError),
        (("apple", "5"), TypeError),
    ):
        probe.note(f"await store.recall(*{arguments!r})  # must raise {error.__name__}")
        try:
            await store.recall(*arguments)
        except error:
            continue
        except Exception as exc:
            return f"recall{arguments!r} raised {type(exc).__name__}, not {error.__name__}"
        return f"recall{arguments!r} returned, where it must raise {error.__name__}"
    return None


class _Brute:
    """The exact ranking: every item's vector from the store's embedder, scored."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self.order: list[UUID] = []
        self.items: dict[UUID, tuple[MemoryItem, list[float]]] = {}

    async def add(self, items: list[MemoryItem]) -> None:
        vectors = await self.embedder.embed([str(i.content) for i in items])
        for item, vector in zip(items, vectors, strict=True):
            if item.id not in self.items:
                self.order.append(item.id)
            self.items[item.id] = (item, _unit(vector))

    def remove(self, item_id: UUID) -> None:
        del self.items[item_id]
        self.order.remove(item_id)

    async def top(
        self, text: str, k: int, keep: Callable[[MemoryItem], bool]
    ) -> tuple[list[tuple[MemoryItem, float]], dict[UUID, float]]:
        """The top `k` of the items `keep` keeps, highest first and ties in insertion
        order, and the score of every item it keeps."""
        (query,) = await self.embedder.embed([text])
        unit = _unit(query)
        scored = [
            (n, self.items[i][0], sum(a * b for a, b in zip(unit, self.items[i][1], strict=True)))
            for n, i in enumerate(self.order)
            if keep(self.items[i][0])
        ]
        every = {item.id: score for _, item, score in scored}
        scored.sort(key=lambda entry: (-entry[2], entry[0]))
        return [(item, score) for _, item, score in scored[:k]], every


def _unit(vector: Sequence[float]) -> list[float]:
    norm = sum(v * v for v in vector) ** 0.5
    return [v / norm for v in vector] if norm else [0.0 for _ in vector]
