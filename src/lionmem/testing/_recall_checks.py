"""The check of semantic recall against a brute-force ranking over the store's own
embedder. See [ADR-0102][adr-0102].
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from uuid import UUID

from lionmem.errors import LionmemError
from lionmem.protocols.batching import BatchingStore
from lionmem.protocols.forgetting import ForgettingStore
from lionmem.protocols.memory import MemoryItem
from lionmem.protocols.profile import Durability, Recall
from lionmem.protocols.recall import Embedder, Recalled, RecallStore
from lionmem.testing._brute import TOLERANCE, Brute, holding
from lionmem.testing._harness import Recorder
from lionmem.testing._hybrid_checks import hybrid
from lionmem.testing._probe import Probe, Reopen, Verdict, ids, numbered
from lionmem.testing._recall_floor import floor

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


async def recall(probe: Probe, reopen: Reopen, plain: Reopen | None, notes: int) -> Verdict:
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
    brute = Brute(embedder)
    await brute.add(items)
    exact = declared is Recall.EXACT
    scores: list[float] = []
    for text in QUERIES:
        for tags, filters in ((None, None), (["rare"], None), (None, {"even": True}), (["rare"], {"even": True})):
            got = await _recalled(probe, recalling, text, tags, filters)
            want, every = await brute.top(text, K, holding(tags, filters))
            if [r.score for r in got] != sorted((r.score for r in got), reverse=True):
                probe.difference = f"recall({text!r}) gave scores {[round(r.score, 4) for r in got]}, not highest first"
                return "scores out of order", False
            if exact and len(got) != len(want):
                probe.difference = f"{_call(text, tags, filters)} gave {len(got)} items where {len(want)} match"
                if len(got) > len(want):
                    return "more items than the tags and filters match: recall did not apply them", False
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
    failed = (
        await _replaced(probe, recalling, brute, exact)
        or await _twins(probe, recalling, brute)
        or await _floored(probe, recalling, exact)
        or await _elsewhere(probe, recalling, brute, exact, reopen, plain)
        or await _deleted(probe, recalling, brute)
        or await hybrid(probe, recalling, brute)
        or (None if exact else await floor(probe, recalling, brute, notes, k=K))
    )
    if failed is not None:
        return failed, False
    refusal = await _refusals(probe, recalling, embedder.dimensions)
    if refusal:
        probe.difference = refusal
        return "a bad argument not refused", False
    kept = await _kept_when_the_embedder_fails(probe, embedder, items[4])
    if kept:
        probe.difference = kept
        return "a write whose embedding failed", False
    return declared.value, True


async def _replaced(probe: Probe, store: Any, brute: Brute, exact: bool) -> str | None:
    """A replaced item is found by its new text only."""
    replaced = numbered(3, content="zephyr quartz", tags=["common"], metadata={"n": 3, "even": False})
    await probe.store(replaced)
    await brute.add([replaced])
    for text in ("zephyr quartz", _items()[2].content):
        got = await _recalled(probe, store, str(text), None, None)
        want, every = await brute.top(str(text), K, holding(None, None))
        if exact and not _same(got, want, every):
            probe.difference = (
                f"after replacing item 3, recall({text!r}) gave {_shown(got)}, where brute force gives {_shown(want)}"
            )
            return "a stale vector after a replacement"
    return None


TWIN = "lantern ember quartz"
"""The text six items share in the check of ties."""


async def _twins(probe: Probe, store: Any, brute: Brute) -> str | None:
    """Six items of one text, three stored in one batch (by `store_many`, where the
    store has it) and three one by one, tie exactly and keep their insertion order."""
    twins = [numbered(n, content=TWIN, tags=["twin"], metadata={"n": n}) for n in range(201, 207)]
    if isinstance(store, BatchingStore):
        probe.note(f"await store.store_many([{', '.join(f'MemoryItem(id={t.id.int}, ...)' for t in twins[:3])}])")
        await store.store_many(twins[:3])
    else:
        for twin in twins[:3]:
            await probe.store(twin)
    for twin in twins[3:]:
        await probe.store(twin)
    await brute.add(twins)
    got = await _recalled(probe, store, TWIN, None, None)
    given = [(r.item.id.int, r.score) for r in got if r.item.content == TWIN]
    if [n for n, _ in given] != ids(twins) or len({score for _, score in given}) != 1:
        probe.difference = (
            f"{_call(TWIN, None, None)} gave the items of that text as {[f'{n}: {s!r}' for n, s in given]}, "
            f"where six items of one text score alike and come in the order stored: {ids(twins)}"
        )
        return "equal texts out of insertion order"
    return None


async def _floored(probe: Probe, store: Any, exact: bool) -> str | None:
    """`min_score` cuts the top k where the scores fall below it: a floor at the
    middle result's score keeps that result and those above it, and one halfway
    between the best and the worst score keeps those above it, and nothing else. Of
    an approximate store, only that nothing below the floor comes back."""
    for text in QUERIES[:2]:
        every = await _recalled(probe, store, text, None, None)
        floors = [every[len(every) // 2].score, (every[0].score + every[-1].score) / 2] if every else []
        for least in floors:
            probe.note(f"await store.recall({text!r}, {K}, min_score={least!r})")
            got: list[Recalled] = await store.recall(text, K, min_score=least)
            want = [r for r in every if r.score >= least]
            if [(r.item.id, r.score) for r in got] != [(r.item.id, r.score) for r in want] and (
                exact or any(r.score < least for r in got)
            ):
                probe.difference = (
                    f"recall({text!r}, {K}, min_score={least!r}) gave {_shown(got)}, where the results "
                    f"scoring at least that are {_shown(want)}"
                )
                return "min_score not the cut of the top k"
    return None


async def _elsewhere(
    probe: Probe, store: Any, brute: Brute, exact: bool, reopen: Reopen, plain: Reopen | None
) -> str | None:
    """A replacement and a new item written through a second handle on the same data
    (one without an embedder, where the kit was given how to open one) are recalled
    by their new texts at once. A store whose data does not outlive it has no second
    handle to write through."""
    if plain is None and probe.profile.durability is not Durability.RESTART:
        return None
    how = "without an embedder" if plain is not None else "with its embedder"
    replaced = numbered(6, content="orbit harbour lantern", tags=["common"], metadata={"n": 6, "even": True})
    added = numbered(90, content="harbour lantern quartz", tags=["common"], metadata={"n": 90, "even": True})
    probe.note(f"# a second store on the same data, {how}:")
    async with (plain or reopen)() as other:
        second = Recorder(other, probe.timeout)
        for item in (replaced, added):
            await second.store(item)
        probe.lines += [line.replace("await store.", "await second.") for line in second.lines]
    await brute.add([replaced, added])
    for text in ("orbit harbour lantern", str(_items()[5].content)):
        got = await _recalled(probe, store, text, None, None)
        want, every = await brute.top(text, K, holding(None, None))
        missing = {replaced.id, added.id} & {i.id for i, _ in want[:2]} - {r.item.id for r in got}
        if (exact and not _same(got, want, every)) or missing:
            probe.difference = (
                f"after a second store {how} replaced item 6 and added item 90, {_call(text, None, None)} "
                f"gave {_shown(got)}, where brute force gives {_shown(want)}"
            )
            return "another writer's items not recalled by their text"
    return None


async def _deleted(probe: Probe, store: Any, brute: Brute) -> str | None:
    """A deleted item is never recalled."""
    if not isinstance(store, ForgettingStore):
        return None
    top = (await _recalled(probe, store, "zephyr quartz", None, None))[0].item.id
    await probe.delete(top)
    brute.remove(top)
    again = await _recalled(probe, store, "zephyr quartz", None, None)
    if top in {r.item.id for r in again}:
        probe.difference = f"recall('zephyr quartz') after delete({top.int}) still gave it"
        return "a deleted item recalled"
    return None


class _EmbedderDown(LionmemError):
    """What the kit's failing embedder raises: a `LionmemError`, as every error of
    lionmem's own, should a store let it through."""


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


