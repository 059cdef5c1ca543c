"""The kit's checks are a table of small functions, each taking only what it uses."""

from __future__ import annotations

import inspect

from lionmem import InMemoryStore
from lionmem.protocols.profile import REFERENCE_PROFILE, FidelityProfile, ResultOrder, TextMatch
from lionmem.testing import CHECKS, ConformanceKit
from lionmem.testing import kit as kit_module


def test_the_table_names_every_check_but_the_stateful_one_in_order() -> None:
    assert CHECKS == (*kit_module._TABLE, "stateful")
    assert len(CHECKS) == len(set(CHECKS)) == 23


def test_each_check_takes_only_a_probe_and_more_only_where_it_uses_it() -> None:
    takes = {name: entry.takes for name, entry in kit_module._TABLE.items()}
    assert {name for name, given in takes.items() if given == ("probe", "reopen")} == {"durability"}
    # Recall writes through a second store, one without an embedder where the kit has
    # one, and measures an approximate store on the kit's count of everyday notes.
    assert takes["recall"] == ("probe", "reopen", "plain", "notes")
    assert {given for name, given in takes.items() if name not in ("durability", "recall")} == {("probe",)}
    for name, entry in kit_module._TABLE.items():
        assert tuple(inspect.signature(entry.run).parameters) == entry.takes, name
        assert inspect.iscoroutinefunction(entry.run), name
        assert entry.run.__name__ == name


def test_each_declaration_is_the_profiles_own_or_a_fixed_rule() -> None:
    kit = ConformanceKit(InMemoryStore, FidelityProfile(text_match=TextMatch.CASE_SENSITIVE_SUBSTRING))
    assert kit.declared("text_match") == "case-sensitive substring of str(content)"
    assert kit.declared("none_filter_matches_missing") == "True"
    assert kit.declared("protocol") == "async store(item), retrieve(item_id), search(query)"
    assert kit.declared("concurrent_writes") == "no write lost"
    reference = ConformanceKit(InMemoryStore, REFERENCE_PROFILE)
    for name in [*CHECKS[2:-6], "recall", "namespaces", "paging", "expiry"]:
        value = getattr(REFERENCE_PROFILE, name)
        assert reference.declared(name) == getattr(value, "value", repr(value))
    # A set of operators is declared by their names.
    assert CHECKS[-6] == "filter_operators"
    assert reference.declared("filter_operators") == "AllOf, AnyOf, Ge, Gt, In, Le, Lt, Missing, Ne, NotIn, Present"


def test_every_member_of_every_dimension_says_when_to_declare_it() -> None:
    """The reference pages render each member's docstring; none may be missing."""
    import griffe

    module = griffe.load("lionmem.protocols.profile", search_paths=["src"])
    enums = [c for c in module.classes.values() if any(str(base) == "Enum" for base in c.bases)]
    assert len(enums) == 16
    for enum in enums:
        members = [a for a in enum.attributes.values() if not a.name.startswith("_")]
        assert members, enum.name
        for member in members:
            assert member.docstring is not None and len(member.docstring.value) > 20, f"{enum.name}.{member.name}"


def test_a_declaration_and_its_passing_observation_are_written_the_same() -> None:
    """Without insertion order, where a replacement lands is not observed, so the
    declaration reads as what the kit checks ("replaced"), not as a place."""
    from lionmem import MemoryItem
    from tests.support.kit_doubles import DictStore

    class NewestFirst(DictStore):
        def order(self, found: list[MemoryItem]) -> list[MemoryItem]:
            return found[::-1]

    for order in (ResultOrder.RANKED, ResultOrder.UNORDERED):
        profile = FidelityProfile(result_order=order)
        kit = ConformanceKit(NewestFirst, profile)
        for name in ("on_existing_id", "result_order", "tag_match"):
            result = kit.check(name)
            assert result.passed and result.declared == result.observed, (order, result)


def test_every_passing_check_observes_what_it_declares_in_the_same_words() -> None:
    for result in ConformanceKit(InMemoryStore, REFERENCE_PROFILE, stateful_examples=5).run_all():
        assert result.passed and result.observed == result.declared, result
        assert str(result) == f"{result.dimension}: ok, {result.observed}"
