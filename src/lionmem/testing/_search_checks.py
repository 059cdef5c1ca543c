"""The checks of how a store searches: text, tags, filters, order and limits.

Each is a small function the kit's table names; see [ADR-0093][adr-0093].
"""

from __future__ import annotations

from typing import Any, cast

from lionmem.protocols.memory import MemoryQuery
from lionmem.protocols.profile import FilterEquality, LimitPolicy, ResultOrder, TagMatch, TextMatch
from lionmem.testing._probe import ALL, POSITIVE_LIMITS, Probe, Verdict, described, ids, numbered


async def text_match(probe: Probe) -> Verdict:
    items = [
        numbered(1, content="Hello World"),
        numbered(2, content={"greeting": "HELLO there"}),
        numbered(3, content=["hello"]),
        numbered(4, content="nothing here"),
        numbered(5, content="100% sure_thing\\ok"),
        # str.lower() keeps ß, which casefold() and upper() make "ss"; SQL's LIKE
        # folds only ASCII letters; a needle's spaces are part of it; str() of a
        # dict quotes its keys with ', where JSON text has "; and "" is no
        # predicate at all.
        numbered(6, content="Straße"),
        numbered(7, content="Éclair"),
        numbered(8, content="pineapple"),
    ]
    await probe.fill(items)
    declared = probe.profile.text_match
    if declared is TextMatch.UNSUPPORTED:
        return await probe.refusal(MemoryQuery(text="hello", limit=ALL))
    needles = ("hello", "HELLO", "o w", "0% s", "%", "_", "\\", "SS", "éCLAIR", " apple", "'greeting'", "")
    observed = await probe.rule_that_holds(
        items,
        (MemoryQuery(text=needle, limit=ALL) for needle in needles),
        {
            TextMatch.CASE_INSENSITIVE_SUBSTRING: lambda q, i: str(q.text).lower() in str(i.content).lower(),
            TextMatch.CASE_SENSITIVE_SUBSTRING: lambda q, i: str(q.text) in str(i.content),
        },
        declared,
    )
    if observed is None:
        # Another rule: nothing to predict, but results must be stored items.
        known = {i.id for i in items}
        for needle in needles:
            found = await probe.search(MemoryQuery(text=needle, limit=ALL))
            if not all(i.id in known for i in found):
                return f"text {needle!r} returned items that were never stored", False
        observed = TextMatch.OTHER
    return observed.value, observed is declared or declared is TextMatch.OTHER


async def tag_match(probe: Probe) -> Verdict:
    items = [
        numbered(1, tags=["a", "b"]),
        numbered(2, tags=["c"]),
        numbered(3, tags=["A"]),
        numbered(4, tags=[]),
        numbered(5, tags=["b", "b"]),
        numbered(6, tags=["cd"]),  # holds "c" as text, not as a tag
    ]
    await probe.fill(items)
    if probe.profile.tag_match is TagMatch.UNSUPPORTED:
        return await probe.refusal(MemoryQuery(tags=["a"], limit=ALL))
    # [] is no predicate at all, as "" is for text.
    wanted: list[list[str]] = [["b", "c"], ["a"], ["A"], ["a", "b"], ["b", "b"], ["z"], []]
    observed = await probe.rule_that_holds(
        items,
        (MemoryQuery(tags=tags, limit=ALL) for tags in wanted),
        {
            TagMatch.ANY_OF: lambda q, i: not q.tags or bool(set(q.tags) & set(i.tags)),
            TagMatch.ALL_OF: lambda q, i: set(q.tags or ()) <= set(i.tags),
        },
        probe.profile.tag_match,
    )
    shown = "another rule" if observed is None else observed.value
    return shown, observed is probe.profile.tag_match


