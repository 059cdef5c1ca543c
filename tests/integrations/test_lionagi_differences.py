"""Every row of docs/lionagi-differences.md, run side by side against the real lionagi
the `lionagi` extra installs.

Each test is registered under its row's name. A failure names the row, so that when a
new lionagi changes a behaviour the page states, the row to revise is in the message;
the last test holds the page and this module to the same rows.
"""

from __future__ import annotations

import asyncio
import copy
import functools
import pickle
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID, uuid4

import pytest
from lionagi import Branch, Session
from lionagi.protocols.generic.pile import Pile
from lionagi.protocols.memory import InMemoryStore, MemoryItem, MemoryQuery
from pydantic import ValidationError

import lionmem
from lionmem.adapters.sqlite import SQLiteMemoryStore
from lionmem.integrations.lionagi import for_lionagi
from tests.support.differences import Ledger

T = TypeVar("T")
LEDGER = Ledger("lionagi-differences.md")
row = LEDGER.row


def run(body: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(body)


def lionagi_session(*branches: Branch) -> Session:
    """lionagi's `Session` takes its branches as one of its piles."""
    return Session(branches=Pile(collections=list(branches), item_type={Branch}, strict_type=False))


def raised(call: Callable[[], object]) -> BaseException:
    """The exception `call` raises; the test fails if it raises none."""
    try:
        call()
    except Exception as exc:
        return exc
    pytest.fail(f"{call} raised nothing")


# -- ownership --------------------------------------------------------------------


@row("default-branch-made")
def test_given_branches_and_no_default_both_make_a_default_of_their_own() -> None:
    theirs, ours = Branch(), lionmem.Branch()
    their_session, our_session = lionagi_session(theirs), lionmem.Session(branches=[ours])
    pairs: list[tuple[Any, Any]] = [(their_session, theirs), (our_session, ours)]
    for session, given in pairs:
        assert len(session.branches) == 2
        assert session.default_branch is not given
        assert list(session.branches)[-1] is session.default_branch
        assert session.default_branch.memory is session.memory is given.memory


@row("copy-of-owned-branch")
def test_a_shallow_copy_of_an_owned_branch_joins_another_session_only_in_lionmem() -> None:
    their_session, our_session = Session(), lionmem.Session()
    theirs, ours = their_session.new_branch(), our_session.new_branch()

    def model_copy(branch: Any) -> Any:
        return branch.model_copy()

    for make_copy in (model_copy, copy.copy):
        with pytest.raises(ValueError, match="already owned"):
            Session().include_branches(make_copy(theirs))
        our_copy = make_copy(ours)
        elsewhere = lionmem.Session()
        elsewhere.include_branches(our_copy)
        assert our_copy.session_id == elsewhere.id and ours.session_id == our_session.id
        assert our_copy.memory is ours.memory is our_session.memory


@row("deep-copy-of-branch")
def test_a_deep_copy_or_pickle_of_a_branch_works_only_in_lionmem() -> None:
    their_session, our_session = Session(), lionmem.Session()
    theirs, ours = their_session.new_branch(), our_session.new_branch()
    item = lionmem.MemoryItem(content="kept")
    run(ours.memory.store(item))

    def pickled(branch: Any) -> Any:
        return pickle.loads(pickle.dumps(branch))

    for make_copy in (copy.deepcopy, pickled):
        assert isinstance(raised(functools.partial(make_copy, theirs)), TypeError)
        our_copy = make_copy(ours)
        assert our_copy.session_id is None and our_copy.memory is not ours.memory
        found = run(our_copy.memory.retrieve(item.id))
        assert found is not None and found.content == "kept"


@row("memory-not-a-store")
def test_a_memory_that_is_not_a_store_is_refused_only_by_lionmem() -> None:
    async def pending() -> None: ...

    wrongs: list[Any] = ["x", object(), InMemoryStore, pending()]
    for wrong in wrongs:
        with pytest.raises(TypeError, match=r"^Branch\(memory=...\)"):
            lionmem.Branch(memory=wrong)
        with pytest.raises(TypeError, match=r"^Session\(memory=...\)"):
            lionmem.Session(memory=wrong)
        assert Branch(memory=wrong).memory is wrong
        assert Session(memory=wrong).memory is wrong
        if asyncio.iscoroutine(wrong):
            wrong.close()


@row("twin-branches")
def test_two_branches_with_one_id_are_refused_only_by_lionmem() -> None:
    first = Branch()
    twin = Branch(id=first.id)
    made = lionagi_session(first, twin)  # the pile keeps the last of the two
    assert made.branches[first.id] is twin
    Session().include_branches(first)  # the first was never claimed
    first = Branch()
    twin = Branch(id=first.id)
    session = Session()
    session.include_branches([first, twin])  # the first is held, yet the twin claims the session
    assert session.branches[first.id] is first
    with pytest.raises(ValueError, match=f"already owned by session {session.id}"):
        Session().include_branches(twin)

    ours = lionmem.Branch()
    our_twin = lionmem.Branch(id=ours.id)
    with pytest.raises(ValidationError, match="two different branches have the id"):
        lionmem.Session(branches=[ours, our_twin])
    with pytest.raises(ValueError, match="two different branches in the batch have the id"):
        lionmem.Session().include_branches([ours, our_twin])
    assert ours.session_id is None and our_twin.session_id is None


@row("default-not-held")
def test_a_default_branch_the_session_does_not_hold_is_refused_only_by_lionmem() -> None:
    session, stranger = Session(), Branch()
    session.default_branch = stranger
    assert stranger not in session.branches and stranger.memory is not session.memory

    ours, our_stranger = lionmem.Session(), lionmem.Branch()
    held = ours.default_branch
    with pytest.raises(ValueError, match="default_branch must be a branch this session holds"):
        ours.default_branch = our_stranger
    assert ours.default_branch is held


@row("include-not-a-branch")
def test_including_a_string_raises_attribute_error_in_lionagi_and_type_error_in_lionmem() -> None:
    assert type(raised(lambda: Session().include_branches("x"))) is AttributeError
    with pytest.raises(TypeError, match="^include_branches takes Branch objects, got str$"):
        lionmem.Session().include_branches("x")  # type: ignore[arg-type]


@row("remove-not-held")
def test_removing_a_branch_not_held_raises_lionagis_not_found_and_lionmems_key_error() -> None:
    theirs = raised(lambda: Session().remove_branch(Branch()))
    assert type(theirs).__name__ == "NotFoundError" and not isinstance(theirs, KeyError | ValueError)
    with pytest.raises(KeyError, match="no branch .* in session"):
        lionmem.Session().remove_branch(lionmem.Branch())


@row("remove-by-name")
def test_a_branch_is_removed_by_name_only_in_lionmem() -> None:
    session = Session()
    session.new_branch(name="research")
    with pytest.raises(ValueError, match="badly formed hexadecimal UUID"):
        session.remove_branch("research")
    assert len(session.branches) == 2

    ours = lionmem.Session()
    research = ours.new_branch(name="research")
    assert ours.remove_branch("research") is research and len(ours.branches) == 1


@row("user-kept")
def test_a_branch_keeps_the_user_it_arrives_with_only_in_lionmem() -> None:
    theirs, ours = Session(), lionmem.Session()
    their_branch, our_branch = Branch(user="ada"), lionmem.Branch(user="ada")
    theirs.include_branches(their_branch)
    ours.include_branches(our_branch)
    assert their_branch.user == theirs.id and our_branch.user == "ada"


# -- the store's arguments ----------------------------------------------------------


async def _stored_pair(store: Any, item_class: Any) -> tuple[Any, Any]:
    first, last = item_class(content="first"), item_class(content="last")
    await store.store(first)
    await store.store(last)
    return first, last


@row("retrieve-malformed-id")
def test_a_string_that_is_not_a_uuid_finds_nothing_in_lionagi_and_is_refused_by_lionmem() -> None:
    async def body() -> None:
        theirs, ours = InMemoryStore(), lionmem.InMemoryStore()
        await _stored_pair(theirs, MemoryItem)
        await _stored_pair(ours, lionmem.MemoryItem)
        assert await theirs.retrieve("not-a-uuid") is None  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="item_id"):
            await ours.retrieve("not-a-uuid")  # type: ignore[arg-type]

    run(body())


