"""Branch: lazy, read-only, constructor-injected memory (ADR-0092 D4)."""

from __future__ import annotations

import asyncio
import inspect
import pickle
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from lionmem import Branch, InMemoryStore, MemoryItem, MemoryQuery
from lionmem.protocols.generic.element import Element
from lionmem.protocols.generic.pile import Pile
from lionmem.protocols.messages import Log, Message
from tests.support.kit_stores import BareStore


def test_branch_is_an_element_with_user_name_messages_and_logs() -> None:
    branch = Branch(user="ada", name="support")
    assert (branch.user, branch.name) == ("ada", "support")
    assert branch.messages.item_type == {Message} and len(branch.messages) == 0
    assert branch.logs.item_type == {Log} and len(branch.logs) == 0


def test_add_message_and_log() -> None:
    branch = Branch()
    hello = branch.add_message("user", "hello", sender="ada", recipient="bot")
    reply = branch.add_message("assistant", "hi")
    log = branch.add_log(event="tool_call", tool="search")
    assert branch.messages.values() == [hello, reply]
    assert (hello.role, hello.content, hello.sender, hello.recipient) == ("user", "hello", "ada", "bot")
    assert branch.logs.values() == [log] and log.content == {"event": "tool_call", "tool": "search"}


def test_memory_stays_unset_until_first_read() -> None:
    branch = Branch()
    assert branch._memory is None
    branch.add_message("user", "no store needed")
    assert branch._memory is None


def test_first_read_creates_and_caches_one_private_store() -> None:
    branch = Branch()
    first = branch.memory
    assert isinstance(first, InMemoryStore)
    assert branch.memory is first and branch._memory is first
    assert Branch().memory is not first


def test_an_injected_store_is_kept_as_given() -> None:
    store = BareStore()
    branch = Branch(memory=store)
    assert branch._memory is store and branch.memory is store


def test_an_object_that_is_not_a_store_is_refused() -> None:
    with pytest.raises(TypeError, match="Branch\\(memory=...\\) needs .* got str"):
        Branch(memory="sqlite:///x.db")  # type: ignore[arg-type]
    # The class has the three methods as well; forgetting the call is caught here.
    with pytest.raises(TypeError, match="got the class BareStore; pass an instance"):
        Branch(memory=BareStore)  # type: ignore[arg-type]


def test_a_store_still_to_be_awaited_is_refused_with_the_fix(tmp_path: Path) -> None:
    from lionmem.adapters.sqlite import SQLiteMemoryStore

    opening = SQLiteMemoryStore.open(tmp_path / "m.db")
    with pytest.raises(
        TypeError,
        match=r"got PendingOpen, which gives a store when awaited; pass the store: Branch\(memory=await \.\.\.\)",
    ):
        Branch(memory=opening)  # type: ignore[arg-type]
    assert not (tmp_path / "m.db").exists()  # nothing was opened

    async def make() -> InMemoryStore:
        return InMemoryStore()

    pending = make()
    with pytest.raises(TypeError, match="got coroutine, which gives a store when awaited"):
        Branch(memory=pending)  # type: ignore[arg-type]
    # Closed, so it will not warn that it was never awaited when it is collected.
    assert inspect.getcoroutinestate(pending) == inspect.CORO_CLOSED


def test_memory_has_no_setter() -> None:
    branch = Branch()
    with pytest.raises(AttributeError, match="no setter"):
        branch.memory = InMemoryStore()  # type: ignore[misc]
    assert branch._memory is None


def test_private_stores_are_isolated() -> None:
    a, b = Branch(), Branch()
    item = MemoryItem(content="secret")

    async def scenario() -> None:
        await a.memory.store(item)
        assert await b.memory.retrieve(item.id) is None
        assert await b.memory.search(MemoryQuery(text="secret")) == []
        assert await a.memory.retrieve(item.id) is item

    asyncio.run(scenario())


def test_dump_lists_messages_and_logs() -> None:
    branch = Branch()
    branch.add_message("user", "x")
    dumped: dict[str, Any] = branch.model_dump(mode="json")
    assert [m["content"] for m in dumped["messages"]] == ["x"] and dumped["logs"] == []


