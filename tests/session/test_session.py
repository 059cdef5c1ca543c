"""Session: shared default store, explicit injection, first claim wins (ADR-0092 D4, D5)."""

from __future__ import annotations

import asyncio
import contextlib
import copy
import json
import pickle
import threading
from collections.abc import Callable
from typing import Any
from uuid import UUID, uuid4

import pydantic
import pytest
from pydantic import ValidationError

from lionmem import Branch, InMemoryStore, MemoryItem, MemoryQuery, Pile, Session
from lionmem.session import _ownership as ownership_module
from lionmem.session.session import SessionFields


class SpyStore:
    """Records every call; used to prove that nothing calls the store on its own."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.inner = InMemoryStore()

    async def store(self, item: MemoryItem) -> UUID:
        self.calls.append("store")
        return await self.inner.store(item)

    async def retrieve(self, item_id: UUID) -> MemoryItem | None:
        self.calls.append("retrieve")
        return await self.inner.retrieve(item_id)

    async def search(self, query: MemoryQuery) -> list[MemoryItem]:
        self.calls.append("search")
        return await self.inner.search(query)

    def __getattr__(self, name: str) -> Any:
        self.calls.append(name)
        raise AttributeError(name)


def test_memory_is_lazy_cached_and_read_only() -> None:
    session = Session(default_branch=Branch(memory=InMemoryStore()))
    assert session._memory is None
    store = session.memory
    assert isinstance(store, InMemoryStore) and session.memory is store
    with pytest.raises(AttributeError, match="no setter"):
        session.memory = InMemoryStore()  # type: ignore[misc]


def test_no_argument_session_shares_one_store_with_its_default_branch() -> None:
    session = Session()
    assert len(session.branches) == 1
    assert session.default_branch is not None
    assert session.default_branch in session.branches
    assert session.default_branch.memory is session.memory


def test_without_a_default_the_session_makes_its_own_after_the_given_branches() -> None:
    """As lionagi's: ADR-0092 D4 has validation create a default when none is given."""
    first, second = Branch(name="first"), Branch(name="second")
    session = Session(branches=[first, second])
    made = session.default_branch
    assert made is not None and made not in (first, second) and made.name is None
    assert session.branches.values() == [first, second, made]
    assert made.memory is session.memory is first.memory is second.memory
    explicit_none = Session(branches=[first.model_copy(update={"id": uuid4()})], default_branch=None)
    assert len(explicit_none.branches) == 2 and explicit_none.default_branch is explicit_none.branches.values()[1]


def test_explicit_store_rewires_branches_wired_to_the_temporary_store() -> None:
    store = SpyStore()
    plain = Branch(name="plain")
    session = Session(memory=store, branches=[plain])
    assert session.memory is store
    assert plain.memory is store
    made = session.default_branch
    assert made is not None and made is not plain and made.memory is store


def test_explicit_store_leaves_a_branch_with_its_own_store() -> None:
    own = InMemoryStore()
    claimed = Branch(memory=own)
    store = InMemoryStore()
    session = Session(memory=store, branches=[claimed, Branch()])
    assert claimed.memory is own
    assert [b.memory for b in session.branches][1] is store


def test_a_given_default_branch_is_included() -> None:
    default = Branch(name="main")
    session = Session(default_branch=default, branches=[Branch(name="other")])
    assert session.default_branch is default
    assert [b.name for b in session.branches] == ["other", "main"]
    assert all(b.memory is session.memory for b in session.branches)


def test_branches_must_be_an_iterable_of_branches() -> None:
    for not_branches in (Branch(), 5):
        with pytest.raises(ValidationError, match="branches must be an iterable of Branch"):
            Session(branches=not_branches)  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Session(branches=["x"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="needs an object with async"):
        Session(memory=object())  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"got the class InMemoryStore; pass an instance, such as InMemoryStore\(\)"):
        Session(memory=InMemoryStore)  # type: ignore[arg-type]
    with pytest.raises(
        TypeError, match=r"got coroutine, which gives a store when awaited; pass the store: Session\(memory=await"
    ):
        Session(memory=asyncio.sleep(0, InMemoryStore()))  # type: ignore[arg-type]


def test_a_branch_without_a_store_adopts_the_session_store() -> None:
    session = Session()
    branch = Branch()
    session.include_branches(branch)
    assert branch._memory is session.memory and branch.session_id == session.id