@row("retrieve-not-an-id")
def test_none_and_other_types_find_nothing_in_lionagi_and_are_refused_by_lionmem() -> None:
    async def body() -> None:
        theirs, ours = InMemoryStore(), lionmem.InMemoryStore()
        await _stored_pair(theirs, MemoryItem)
        await _stored_pair(ours, lionmem.MemoryItem)
        for key in (None, 1.5, b"x", 5):
            assert await theirs.retrieve(key) is None  # type: ignore[arg-type]
            with pytest.raises(TypeError, match="item_id"):
                await ours.retrieve(key)  # type: ignore[arg-type]

    run(body())


@row("retrieve-by-position")
def test_an_int_is_a_position_in_lionagi_and_refused_by_lionmem() -> None:
    async def body() -> None:
        theirs, ours = InMemoryStore(), lionmem.InMemoryStore()
        first, last = await _stored_pair(theirs, MemoryItem)
        await _stored_pair(ours, lionmem.MemoryItem)
        assert await theirs.retrieve(0) is first and await theirs.retrieve(-1) is last  # type: ignore[arg-type]
        for position in (0, -1):
            with pytest.raises(TypeError, match="item_id"):
                await ours.retrieve(position)  # type: ignore[arg-type]

    run(body())


@row("retrieve-by-item")
def test_an_item_finds_itself_in_lionagi_and_is_refused_by_lionmem() -> None:
    async def body() -> None:
        theirs, ours = InMemoryStore(), lionmem.InMemoryStore()
        first, _ = await _stored_pair(theirs, MemoryItem)
        our_first, _ = await _stored_pair(ours, lionmem.MemoryItem)
        assert await theirs.retrieve(first) is first
        with pytest.raises(TypeError, match="item_id"):
            await ours.retrieve(our_first)
        assert await ours.retrieve(our_first.id) is our_first

    run(body())


