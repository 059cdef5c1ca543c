"""Semantic recall in the SQLite store (ADR-0102 D4): vectors beside the rows under the
embedder's name, written and deleted with them, exact top k that follows other
processes' writes, and the kit's check."""

from __future__ import annotations

import asyncio
import dataclasses
import multiprocessing
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from lionmem import InMemoryStore, MemoryItem, MemoryQuery, RecallStore
from lionmem.adapters.sqlite import SCHEMA_VERSION, SQLITE_PROFILE, SQLiteMemoryStore, _recall
from lionmem.embedders import FunctionEmbedder, HashingEmbedder
from lionmem.errors import EmbedderMismatchError, NoEmbedderError
from lionmem.filters import Ge
from lionmem.testing import ConformanceKit, Recall
from tests.support.recall_contract import (
    assert_a_replacement_without_an_embedder_leaves_no_stale_vector,
    assert_equal_texts_tie_in_insertion_order,
    assert_recall_agrees_with_the_reference,
    drifting,
)


def run(body: Any) -> Any:
    return asyncio.run(body)


def test_recall_equals_the_reference_stores_for_every_query(tmp_path: Path) -> None:
    async def body() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
            assert isinstance(store, RecallStore)
            await assert_recall_agrees_with_the_reference(store, tolerance=1e-6)

    run(body())


def test_vectors_follow_replacements_deletions_and_a_restart(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def body() -> None:
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(64)) as store:
            first, second = MemoryItem(content="apple pie"), MemoryItem(content="river stone")
            await store.store_many([first, second])
            await store.store(MemoryItem(id=first.id, content="frost maple"))
            assert (await store.recall("frost maple", 1))[0].item.id == first.id
            assert first.id not in {r.item.id for r in await store.recall("apple pie", 2) if r.score > 0}
            assert await store.delete_matching(MemoryQuery(text="river")) == 1
            assert [r.item.id for r in await store.recall("river stone", 5)] == [first.id]
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(64)) as store:
            assert [r.item.content for r in await store.recall("frost", 5)] == ["frost maple"]
            await store.delete(first.id)
            assert await store.recall("frost", 5) == []
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT count(*) FROM item_vectors").fetchone() == (0,)
            assert dict(db.execute("SELECT key, value FROM lionmem_recall")) == {
                "identity": "hashing:64",
                "dimensions": "64",
            }

    run(body())


def test_another_embedder_is_refused_by_name_and_reembed_rebuilds(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def body() -> None:
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(64)) as store:
            await store.store(MemoryItem(content="north wind"))
        with pytest.raises(EmbedderMismatchError, match=r"'hashing:64' \(64 dimensions\), not by 'hashing:32' \(32\)"):
            await SQLiteMemoryStore.open(path, embedder=HashingEmbedder(32))
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(32), reembed=True) as store:
            assert [r.item.content for r in await store.recall("north", 1)] == ["north wind"]
        async with SQLiteMemoryStore.open(path) as plain:  # without an embedder: no recall
            assert plain.embedder is None
            with pytest.raises(NoEmbedderError, match="was opened without an embedder"):
                await plain.recall("north")
            await plain.store(MemoryItem(content="south sea"))  # written without a vector
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(32)) as store:
            assert [r.item.content for r in await store.recall("south", 1)] == ["south sea"]

    run(body())


def test_an_embedder_failure_writes_nothing(tmp_path: Path) -> None:
    def flaky(texts: list[str]) -> list[list[float]]:
        if any("boom" in t for t in texts):
            raise ConnectionError("the model server is down")
        return [[1.0, float(len(t))] for t in texts]

    async def body() -> None:
        embedder = FunctionEmbedder(flaky, dimensions=2, identity="flaky")
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=embedder) as store:
            kept = MemoryItem(content="kept")
            await store.store(kept)
            with pytest.raises(ConnectionError):
                await store.store(MemoryItem(id=kept.id, content="boom"))
            with pytest.raises(ConnectionError):
                await store.store_many([MemoryItem(content="fine"), MemoryItem(content="boom")])
            assert await store.search(MemoryQuery()) == [kept]

    run(body())