def test_first_claim_wins_for_explicit_and_adopted_stores() -> None:
    first, second = Session(), Session()
    adopted = Branch()
    first.include_branches(adopted)
    first.remove_branch(adopted)
    own_store = InMemoryStore()
    explicit = Branch(memory=own_store)
    second.include_branches([adopted, explicit])
    assert adopted.memory is first.memory and adopted.memory is not second.memory
    assert explicit.memory is own_store


def test_a_branch_that_read_its_private_store_keeps_it() -> None:
    branch = Branch()
    private = branch.memory
    session = Session(branches=[branch])
    assert branch.memory is private and session.memory is not private


def test_batch_preflight_is_all_or_nothing() -> None:
    owner, session = Session(), Session()
    taken = owner.new_branch(name="taken")
    fresh = Branch(name="fresh")
    with pytest.raises(ValueError) as info:
        session.include_branches([fresh, taken])
    message = str(info.value)
    assert str(taken.id) in message and str(owner.id) in message and "remove_branch" in message
    assert fresh not in session.branches and fresh._memory is None and fresh.session_id is None
    assert fresh.user is None
    assert taken.session_id == owner.id


def test_batch_preflight_refuses_non_branches_before_touching_any() -> None:
    session = Session()
    fresh = Branch()
    with pytest.raises(TypeError, match="got str"):
        session.include_branches([fresh, "branch"])  # type: ignore[list-item]
    assert fresh not in session.branches and fresh._memory is None
    with pytest.raises(TypeError, match="^include_branches takes a Branch or an iterable of them, got int$"):
        session.include_branches(5)  # type: ignore[arg-type]


@pytest.mark.parametrize("method", ["get_branch", "remove_branch", "change_default_branch"])
def test_a_branch_key_of_the_wrong_type_is_named(method: str) -> None:
    session = Session()
    default = session.default_branch
    with pytest.raises(TypeError, match="^a branch is named by a Branch, a UUID or a str, got int$"):
        getattr(session, method)(5)
    assert session.default_branch is default and list(session.branches) == [default]


def test_session_validation_refuses_a_branch_owned_elsewhere() -> None:
    owned = Session().new_branch()
    with pytest.raises(ValueError, match="is already owned by session"):
        Session(branches=[owned])


@pytest.mark.parametrize(
    "duplicate",
    [Session.model_copy, lambda s: s.model_copy(deep=True), lambda s: pickle.loads(pickle.dumps(s))],
    ids=["copy", "deep copy", "pickle"],
)
def test_a_copy_of_a_session_cannot_take_in_the_originals_branches(
    duplicate: Callable[[Session], Session],
) -> None:
    # A copy has the session's id, so a branch's claim on that id does not say which
    # of the two holds it; the holder's own pile does.
    session = Session()
    member = session.new_branch(name="member")
    copied = duplicate(session)
    copied.remove_branch(member.id)  # the copy's own twin of it
    for taker, branch in ((copied, member), (Session(id=session.id), member)):
        with pytest.raises(
            ValueError,
            match=rf"^branch {member.id} is already owned by session {session.id} \(another copy of this session\);",
        ):
            taker.include_branches(branch)
    assert member.session_id == session.id and session.get_branch(member.id) is member
    assert member.id not in copied.branches
    session.remove_branch(member)
    copied.include_branches(member)
    assert copied.get_branch(member.id) is member and member.session_id == copied.id


def test_a_branch_is_named_the_same_way_to_find_remove_or_make_it_the_default() -> None:
    session = Session()
    first = session.default_branch
    research = session.new_branch(name="research")
    for key in ("research", research.id, str(research.id), research):
        assert session.get_branch(key) is research
        session.change_default_branch(key)
        assert session.default_branch is research
        assert session.remove_branch(key) is research and research.session_id is None
        session.include_branches(research)
    twin_name = session.new_branch(name="research")
    for call in (session.remove_branch, session.change_default_branch, session.get_branch):
        with pytest.raises(ValueError, match="^2 branches are named 'research'; use an id$"):
            call("research")
    # Each removal of the default handed it back to the first branch.
    assert session.branches.values() == [first, research, twin_name] and session.default_branch is first


def test_including_an_owned_branch_again_is_harmless() -> None:
    session = Session()
    branch = session.new_branch()
    store = branch.memory
    session.include_branches([branch, branch])
    assert session.branches.keys().count(branch.id) == 1 and branch.memory is store