@row("store-not-an-item")
def test_storing_a_dict_raises_a_value_error_in_lionagi_and_a_type_error_in_lionmem() -> None:
    theirs = raised(lambda: run(InMemoryStore().store({"content": "x"})))  # type: ignore[arg-type]
    assert isinstance(theirs, ValueError) and not isinstance(theirs, TypeError)
    our_store = lionmem.InMemoryStore()
    with pytest.raises(TypeError) as ours:
        run(our_store.store({"content": "x"}))  # type: ignore[arg-type]
    assert not isinstance(ours.value, ValueError)
    assert run(our_store.search(lionmem.MemoryQuery())) == []


@row("foreign-query")
def test_lionagis_store_takes_lionmems_query_and_lionmems_takes_lionagis_through_the_bridge() -> None:
    async def body() -> None:
        theirs, ours = InMemoryStore(), lionmem.InMemoryStore()
        their_item, our_item = MemoryItem(content="note"), lionmem.MemoryItem(content="note")
        await theirs.store(their_item)
        await ours.store(our_item)
        assert await theirs.search(lionmem.MemoryQuery(text="NOTE")) == [their_item]  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="^query must be a MemoryQuery, got MemoryQuery$"):
            await ours.search(MemoryQuery(text="NOTE"))  # type: ignore[arg-type]
        found = await for_lionagi(ours).search(MemoryQuery(text="NOTE"))
        assert [i.id for i in found] == [our_item.id]

    run(body())


