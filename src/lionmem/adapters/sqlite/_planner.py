"""How the SQLite store answers a search: which index drives it, and the statement
that reads through it; the SQL of each predicate is `_conditions`'s.

Governed by [ADR-0096][adr-0096].

The planner only plans: `plan_search` returns a `Plan`, which the store runs on its
connection and settles with `settled`, as the PostgreSQL store runs its own.

Seam for tests: `_planner`, whose drivers and probe the tests inspect.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from lionmem.adapters._plan import Plan, sql_limit
from lionmem.adapters._settling import settle_unstorable
from lionmem.adapters.sqlite._conditions import BIG_INTEGERS, Held, Predicates, clauses_of, predicates_of, same_value
from lionmem.adapters.sqlite._indexes import indexable
from lionmem.adapters.sqlite._namespaces import NOTHING, Span
from lionmem.protocols.filters import In
from lionmem.protocols.memory import MemoryQuery

# A BLOB in created_at is only ever -0.0 (see `stored_time`), which the decoder reads
# back; a CASE turning it into a REAL here would cost every row of a broad search
# (ADR-0096 gives the figure).
COLUMNS = "items.id, items.created_at, items.body"
_MIN_TRIGRAM = 3
_OPENING = 64
"""The most characters of a needle the trigram index is asked for: a 100,000-character
needle of common words was slow to look up whole (ADR-0096); what matches its opening is
then checked whole by instr()."""
_IN_SPAN = "seq BETWEEN ? AND ?"
_IN_SPAN_D = "d.seq BETWEEN ? AND ?"
# Seam for tests: `_PROBE`, lowered to count ties further in a small store.
_PROBE = 256


def _trigrams(opening: str) -> str:
    """An FTS5 query for the rows holding the trigrams that cover `opening` (one at
    every third character, and its last), each quoted, joined by `AND`.

    Not the phrase `"opening"`: for a phrase FTS5 compares the trigrams' positions
    in each row, which in a row holding a long run of one trigram (a million "x",
    or one sentence repeated) was orders of magnitude slower (ADR-0096). Nor every
    trigram: each is a
    list of rows to read, and these narrow as well at a third of the cost.
    """
    starts = [*range(0, len(opening) - 2, 3), len(opening) - 3]
    trigrams = dict.fromkeys(opening[start : start + 3] for start in starts)
    return " ".join('"' + trigram.replace('"', '""') + '"' for trigram in trigrams)


class _Driver(NamedTuple):
    """An index that lists a search's candidates in insertion order."""

    source: str
    """The `FROM` clause joining the index to `items`."""
    order: str
    """The index column in insertion order."""
    condition: str
    """Which index rows are candidates."""
    params: list[object]
    """The values of `condition`."""
    entries: str
    """A query for those index rows alone, to count them."""
    settles_tags: bool = False
    """Whether the condition decides the tag predicate exactly."""
    settles_key: str | None = None
    """The filter key whose predicate the condition decides exactly, if any."""
    gathers: bool = False
    """Whether SQLite gathers every candidate into a sorted set before the first is
    read, so that a limit does not stop it early."""
    reads: tuple[tuple[str, tuple[object, ...]], ...] = ()
    """The same candidates as one read of the index in insertion order for each tag or
    value (a `seq` column and its values), when a gathering driver can be read so."""