def test_remove_branch_keeps_messages_logs_and_store_and_ends_ownership() -> None:
    session = Session()
    branch = session.new_branch()
    branch.add_message("user", "hi")
    branch.add_log(event="x")
    store = branch.memory
    linked_user = branch.user
    assert session.remove_branch(branch.id) is branch
    assert branch not in session.branches and branch.session_id is None
    # The session's user linkage is undone; while it held, the user was the session's
    # id itself, as lionagi gives it.
    assert type(linked_user) is UUID and linked_user == session.id and branch.user is None
    assert len(branch.messages) == 1 and len(branch.logs) == 1 and branch.memory is store


def test_remove_branch_keeps_a_user_the_branch_came_with() -> None:
    session = Session()
    branch = Branch(user="ada")
    session.include_branches(branch)
    assert branch.user == "ada"  # where lionagi sets the session's id (ADR-0092, Notes)
    session.remove_branch(str(branch.id))
    assert branch.user == "ada"


def test_a_user_set_after_inclusion_survives_the_removal() -> None:
    # Only the session's own link is undone; lionagi clears the user on the same terms.
    session = Session()
    branch = session.new_branch()
    branch.user = "someone-else"
    session.remove_branch(branch)
    assert branch.user == "someone-else"
    again = session.new_branch()
    again.user = uuid4()
    kept = again.user
    assert session.remove_branch(again).user == kept


def test_a_branch_arriving_with_the_session_id_as_its_user_is_linked() -> None:
    session = Session()
    for user in (session.id, str(session.id)):
        branch = Branch(user=user)
        session.include_branches(branch)
        assert branch.user == session.id and type(branch.user) is UUID
        assert session.remove_branch(branch).user is None


def test_a_branch_back_with_a_user_of_its_own_keeps_it_when_removed_again() -> None:
    # The first removal ends the session's link to the branch's user for good.
    session = Session()
    branch = session.new_branch()
    session.remove_branch(branch)
    branch.user = "ada"
    session.include_branches(branch)
    session.remove_branch(branch)
    assert branch.user == "ada"


def test_reparenting_keeps_the_adopted_store() -> None:
    first, second = Session(), Session()
    branch = first.new_branch()
    item = MemoryItem(content="from the first session")
    asyncio.run(branch.memory.store(item))
    first.remove_branch(branch)
    second.include_branches(branch)
    assert branch.memory is first.memory
    assert asyncio.run(branch.memory.retrieve(item.id)) is item
    assert asyncio.run(second.memory.retrieve(item.id)) is None


def test_remove_unknown_branch_raises() -> None:
    session = Session()
    for key in (uuid4(), Branch(), "not-a-uuid"):
        with pytest.raises(KeyError, match="no branch"):
            session.remove_branch(key)


def test_removing_the_default_moves_it_to_another_branch_or_none() -> None:
    session = Session()
    first = session.default_branch
    assert first is not None
    second = session.new_branch()
    session.remove_branch(first)
    after_first = session.default_branch
    session.remove_branch(second)
    assert after_first is second
    assert session.default_branch is None
    assert len(session.branches) == 0
    # The next branch to join an empty session becomes its default again.
    third, fourth = Branch(), Branch()
    session.include_branches([third, fourth])
    assert session.default_branch is third


def test_removing_another_branch_keeps_the_default() -> None:
    session = Session()
    default = session.default_branch
    session.remove_branch(session.new_branch())
    assert session.default_branch is default


def test_new_get_and_change_default_branch() -> None:
    session = Session()
    own = InMemoryStore()
    support = session.new_branch(name="support", user="ada", memory=own)
    assert support.memory is own and support.user == "ada"
    assert session.get_branch("support") is support
    assert session.get_branch(support.id) is support
    assert session.get_branch(str(support.id)) is support
    assert session.get_branch(support) is support
    session.change_default_branch("support")
    assert session.default_branch is support
    with pytest.raises(KeyError, match="no branch 'nobody'"):
        session.get_branch("nobody")
    with pytest.raises(KeyError, match="no branch"):
        session.change_default_branch(Branch())
    session.new_branch(name="support")
    with pytest.raises(ValueError, match="2 branches are named 'support'"):
        session.get_branch("support")


