"""lionmem's stores behind lionagi's real `Branch` and `Session`, and lionagi's stores
before lionmem's kit (ADR-0101)."""

from __future__ import annotations

import asyncio
import dataclasses
import gc
from collections.abc import AsyncIterator, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar
from uuid import uuid4

import pytest
from lionagi import Branch, Session
from lionagi.protocols.memory import InMemoryStore as LionagiInMemoryStore
from lionagi.protocols.memory import MemoryItem, MemoryQuery, MemoryStore

import lionmem
from lionmem.adapters.postgres import POSTGRES_PROFILE, PostgresMemoryStore
from lionmem.adapters.sqlite import SQLITE_PROFILE, SQLiteMemoryStore
from lionmem.filters import Ge
from lionmem.integrations.lionagi import StoreFromLionagi, for_lionagi, from_lionagi
from lionmem.protocols.profile import REFERENCE_PROFILE, Expiry, Forgetting, Namespaces, Paging
from lionmem.testing import CHECKS, ConformanceKit
from tests.support.cli_support import run_cli
from tests.support.pg_server import fresh_database
from tests.support.store_contract import TIMES

T = TypeVar("T")
Opened = Callable[[], AbstractAsyncContextManager[Any]]


@pytest.fixture(params=["sqlite", "postgres"])
def durable(request: pytest.FixtureRequest, tmp_path: Path) -> Opened:
    """A durable store, opened afresh on the same file or database each time."""
    if request.param == "postgres":
        database = fresh_database(request.getfixturevalue("pg_url"))
        return lambda: PostgresMemoryStore.open(database, namespace="lionagi")
    return lambda: SQLiteMemoryStore.open(tmp_path / "memory.db")


def run(body: Callable[[], Coroutine[Any, Any, T]]) -> T:
    return asyncio.run(body())


# -- the bridge to lionagi --------------------------------------------------------


def test_the_bridge_passes_lionagis_runtime_check_and_names_what_it_wraps() -> None:
    wrapped = lionmem.InMemoryStore()
    store = for_lionagi(wrapped)
    assert isinstance(store, MemoryStore)
    assert store.wrapped is wrapped and repr(store) == f"for_lionagi({wrapped!r})"


def test_wrong_arguments_are_refused_by_name_and_nothing_is_stored() -> None:
    class WithSource(MemoryItem):
        source: str = "web"

    wrapped = lionmem.InMemoryStore()
    store = for_lionagi(wrapped)

    async def body() -> None:
        with pytest.raises(
            TypeError, match="^the store takes lionagi's MemoryItem, got lionmem.protocols.memory.MemoryItem$"
        ):
            await store.store(lionmem.MemoryItem())  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="^WithSource adds the field.s. source, which the bridge would lose"):
            await store.store(WithSource())
        with pytest.raises(
            TypeError, match="^search takes lionagi's MemoryQuery, got lionmem.protocols.memory.MemoryQuery$"
        ):
            await store.search(lionmem.MemoryQuery())  # type: ignore[arg-type]
        assert await wrapped.search(lionmem.MemoryQuery()) == []

        with pytest.raises(TypeError, match="^the store takes lionagi's MemoryItem, got str$"):
            await store.store("a note")  # type: ignore[arg-type]

    run(body)
    with pytest.raises(TypeError, match="^for_lionagi takes a lionmem MemoryStore, got a str"):
        for_lionagi("sqlite:///memory.db")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^from_lionagi takes a lionagi MemoryStore, got an int"):
        from_lionagi(3)  # type: ignore[arg-type]