@row("misspelt-query-field")
def test_a_misspelt_query_field_is_dropped_by_lionagi_and_refused_by_lionmem() -> None:
    async def body() -> None:
        store = InMemoryStore()
        await store.store(MemoryItem(content="a"))
        await store.store(MemoryItem(content="b"))
        assert len(await store.search(MemoryQuery(txt="a"))) == 2  # type: ignore[call-arg]

    run(body())
    with pytest.raises(ValidationError, match="txt"):
        lionmem.MemoryQuery(txt="a")  # type: ignore[call-arg]


@row("unreadable-content")
def test_content_without_text_disables_lionagis_search_and_is_refused_at_lionmems_store() -> None:
    async def body() -> None:
        theirs, ours = InMemoryStore(), lionmem.InMemoryStore()
        await theirs.store(MemoryItem(content="fine"))
        await theirs.store(MemoryItem(content=10**5000))
        with pytest.raises(ValueError, match="integer string conversion"):
            await theirs.search(MemoryQuery(text="fine"))
        await ours.store(lionmem.MemoryItem(content="fine"))
        with pytest.raises(ValueError, match=r"str\(content\) raised"):
            await ours.store(lionmem.MemoryItem(content=10**5000))
        assert len(await ours.search(lionmem.MemoryQuery(text="fine"))) == 1

    run(body())


# -- over the bridge ----------------------------------------------------------------


@row("bridge-reassigned-field")
def test_over_the_bridge_a_reassigned_field_is_not_seen_but_a_change_in_place_is() -> None:
    async def body() -> None:
        for store, seen in ((InMemoryStore(), True), (for_lionagi(lionmem.InMemoryStore()), False)):
            item = MemoryItem(content="before", tags=["t"])
            await store.store(item)
            item.tags.append("added")
            assert await store.search(MemoryQuery(tags=["added"])) == [item]
            item.content = "after"
            assert (await store.search(MemoryQuery(text="after")) == [item]) is seen

    run(body())


@row("durable-copies")
def test_a_durable_store_returns_copies_and_takes_json_content_only(tmp_path: Path) -> None:
    async def body() -> None:
        theirs = InMemoryStore()
        item, odd = MemoryItem(content="note"), MemoryItem(content=object())
        await theirs.store(item)
        await theirs.store(odd)
        assert await theirs.retrieve(item.id) is item and await theirs.retrieve(odd.id) is odd
        async with SQLiteMemoryStore.open(tmp_path / "memory.db") as durable:
            ours = for_lionagi(durable)
            await ours.store(item)
            back = await ours.retrieve(item.id)
            assert back is not item and back is not None and back.model_dump() == item.model_dump()
            with pytest.raises(TypeError, match="JSON"):
                await ours.store(odd)
            assert await ours.retrieve(odd.id) is None

    run(body())


@row("bridge-subclass")
def test_an_item_subclass_with_fields_is_taken_by_lionagi_and_refused_by_the_bridge() -> None:
    class WithSource(MemoryItem):
        source: str = "web"

    async def body() -> None:
        theirs, wrapped = InMemoryStore(), lionmem.InMemoryStore()
        item = WithSource()
        await theirs.store(item)
        assert await theirs.retrieve(item.id) is item
        with pytest.raises(TypeError, match="^WithSource adds the field.s. source"):
            await for_lionagi(wrapped).store(item)
        assert await wrapped.search(lionmem.MemoryQuery()) == []

    run(body())


# -- sessions, side by side ---------------------------------------------------------


@row("branches-as-list")
def test_a_list_of_branches_is_taken_only_by_lionmem() -> None:
    assert type(raised(lambda: Session(branches=[Branch()]))).__name__ == "ValidationError"
    ours = lionmem.Branch()
    session = lionmem.Session(branches=[ours])
    assert ours in session.branches and ours.session_id == session.id