def test_bad_options_are_refused_before_anything_opens(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with pytest.raises(TypeError, match="embedder must be an Embedder"):
        SQLiteMemoryStore.open(path, embedder="wordllama")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="embedder must be an Embedder"):
        SQLiteMemoryStore.open(path, reembed=True)
    with pytest.raises(TypeError, match="text_of must be callable"):
        SQLiteMemoryStore.open(path, embedder=HashingEmbedder(), text_of=3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="reembed must be a bool"):
        SQLiteMemoryStore.open(path, embedder=HashingEmbedder(), reembed="yes")  # type: ignore[arg-type]
    assert not path.exists()


def _write_elsewhere(path: str, content: str, embedded: bool) -> None:
    async def body() -> None:
        embedder = HashingEmbedder(64) if embedded else None
        async with SQLiteMemoryStore.open(path, embedder=embedder) as store:
            await store.store(MemoryItem(content=content))

    asyncio.run(body())


@pytest.mark.parametrize("embedded", [True, False], ids=["with an embedder", "without one"])
def test_recall_follows_another_processes_writes(tmp_path: Path, embedded: bool) -> None:
    """An item another process writes is recalled at once: by its vector, or, written
    without an embedder, embedded by this process before it ranks."""
    path = tmp_path / "m.db"

    async def body() -> None:
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(64)) as store:
            await store.store(MemoryItem(content="local note"))
            assert len(await store.recall("note", 5)) == 1  # the matrix is cached now
            process = multiprocessing.get_context("spawn").Process(
                target=_write_elsewhere, args=(str(path), "remote note", embedded)
            )
            process.start()
            await asyncio.to_thread(process.join, 60)
            assert process.exitcode == 0
            assert sorted(r.item.content for r in await store.recall("note", 5)) == ["local note", "remote note"]
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT count(*) FROM item_vectors WHERE digest IS NOT NULL").fetchone() == (2,)

    run(body())


def test_equal_texts_tie_in_insertion_order(tmp_path: Path) -> None:
    async def body() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=drifting()) as store:
            await assert_equal_texts_tie_in_insertion_order(store)

    run(body())


def test_a_replacement_through_a_store_without_an_embedder_drops_the_old_vector(tmp_path: Path) -> None:
    path = tmp_path / "m.db"

    async def body() -> None:
        async with (
            SQLiteMemoryStore.open(path, embedder=HashingEmbedder(64)) as store,
            SQLiteMemoryStore.open(path) as plain,
        ):
            await assert_a_replacement_without_an_embedder_leaves_no_stale_vector(store, plain)
        async with SQLiteMemoryStore.open(path) as plain:  # the command line's put, then a reopening
            first = (await plain.search(MemoryQuery(limit=1)))[0]
            await plain.store(first.model_copy(update={"content": "penguins skating"}))
        with sqlite3.connect(path) as db:  # dropped in the writer's own transaction
            assert db.execute("SELECT count(*) FROM item_vectors").fetchone() == (3,)
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(64)) as store:
            assert (await store.recall("penguins skating", 1))[0].item.id == first.id

    run(body())


def test_a_version_5_file_has_its_vectors_made_again_since_none_says_its_text(tmp_path: Path) -> None:
    """A version 5 file may hold a vector of an item's old text (its replacement by a
    store without an embedder kept it): no digest tells, so every one is made again."""
    path = tmp_path / "m.db"
    item = MemoryItem(content="How should we contact the client")

    async def write() -> None:
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(64)) as store:
            await store.store_many([item, MemoryItem(content="unrelated words here")])

    run(write())
    with sqlite3.connect(path, isolation_level=None) as db:  # back to version 5, then a stale vector
        db.execute("DROP TRIGGER item_vectors_stale")
        db.execute("ALTER TABLE item_vectors DROP COLUMN digest")
        db.execute("DROP TABLE item_terms")
        db.execute("DROP TABLE lionmem_namespaces")
        db.execute("DROP INDEX items_by_id")
        db.execute("PRAGMA user_version = 5")
        replaced = item.model_copy(update={"content": "The warehouse stores frozen fish"})
        db.execute("UPDATE items SET body = ? WHERE id = ?", (_body_of(replaced), str(item.id)))

    async def read() -> None:
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(64)) as store:
            (found,) = await store.recall("The warehouse stores frozen fish", 1)
            assert found.item.id == item.id and found.score == pytest.approx(1.0)
            stale = await store.recall("How should we contact the client", 2)
            assert all(r.score < 0.5 for r in stale if r.item.id == item.id)

    run(read())
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA user_version").fetchone() == (SCHEMA_VERSION,)
        assert db.execute("SELECT count(*) FROM item_vectors WHERE digest IS NOT NULL").fetchone() == (2,)


