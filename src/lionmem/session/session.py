# pyright: reportPrivateUsage=false
# Branch and Session are one ownership unit: the session reads and sets the
# branch's private store and owner, which no other code may touch.
"""`Session`: branches that share one memory store by default.

Governed by [ADR-0092][adr-0092-d4] (ownership) and [ADR-0092][adr-0092-d5]
(nothing is stored automatically).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping
from typing import Annotated, Any, Self, TypedDict, Unpack, cast
from uuid import UUID

from pydantic import (
    BaseModel,
    Field,
    PrivateAttr,
    ValidationInfo,
    field_validator,
)

from lionmem.protocols.generic.element import Element
from lionmem.protocols.generic.pile import Pile
from lionmem.protocols.memory import MemoryStore
from lionmem.session._ownership import OWNERSHIP_LOCK, store_of
from lionmem.session._pile_field import PileOf
from lionmem.session.branch import Branch, require_store

__all__ = ["Session", "SessionFields"]


def _listed(dumped: object, branches: object) -> Branch | None:
    """The branch in `branches` (a pile) with the id of `dumped` (a mapping), if any."""
    if not isinstance(dumped, Mapping) or not isinstance(branches, Pile):
        return None
    key = cast("Mapping[str, object]", dumped).get("id")
    if not isinstance(key, str | UUID) or key not in branches:
        return None
    return cast("Pile[Branch]", branches)[key]


_EMPTY = frozenset({"branches", "default_branch"})
"""Given together, an empty `branches` and a `None` default make a session of no branch."""


class SessionFields(TypedDict, total=False):
    """The keyword arguments `Session` takes besides `memory`: its model fields."""

    id: UUID
    created_at: float
    metadata: dict[str, Any]
    name: str | None
    branches: Iterable[Branch]
    default_branch: Branch | None


class Session(Element):
    """A set of branches, a default branch and the store they share by default.

    `memory` is read-only and lazy like [`Branch.memory`][lionmem.session.branch.Branch.memory].
    A branch taken in adopts the session's store only when it has claimed none;
    a store it was built with, or adopted from an earlier session, stays: the first
    claim wins. `branches` changes only through `include_branches` and
    `remove_branch`, and `default_branch` is always a branch the session holds:
    `None` while it holds none, and the first to join after that. Given no default, a
    new session makes one of its own, after any branches given, as lionagi's does. A shallow copy
    (`model_copy()`, `copy.copy`) shares the store and owns copies of the branches;
    a deep copy or a pickle copies the store too. See [ADR-0092][adr-0092-d4].

    Examples:
        >>> session = Session()
        >>> session.memory is session.default_branch.memory
        True
        >>> from lionmem import InMemoryStore
        >>> own = Branch(memory=InMemoryStore())
        >>> session.include_branches(own)
        >>> own.memory is session.memory
        False
    """

    name: str | None = None
    """A label for the session."""

    branches: Annotated[Pile[Branch], PileOf(Branch)] = Field(default_factory=lambda: Pile(item_type=Branch))
    """The branches this session owns, in the order they joined."""

    default_branch: Branch | None = None
    """The branch used when none is named; `None` only while the session holds none."""

    # Seam for tests: `_memory`, the store or `None` before the first read, on a session
    # and on a branch, read to show when a store is made.
    _memory: MemoryStore | None = PrivateAttr(None)

    def __init__(self, *, memory: MemoryStore | None = None, **data: Unpack[SessionFields]) -> None:
        store = require_store(memory, "Session")
        BaseModel.__init__(self, **data)
        if store is not None:
            # Validation wired the branches to a temporary default store; move every
            # branch that still points at it, and only those, to the explicit store.
            temporary = self._memory
            self._memory = store
            for branch in self.branches:
                if temporary is not None and branch._memory is temporary:
                    branch._memory = store

    @field_validator("branches", mode="before")
    @classmethod
    def _collect_branches(cls, value: object) -> Pile[Branch]:
        if isinstance(value, Branch) or not isinstance(value, Iterable):
            raise ValueError("branches must be an iterable of Branch")
        # Dumped branches (a `model_dump` read back) become branches; a Branch stays itself.
        given = cast(
            "list[Branch]",
            [
                Branch.model_validate(entry) if isinstance(entry, Mapping) else entry
                for entry in cast("Iterable[object]", value)
            ],
        )
        try:
            pile = Pile(given, item_type=Branch)
        except TypeError as exc:
            raise ValueError(f"branches must be an iterable of Branch: {exc}") from None
        # The pile keeps one branch per id; a second object would silently replace the first.
        twin = next((b for b in given if pile[b.id] is not b), None)
        if twin is not None:
            raise ValueError(f"two different branches have the id {twin.id}")
        return pile

    @field_validator("default_branch", mode="before")
    @classmethod
    def _find_default(cls, value: object, info: ValidationInfo) -> object:
        """A dumped default branch is the listed branch with its id, not a second one."""
        listed = _listed(value, info.data.get("branches"))
        return value if listed is None else listed

    def model_post_init(self, context: Any, /) -> None:
        """Include the given branches and the default branch, creating a default when
        none is given, unless `branches` was given empty and `default_branch` as `None`,
        as the dump of a session holding none has them."""
        # Every branch, the default one included, joins through include_branches so
        # that validation applies the same ownership rules as a later inclusion.
        pending = self.branches.values()
        default = self.default_branch
        if default is None and (pending or not _EMPTY <= self.model_fields_set):
            # As lionagi's: given branches but no default, the session makes one of its own,
            # after them (ADR-0092 D4).
            default = Branch()
        if default is not None and self.branches.get(default.id, None) is not default:
            pending.append(default)  # include_branches refuses a twin
        self._set("branches", Pile(item_type=Branch))
        self._set("default_branch", default)
        self.include_branches(pending)

    def __setattr__(self, name: str, value: Any) -> None:
        # Assigning either field would bypass the ownership rules.
        if name == "branches":
            raise AttributeError("Session.branches changes only through include_branches and remove_branch")
        if name == "default_branch":
            with OWNERSHIP_LOCK:  # so that the branch cannot leave between check and set
                if not isinstance(value, Branch) or self.branches.get(value.id, None) is not value:
                    raise ValueError(f"default_branch must be a branch this session holds, got {value!r}")
                self._set(name, value)
            return
        super().__setattr__(name, value)

    def _set(self, name: str, value: object) -> None:
        """Set `branches` or `default_branch` from within the ownership rules."""
        vars(self)[name] = value

    def __copy__(self) -> Self:
        # pydantic's shallow copy would share the pile of branches but not the
        # default, so removing a branch from one session left the other's default
        # a branch it no longer held. Each branch belongs to one session: the copy
        # owns copies of them, which share their messages, logs and stores.
        with OWNERSHIP_LOCK:
            copied = super().__copy__()
            branches = {branch.id: copy.copy(branch) for branch in self.branches}
            copied._set("branches", Pile(branches.values(), item_type=Branch))
            if self.default_branch is not None:
                copied._set("default_branch", branches[self.default_branch.id])
            copied._claim_branches()
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> Self:
        # One memo for the whole copy, so that the branches' store and the session's
        # stay one object: given none (as by model_copy), pydantic before 2.14 copied
        # the fields and the private attributes each with a fresh memo.
        copied = super().__deepcopy__({} if memo is None else memo)
        copied._claim_branches()  # a branch's own copy belongs to no session
        return copied

    def __setstate__(self, state: dict[Any, Any]) -> None:
        super().__setstate__(state)
        self._claim_branches()

    def _claim_branches(self) -> None:
        for branch in self.branches:
            branch._owner = self.id

    @property
    def memory(self) -> MemoryStore:
        """The session's store; created on first read when none was given."""
        return store_of(self)

    def include_branches(self, branches: Branch | Iterable[Branch]) -> None:
        """Take in one branch or several, all or none.

        The whole batch is checked first; then each branch joins, adopting the
        session's store only if it has claimed none, and the session's id as its
        `user` only if it has none.

        Raises:
            TypeError: `branches` is neither a `Branch` nor an iterable, or an entry
                is not a `Branch`; nothing changes.
            ValueError: a branch belongs to another session, or shares its id with a
                different branch held here or in the batch; nothing changes.
        """
        if not isinstance(branches, Branch | Iterable):
            raise TypeError(f"include_branches takes a Branch or an iterable of them, got {type(branches).__name__}")
        batch = [branches] if isinstance(branches, Branch) else list(branches)
        batch_ids: dict[UUID, Branch] = {}
        with OWNERSHIP_LOCK:
            for branch in batch:
                if not isinstance(branch, Branch):
                    raise TypeError(f"include_branches takes Branch objects, got {type(branch).__name__}")
                held = self.branches.get(branch.id, None)
                if branch._owner is not None and held is not branch:
                    # A copy of a session has its id: a branch claiming this id that
                    # this session does not hold belongs to another copy.
                    # lionagi's wording, "already owned by session", which its tests match.
                    copied = " (another copy of this session)" if branch._owner == self.id else ""
                    raise ValueError(
                        f"branch {branch.id} is already owned by session {branch._owner}{copied}; "
                        f"call remove_branch() on that session before including it in {self.id}"
                    )
                if held is not None and held is not branch:
                    # Replacing it would leave the held branch claiming this session.
                    raise ValueError(
                        f"session {self.id} already holds a different branch with the id {branch.id}; "
                        "remove that one first"
                    )
                if batch_ids.setdefault(branch.id, branch) is not branch:
                    raise ValueError(f"two different branches in the batch have the id {branch.id}")
            for branch in batch:
                if branch._memory is None:
                    branch._memory = self.memory
                if branch._owner is None and (branch.user is None or self._links(branch.user)):
                    # A branch with a user of its own keeps it, unlike lionagi (ADR-0092, Notes).
                    branch.user = self.id
                branch._owner = self.id
                self.branches.include(branch)
            if self.default_branch is None and batch:
                self._set("default_branch", batch[0])  # the session was empty

    def remove_branch(self, branch: Branch | UUID | str) -> Branch:
        """End this session's ownership of `branch` and return it.

        `branch` is named as [`get_branch`][lionmem.session.session.Session.get_branch]
        takes it: the branch, its id, or the name of one branch. The branch keeps its
        messages, logs and memory store, so it can join another session with the
        store it has. Its `user` is cleared if it is still the session's id (or that
        id's text); one set since, or brought with the branch, stays. If it was the
        default, the first remaining branch becomes the default, or `None` when none
        remains.

        Raises:
            KeyError: the branch is not in this session.
            ValueError: several branches have that name; nothing changes.
            TypeError: `branch` is not a `Branch`, a UUID or a str.
        """
        with OWNERSHIP_LOCK:
            removed = self.branches.exclude(self.get_branch(branch).id)
            removed._owner = None
            if self._links(removed.user):
                removed.user = None
            if self.default_branch is removed:
                remaining = self.branches.values()
                self._set("default_branch", remaining[0] if remaining else None)
            return removed

    def _links(self, user: UUID | str | None) -> bool:
        """Whether `user` is this session's link to a branch: its id, or the id's text,
        which is what a branch dumped to JSON and loaded back holds."""
        return user == self.id or user == str(self.id)

    def new_branch(
        self,
        *,
        name: str | None = None,
        user: UUID | str | None = None,
        memory: MemoryStore | None = None,
    ) -> Branch:
        """Create a branch, include it and return it."""
        branch = Branch(name=name, user=user, memory=memory)
        self.include_branches(branch)
        return branch

    def get_branch(self, key: Branch | UUID | str) -> Branch:
        """Return the branch with this id, or the one branch with this name.

        Raises:
            KeyError: no branch matches.
            ValueError: several branches have that name.
            TypeError: `key` is not a `Branch`, a UUID or a str.
        """
        if isinstance(key, str):
            named = [b for b in self.branches if b.name == key]
            if len(named) > 1:
                raise ValueError(f"{len(named)} branches are named {key!r}; use an id")
            if named:
                return named[0]
        return self.branches.get(self._branch_key(key))

    def change_default_branch(self, branch: Branch | UUID | str) -> None:
        """Make a branch of this session the default.

        `branch` is named as [`get_branch`][lionmem.session.session.Session.get_branch]
        takes it: the branch, its id, or the name of one branch.

        Raises:
            KeyError: the branch is not in this session.
            ValueError: several branches have that name; nothing changes.
            TypeError: `branch` is not a `Branch`, a UUID or a str.
        """
        with OWNERSHIP_LOCK:
            self._set("default_branch", self.get_branch(branch))

    def _branch_key(self, key: Branch | UUID | str) -> UUID | str:
        """`key` as a key of `branches` (which parses UUID strings), or a `KeyError`
        naming this session."""
        if not isinstance(key, Branch | UUID | str):
            raise TypeError(f"a branch is named by a Branch, a UUID or a str, got {type(key).__name__}")
        found = key.id if isinstance(key, Branch) else key
        if found not in self.branches:
            raise KeyError(f"no branch {str(found)!r} in session {self.id}")
        if isinstance(key, Branch) and self.branches[key.id] is not key:
            raise KeyError(f"session {self.id} holds a different branch with the id {key.id}")
        return found