def test_over_the_reference_store_results_are_the_objects_stored() -> None:
    """ADR-0092's reference rule: results are live objects. The lionmem item the
    store holds shares the lionagi item's content, tags and metadata, so a change
    made in place is seen by the next search."""
    wrapped = lionmem.InMemoryStore()
    store = for_lionagi(wrapped)
    first = MemoryItem(content=["a", "list"], tags=["t"], metadata={"k": 1})
    second = MemoryItem(content="second")

    async def body() -> None:
        assert await store.store(first) == first.id
        await store.store(second)
        assert await store.retrieve(first.id) is first
        assert await store.retrieve(uuid4()) is None
        first.tags.append("added")
        first.metadata["k"] = 2
        first.content.append("grown")
        found = await store.search(MemoryQuery(tags=["added"], filters={"k": Ge(2)}, text="GROWN"))
        assert len(found) == 1 and found[0] is first
        # A replacement keeps its place, and is itself what comes back.
        again = MemoryItem(id=second.id, content="second, replaced")
        await store.store(again)
        await asyncio.sleep(0)  # the loop lets go of the finished calls' results
        gc.collect()  # the replaced twin is gone; its id's entry is the new one's
        assert len(store._twins._by_id) == 2 and await store.retrieve(second.id) is again
        assert await store.search(MemoryQuery()) == [first, again]
        assert (await store.search(MemoryQuery()))[1] is again
        # An item stored through lionmem's own face comes back as one lionagi object.
        direct = lionmem.MemoryItem(content="stored directly")
        await wrapped.store(direct)
        seen = await store.retrieve(direct.id)
        assert seen is await store.retrieve(direct.id)
        assert seen is not None and seen.tags is direct.tags and seen.metadata is direct.metadata

    run(body)


def test_the_bridge_keeps_no_item_a_copying_store_let_go(tmp_path: Path) -> None:
    """Twins are held weakly: over a store that keeps copies, the bridge holds
    nothing once each call returns."""

    async def body() -> None:
        async with SQLiteMemoryStore.open(tmp_path / "memory.db") as db:
            store = for_lionagi(db)
            for n in range(50):
                await store.store(MemoryItem(content=n))
            assert len(await store.search(MemoryQuery(limit=100))) == 50
            await asyncio.sleep(0)  # the loop lets go of the finished call's result
            gc.collect()
            assert store._twins._by_id == {}

    run(body)


def test_a_late_farewell_from_a_replaced_twin_leaves_the_new_one_remembered() -> None:
    """A twin may die on a store's worker thread after its id got a newer twin; its
    entry's callback must not remove the newer one."""
    store = for_lionagi(lionmem.InMemoryStore())
    first = MemoryItem(content="first")
    run(lambda: store.store(first))
    (kept_ref, _) = store._twins._by_id[first.id]  # as if the dying thread still held it
    again = MemoryItem(id=first.id, content="again")
    run(lambda: store.store(again))
    gc.collect()
    assert kept_ref() is None  # the first twin is gone, and said so
    assert run(lambda: store.retrieve(first.id)) is again


def test_durable_stores_give_lionagi_items_with_every_field_exact(durable: Opened) -> None:
    items = [
        MemoryItem(
            content={"n": n, "nested": [1.5, None]}, tags=["t", f"n{n}"], metadata={"k": n, "s": "é"}, created_at=t
        )
        for n, t in enumerate(TIMES)
    ]

    async def body() -> None:
        async with durable() as db:
            store = for_lionagi(db)
            for item in items:
                await store.store(item)
            back = [await store.retrieve(item.id) for item in items]
            found = await store.search(MemoryQuery(limit=100))
        for got in (back, found):
            assert all(type(item) is MemoryItem for item in got)
            assert [i.model_dump() for i in got if i is not None] == [i.model_dump() for i in items]
            assert [i.created_at.hex() for i in got if i is not None] == [t.hex() for t in TIMES]
            assert not any(g is i for g, i in zip(got, items, strict=True))  # copies, as the profile says

    run(body)


# -- lionagi's own Branch and Session on a durable store --------------------------


def test_lionagis_branches_share_a_durable_store_and_the_first_claim_wins(durable: Opened) -> None:
    async def body() -> None:
        async with durable() as db:
            shared = for_lionagi(db)
            own = for_lionagi(lionmem.InMemoryStore())
            session = Session(memory=shared)
            first, second = Branch(), Branch()
            claimed = Branch(memory=own)
            session.include_branches([first, second, claimed])
            assert first.memory is shared and second.memory is shared and claimed.memory is own
            note = MemoryItem(content="the user prefers tea", tags=["preference"])
            await first.memory.store(note)
            found = await second.memory.search(MemoryQuery(tags=["preference"]))
            assert [i.id for i in found] == [note.id]
            assert await claimed.memory.search(MemoryQuery()) == []

    run(body)


def test_a_reparented_lionagi_branch_keeps_its_durable_store(durable: Opened) -> None:
    async def body() -> None:
        async with durable() as db:
            store = for_lionagi(db)
            first, second = Session(memory=store), Session(memory=for_lionagi(lionmem.InMemoryStore()))
            branch = Branch()
            first.include_branches(branch)
            first.remove_branch(branch)
            second.include_branches(branch)
            assert branch.memory is store
            note = MemoryItem(content="kept across sessions")
            await branch.memory.store(note)
            assert (await store.retrieve(note.id)) is not None
            assert await second.memory.search(MemoryQuery()) == []

    run(body)