def test_a_tag_or_value_no_stored_item_can_hold_recalls_nothing(tmp_path: Path) -> None:
    async def body() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
            await store.store(MemoryItem(content="note", tags=["t"], metadata={"k": "v"}))
            assert await store.recall("note", 5, tags=["\ud800"]) == []
            assert await store.recall("note", 5, filters={"k": "\ud800"}) == []
            assert len(await store.recall("note", 5, tags=["t", "\ud800"])) == 1

    run(body())


def _body_of(item: MemoryItem) -> str:
    from lionmem.adapters._codec import encode_item

    return encode_item(item).body


def test_a_vector_made_from_another_text_is_made_again_when_a_recall_meets_it(tmp_path: Path) -> None:
    """Two handles embedding different texts of one item (another `text_of`): a recall
    finds its results' vectors made from other texts, makes them again, and ranks anew."""
    path = tmp_path / "m.db"

    async def body() -> None:
        item = MemoryItem(content="zebra stripes", metadata={"summary": "bananas"})
        async with SQLiteMemoryStore.open(path, embedder=HashingEmbedder(64)) as store:
            await store.store(item)
        summary = SQLiteMemoryStore.open(
            path, embedder=HashingEmbedder(64), text_of=lambda i: str(i.metadata["summary"])
        )
        async with summary as store:
            (found,) = await store.recall("zebra stripes", 1)
            assert found.score == pytest.approx(0.0, abs=1e-6)  # by "bananas", not by the content
            assert (await store.recall("bananas", 1))[0].score == pytest.approx(1.0)

    run(body())


def test_the_kit_finds_the_store_recalls_exactly(tmp_path: Path) -> None:
    profile = dataclasses.replace(SQLITE_PROFILE, recall=Recall.EXACT)

    def factory(workspace: Path) -> Any:
        return SQLiteMemoryStore.open(workspace / "kit.db", embedder=HashingEmbedder(64))

    def plain(workspace: Path) -> Any:
        return SQLiteMemoryStore.open(workspace / "kit.db")

    with_its_embedder = ConformanceKit(factory, profile).check("recall")
    assert (with_its_embedder.passed, with_its_embedder.observed) == (True, "exact"), with_its_embedder
    assert "a second store on the same data, with its embedder" in with_its_embedder.reproduction
    without = ConformanceKit(factory, profile, without_embedder=plain).check("recall")
    assert (without.passed, without.observed) == (True, "exact"), without
    assert "a second store on the same data, without an embedder" in without.reproduction


def test_a_selective_filter_reads_past_the_first_prefix_and_text_of_is_checked(tmp_path: Path) -> None:
    async def body() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
            await store.store_many([MemoryItem(content=f"alpha {n}", tags=["a"]) for n in range(600)])
            rare = [MemoryItem(content=f"omega {n}", tags=["rare"], metadata={"kind": "rare"}) for n in range(3)]
            await store.store_many(rare)
            # They rank last: the tag index names them, and a filter walks past 256 rows.
            assert [r.item.id for r in await store.recall("alpha", 3, tags=["rare"])] == [i.id for i in rare]
            assert [r.item.id for r in await store.recall("alpha", 3, filters={"kind": "rare"})] == [i.id for i in rare]
            broad = await store.recall("alpha 7", 2, tags=["a", "rare"])  # most items hold one: the walk
            assert broad == await store.recall("alpha 7", 2)
            # Too many to score alone (over a twentieth), ranked last: the walk reads past 256 rows.
            many = [MemoryItem(content=f"omega {n}", tags=["b"]) for n in range(40)]
            await store.store_many(many)
            assert [r.item.id for r in await store.recall("alpha", 3, tags=["b"])] == [i.id for i in many[:3]]
            assert await store.recall("alpha", 3, tags=["none"]) == []
            with pytest.raises(TypeError, match="tags must be a list of str"):
                await store.recall("alpha", tags="rare")  # type: ignore[arg-type]
            assert await store.store_many([]) == []
        with_tags = SQLiteMemoryStore.open(tmp_path / "t.db", embedder=HashingEmbedder(8), text_of=lambda i: 3)  # type: ignore[arg-type, return-value]
        async with with_tags as store:
            with pytest.raises(TypeError, match="text_of must return a str, got int"):
                await store.store(MemoryItem(content="x"))

    run(body())