# Seam for tests: `_drivers`, asked which index would drive a query.
def _drivers(
    query: MemoryQuery, tags: list[str], filters: dict[str, Any], held: dict[str, Held | None], span: Span
) -> list[_Driver]:
    """The indexes that could drive `query`, in the order preferred on a tie: the
    trigram index comes last because each of its candidates costs the most to list.
    `held` is what `_held` found for each filter that is a `Condition`. Each reads
    only `span`, the namespace's range of its `seq` keys ([ADR-0105][adr-0105-d1])."""
    drivers: list[_Driver] = []
    within_span = [span.first, span.last]
    if len(tags) == 1:
        drivers.append(
            _Driver(
                "item_tags AS d JOIN items ON items.seq = d.seq",
                "d.seq",
                f"d.tag = ? AND {_IN_SPAN_D}",
                [tags[0], *within_span],
                f"SELECT 1 FROM item_tags AS d WHERE d.tag = ? AND {_IN_SPAN_D}",
                settles_tags=True,
            )
        )
    for key, value in filters.items():
        condition = held.get(key)
        if condition is not None:
            # The index lists these rows by value, not in insertion order: SQLite
            # gathers their items into a sorted set and walks it in order.
            exact = condition.exact
            within = f"SELECT d.seq FROM item_meta AS d WHERE d.key = ? AND {condition.on('d')} AND {_IN_SPAN_D}"
            params = [key, *condition.params, *within_span]
            if not exact:  # an order on numbers: the big integers are read apart
                within += f" UNION ALL {BIG_INTEGERS} AND {_IN_SPAN_D}"
                params += [key, *within_span]
            reads: tuple[tuple[str, tuple[object, ...]], ...] = ()
            if isinstance(value, In) and exact:
                # `_held` narrows a set only when every member has a `same_value`.
                reads = tuple(
                    (
                        f"SELECT d.seq AS seq FROM item_meta AS d WHERE d.key = ? AND {same_value(member, 'd')}"
                        f" AND {_IN_SPAN_D}",
                        (key, member, *within_span),
                    )
                    for member in value.values
                )
            drivers.append(
                _Driver(
                    "items",
                    "items.seq",
                    f"items.seq IN ({within})",
                    params,
                    within,
                    settles_key=key if exact else None,
                    gathers=True,
                    reads=reads,
                )
            )
            continue
        same = same_value(value, "d")
        if same is not None:
            drivers.append(
                _Driver(
                    "item_meta AS d JOIN items ON items.seq = d.seq",
                    "d.seq",
                    f"d.key = ? AND {same} AND {_IN_SPAN_D}",
                    [key, value, *within_span],
                    f"SELECT 1 FROM item_meta AS d WHERE d.key = ? AND {same} AND {_IN_SPAN_D}",
                    settles_key=key,
                )
            )
    if len(tags) > 1:
        # SQLite collects the items holding any of the tags into a sorted set and
        # walks it in order.
        within = f"SELECT seq FROM item_tags WHERE tag IN ({', '.join('?' * len(tags))}) AND {_IN_SPAN}"
        reads = tuple((f"SELECT seq FROM item_tags WHERE tag = ? AND {_IN_SPAN}", (tag, *within_span)) for tag in tags)
        drivers.append(
            _Driver(
                "items",
                "items.seq",
                f"items.seq IN ({within})",
                [*tags, *within_span],
                within,
                settles_tags=True,
                gathers=True,
                reads=reads,
            )
        )
    needle = (query.text or "").lower()
    if len(needle) >= _MIN_TRIGRAM:
        # Narrows only: instr() on the stored text decides, so wildcards stay literal,
        # and a long needle's opening narrows as well as all of it, at a bounded cost.
        drivers.append(
            _Driver(
                "items_text JOIN items ON items.seq = items_text.rowid",
                "items_text.rowid",
                "items_text MATCH ? AND items_text.rowid BETWEEN ? AND ?",
                [_trigrams(indexable(needle[:_OPENING])), *within_span],
                "SELECT 1 FROM items_text WHERE items_text MATCH ? AND items_text.rowid BETWEEN ? AND ?",
            )
        )
    return drivers


Count = Callable[[str, list[object]], int]
"""Runs a `SELECT count(*)` with its values and returns the count: how the planner
asks the database how many entries an index holds, without holding a connection."""


def plan_search(asked: MemoryQuery, count: Count, span: Span, *, newest_first: bool = False) -> Plan[str] | None:
    """`asked` as SQL over the items of `span`, in insertion order or, `newest_first`,
    the reverse (each driving index is then read backwards, so a limit still stops the
    read early), and what Python decides on the rows; `None` when no stored item can
    match, which needs no SQL. `count` probes the indexes that could drive it; nothing
    else is read."""
    query = settle_unstorable(asked, allow_nul=True)
    if query is None or span is NOTHING:
        return None
    found = predicates_of(query)
    driver = _narrowest(count, _drivers(query, found.tags, found.filters, found.held, span), query.limit)
    where = _Where(query, driver, found, span)
    if driver is not None and driver.gathers and not where.merges(found.any_tag) and 0 < query.limit <= _WALK_MOST:
        walk = _Where(query, None, found, span)
        if _walk_is_cheaper(count, driver, walk, query.limit, newest_first):
            return walk.plan(found.any_tag, newest_first)
    return where.plan(found.any_tag, newest_first)


