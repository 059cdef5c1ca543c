"""Draw the decision records' component and sequence diagrams, and the architecture
page's routes, as SVG, offline, from the small descriptions below, so that a picture
changes only with its description.

Run: python scripts/draw_diagrams.py, and commit docs/assets/*.svg with the change;
tests/project/test_docs_site.py fails while a drawing differs from what this script draws.
"""

from __future__ import annotations

import sys
from html import escape
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "docs" / "assets"
FONT = 'font-family="sans-serif" font-size="13"'
ARROW = (
    '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
    'orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="#555"/></marker></defs>'
)


class Box(NamedTuple):
    """A component: its name, a second line saying what it is, and its place."""

    name: str
    note: str
    x: int
    y: int
    width: int = 200
    height: int = 52


class Link(NamedTuple):
    """An arrow from one component's edge to another's, with a label."""

    source: str
    target: str
    label: str
    dashed: bool = False


def _text(x: float, y: float, text: str, extra: str = "") -> str:
    return f'<text x="{x:g}" y="{y:g}" text-anchor="middle"{extra}>{escape(text)}</text>'


def components(title: str, boxes: list[Box], links: list[Link]) -> str:
    """Boxes where the description puts them, and arrows between their nearest edges."""
    width = max(b.x + b.width for b in boxes) + 20
    height = max(b.y + b.height for b in boxes) + 20
    named = {b.name: b for b in boxes}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" {FONT}>',
        f"<title>{escape(title)}</title>",
        ARROW,
    ]
    for link in links:
        a, b = named[link.source], named[link.target]
        (x1, y1), (x2, y2) = _edge(a, b), _edge(b, a)
        dash = ' stroke-dasharray="5,4"' if link.dashed else ""
        parts.append(
            f'<line x1="{x1:g}" y1="{y1:g}" x2="{x2:g}" y2="{y2:g}" stroke="#555" stroke-width="1.4"{dash} '
            'marker-end="url(#arrow)"/>'
        )
        parts.append(_text((x1 + x2) / 2 + 6, (y1 + y2) / 2 - 4, link.label, ' fill="#333" font-size="11"'))
    for box in boxes:
        parts.append(
            f'<rect x="{box.x}" y="{box.y}" width="{box.width}" height="{box.height}" rx="8" '
            'fill="#eef3fb" stroke="#3f6fb5" stroke-width="1.5"/>'
        )
        middle = box.x + box.width / 2
        parts.append(_text(middle, box.y + 22, box.name, ' font-weight="bold"'))
        parts.append(_text(middle, box.y + 40, box.note, ' fill="#444" font-size="11"'))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def _edge(a: Box, b: Box) -> tuple[float, float]:
    """Where a line from `a`'s centre towards `b`'s leaves `a`: the middle of a side."""
    ax, ay = a.x + a.width / 2, a.y + a.height / 2
    bx, by = b.x + b.width / 2, b.y + b.height / 2
    if abs(by - ay) * a.width >= abs(bx - ax) * a.height:
        return ax, (a.y + a.height if by > ay else a.y)
    return (a.x + a.width if bx > ax else a.x), ay


class Step(NamedTuple):
    """A message from one participant to another (or itself), or a note across all."""

    source: str
    target: str
    label: str


NOTE = "note"


def sequence(title: str, participants: list[str], steps: list[Step]) -> str:
    """Lifelines side by side, each step a labelled arrow below the last; a step from
    `NOTE` is a shaded band saying what the steps under it do."""
    gap, top, row = 190, 60, 34
    width = gap * len(participants)
    height = top + row * (len(steps) + 1)
    x = {name: gap / 2 + gap * n for n, name in enumerate(participants)}
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" {FONT}>',
        f"<title>{escape(title)}</title>",
        ARROW,
    ]
    for name in participants:
        parts.append(
            f'<rect x="{x[name] - 90:g}" y="10" width="180" height="30" rx="6" fill="#eef3fb" '
            'stroke="#3f6fb5" stroke-width="1.5"/>'
        )
        parts.append(_text(x[name], 30, name, ' font-weight="bold"'))
        parts.append(
            f'<line x1="{x[name]:g}" y1="40" x2="{x[name]:g}" y2="{height - 10}" stroke="#999" stroke-dasharray="4,4"/>'
        )
    for n, step in enumerate(steps):
        y = top + row * n + row / 2
        if step.source == NOTE:
            parts.append(
                f'<rect x="8" y="{y - 13:g}" width="{width - 16}" height="24" fill="#fff6d8" stroke="#c9a227"/>'
            )
            parts.append(_text(width / 2, y + 4, step.label, ' fill="#5a4500"'))
            continue
        x1, x2 = x[step.source], x[step.target]
        if x1 == x2:  # to itself: a small loop to the right
            parts.append(
                f'<path d="M{x1:g},{y - 6:g} h30 v12 h-28" fill="none" stroke="#555" stroke-width="1.4" '
                'marker-end="url(#arrow)"/>'
            )
            parts.append(f'<text x="{x1 + 36:g}" y="{y + 4:g}">{escape(step.label)}</text>')
            continue
        parts.append(
            f'<line x1="{x1:g}" y1="{y + 6:g}" x2="{x2:g}" y2="{y + 6:g}" stroke="#555" stroke-width="1.4" '
            'marker-end="url(#arrow)"/>'
        )
        parts.append(_text((x1 + x2) / 2, y, step.label))
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