def test_a_selective_filter_scores_the_ids_sql_selects_and_decodes_only_what_it_returns(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The narrowed path scores the vectors of the ids SQL selects (every match, and
    rows Python's rules then drop), and decodes the best of them until `k` meet those
    rules; every path recalls what the reference store recalls."""

    async def body() -> None:
        reference = InMemoryStore(embedder=HashingEmbedder(64))
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
            items = [
                MemoryItem(content=f"beacon {n % 7} harbor", metadata={"group": n % 50, "pair": [n % 50, 0]})
                for n in range(500)
            ]
            await store.store_many(items)
            await reference.store_many(items)

            def ids(**asked: Any) -> Any:  # on the writer's thread, as recall runs it
                return store._connections.on_writer(
                    store._connections.worker.selected, store._space, MemoryQuery(**asked)
                )

            decided = await ids(filters={"group": 3}, limit=100)
            assert decided == [str(i.id) for i in items if i.metadata["group"] == 3]
            checked = await ids(filters={"pair": [3, 0]}, limit=600)
            assert set(decided) < set(checked)  # SQL cannot compare lists: Python does
            assert await ids(filters={"group": 3}, limit=2) == decided[:2]
            assert await ids(tags=["none"], filters={"group": 3}, limit=2) == []
            decoded: list[int] = []
            slices = _recall.decode_in_slices  # type: ignore[attr-defined]

            def counted(rows: Any) -> Any:
                decoded.append(len(rows))
                return slices(rows)

            monkeypatch.setattr(_recall, "decode_in_slices", counted)
            for filters in ({"group": 3}, {"pair": [3, 0]}, {"group": Ge(48)}):
                decoded.clear()
                ours = await store.recall("beacon 4", 5, filters=filters)
                theirs = await reference.recall("beacon 4", 5, filters=filters)
                assert [r.item.id for r in ours] == [r.item.id for r in theirs], filters
                assert all(r.item == next(i for i in items if i.id == r.item.id) for r in ours)
                if filters != {"pair": [3, 0]}:  # a list SQL cannot compare: Python reads the rows
                    assert sum(decoded) <= 64, (filters, decoded)  # not every match, nor all 500

    run(body())


@pytest.mark.parametrize("estimate", [0.0, 1.0], ids=["sample sees none", "sample sees all"])
def test_a_sample_that_misjudges_a_filter_still_gives_the_exact_top_k(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, estimate: float
) -> None:
    """Whether a filter is narrow is judged on a sample of rows, which can be wrong
    either way: a broad filter taken for narrow is found too many to score alone and
    walked; a narrow one taken for broad is walked past its first prefix. The answer
    is the reference store's in every case."""

    async def body() -> None:
        reference = InMemoryStore(embedder=HashingEmbedder(64))
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(64)) as store:
            items = [MemoryItem(content=f"beacon {n % 9} harbor", metadata={"n": n}) for n in range(1_000)]
            await store.store_many(items)
            await reference.store_many(items)
            monkeypatch.setattr(_recall, "_share", lambda *_: estimate)
            for filters in ({"n": Ge(300)}, {"n": Ge(990)}):  # 70% and 1%
                ours = await store.recall("beacon 4", 5, filters=filters)
                theirs = await reference.recall("beacon 4", 5, filters=filters)
                assert [r.item.id for r in ours] == [r.item.id for r in theirs], filters

    run(body())


def test_without_numpy_an_embedder_names_the_extra(tmp_path: Path) -> None:
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['numpy'] = None\n"
        "from lionmem.adapters.sqlite import SQLiteMemoryStore\nfrom lionmem.embedders import HashingEmbedder\n"
        f"try:\n    SQLiteMemoryStore.open({str(tmp_path / 'm.db')!r}, embedder=HashingEmbedder())\n"
        "except ImportError as exc:\n    print(exc)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("recall needs numpy: pip install 'lionmem[recall]'")