class _Where:
    """The conditions of a search read through `driver` (with none, every item in
    order): the driver's own, then each predicate it does not settle, looked up row
    by row on primary keys; and the filters Python decides after."""

    def __init__(self, query: MemoryQuery, driver: _Driver | None, asked: Predicates, span: Span) -> None:
        self.driver = driver
        self.span = span
        self.limit = query.limit
        settles_tags = driver is not None and driver.settles_tags
        clauses = clauses_of(
            query, asked, tags_settled=settles_tags, key_settled=None if driver is None else driver.settles_key
        )
        self.recheck = clauses.recheck
        # A driver reads only the span; without one, the items' own key is read so.
        first = "items.seq BETWEEN ? AND ?" if driver is None else driver.condition
        self.clauses = [first, *clauses.sql]
        # When an item of the span has expired, each row's expiry is checked last.
        self.live, self.now = span.live()
        self.params = [*([span.first, span.last] if driver is None else driver.params), *clauses.params, *self.now]

    @property
    def sql(self) -> str:
        """The `WHERE` clause."""
        return " WHERE " + " AND ".join(self.clauses) + self.live

    def merges(self, any_tag: frozenset[str]) -> bool:
        """Whether the driver's reads, one for each tag or value, decide the search
        alone: nothing else is checked and the limit goes into the SQL, so the first
        `limit` entries of each read hold the first `limit` matches."""
        limit = sql_limit(self.limit, self.recheck, any_tag)
        return self.driver is not None and bool(self.driver.reads) and len(self.clauses) == 1 and bool(limit)

    def plan(self, any_tag: frozenset[str], newest_first: bool) -> Plan[str]:
        """The statement: the driving index lists candidates in insertion order, so a
        limit stops the scan early. A driver that gathers its candidates, when it
        decides the search alone, reads at most `limit` of them for each tag or value
        instead of all of them ([ADR-0096][adr-0096])."""
        driver = self.driver
        direction = " DESC" if newest_first else ""
        limit = sql_limit(self.limit, self.recheck, any_tag)
        if driver is not None and self.merges(any_tag):
            firsts: list[str] = []
            params: list[object] = []
            for read, values in driver.reads:
                if self.live:  # each read's entries held to their items' expiry before its limit
                    unexpired = self.live.removeprefix(" AND ")
                    read = f"SELECT r.seq AS seq FROM ({read}) AS r JOIN items ON items.seq = r.seq WHERE {unexpired}"
                firsts.append(f"SELECT seq FROM ({read} ORDER BY seq{direction} LIMIT ?)")
                params += [*values, *self.now, limit]
            sql = f"SELECT {COLUMNS} FROM items WHERE items.seq IN ({' UNION ALL '.join(firsts)})"
            sql += f" ORDER BY items.seq{direction} LIMIT ?"
            return Plan(sql, [*params, limit], self.recheck, any_tag, pushed=True)
        source, order = ("items", "items.seq") if driver is None else (driver.source, driver.order)
        sql = f"SELECT {COLUMNS} FROM {source}{self.sql} ORDER BY {order}{direction}"
        params = [*self.params]
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return Plan(sql, params, self.recheck, any_tag, pushed=limit is not None)


# Seam for tests: `_GATHER_MOST` and `_WALK_ROWS_A_RESULT`, lowered to test the walk
# in a small store.
_GATHER_MOST = 1_024
"""The fewest candidates of a driver that gathers them for which walking the items
in order is tried instead: fewer cost less than any walk's first rows."""
_WALK_ROWS_A_RESULT = 32
"""Items a walk in order may read for each result it is asked for: the most a walk
costs, and the most a walk that falls short wastes before the driver gathers."""
_WALK_MOST = 1_000
"""The largest limit a walk is tried for."""


def _walk_is_cheaper(count: Count, driver: _Driver, walk: _Where, limit: int, newest_first: bool) -> bool:
    """Whether reading the items in order and checking each is cheaper than
    gathering `driver`'s candidates: they number at least `_GATHER_MOST` and the
    `_WALK_ROWS_A_RESULT * limit` rows a walk may read, and those first rows in order
    hold `limit` matches. A range or several tags matching a large share of the
    store is then read a few rows at a time, not gathered whole before the limit
    cuts it ([ADR-0099][adr-0099-d5])."""
    # Gathering fewer candidates than the walk may read rows costs less.
    enough = max(_GATHER_MOST, _WALK_ROWS_A_RESULT * limit)
    if count(f"SELECT count(*) FROM ({driver.entries} LIMIT ?)", [*driver.params, enough]) < enough:
        return False
    first = (
        "SELECT seq, folded, expires_at FROM items WHERE seq BETWEEN ? AND ?"
        f" ORDER BY items.seq{' DESC' if newest_first else ''}"
        " LIMIT ?"
    )
    found = count(
        f"SELECT count(*) FROM (SELECT 1 FROM ({first}) AS items{walk.sql} LIMIT ?)",
        [walk.span.first, walk.span.last, _WALK_ROWS_A_RESULT * limit, *walk.params, limit],
    )
    return found >= limit


def _narrowest(count: Count, drivers: list[_Driver], limit: int) -> _Driver | None:
    """The driver with the fewest index entries, without statistics: count at most
    `_PROBE` entries of each and, while every count reaches that cap and the search
    wants more rows than the cap, count 16 times further. A count below the cap is
    exact, so the loop ends once one index runs out."""
    cap = _PROBE
    while len(drivers) > 1:
        counts = [count(f"SELECT count(*) FROM ({d.entries} LIMIT ?)", [*d.params, cap]) for d in drivers]
        least = min(counts)
        if least < cap or 0 <= limit <= cap:
            return drivers[counts.index(least)]
        # No count exceeds the cap, so here every driver is tied at it.
        cap *= 16
    return drivers[0] if drivers else None