def test_shared_store_gives_cross_branch_visibility() -> None:
    session = Session()
    a, b = session.default_branch, session.new_branch()
    assert a is not None
    item = MemoryItem(content="shared note")

    async def scenario() -> None:
        await a.memory.store(item)
        assert await b.memory.retrieve(item.id) is item
        assert await b.memory.search(MemoryQuery(text="shared")) == [item]

    asyncio.run(scenario())


def test_scope_is_object_identity_not_a_query_field() -> None:
    assert "branch" not in MemoryQuery.model_fields and "session" not in MemoryQuery.model_fields
    session = Session()
    private = session.new_branch(memory=InMemoryStore())
    item = MemoryItem(content="mine")
    asyncio.run(private.memory.store(item))
    assert asyncio.run(session.memory.search(MemoryQuery())) == []


def test_nothing_calls_the_store_on_its_own() -> None:
    spy = SpyStore()
    session = Session(memory=spy)
    branch = session.new_branch()
    branch.add_message("user", "remember this")
    branch.add_message("assistant", "ok")
    branch.add_log(event="turn")
    other = Branch()
    session.include_branches(other)
    session.change_default_branch(other)
    session.remove_branch(branch)
    Session().include_branches(branch)
    session.model_dump()
    del session
    assert spy.calls == []