async def filter_equality(probe: Probe) -> Verdict:
    items = [
        numbered(1, metadata={"n": 1}),
        numbered(2, metadata={"n": 1.0}),
        numbered(3, metadata={"n": True}),
        numbered(4, metadata={"n": "1"}),
        numbered(5, metadata={"n": 1, "m": "x"}),
        numbered(6, metadata={"n": {"deep": [1, "two", None]}}),
        numbered(7, metadata={"n": 2}),
        # The rules differ inside lists and objects as they do at the top.
        numbered(8, metadata={"n": {"deep": [True, "two", None]}}),
        numbered(9, metadata={"n": {"deep": [1.0, "two", None]}}),
        numbered(10, metadata={"n": [1, 3]}),
        numbered(11, metadata={"n": {"a": 1, "b": 3}}),
        numbered(12, metadata={"n": ["1"]}),
        numbered(13, metadata={"N": 1}),  # another key: keys compare as written
    ]
    await probe.fill(items)
    if probe.profile.filter_equality is FilterEquality.UNSUPPORTED:
        return await probe.refusal(MemoryQuery(filters={"n": 1}, limit=ALL))
    # Items 10 and 11 hold [1] and {"a": 1} without equalling them, as JSONB
    # containment (@>) would match; they equal {"b": 3, "a": 1}, whose keys
    # come in another order, and differ from [3, 1], whose elements do. {} is no
    # predicate at all.
    probes: list[dict[str, Any]] = [
        {"n": 1},
        {"n": 1, "m": "x"},
        {"n": {"deep": [1, "two", None]}},
        {"n": "1"},
        {"n": False},
        {"n": True},
        {"n": [1, 2]},
        {"n": {"a": 1, "b": 2}},
        {"n": [1]},
        {"n": {"a": 1}},
        {"n": {"b": 3, "a": 1}},
        {"n": [3, 1]},
        {},
    ]
    observed = await probe.rule_that_holds(
        items,
        (MemoryQuery(filters=filters, limit=ALL) for filters in probes),
        {
            FilterEquality.PYTHON: lambda q, i: all(i.metadata.get(k) == v for k, v in (q.filters or {}).items()),
            FilterEquality.JSON: lambda q, i: all(
                _json_equal(i.metadata.get(k), v) for k, v in (q.filters or {}).items()
            ),
        },
        probe.profile.filter_equality,
    )
    shown = "another rule" if observed is None else observed.value
    return shown, observed is probe.profile.filter_equality


async def none_filter_matches_missing(probe: Probe) -> Verdict:
    items = [numbered(1), numbered(2, metadata={"k": None}), numbered(3, metadata={"k": 0})]
    await probe.fill(items)
    if probe.profile.filter_equality is FilterEquality.UNSUPPORTED:
        return await probe.refusal(MemoryQuery(filters={"k": None}, limit=ALL))
    query = MemoryQuery(filters={"k": None}, limit=ALL)
    found = sorted(ids(await probe.search(query)))
    verdicts: dict[tuple[int, ...], str] = {(1, 2): "True", (2,): "False"}
    observed = verdicts.get(tuple(found), f"matched ids {found}")
    declared = str(probe.profile.none_filter_matches_missing)
    if observed != declared:
        expected = [1, 2] if probe.profile.none_filter_matches_missing else [2]
        probe.differs(query, found, f"none_filter_matches_missing={declared} finds {expected}")
    return observed, observed == declared


async def result_order(probe: Probe) -> Verdict:
    """Observe the order of each search, twice: in insertion order every time
    (`INSERTION`), another order that the same search repeats (`RANKED`), or orders
    that change between two runs of one search (`UNORDERED`)."""
    # Ids and timestamps run against the insertion order, so neither sort fakes it.
    # Every item meets each predicate, whose searches a store may answer from an
    # index in another order than its plain listing. "x" occurs more often in each
    # later item and "y" less, so a store that ranks text by how often or how early
    # a needle occurs orders one of the two searches against insertion.
    count = 6
    items = [
        numbered(
            100 - n,
            content=f"o {'x' * (n + 1)} {'y' * (count - n)}",
            tags=["o"],
            metadata={"o": 1},
            created_at=1000.0 - n,
        )
        for n in range(count)
    ]
    await probe.fill(items)
    stored = ids(items)
    found = ids(await probe.search(MemoryQuery(limit=ALL)))
    if sorted(found) != sorted(stored):
        return f"returned {found}, not the stored set", False
    declared = probe.profile.result_order
    if declared is ResultOrder.UNORDERED:
        return ResultOrder.UNORDERED.value, True  # no order is promised, so none is wrong
    searches = {"listing": MemoryQuery(limit=ALL), **probe.each_predicate("o", "o", {"o": 1})}
    if probe.profile.text_match is not TextMatch.UNSUPPORTED:
        searches |= {"x": MemoryQuery(text="x", limit=ALL), "y": MemoryQuery(text="y", limit=ALL)}
    misordered: list[tuple[MemoryQuery, list[int]]] = []
    for query in searches.values():
        matched = ids(await probe.search(query))
        again = ids(await probe.search(query, record=False))
        if again != matched:
            probe.difference = f"{described(query)} found {matched}, then {again} when run again"
            return ResultOrder.UNORDERED.value, False
        # Which items match is for the match checks (a text rule the kit cannot
        # predict may leave some out); here they must keep the stored order.
        if matched != [n for n in stored if n in matched]:
            misordered.append((query, matched))
    observed = ResultOrder.RANKED if misordered else ResultOrder.INSERTION
    if declared is ResultOrder.INSERTION and misordered:
        query, matched = misordered[0]
        probe.differs(query, matched, f"insertion order is {[n for n in stored if n in matched]}")
    elif declared is ResultOrder.RANKED and not misordered:
        probe.difference = f"every search, the listing and text 'x' and 'y' among them, kept insertion order {stored}"
    return observed.value, observed is declared