def test_a_lionagi_session_finds_its_memory_after_a_restart(durable: Opened) -> None:
    note = MemoryItem(content="remember the deadline", tags=["todo"], metadata={"due": "friday"})

    async def before() -> None:
        async with durable() as db:
            session = Session(memory=for_lionagi(db))
            await session.default_branch.memory.store(note)

    async def after() -> list[MemoryItem]:
        async with durable() as db:  # a new process would open it as this does
            session = Session(memory=for_lionagi(db))
            found: list[MemoryItem] = await session.default_branch.memory.search(MemoryQuery(filters={"due": "friday"}))
            return found

    run(before)
    (back,) = run(after)
    assert back.model_dump() == note.model_dump() and back is not note


# -- ownership, side by side with lionagi -----------------------------------------


@pytest.mark.parametrize("library", ["lionagi", "lionmem"])
def test_the_user_link_is_the_same_in_both_libraries(library: str) -> None:
    """ADR-0092 D4: after inclusion the user is the session's id as lionagi compares
    it, and removal clears it only while it still is."""
    # Either library's classes, driven through the same calls.
    session_class: Any = Session if library == "lionagi" else lionmem.Session
    branch_class: Any = Branch if library == "lionagi" else lionmem.Branch
    session = session_class()
    linked, reassigned = branch_class(), branch_class()
    session.include_branches([linked, reassigned])
    assert linked.user == session.id and reassigned.user == session.id
    reassigned.user = "someone-else"
    session.remove_branch(linked)
    session.remove_branch(reassigned)
    assert linked.user is None and reassigned.user == "someone-else"


# -- the kit, through the bridges -------------------------------------------------

WITHOUT_FORGETTING = dataclasses.replace(REFERENCE_PROFILE, forgetting=Forgetting.NOT_OFFERED)
"""A bridge offers the three methods alone."""


def _passes(kit: ConformanceKit) -> None:
    failed = [f"{r.dimension}: {r.observed}" for r in kit.run_all() if not r.passed]
    assert failed == []


def test_the_kit_checks_lionagis_own_store_against_the_reference() -> None:
    _passes(ConformanceKit(LionagiInMemoryStore, WITHOUT_FORGETTING, lionagi=True, stateful_examples=20))


def test_the_kit_checks_a_store_through_the_integration() -> None:
    """lionmem's stores through both bridges, lionagi's types in between, keep every
    promise of their profiles."""
    _passes(ConformanceKit(lambda: from_lionagi(for_lionagi(lionmem.InMemoryStore())), WITHOUT_FORGETTING))

    @asynccontextmanager
    async def sqlite(workspace: Path) -> AsyncIterator[StoreFromLionagi]:
        async with SQLiteMemoryStore.open(workspace / "memory.db") as db:
            yield from_lionagi(for_lionagi(db))

    durable = dataclasses.replace(
        SQLITE_PROFILE,
        forgetting=Forgetting.NOT_OFFERED,
        namespaces=Namespaces.UNDECLARED,
        paging=Paging.UNDECLARED,
        expiry=Expiry.UNDECLARED,
    )
    _passes(ConformanceKit(sqlite, durable, stateful_examples=20))
    assert POSTGRES_PROFILE is SQLITE_PROFILE  # what holds for one holds for the other's bridge


def test_the_kit_fails_a_lionagi_store_that_breaks_a_promise() -> None:
    class Forgetful(LionagiInMemoryStore):
        """Drops every tag it is given."""

        async def store(self, item: MemoryItem) -> Any:
            return await super().store(item.model_copy(update={"tags": []}))

    kit = ConformanceKit(Forgetful, WITHOUT_FORGETTING, lionagi=True, stateful_examples=5)
    result = kit.check("tags")
    assert not result.passed and "tags" in result.dimension


def test_a_lionagi_kit_closes_what_the_factory_opened() -> None:
    closed: list[bool] = []

    class Closing(LionagiInMemoryStore):
        async def close(self) -> None:
            closed.append(True)

    ConformanceKit(Closing, WITHOUT_FORGETTING, lionagi=True).check("protocol")
    assert closed == [True]
    bridge = from_lionagi(Closing())
    run(bridge.close)
    run(from_lionagi(LionagiInMemoryStore()).close)  # nothing to close
    assert closed == [True, True]
    assert repr(bridge).startswith("from_lionagi(<")