async def _recalled(
    probe: Probe, store: Any, text: str, tags: list[str] | None, filters: dict[str, Any] | None
) -> list[Recalled]:
    probe.note(f"await {_call(text, tags, filters)}")
    got: list[Recalled] = await store.recall(text, K, tags=tags, filters=filters)
    return got


def _call(text: str, tags: list[str] | None, filters: dict[str, Any] | None) -> str:
    options = "".join(f", {name}={value!r}" for name, value in (("tags", tags), ("filters", filters)) if value)
    return f"store.recall({text!r}, {K}{options})"


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
    for arguments, options, error in (
        (([0.0] * (dimensions + 1), K), {}, ValueError),
        (("apple", 0), {}, ValueError),
        (("apple", -1), {}, ValueError),
        (("apple", "5"), {}, TypeError),
        (("apple", K), {"min_score": 1.5}, ValueError),
        (("apple", K), {"min_score": "0.5"}, TypeError),
    ):
        shown = ", ".join([*map(repr, arguments), *(f"{name}={value!r}" for name, value in options.items())])
        probe.note(f"await store.recall({shown})  # must raise {error.__name__}")
        try:
            await store.recall(*arguments, **options)
        except error:
            continue
        except Exception as exc:
            return f"recall({shown}) raised {type(exc).__name__}, not {error.__name__}"
        return f"recall({shown}) returned, where it must raise {error.__name__}"
    return None
