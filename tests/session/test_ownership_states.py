"""Property: whatever sessions and branches go through, ownership stays whole.

A state machine builds sessions and branches, includes, removes, renames defaults,
reads stores lazily, and copies, pickles and reloads both, then checks the rules of
ADR-0092 D4 after every step: a session's default is a branch it holds (or `None`
when it holds none), every branch it holds claims it, no branch object is held by two
sessions, a failed inclusion changes nothing, and a store once claimed never changes.
"""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable, Iterable, Sized
from typing import Any, TypeVar, cast
from uuid import UUID

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from lionmem import Branch, InMemoryStore, MemoryStore, Session
from lionmem.session.session import SessionFields

T = TypeVar("T")

_SESSION_COPIES: dict[str, Callable[[Session], Session]] = {
    "model_copy": lambda s: s.model_copy(),
    "copy.copy": copy.copy,
    "model_copy(deep=True)": lambda s: s.model_copy(deep=True),
    "pickle": lambda s: pickle.loads(pickle.dumps(s)),
    "dump and validate": lambda s: Session.model_validate(s.model_dump()),
}
_BRANCH_COPIES: dict[str, Callable[[Branch], Branch]] = {
    "model_copy": lambda b: b.model_copy(),
    "model_copy(deep=True)": lambda b: b.model_copy(deep=True),
    "pickle": lambda b: pickle.loads(pickle.dumps(b)),
    "dump and validate": lambda b: Branch.model_validate(b.model_dump()),
}


def _claimed(holder: Branch | Session) -> MemoryStore | None:
    """The store `holder` has claimed so far, without creating one."""
    private = holder.__pydantic_private__
    assert private is not None
    store: MemoryStore | None = private["_memory"]
    return store


def _unchanged(before: object, after: object) -> bool:
    """Whether two `_state()`s agree: the same branches, defaults and stores as
    objects, not merely equal ones (branches compare equal by id alone)."""
    if isinstance(before, list | tuple):
        return (
            type(after) is type(before)
            and len(cast("Sized", after)) == len(before)
            and all(map(_unchanged, before, cast("Iterable[object]", after)))
        )
    if before is None or isinstance(before, str | UUID):
        return before == after
    return before is after