@row("remove-returns-branch")
def test_remove_branch_returns_nothing_in_lionagi_and_the_branch_in_lionmem() -> None:
    theirs: Any = Session()
    assert theirs.remove_branch(theirs.new_branch()) is None
    ours = lionmem.Session()
    branch = ours.new_branch()
    assert ours.remove_branch(branch) is branch and branch.session_id is None


@row("missing-branch-error")
def test_a_branch_not_held_is_lionagis_not_found_and_lionmems_key_error() -> None:
    session, our_session = Session(), lionmem.Session()
    for theirs in (
        raised(lambda: session.get_branch(uuid4())),
        raised(lambda: session.get_branch("nobody")),
        raised(lambda: session.change_default_branch(Branch())),
    ):
        assert type(theirs).__name__ == "NotFoundError" and not isinstance(theirs, KeyError)
    for call in (
        lambda: our_session.get_branch(uuid4()),
        lambda: our_session.get_branch("nobody"),
        lambda: our_session.change_default_branch(lionmem.Branch()),
    ):
        with pytest.raises(KeyError, match=f"no branch .* in session {our_session.id}"):
            call()
    assert type(raised(lambda: session.get_branch(123))).__name__ == "NotFoundError"
    with pytest.raises(TypeError, match="a branch is named by a Branch, a UUID or a str, got int"):
        our_session.get_branch(123)  # type: ignore[arg-type]


@row("duplicate-branch-names")
def test_a_name_two_branches_share_finds_one_in_lionagi_and_is_refused_in_lionmem() -> None:
    session = Session()
    first = session.new_branch(name="twin")
    session.new_branch(name="twin")
    assert session.get_branch("twin") is first
    ours = lionmem.Session()
    ours.new_branch(name="twin")
    ours.new_branch(name="twin")
    with pytest.raises(ValueError, match="2 branches are named 'twin'; use an id"):
        ours.get_branch("twin")


@row("branches-assigned")
def test_assigning_branches_replaces_lionagis_pile_and_is_refused_by_lionmem() -> None:
    session: Any = Session()
    session.branches = [Branch()]
    assert type(session.branches) is list
    ours = lionmem.Session()
    with pytest.raises(AttributeError, match="changes only through include_branches and remove_branch"):
        ours.branches = [lionmem.Branch()]  # type: ignore[assignment]


@row("session-shallow-copy")
def test_a_shallow_copy_of_a_session_shares_lionagis_branches_and_holds_lionmems_own() -> None:
    session = Session()
    branch = session.new_branch()
    copied = copy.copy(session)
    assert copied.branches[branch.id] is branch
    copied.remove_branch(branch)  # from both: the two share one pile
    assert branch.id not in [b.id for b in session.branches]
    ours = lionmem.Session()
    our_branch = ours.new_branch()
    our_copy = copy.copy(ours)
    assert our_copy.branches[our_branch.id] is not our_branch and our_copy.memory is ours.memory
    with pytest.raises(KeyError, match="holds a different branch with the id"):
        our_copy.remove_branch(our_branch)
    assert our_branch in ours.branches and our_branch.session_id == ours.id


@row("session-deep-copy-and-pickle")
def test_a_deep_copy_or_pickle_of_a_session_works_only_in_lionmem() -> None:
    session, ours = Session(), lionmem.Session()
    session.new_branch(name="a")
    ours.new_branch(name="a")
    item = lionmem.MemoryItem(content="kept")
    run(ours.memory.store(item))

    def pickled(value: Any) -> Any:
        return pickle.loads(pickle.dumps(value))

    for make_copy in (copy.deepcopy, pickled):
        assert isinstance(raised(functools.partial(make_copy, session)), TypeError)
        copied = make_copy(ours)
        assert len(copied.branches) == 2 and copied.memory is not ours.memory
        assert run(copied.get_branch("a").memory.retrieve(item.id)) == item