def test_concurrent_include_from_threads_gives_each_branch_one_owner() -> None:
    sessions = [Session() for _ in range(4)]
    branches = [Branch() for _ in range(200)]
    barrier = threading.Barrier(len(sessions))
    wins: dict[int, list[Branch]] = {n: [] for n in range(len(sessions))}

    def claim(n: int) -> None:
        barrier.wait()
        for branch in branches:
            try:
                sessions[n].include_branches(branch)
            except ValueError:
                continue
            wins[n].append(branch)

    threads = [threading.Thread(target=claim, args=(n,)) for n in range(len(sessions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    claimed = [b.id for won in wins.values() for b in won]
    assert sorted(claimed) == sorted(b.id for b in branches)
    for n, session in enumerate(sessions):
        for branch in wins[n]:
            assert branch.session_id == session.id and branch.memory is session.memory
            assert all(branch not in other.branches for other in sessions if other is not session)


def test_a_first_read_and_an_inclusion_settle_on_one_store(monkeypatch: pytest.MonkeyPatch) -> None:
    session = Session()
    branch = Branch()
    reading, included = threading.Event(), threading.Event()

    def slow_store() -> InMemoryStore:
        # Unless creation holds the ownership lock, the inclusion completes meanwhile
        # and this store then replaces the one the session gave the branch.
        reading.set()
        included.wait(timeout=0.2)
        return InMemoryStore()

    monkeypatch.setattr(ownership_module, "InMemoryStore", slow_store)
    got: list[object] = []
    reader = threading.Thread(target=lambda: got.append(branch.memory))
    reader.start()
    reading.wait()
    session.include_branches(branch)
    seen_after_inclusion = branch.memory
    included.set()
    reader.join()
    assert got == [seen_after_inclusion] and branch.memory is seen_after_inclusion
    assert seen_after_inclusion is not session.memory  # the first claim, the read's, won


@pytest.mark.parametrize("owner", ["branch", "session"])
def test_first_reads_from_two_threads_get_one_store(owner: str, monkeypatch: pytest.MonkeyPatch) -> None:
    both_inside = threading.Barrier(2)

    def slow_store() -> InMemoryStore:
        # Unless creation is serialised, both first reads meet here and make two stores.
        with contextlib.suppress(threading.BrokenBarrierError):
            both_inside.wait(timeout=0.2)
        return InMemoryStore()

    # A session made with a branch that has its store: nothing reads the session's yet.
    holder: Branch | Session = Branch() if owner == "branch" else Session(default_branch=Branch(memory=InMemoryStore()))
    monkeypatch.setattr(ownership_module, "InMemoryStore", slow_store)
    seen: list[object] = []
    readers = [threading.Thread(target=lambda: seen.append(holder.memory)) for _ in range(2)]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    assert len(seen) == 2 and seen[0] is seen[1] is holder.memory


def test_a_deep_copy_keeps_its_branches_on_its_own_copied_store() -> None:
    session = Session()
    research = session.new_branch(name="research")
    own = InMemoryStore()
    session.include_branches(Branch(name="own", memory=own))
    copied = session.model_copy(deep=True)
    assert copied.branches.keys() == session.branches.keys()
    assert copied.memory is not session.memory
    assert copied.default_branch is not None and copied.default_branch.memory is copied.memory
    assert copied.get_branch("research").memory is copied.memory
    assert copied.get_branch("own").memory is not own
    asyncio.run(copied.get_branch("research").memory.store(MemoryItem(content="fork")))
    assert asyncio.run(research.memory.search(MemoryQuery())) == []
    assert copied.get_branch("research").session_id == copied.id == session.id


@pytest.mark.parametrize("shallow", [Session.model_copy, copy.copy], ids=["model_copy", "copy.copy"])
def test_a_shallow_copy_shares_the_store_and_owns_copies_of_the_branches(
    shallow: Callable[[Session], Session],
) -> None:
    session = Session()
    first = session.default_branch
    assert first is not None
    first.add_message("user", "hello")
    research = session.new_branch(name="research")
    own = InMemoryStore()
    session.include_branches(Branch(name="own", memory=own))
    copied = shallow(session)
    assert copied.id == session.id and copied.memory is session.memory
    assert copied.branches is not session.branches
    assert copied.branches.keys() == session.branches.keys()
    for original, twin in zip(session.branches, copied.branches, strict=True):
        assert twin is not original and twin.session_id == copied.id
        assert twin.messages is original.messages and twin.memory is original.memory
        assert original.session_id == session.id
    assert copied.default_branch is copied.branches[first.id] is not first
    assert copied.get_branch("own").memory is own
    # The two sessions change apart: a default removed from the copy stays the original's.
    copied.remove_branch(first.id)
    copied.new_branch(name="only in the copy")
    assert session.default_branch is first and first in session.branches
    assert copied.default_branch is copied.branches[research.id]
    assert [b.name for b in session.branches] == [None, "research", "own"]
    assert [b.name for b in copied.branches] == ["research", "own", "only in the copy"]


def test_a_shallow_copy_clears_only_the_users_it_was_given() -> None:
    session = Session()
    research = session.new_branch(name="research")
    copied = session.model_copy()
    assert copied.remove_branch(research.id).user is None
    assert research.user == session.id
    assert session.remove_branch(research).user is None


def test_a_shallow_copy_of_an_empty_session_has_no_default() -> None:
    session = Session()
    session.remove_branch(session.branches.keys()[0])
    copied = session.model_copy()
    assert [copied.default_branch] == [None] and len(copied.branches) == 0
    joined = copied.new_branch(name="first")
    assert copied.default_branch is joined and session.default_branch is None


def test_a_deep_copy_hands_pydantic_one_memo_for_the_whole_copy(monkeypatch: pytest.MonkeyPatch) -> None:
    # model_copy(deep=True) calls __deepcopy__ without a memo; pydantic before 2.14
    # then copied the fields and the private attributes each with a fresh memo, and
    # the branches got a different store from their session's.
    given: list[object] = []
    deepcopy = pydantic.BaseModel.__deepcopy__

    def recording(self: pydantic.BaseModel, memo: dict[int, Any] | None = None) -> pydantic.BaseModel:
        if isinstance(self, (Session, Branch)):
            given.append(memo)
        return deepcopy(self, memo)

    monkeypatch.setattr(pydantic.BaseModel, "__deepcopy__", recording)
    session = Session()
    session.new_branch(name="research")
    copied = session.model_copy(deep=True)
    branch = copied.get_branch("research").model_copy(deep=True)
    assert len(given) == 4 and all(type(memo) is dict for memo in given)
    assert given[0] is given[1] is given[2] and given[3] is not given[0]
    assert copied.get_branch("research").memory is copied.memory
    assert branch.memory is not copied.memory


def test_a_different_branch_with_a_held_id_is_refused_and_changes_nothing() -> None:
    session = Session()
    held = session.new_branch(name="held")
    twin = Branch(id=held.id, name="twin")
    newcomer = Branch(name="newcomer")
    with pytest.raises(ValueError, match=f"already holds a different branch with the id {held.id}"):
        session.include_branches([newcomer, twin])
    assert session.get_branch(held.id) is held and held.session_id == session.id
    assert newcomer.session_id is None and twin.session_id is None and newcomer not in session.branches
    first = Branch()
    with pytest.raises(ValueError, match=f"two different branches in the batch have the id {first.id}"):
        session.include_branches([first, Branch(id=first.id)])
    assert first.session_id is None and first not in session.branches
    # The same object again is no conflict.
    session.include_branches([held, held])
    assert session.branches.values() == [session.default_branch, held]


def test_naming_a_branch_by_a_twin_object_is_a_key_error() -> None:
    session = Session()
    held = session.new_branch(name="held")
    twin = Branch(id=held.id)
    for call in (session.remove_branch, session.get_branch, session.change_default_branch):
        with pytest.raises(KeyError, match=f"holds a different branch with the id {held.id}"):
            call(twin)
    assert session.get_branch(held.id) is held and session.default_branch is not held


@pytest.mark.parametrize("deep", [False, True], ids=["copy", "deep copy"])
def test_a_copy_of_a_member_branch_belongs_to_no_session(deep: bool) -> None:
    session, other = Session(), Session()
    member = session.new_branch(name="member")
    copied = member.model_copy(deep=deep)
    assert copied.session_id is None and member.session_id == session.id
    other.include_branches(copied)
    assert copied.session_id == other.id and session.get_branch(member.id) is member


def test_a_pickled_session_owns_its_branches_again() -> None:
    session = Session()
    session.new_branch(name="research")
    back: Session = pickle.loads(pickle.dumps(session))
    assert back.branches.keys() == session.branches.keys()
    assert all(branch.session_id == back.id for branch in back.branches)
    assert back.get_branch("research").memory is back.memory
    lone: Branch = pickle.loads(pickle.dumps(session.get_branch("research")))
    assert lone.session_id is None


def test_a_session_is_not_built_from_two_branches_with_one_id() -> None:
    first = Branch(name="first")
    twin = Branch(id=first.id)
    with pytest.raises(ValueError, match=f"two different branches have the id {first.id}"):
        Session(branches=[first, twin])
    with pytest.raises(ValueError, match=f"two different branches in the batch have the id {first.id}"):
        Session(branches=[first], default_branch=twin)
    assert first.session_id is None and twin.session_id is None
    same = Session(branches=[first, first], default_branch=first)
    assert same.branches.values() == [first] and same.default_branch is first


def test_assigning_the_branches_or_default_keeps_ownership_whole() -> None:
    session = Session()
    member, outsider = session.new_branch(name="member"), Branch(name="outsider")
    with pytest.raises(AttributeError, match="include_branches and remove_branch"):
        session.branches = Pile(item_type=Branch)
    for value in (outsider, Branch(id=member.id), None):
        with pytest.raises(ValueError, match="default_branch must be a branch this session holds"):
            session.default_branch = value
    assert session.branches.values()[1] is member and session.default_branch is session.branches.values()[0]
    session.default_branch = member  # the same as change_default_branch(member)
    assert session.default_branch is member and outsider.session_id is None
    session.name = "renamed"  # other fields assign as before
    assert session.name == "renamed"


def test_a_dumped_session_validates_back_with_its_branches_owned() -> None:
    session = Session(name="desk")
    research = session.new_branch(name="research")
    research.add_message("user", "find it")
    session.change_default_branch(research)
    for back in (Session.model_validate(session.model_dump()), Session.model_validate_json(session.model_dump_json())):
        assert (back.id, back.name, back.branches.keys()) == (session.id, "desk", session.branches.keys())
        assert back.default_branch is back.get_branch(research.id)
        assert [m.content for m in back.get_branch("research").messages] == ["find it"]
        assert all(b.session_id == back.id and b.memory is back.memory for b in back.branches)
        # The user the session gave the branch is still the session's to take back.
        assert back.remove_branch(research.id).user is None


def test_a_dumped_session_of_no_branch_validates_back_with_none() -> None:
    session = Session(name="emptied")
    session.remove_branch(session.branches.keys()[0])
    for back in (Session.model_validate(session.model_dump()), Session.model_validate_json(session.model_dump_json())):
        assert (back.name, len(back.branches), back.default_branch) == ("emptied", 0, None)
        joined = back.new_branch()
        assert back.default_branch is joined
    # Only both fields given so: a session given neither, or one of them, makes a default.
    assert len(Session(branches=[], default_branch=None).branches) == 0
    fields: list[SessionFields] = [{}, {"branches": []}, {"default_branch": None}]
    for given in fields:
        made = Session(**given)
        assert made.default_branch is not None and made.branches.values() == [made.default_branch]


def test_dumped_branches_and_default_validate_into_held_branches() -> None:
    solo = Session(default_branch={"name": "solo"})  # type: ignore[arg-type]
    assert solo.default_branch is solo.get_branch("solo") and len(solo.branches) == 1
    other = str(uuid4())
    listed = Session(branches=[{"name": "a"}], default_branch={"id": other, "name": "b"})  # type: ignore[list-item, arg-type]
    assert [b.name for b in listed.branches] == ["a", "b"] and listed.default_branch is listed.get_branch(other)
    with pytest.raises(ValidationError, match=r"branches\.name"):
        Session(branches=[{"name": 5}])  # type: ignore[list-item]


def test_a_new_default_and_its_removal_from_two_threads_leave_the_default_held(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # One thread looks the branch up to make it the default; another removes it before
    # the first sets it. Unless both run under the ownership lock, the session ends
    # with a default it no longer holds.
    session = Session()
    branch = session.new_branch(name="moving")
    removed = threading.Event()
    looked_up = threading.Event()
    original = Session.get_branch

    def slow_lookup(self: Session, key: Branch | UUID | str) -> Branch:
        found = original(self, key)
        looked_up.set()
        removed.wait(timeout=0.5)  # with the lock held, the removal cannot happen here
        return found

    monkeypatch.setattr(Session, "get_branch", slow_lookup)
    setter = threading.Thread(target=session.change_default_branch, args=(branch,))
    setter.start()
    looked_up.wait(timeout=5)
    session.remove_branch(branch)
    removed.set()
    setter.join(timeout=5)
    default = session.default_branch
    assert default is not None and session.branches.get(default.id, None) is default


def test_the_validation_json_schema_describes_what_validation_reads() -> None:
    # A pile is checked with isinstance, which has no JSON schema: this raised.
    schema = Session.model_json_schema()
    assert schema["properties"]["branches"] == {
        "items": {"$ref": "#/$defs/Branch"},
        "title": "Branches",
        "type": "array",
    }
    branch = schema["$defs"]["Branch"]
    assert branch["properties"]["messages"]["items"] == {"$ref": "#/$defs/Message"}
    assert branch["properties"]["logs"]["items"] == {"$ref": "#/$defs/Log"}
    assert Branch.model_json_schema()["properties"]["messages"]["type"] == "array"
    session = Session()
    held = session.default_branch
    assert held is not None
    held.add_message("user", "hello")
    held.add_log(step=1)
    dumped = session.model_dump(mode="json")
    assert set(dumped) == set(schema["properties"])
    assert set(dumped["branches"][0]) == set(branch["properties"])
    assert set(dumped["branches"][0]["messages"][0]) == set(schema["$defs"]["Message"]["properties"])
    assert set(dumped["branches"][0]["logs"][0]) == set(schema["$defs"]["Log"]["properties"])
    read_back = Session.model_validate(dumped).default_branch
    assert read_back is not None and read_back.messages.values()[0].content == "hello"


def test_dump_options_reach_the_branches_and_their_records() -> None:
    # Each branch and record was dumped on its own, with none of the caller's options.
    session = Session()
    held = session.default_branch
    assert held is not None
    held.add_message("user", "hello")
    held.add_log(step=1)
    for dumped in (
        session.model_dump(exclude_none=True),
        json.loads(session.model_dump_json(exclude_none=True)),
    ):
        branch = dumped["branches"][0]
        assert "name" not in dumped and "name" not in branch and "user" in branch
        assert set(branch["messages"][0]) == {"id", "created_at", "metadata", "role", "content"}
        assert dumped["default_branch"] == branch
    # A nested exclude or include reaches into the piles, by position or for all.
    # Typed as dict[str, Any]: pydantic 2.9 types these arguments more narrowly than 2.14.
    content: dict[str, Any] = {"branches": {"__all__": {"messages": {0: {"content"}}}}}
    without_content = session.model_dump(exclude=content)
    assert "content" not in without_content["branches"][0]["messages"][0]
    assert without_content["branches"][0]["logs"][0]["content"] == {"step": 1}
    names: dict[str, Any] = {"branches": {0: {"name"}}}
    names_only = json.loads(session.model_dump_json(include=names))
    assert names_only == {"branches": [{"name": None}]}
    schema = Session.model_json_schema(mode="serialization")
    assert schema["properties"]["branches"]["items"] == {"$ref": "#/$defs/Branch"}
    assert schema["$defs"]["Branch"]["properties"]["messages"]["items"] == {"$ref": "#/$defs/Message"}
    assert schema["$defs"]["Branch"]["properties"]["logs"]["items"] == {"$ref": "#/$defs/Log"}