@pytest.mark.parametrize(
    "fork",
    [lambda b: b.model_copy(deep=True), lambda b: pickle.loads(pickle.dumps(b))],
    ids=["deep copy", "pickle"],
)
def test_a_deep_copy_forks_messages_logs_and_memory(fork: Callable[[Branch], Branch]) -> None:
    branch = Branch(name="support")
    branch.add_message("user", "hello")
    kept = MemoryItem(content="kept")
    asyncio.run(branch.memory.store(kept))
    forked = fork(branch)
    assert (forked.id, forked.name, [m.content for m in forked.messages]) == (branch.id, "support", ["hello"])
    forked.add_message("assistant", "hi")
    forked.add_log(event="forked")
    asyncio.run(forked.memory.store(MemoryItem(content="only in the fork")))
    assert [m.content for m in branch.messages] == ["hello"] and len(branch.logs) == 0
    assert [i.content for i in asyncio.run(branch.memory.search(MemoryQuery()))] == ["kept"]
    assert [i.content for i in asyncio.run(forked.memory.search(MemoryQuery()))] == ["kept", "only in the fork"]


def test_a_shallow_copy_shares_the_store() -> None:
    store = InMemoryStore()
    branch = Branch(memory=store)
    assert branch.model_copy().memory is store


def test_a_dumped_branch_validates_back_to_the_same_conversation() -> None:
    branch = Branch(name="support", user="ada", metadata={"k": 1})
    branch.add_message("user", {"text": "hello"}, sender="ada")
    branch.add_message("assistant", "hi")
    branch.add_log(event="greeted", n=2)
    for back in (Branch.model_validate(branch.model_dump()), Branch.model_validate_json(branch.model_dump_json())):
        assert (back.id, back.created_at, back.name, back.user, back.metadata) == (
            branch.id,
            branch.created_at,
            "support",
            "ada",
            {"k": 1},
        )
        assert [m.model_dump() for m in back.messages] == [m.model_dump() for m in branch.messages]
        assert [entry.model_dump() for entry in back.logs] == [entry.model_dump() for entry in branch.logs]
        assert back.messages.item_type == {Message} and back.logs.item_type == {Log}
        assert back.memory is not branch.memory  # a store is not part of the dump


def test_messages_and_logs_take_an_iterable_of_records_and_refuse_the_wrong_ones() -> None:
    hello = Message(role="user", content="hello")
    branch = Branch(messages=[hello, {"role": "assistant", "content": "hi"}])  # type: ignore[arg-type]
    assert branch.messages.values()[0] is hello and branch.messages.values()[1].role == "assistant"
    with pytest.raises(ValidationError, match=r"messages\.0\.role"):
        Branch(messages=[{"role": "narrator"}])  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="logs"):
        Branch(logs=[hello])  # type: ignore[arg-type]
    wanted = "must be a pile or a list of {} records or their dumps, got {}"
    for given, kind in (("hello", "a str"), ((m for m in [hello]), "a generator"), (None, "a NoneType")):
        with pytest.raises(ValidationError, match="messages " + wanted.format("Message", kind)):
            Branch(messages=given)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match="logs " + wanted.format("Log", "an int")):
        Branch(logs=5)  # type: ignore[arg-type]
    assert Branch(messages=(hello,)).messages.values() == [hello]  # type: ignore[arg-type]


def test_a_pile_is_taken_as_given_only_when_it_holds_the_fields_records() -> None:
    messages = Pile(item_type=Message)
    assert Branch(messages=messages).messages is messages
    logs = Pile(item_type=Log)
    logs.include(Log(content={"step": 1}))
    # A pile of logs as messages was taken, and add_message then failed on it.
    with pytest.raises(ValidationError, match="messages must be a pile of Message, got a pile of Log"):
        Branch(messages=logs)  # type: ignore[arg-type]
    with pytest.raises(ValidationError, match=re.escape("logs must be a pile of Log, got a pile of Element | Log")):
        Branch(logs=Pile(item_type={Log, Element}))  # type: ignore[arg-type]