class Ownership(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.sessions: list[Session] = []
        self.branches: list[Branch] = []
        # The first store each object was seen to hold, by id() of the object; the
        # objects stay in the lists above, so no id() is reused.
        self.stores: dict[int, MemoryStore] = {}

    def _pick(self, data: st.DataObject, pool: list[T]) -> T:
        return pool[data.draw(st.integers(0, len(pool) - 1))]

    def _holders(self) -> list[Branch | Session]:
        return [*self.sessions, *self.branches]

    def _known(self, branch: Branch) -> Branch:
        if all(b is not branch for b in self.branches):
            self.branches.append(branch)
        return branch

    def _add_session(self, session: Session) -> None:
        self.sessions.append(session)
        for branch in session.branches:
            self._known(branch)

    def _state(self) -> list[Any]:
        """Everything a failed call must leave as it was, for `_unchanged`."""
        return [
            [(s.branches.values(), s.default_branch, _claimed(s)) for s in self.sessions],
            [(b.session_id, _claimed(b), b.user) for b in self.branches],
        ]

    @rule(own_store=st.booleans(), with_branches=st.integers(0, 2), default_last=st.booleans())
    def new_session(self, own_store: bool, with_branches: int, default_last: bool) -> None:
        free = [b for b in self.branches if b.session_id is None][:with_branches]
        without_store = [b for b in free if _claimed(b) is None]
        store = InMemoryStore() if own_store else None
        fields: SessionFields = {"branches": free}
        if default_last and free:
            fields["default_branch"] = free[-1]
        before = self._state()
        try:
            session = Session(memory=store, **fields)
        except ValueError:
            # Two free branches may share an id (copies); nothing is claimed then.
            assert len({b.id for b in free}) < len(free)
            assert _unchanged(before, self._state())
            return
        assert all(a is b for a, b in zip(session.branches.values(), free))  # noqa: B905 (a new default comes after them)
        # Given no default, the session makes one of its own after the given branches.
        assert session.default_branch is (free[-1] if default_last and free else session.branches.values()[-1])
        assert len(session.branches) == len(free) + (0 if default_last and free else 1)
        assert store is None or session.memory is store
        for branch in without_store:
            assert branch.memory is session.memory
        self._add_session(session)

    @rule(own_store=st.booleans(), user=st.sampled_from([None, "ada"]))
    def new_branch(self, own_store: bool, user: str | None) -> None:
        self._known(Branch(user=user, memory=InMemoryStore() if own_store else None))

    @precondition(lambda self: self.sessions)
    @rule(data=st.data())
    def new_branch_in_a_session(self, data: st.DataObject) -> None:
        session = self._pick(data, self.sessions)
        branch = self._known(session.new_branch(name=data.draw(st.sampled_from([None, "a", "b"]))))
        if _claimed(session) is not None:
            assert branch.memory is session.memory

    @precondition(lambda self: self.sessions and self.branches)
    @rule(data=st.data())
    def include(self, data: st.DataObject) -> None:
        session = self._pick(data, self.sessions)
        batch = data.draw(st.lists(st.sampled_from(self.branches), max_size=3))
        without_store = [b for b in batch if _claimed(b) is None]
        before = self._state()
        try:
            session.include_branches(batch)
        except ValueError:
            assert _unchanged(before, self._state()), "a refused inclusion changed something"
            return
        for branch in batch:
            assert session.branches[branch.id] is branch and branch.session_id == session.id
        for branch in without_store:
            assert branch.memory is session.memory

    @precondition(lambda self: self.sessions and self.branches)
    @rule(data=st.data())
    def remove(self, data: st.DataObject) -> None:
        session = self._pick(data, self.sessions)
        branch = self._pick(data, self.branches)
        store = _claimed(branch)
        before = self._state()
        try:
            removed = session.remove_branch(branch)
        except KeyError:
            assert _unchanged(before, self._state()), "a refused removal changed something"
            return
        assert removed is branch and branch.session_id is None and branch not in session.branches
        assert _claimed(branch) is store

    @precondition(lambda self: self.sessions and self.branches)
    @rule(data=st.data(), by_assignment=st.booleans())
    def change_default(self, data: st.DataObject, by_assignment: bool) -> None:
        session = self._pick(data, self.sessions)
        branch = self._pick(data, self.branches)
        before = self._state()
        try:
            if by_assignment:
                session.default_branch = branch
            else:
                session.change_default_branch(branch)
        except (KeyError, ValueError):
            assert _unchanged(before, self._state())
            return
        assert session.default_branch is branch

    @precondition(lambda self: self.sessions or self.branches)
    @rule(data=st.data())
    def read_a_store(self, data: st.DataObject) -> None:
        holder = self._pick(data, self._holders())
        assert holder.memory is holder.memory

    @precondition(lambda self: self.sessions)
    @rule(data=st.data(), how=st.sampled_from(sorted(_SESSION_COPIES)))
    def copy_a_session(self, data: st.DataObject, how: str) -> None:
        original = self._pick(data, self.sessions)
        copied = _SESSION_COPIES[how](original)
        assert copied.branches.keys() == original.branches.keys()
        assert all(twin is not branch for twin, branch in zip(copied.branches, original.branches, strict=True))
        self._add_session(copied)

    @precondition(lambda self: self.branches)
    @rule(data=st.data(), how=st.sampled_from(sorted(_BRANCH_COPIES)))
    def copy_a_branch(self, data: st.DataObject, how: str) -> None:
        copied = _BRANCH_COPIES[how](self._pick(data, self.branches))
        assert copied.session_id is None
        self._known(copied)

    @invariant()
    def every_default_is_held(self) -> None:
        for session in self.sessions:
            default = session.default_branch
            if default is None:
                assert len(session.branches) == 0
            else:
                assert session.branches.get(default.id, None) is default

    @invariant()
    def every_held_branch_claims_its_session_alone(self) -> None:
        holders: dict[int, Session] = {}
        for session in self.sessions:
            for branch in session.branches:
                assert branch.session_id == session.id
                assert holders.setdefault(id(branch), session) is session, "two sessions hold one branch"
        for branch in self.branches:
            assert (branch.session_id is None) == (id(branch) not in holders)

    @invariant()
    def a_claimed_store_never_changes(self) -> None:
        for holder in self._holders():
            store = _claimed(holder)
            if store is not None:
                assert self.stores.setdefault(id(holder), store) is store


TestOwnership = Ownership.TestCase
TestOwnership.settings = settings(max_examples=150, stateful_step_count=30, deadline=None)
