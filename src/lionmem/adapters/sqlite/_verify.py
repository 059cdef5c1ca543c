"""Checking a SQLite store's file whole, on demand: SQLite's own integrity check, the
schema this lionmem writes, the text index, every index row against the item it was
made from, and every vector against its item's text.

Governed by [ADR-0096][adr-0096-damage].
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import groupby
from operator import itemgetter

from lionmem.adapters._codec import decode_in_slices
from lionmem.adapters.sqlite._indexes import index_rows, term_rows
from lionmem.adapters.sqlite._namespaces import SPAN_BITS
from lionmem.protocols.recall import TextOf, text_digest, text_to_embed

__all__ = ["EXPECTED", "missing_schema", "problems"]

EXPECTED = {
    "table": (
        "items",
        "item_tags",
        "item_meta",
        "items_text",
        "item_vectors",
        "lionmem_recall",
        "item_terms",
        "lionmem_namespaces",
    ),
    "index": ("item_tags_by_tag", "item_meta_by_value", "items_by_id", "items_expiring"),
    "trigger": ("item_vectors_follow_items", "item_vectors_stale"),
}
"""The schema objects of the current version, by kind."""

_READ = 2_000
"""Items read and checked at a time."""


def missing_schema(db: sqlite3.Connection) -> list[str]:
    """Each object of the current schema the database lacks: the check on open,
    which reads the schema table alone."""
    present = set(db.execute("SELECT type, name FROM sqlite_master"))
    return [
        f"the {kind} {name} is missing"
        for kind, names in EXPECTED.items()
        for name in names
        if (kind, name) not in present
    ]


def problems(db: sqlite3.Connection, text_of: TextOf | None, dimensions: int | None) -> tuple[list[str], list[str]]:
    """What is wrong with the database `db` holds, each named: the damage, and the
    vectors made from another text than their item's (which a recall makes again).
    Vectors are held to the text `text_of` gives (`str(item.content)` by default) and,
    when known, to `dimensions`."""
    found = [f"SQLite's integrity check: {row[0]}" for row in db.execute("PRAGMA integrity_check") if row[0] != "ok"]
    found += missing_schema(db)
    if found:
        return found, []  # the rows below would be read through a broken file or schema
    try:
        db.execute("INSERT INTO items_text (items_text, rank) VALUES ('integrity-check', 0)")
    except sqlite3.DatabaseError as exc:
        found.append(f"the text index: {exc}")
    broken, stale = _vectors(db, text_of, dimensions)
    return found + _spans(db) + _index_rows(db) + broken, stale


def _spans(db: sqlite3.Connection) -> list[str]:
    """Each item outside every namespace's span ([ADR-0105][adr-0105-d1])."""
    return [
        f"item {item_id}: its position {seq} is in no namespace"
        for seq, item_id in db.execute(
            f"SELECT seq, id FROM items WHERE seq >> {SPAN_BITS} NOT IN (SELECT number FROM lionmem_namespaces)"
        )
    ]


def _index_rows(db: sqlite3.Connection) -> list[str]:
    """Each item whose tag, metadata or term rows are not those its body and text make,
    and each term row of no item."""
    found: list[str] = []
    strays: list[int] = []  # positions the term index holds rows of, and no item holds
    # The term index is keyed by term: read whole in item order once, beside the items.
    terms = _terms_by_item(db.execute("SELECT seq, term, tf FROM item_terms ORDER BY seq"))
    held = next(terms, None)
    after = 0
    while rows := db.execute(
        "SELECT seq, id, created_at, body, folded FROM items WHERE seq > ? ORDER BY seq LIMIT ?", (after, _READ)
    ).fetchall():
        after = rows[-1][0]
        seqs = [row[0] for row in rows]
        marks = ", ".join("?" * len(seqs))
        tags: dict[int, Counter[tuple[object, ...]]] = {seq: Counter() for seq in seqs}
        meta: dict[int, Counter[tuple[object, ...]]] = {seq: Counter() for seq in seqs}
        for seq, *tag in db.execute(f"SELECT seq, tag FROM item_tags WHERE seq IN ({marks})", seqs):
            tags[seq][tuple(tag)] += 1
        for seq, *row in db.execute(f"SELECT seq, key, kind, value FROM item_meta WHERE seq IN ({marks})", seqs):
            meta[seq][tuple(row)] += 1
        for (seq, item_id, _, _, folded), item in zip(rows, decode_in_slices([row[1:4] for row in rows]), strict=True):
            made_tags, made_meta = index_rows(item.tags, item.metadata)
            if Counter((tag,) for tag in made_tags) != tags[seq]:
                found.append(f"item {item_id}: its tag index rows are not its tags")
            if Counter(tuple(row) for row in made_meta) != meta[seq]:
                found.append(f"item {item_id}: its metadata index rows are not its metadata")
            while held is not None and held[0] < seq:
                strays.append(held[0])
                held = next(terms, None)
            own: set[tuple[int, str, int]] = set()
            if held is not None and held[0] == seq:
                own, held = held[1], next(terms, None)
            if own != set(term_rows([(seq, folded)])):
                found.append(f"item {item_id}: its term index rows are not its text's terms")
    while held is not None:
        strays.append(held[0])
        held = next(terms, None)
    return found + [f"the term index holds rows of no item (position {seq})" for seq in strays]


def _terms_by_item(rows: Iterable[tuple[int, str, int]]) -> Iterator[tuple[int, set[tuple[int, str, int]]]]:
    """`(seq, rows)` for each position the term index holds rows of, in order."""
    for seq, group in groupby(rows, key=itemgetter(0)):
        yield seq, set(group)


def _vectors(db: sqlite3.Connection, text_of: TextOf | None, dimensions: int | None) -> tuple[list[str], list[str]]:
    """Each vector of the wrong length, and each made from another text than its item's."""
    broken: list[str] = []
    stale: list[str] = []
    after = 0
    while rows := db.execute(
        "SELECT i.seq, i.id, i.created_at, i.body, v.vector, v.digest FROM items i"
        " JOIN item_vectors v ON v.seq = i.seq WHERE i.seq > ? ORDER BY i.seq LIMIT ?",
        (after, _READ),
    ).fetchall():
        after = rows[-1][0]
        items = decode_in_slices([row[1:4] for row in rows])
        for (_, item_id, _, _, vector, digest), item in zip(rows, items, strict=True):
            if dimensions is not None and len(vector) != 4 * dimensions:
                broken.append(f"item {item_id}: its vector holds {len(vector) // 4} dimensions, not {dimensions}")
            elif digest is not None and digest != text_digest(text_to_embed(item, text_of)):
                stale.append(f"item {item_id}: its vector was made from another text than its item's")
    return broken, stale
