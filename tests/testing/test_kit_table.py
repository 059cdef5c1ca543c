"""The kit's checks are a table of small functions, each taking only what it uses."""

from __future__ import annotations

import inspect

from lionmem import InMemoryStore
from lionmem.protocols.profile import REFERENCE_PROFILE, FidelityProfile, TextMatch
from lionmem.testing import CHECKS, ConformanceKit
from lionmem.testing import kit as kit_module


def test_the_table_names_every_check_but_the_stateful_one_in_order() -> None:
    assert CHECKS == (*kit_module._TABLE, "stateful")
    assert len(CHECKS) == len(set(CHECKS)) == 19


def test_each_check_takes_only_a_probe_and_reopen_only_where_it_reopens() -> None:
    takes = {name: entry.takes for name, entry in kit_module._TABLE.items()}
    assert {name for name, given in takes.items() if given == ("probe", "reopen")} == {"durability"}
    assert {given for name, given in takes.items() if name != "durability"} == {("probe",)}
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
    for name in CHECKS[2:-2]:
        value = getattr(REFERENCE_PROFILE, name)
        assert reference.declared(name) == getattr(value, "value", repr(value))
    # A set of operators is declared by their names.
    assert CHECKS[-2] == "filter_operators"
    assert reference.declared("filter_operators") == "AllOf, AnyOf, Ge, Gt, In, Le, Lt, Missing, Ne, NotIn, Present"