def drawings() -> dict[str, str]:
    """Every diagram, by its file name in docs/assets."""
    return {
        "overview.svg": components(
            "lionmem: a conversation's memory is any store with three methods",
            [
                Box("Branch, Session", "conversation.memory", 10, 10, 210),
                Box("MemoryStore", "store, retrieve, search", 322, 10, 210),
                Box("ConformanceKit", "checks what a store declares", 634, 10, 210),
                Box("InMemoryStore", "the default, in process", 10, 150, 195),
                Box("SQLiteMemoryStore", "one file, durable", 222, 150, 195),
                Box("PostgresMemoryStore", "shared by many workers", 434, 150, 200),
                Box("your adapter", "any object with the methods", 651, 150, 195),
            ],
            [
                Link("Branch, Session", "MemoryStore", "uses"),
                Link("ConformanceKit", "MemoryStore", "checks"),
                Link("InMemoryStore", "MemoryStore", "implements", dashed=True),
                Link("SQLiteMemoryStore", "MemoryStore", "", dashed=True),
                Link("PostgresMemoryStore", "MemoryStore", "", dashed=True),
                Link("your adapter", "MemoryStore", "implements", dashed=True),
            ],
        ),
        "adr-0100-components.svg": components(
            "ADR-0100: the ForgettingStore extension, who implements it and who uses it",
            [
                Box("MemoryStore", "store, retrieve, search", 250, 10),
                Box("ForgettingStore", "delete, count, expire, scan", 250, 120),
                Box("InMemoryStore", "the reference", 10, 240),
                Box("SQLiteMemoryStore", "erased when closed", 250, 240),
                Box("PostgresMemoryStore", "hidden at commit", 490, 240),
                Box("lionmem", "delete, forget, export, copy", 10, 360, 230),
                Box("ConformanceKit", "forgetting check, stateful", 460, 360, 230),
            ],
            [
                Link("ForgettingStore", "MemoryStore", "extends"),
                Link("InMemoryStore", "ForgettingStore", "implements", dashed=True),
                Link("SQLiteMemoryStore", "ForgettingStore", "implements", dashed=True),
                Link("PostgresMemoryStore", "ForgettingStore", "implements", dashed=True),
                Link("lionmem", "SQLiteMemoryStore", "opens by URL"),
                Link("ConformanceKit", "PostgresMemoryStore", "checks any store"),
            ],
        ),
        "adr-0100-copy-sequence.svg": sequence(
            "ADR-0100: lionmem copy, batch by batch, resumable, then checked",
            ["copy", "source store", "destination", "state file"],
            [
                Step("copy", "destination", "count(): empty, or resuming?"),
                Step("copy", "state file", "read: items done, last id"),
                Step(NOTE, "", "for each batch of 500, the next read while this one is written"),
                Step("copy", "source store", "scan(500): next batch"),
                Step("copy", "copy", "hash its export lines"),
                Step("copy", "destination", "store_many(batch)"),
                Step("copy", "state file", "record: items done, last id"),
                Step(NOTE, "", "when the source is exhausted"),
                Step("copy", "destination", "scan(500): every item"),
                Step("copy", "copy", "compare count and SHA-256"),
                Step("copy", "state file", "remove"),
            ],
        ),
        "adr-0101-components.svg": components(
            "ADR-0101: lionmem's stores behind lionagi, and lionagi's stores before lionmem's kit",
            [
                Box("lionagi Branch, Session", "memory=any MemoryStore", 10, 10, 230),
                Box("StoreForLionagi", "for_lionagi(store)", 10, 130, 230),
                Box("lionmem store", "InMemory, SQLite, PostgreSQL", 10, 250, 230),
                Box("ConformanceKit", "check --lionagi, plugin", 330, 10, 230),
                Box("StoreFromLionagi", "from_lionagi(store)", 330, 130, 230),
                Box("a lionagi-typed store", "lionagi's or a user's", 330, 250, 230),
            ],
            [
                Link("lionagi Branch, Session", "StoreForLionagi", "lionagi items"),
                Link("StoreForLionagi", "lionmem store", "lionmem twins"),
                Link("ConformanceKit", "StoreFromLionagi", "lionmem items"),
                Link("StoreFromLionagi", "a lionagi-typed store", "lionagi twins"),
            ],
        ),
        "adr-0101-twins-sequence.svg": sequence(
            "ADR-0101: a live store gives the caller's own object back through the bridge",
            ["lionagi caller", "StoreForLionagi", "twins (weak)", "wrapped store"],
            [
                Step("lionagi caller", "StoreForLionagi", "store(item)"),
                Step("StoreForLionagi", "twins (weak)", "twin shares content, tags, metadata"),
                Step("StoreForLionagi", "wrapped store", "store(twin)"),
                Step(NOTE, "", "later, a search"),
                Step("lionagi caller", "StoreForLionagi", "search(query)"),
                Step("StoreForLionagi", "wrapped store", "search(lionmem query)"),
                Step("StoreForLionagi", "twins (weak)", "a result that is the twin?"),
                Step("StoreForLionagi", "lionagi caller", "yes: item itself; no: a new twin"),
                Step(NOTE, "", "a store that keeps copies lets each twin go: its entry goes with it"),
            ],
        ),
        "adr-0102-components.svg": components(
            "ADR-0102: the RecallStore extension, its embedders and who checks it",
            [
                Box("MemoryStore", "store, retrieve, search", 250, 10),
                Box("RecallStore", "embedder, recall(query, k)", 250, 120),
                Box("Embedder", "identity, dimensions, embed", 530, 120),
                Box("InMemoryStore", "numpy matrix, exact", 10, 240),
                Box("SQLiteMemoryStore", "vectors beside rows", 250, 240),
                Box("WordLlamaEmbedder", "offline model, 256 d", 530, 240),
                Box("ConformanceKit", "recall check, brute force", 10, 360, 230),
                Box("FunctionEmbedder", "any function of yours", 770, 240),
                Box("HashingEmbedder", "deterministic, for tests", 770, 360),
            ],
            [
                Link("RecallStore", "MemoryStore", "extends"),
                Link("RecallStore", "Embedder", "is given one"),
                Link("InMemoryStore", "RecallStore", "implements", dashed=True),
                Link("SQLiteMemoryStore", "RecallStore", "implements", dashed=True),
                Link("WordLlamaEmbedder", "Embedder", "implements", dashed=True),
                Link("FunctionEmbedder", "Embedder", "implements", dashed=True),
                Link("HashingEmbedder", "FunctionEmbedder", "or"),
                Link("ConformanceKit", "InMemoryStore", "checks any RecallStore"),
            ],
        ),
        "adr-0102-recall-sequence.svg": sequence(
            "ADR-0102: storing embeds before anything is written; recall narrows, then takes the top k",
            ["caller", "store", "embedder", "vectors"],
            [
                Step("caller", "store", "store(item)"),
                Step("store", "embedder", "embed([text_of(item)])"),
                Step(NOTE, "", "an embedder failure, or a vector of other dimensions: nothing is written"),
                Step("store", "vectors", "row and unit vector together"),
                Step(NOTE, "", "later"),
                Step("caller", "store", "recall(text, k, tags, filters)"),
                Step("store", "embedder", "embed([text])"),
                Step("store", "vectors", "cosine of every vector: one product"),
                Step("store", "store", "walk best first; keep what tags, filters match"),
                Step("store", "caller", "k Recalled(item, score), ties by insertion"),
            ],
        ),
        "adr-0104-hybrid-sequence.svg": sequence(
            "ADR-0104: hybrid recall is recall, count and the term index, fused in one place",
            ["caller", "recall_hybrid", "store", "term index"],
            [
                Step("caller", "recall_hybrid", "recall_hybrid(text, k, tags, filters)"),
                Step("recall_hybrid", "store", "recall(text, k, tags, filters)"),
                Step("store", "recall_hybrid", "the k best by meaning"),
                Step("recall_hybrid", "store", "count_up_to(10,000): N, so rare_bound(N)"),
                Step("recall_hybrid", "term index", "holding(named terms of text, bound + 1)"),
                Step("term index", "recall_hybrid", "each term's holders: one probe a term"),
                Step(
                    NOTE,
                    "",
                    "a name or number 1 to bound items hold is rare; BM25 of rare terms, after tags and filters",
                ),
                Step("recall_hybrid", "recall_hybrid", "1/(60 + rank) + w/(60 + rank), w = 2 for a rare number"),
                Step("recall_hybrid", "caller", "k HybridRecalled, each ranking's rank and score"),
            ],
        ),
        "adr-0105-namespace-spans.svg": components(
            "ADR-0105: namespaces of one SQLite file, each a range of the sequence numbers every index is keyed by",
            [
                Box("store 'default'", "SQLiteMemoryStore.open(path)", 10, 10, 230),
                Box("store 'ana'", "store.in_namespace('ana')", 290, 10, 230),
                Box("Connections", "one writer thread, one reader", 150, 120, 230),
                Box("lionmem_namespaces", "name, number, last number used", 470, 120, 250),
                Box("namespace 0: 'default'", "seq 1 to 2^40 - 1", 10, 240, 230),
                Box("namespace 1: 'ana'", "seq 2^40 to 2^41 - 1", 290, 240, 230),
                Box("every index keyed by seq", "items, tags, metadata, terms, vectors, text", 570, 240, 300),
            ],
            [
                Link("store 'default'", "Connections", "shares"),
                Link("store 'ana'", "Connections", "shares"),
                Link("Connections", "lionmem_namespaces", "a name's number"),
                Link("Connections", "namespace 0: 'default'", "reads one range"),
                Link("Connections", "namespace 1: 'ana'", ""),
                Link("namespace 1: 'ana'", "every index keyed by seq", "a range of", dashed=True),
            ],
        ),
        "adr-0105-expiry-sequence.svg": sequence(
            "ADR-0105: one reading of the clock a call; what expired is passed over, and leaves by a sweep",
            ["caller", "SQLiteMemoryStore", "clock", "Worker", "items_expiring"],
            [
                Step("caller", "SQLiteMemoryStore", "search(query)"),
                Step("SQLiteMemoryStore", "clock", "clock(): now, once for the call"),
                Step("SQLiteMemoryStore", "Worker", "search(namespace at now, query)"),
                Step("Worker", "items_expiring", "anything expired by now?"),
                Step(NOTE, "", "no: the plan as before expiry; yes: each row's expires_at > now, before the limit"),
                Step("Worker", "SQLiteMemoryStore", "the unexpired matches"),
                Step("SQLiteMemoryStore", "caller", "items (refreshed to now + ttl, if asked)"),
                Step(NOTE, "", "later, when the application asks: sweep(), forget --expired, a Sweeper"),
                Step("caller", "SQLiteMemoryStore", "sweep()"),
                Step("SQLiteMemoryStore", "Worker", "sweep(namespace at now)"),
                Step("Worker", "items_expiring", "expires_at <= now"),
                Step("Worker", "Worker", "delete those, in one transaction"),
                Step("Worker", "caller", "how many"),
            ],
        ),
        "adr-0106-components.svg": components(
            "ADR-0106: LangGraph's BaseStore on a lionmem store, each item one MemoryItem",
            [
                Box("a LangGraph application", "put, get, search, list_namespaces", 10, 10, 260),
                Box("StoreForLangGraph", "a BaseStore: batch and abatch", 330, 10, 240),
                Box("_langgraph_items", "ids, filters, namespaces", 640, 10, 220),
                Box("SyncStore", "its own loop, for the class", 140, 140, 220),
                Box("the caller's loop", "for StoreForLangGraph.open", 420, 140, 230),
                Box("any lionmem store", "search, recall, expire, scan", 280, 270, 260),
            ],
            [
                Link("a LangGraph application", "StoreForLangGraph", "ops"),
                Link("StoreForLangGraph", "_langgraph_items", "maps"),
                Link("StoreForLangGraph", "SyncStore", "runs on"),
                Link("StoreForLangGraph", "the caller's loop", "or on"),
                Link("SyncStore", "any lionmem store", "awaits"),
                Link("the caller's loop", "any lionmem store", "awaits"),
            ],
        ),
        "adr-0106-search-sequence.svg": sequence(
            "ADR-0106: a LangGraph search with a filter and a query, on a store with an embedder",
            ["application", "StoreForLangGraph", "_langgraph_items", "the lionmem store"],
            [
                Step("application", "StoreForLangGraph", "search(('users',), filter=..., query=..., limit, offset)"),
                Step("StoreForLangGraph", "_langgraph_items", "filters_of(prefix, filter)"),
                Step("_langgraph_items", "StoreForLangGraph", "a label per level, a condition per path (or refused)"),
                Step("StoreForLangGraph", "the lionmem store", "recall(query, offset + limit, filters)"),
                Step("the lionmem store", "StoreForLangGraph", "scored items, best first"),
                Step(NOTE, "", "fewer than the limit: items put with index=False make up the number"),
                Step("StoreForLangGraph", "the lionmem store", "expire(ids, ttl): refresh what was read, if asked"),
                Step("StoreForLangGraph", "application", "SearchItems from the offset, with scores"),
            ],
        ),
        "adr-0107-sync-sequence.svg": sequence(
            "ADR-0107: a SyncStore hands each call to its own loop, on its own thread, and waits",
            ["script thread", "SyncStore", "loop thread", "the async store"],
            [
                Step(NOTE, "", "SyncStore.open(source): start the loop thread; open the store there"),
                Step("script thread", "SyncStore", "search(query)"),
                Step("SyncStore", "loop thread", "call_on(loop, store.search(query)): a future, then the hand-over"),
                Step("loop thread", "the async store", "await search(query)"),
                Step("the async store", "loop thread", "items, or the error it raised"),
                Step("loop thread", "SyncStore", "the future's result"),
                Step("SyncStore", "script thread", "items (Ctrl-C while waiting cancels the call)"),
                Step(
                    NOTE, "", "close(), the with block's end, or Python's exit: close the store there, stop the thread"
                ),
            ],
        ),
        "architecture-sqlite-route.svg": sequence(
            "A search and a recall through the SQLite store: down once, and back once",
            ["SQLiteMemoryStore", "Connections", "Worker", "_planner", "Vectors"],
            [
                Step(NOTE, "", "search(query)"),
                Step("SQLiteMemoryStore", "Connections", "on_writer(worker.search)"),
                Step("Connections", "Worker", "on the worker thread"),
                Step("Worker", "_planner", "plan_search(query)"),
                Step("_planner", "Worker", "Plan: _conditions' SQL"),
                Step("Worker", "Worker", "run; settled(rows)"),
                Step("Worker", "SQLiteMemoryStore", "items"),
                Step(NOTE, "", "recall(text, k, tags, filters)"),
                Step("SQLiteMemoryStore", "Vectors", "recall(connections, ...)"),
                Step("Vectors", "Connections", "on_writer(ranked, ...)"),
                Step("Connections", "Vectors", "the k best, scored"),
                Step("Vectors", "SQLiteMemoryStore", "k Recalled, ties by insertion"),
            ],
        ),
        "architecture-postgres-route.svg": sequence(
            "A search and a recall through the PostgreSQL store: down once, and back once",
            ["PostgresMemoryStore", "_reads", "_planner", "Connections", "PgVectors"],
            [
                Step(NOTE, "", "search(query)"),
                Step("PostgresMemoryStore", "_reads", "read_search(query)"),
                Step("_reads", "_planner", "plan_search(query)"),
                Step("_planner", "_reads", "Plan: _conditions' SQL"),
                Step("_reads", "Connections", "select(statement)"),
                Step("Connections", "_reads", "rows"),
                Step("_reads", "PostgresMemoryStore", "settled(rows)"),
                Step(NOTE, "", "recall(text, k, tags, filters)"),
                Step("PostgresMemoryStore", "PgVectors", "asked(text, k, tags, filters): embeds"),
                Step("PostgresMemoryStore", "Connections", "on_connection(vectors.recall)"),
                Step("Connections", "PgVectors", "recall(conn, asked)"),
                Step("PgVectors", "PostgresMemoryStore", "k Recalled, ties by insertion"),
            ],
        ),
    }


def main() -> None:
    for name, svg in drawings().items():
        (ASSETS / name).write_text(svg, encoding="utf-8")
        sys.stdout.write(f"wrote {ASSETS / name}\n")


if __name__ == "__main__":
    main()