async def limit_policy(probe: Probe) -> Verdict:
    # Untagged items come first, so that a store cutting at the limit before the
    # tag predicate returns fewer tagged items than a search asked for.
    tagged = [numbered(n, content=f"lim{n}", tags=["l"]) for n in range(1, 6)]
    items = [i for n, item in enumerate(tagged, 11) for i in (numbered(n, content=f"lim{n}"), item)]
    await probe.fill(items)
    # Each search with every item it matches, in insertion order.
    searches: list[tuple[list[str] | None, list[int]]] = [(None, ids(items))]
    if probe.profile.tag_match is not TagMatch.UNSUPPORTED:
        searches.append((["l"], ids(tagged)))
    limits = (*POSITIVE_LIMITS, -2, -10)
    # Per limit, what each search gave and whether that is the slice asked for.
    gave: dict[int, list[tuple[list[int] | None, str]]] = {limit: [] for limit in limits}
    for limit in limits:
        for tags, matches in searches:
            try:
                found: list[int] | None = ids(await probe.search(MemoryQuery(tags=tags, limit=limit)))
            except ValueError:
                found = None
            gave[limit].append((found, _as_sliced(probe.ordered, found, matches, limit)))
    outcomes = {limit: gave[limit][0][0] for limit in limits}
    sliced = {limit: gave[limit][0][1] == "sliced" for limit in limits}
    if not all(sliced[n] for n in POSITIVE_LIMITS):
        shown = ", ".join(map(str, POSITIVE_LIMITS))
        return f"limits {shown} gave {[outcomes[n] for n in POSITIVE_LIMITS]}", False
    for limit in limits:
        if len({verdict for _, verdict in gave[limit]}) > 1:
            return f"limit {limit} gave {' and '.join(str(found) for found, _ in gave[limit])}", False
    if sliced[-2] and sliced[-10]:
        observed = LimitPolicy.SLICE.value
    elif outcomes[-2] is None and outcomes[-10] is None:
        observed = LimitPolicy.REJECT_NEGATIVE.value
    else:
        observed = f"negative limits gave {outcomes[-2]} and {outcomes[-10]}"
    return observed, observed == probe.profile.limit_policy.value


def _as_sliced(ordered: bool, found: list[int] | None, matches: list[int], limit: int) -> str:
    """Whether a search gave the slice of its `matches` that `limit` asks for (of
    that size, from any of them, for a store without an order)."""
    if found is None:
        return "refused"
    want = matches[:limit]
    if ordered:
        return "sliced" if found == want else "other"
    some = len(set(found)) == len(found) and set(found) <= set(matches)
    return "sliced" if some and len(found) == len(want) else "other"


def _json_equal(a: object, b: object) -> bool:
    """Equality of JSON values: numbers by value, but a bool is never a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        left, right = cast("dict[object, object]", a), cast("dict[object, object]", b)
        return left.keys() == right.keys() and all(_json_equal(left[k], right[k]) for k in left)
    if isinstance(a, list) and isinstance(b, list):
        xs, ys = cast("list[object]", a), cast("list[object]", b)
        return len(xs) == len(ys) and all(_json_equal(x, y) for x, y in zip(xs, ys, strict=True))
    return bool(a == b)