def test_the_kit_refuses_a_bad_lionagi_option() -> None:
    with pytest.raises(TypeError, match="^lionagi must be a bool, got str"):
        ConformanceKit(LionagiInMemoryStore, WITHOUT_FORGETTING, lionagi="yes")  # type: ignore[call-overload]


def test_the_bridge_from_lionagi_refuses_what_lionagi_cannot_take() -> None:
    store = from_lionagi(LionagiInMemoryStore())

    async def body() -> None:
        with pytest.raises(
            TypeError, match="^the store takes lionmem's MemoryItem, got lionagi.protocols.memory.MemoryItem$"
        ):
            await store.store(MemoryItem())  # type: ignore[arg-type]
        with pytest.raises(
            TypeError, match="^search takes lionmem's MemoryQuery, got lionagi.protocols.memory.MemoryQuery$"
        ):
            await store.search(MemoryQuery())  # type: ignore[arg-type]

    run(body)


def test_the_command_line_checks_a_lionagi_adapter(capsys: pytest.CaptureFixture[str]) -> None:
    adapter = ("tests.support.lionagi_adapter:NotesStore", "--profile", "tests.support.lionagi_adapter:PROFILE")
    status, out, err = run_cli(capsys, "check", *adapter, "--lionagi")
    assert status == 0, out + err
    assert out.rstrip().endswith(f"{len(CHECKS)} passed, 0 failed")
    # lionagi's own store refuses lionmem's items: without the flag every check fails.
    theirs = (
        "lionagi.protocols.memory:InMemoryStore",
        "--profile",
        "tests.support.lionagi_adapter:PROFILE",
        "--only",
        "tags",
    )
    status, out, _ = run_cli(capsys, "check", *theirs)
    assert status == 1 and "MISMATCH" in out
    status, out, _ = run_cli(capsys, "check", *theirs, "--lionagi")
    assert status == 0 and out.rstrip().endswith("1 passed, 0 failed")
    with pytest.raises(SystemExit):
        run_cli(capsys, "check", "--url", "memory:", "--lionagi")
    assert "--lionagi checks a FACTORY's store" in capsys.readouterr().err


def test_the_pytest_plugin_checks_a_lionagi_adapter(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_adapter="""
import dataclasses

from lionagi.protocols.memory import InMemoryStore

from lionmem.testing import REFERENCE_PROFILE, Forgetting
from lionmem.testing.pytest_plugin import memory_store_contract

PROFILE = dataclasses.replace(REFERENCE_PROFILE, forgetting=Forgetting.NOT_OFFERED)
TestLionagiStore = memory_store_contract(InMemoryStore, PROFILE, lionagi=True, stateful_examples=10)
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(passed=len(CHECKS))


# -- recall through the bridge ------------------------------------------------------


def test_the_bridge_recalls_when_its_store_does_and_gives_lionagis_items(tmp_path: Path) -> None:
    from lionmem.embedders import HashingEmbedder
    from lionmem.errors import NoEmbedderError

    async def body() -> None:
        store = for_lionagi(lionmem.InMemoryStore(embedder=HashingEmbedder(64)))
        session = Session(memory=store)
        fact = MemoryItem(content="the customer prefers email", tags=["crm"])
        await session.default_branch.memory.store(fact)
        await store.store(MemoryItem(content="renewal due in may"))
        ((found, score),) = await store.recall("customer email", 1, tags=["crm"])
        assert found is fact and 0 < score <= 1
        both = await store.recall("customer email", 2)
        assert [s for _, s in await store.recall("customer email", 2, min_score=both[0][1])] == [both[0][1]]
        async with SQLiteMemoryStore.open(tmp_path / "m.db", embedder=HashingEmbedder(64)) as durable:
            bridged = for_lionagi(durable)
            await bridged.store(fact)
            ((copy, _),) = await bridged.recall("email", 1)
            assert isinstance(copy, MemoryItem)
            assert copy is not fact and copy.id == fact.id
        with pytest.raises(NoEmbedderError, match="the wrapped store cannot recall"):
            await for_lionagi(lionmem.InMemoryStore()).recall("email")

    run(body)