@row("session-dump-load")
def test_a_dumped_and_loaded_session_gains_a_default_in_lionagi_and_not_in_lionmem() -> None:
    session, ours = Session(), lionmem.Session()
    session.new_branch(name="z")
    ours.new_branch(name="z")
    assert len(session.branches) == len(ours.branches) == 2
    assert len(Session.model_validate(session.model_dump()).branches) == 3
    loaded = lionmem.Session.model_validate(ours.model_dump())
    assert loaded.default_branch is not None and ours.default_branch is not None
    assert len(loaded.branches) == 2 and loaded.default_branch.id == ours.default_branch.id


@row("metadata-coerced")
def test_metadata_that_is_no_dict_of_strings_is_coerced_by_lionagi_and_refused_by_lionmem() -> None:
    givens: list[Any] = [[("a", 1)], "abc", {1: 2}]
    assert [MemoryItem(metadata=given).metadata for given in givens] == [{0: ("a", 1)}, {}, {1: 2}]
    for given in givens:
        with pytest.raises(ValidationError, match="metadata"):
            lionmem.MemoryItem(metadata=given)


@row("wrong-argument-types")
def test_a_search_or_store_of_the_wrong_type_is_attribute_error_in_lionagi_and_type_error_in_lionmem() -> None:
    theirs: Any = InMemoryStore()
    ours = lionmem.InMemoryStore()
    calls: list[Callable[[], Any]] = [
        lambda: theirs.search({"text": "x"}),
        lambda: theirs.search(None),
        lambda: theirs.store(None),
    ]
    for call in calls:
        assert type(raised(functools.partial(run, call()))) is AttributeError
    with pytest.raises(TypeError, match="^query must be a MemoryQuery, got dict$"):
        run(ours.search({"text": "x"}))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="^query must be a MemoryQuery, got NoneType$"):
        run(ours.search(None))  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="MemoryItem, got NoneType"):
        run(ours.store(None))  # type: ignore[arg-type]


@row("nul-in-postgres")
def test_u0000_is_kept_by_lionagi_and_lionmems_memory_and_sqlite_and_refused_by_postgres(
    tmp_path: Path, pg_url: str
) -> None:
    text = "a U+0000: \x00"
    theirs = InMemoryStore()
    kept = MemoryItem(content=text)
    run(theirs.store(kept))
    assert run(theirs.retrieve(kept.id)) is kept

    async def ours() -> None:
        from lionmem.adapters.postgres import PostgresMemoryStore

        item = lionmem.MemoryItem(content=text)
        await lionmem.InMemoryStore().store(item)
        async with SQLiteMemoryStore.open(tmp_path / "m.db") as store:
            await store.store(item)
            assert await store.retrieve(item.id) == item
        async with PostgresMemoryStore.open(pg_url, namespace="nul") as store:
            with pytest.raises(TypeError, match="U\\+0000"):
                await store.store(item)
            assert await store.retrieve(item.id) is None

    run(ours())


@row("bad-id-message")
def test_a_malformed_id_is_named_in_pydantics_words_by_lionmem() -> None:
    bad: Any = "bad"
    for make in (Branch, MemoryItem):
        with pytest.raises(ValidationError, match="badly formed hexadecimal UUID string"):
            make(id=bad)
    for our_make in (lionmem.Branch, lionmem.MemoryItem):
        with pytest.raises(ValidationError, match="Input should be a valid UUID, invalid length"):
            our_make(id=bad)


# -- the page ------------------------------------------------------------------------


def test_the_page_and_the_tests_hold_the_same_rows() -> None:
    LEDGER.check_page()


def test_each_row_names_itself_when_it_no_longer_holds() -> None:
    @row("a-row-for-this-test")
    def broken() -> None:
        assert UUID(int=0) == UUID(int=1)

    del LEDGER.rows["a-row-for-this-test"]
    with pytest.raises(AssertionError, match="^row 'a-row-for-this-test' of docs/lionagi-differences.md"):
        broken()
