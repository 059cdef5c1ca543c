"""The durable stores' shared contract, beyond what the public kit checks: random
searches over awkward stored values compared with InMemoryStore, the rules for call
arguments, batches that stay whole when their tasks are cancelled, and the limits of
what a durable store keeps.

The checks live by what they check: `searches`, `writes`, `forgetting` and
`lifecycle`; this package names them all. `STORE_CHECKS` is run against every durable
store by one test module, `tests/adapters/test_store_contract.py`; the profile each
store declares is checked by the kit, through the pytest plugin. Some checks also
serve `InMemoryStore`'s own tests."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from tests.support.store_contract.forgetting import (
    assert_forgetting_agrees_with_the_reference,
    assert_forgetting_follows_the_reference,
    assert_scan_hands_over_everything_in_order,
)
from tests.support.store_contract.lifecycle import (
    assert_async_with_closes_it,
    assert_forked_child_refused,
    assert_freed_once_dropped,
)
from tests.support.store_contract.searches import (
    AWKWARD,
    UNICODE_MATCHES,
    UNICODE_TEXTS,
    UNSTORABLE,
    EqualsNone,
    assert_big_integers_exact,
    assert_filter_operators_agree,
    assert_limits_beyond_64_bits_agree,
    assert_long_tags_agree,
    assert_many_filters_agree,
    assert_many_tags_agree,
    assert_search_newest_agrees,
    assert_searches_agree,
    assert_unicode_text_agrees,
    assert_unstorable_queries_agree,
)
from tests.support.store_contract.writes import (
    TIMES,
    UNREADABLE_CONTENT,
    Batching,
    LabelledQuery,
    Note,
    Pause,
    Tagged,
    assert_batches_checked,
    assert_call_arguments_checked,
    assert_cancelled_writes_stay_whole,
    assert_copies_refused,
    assert_created_at_bit_exact,
    assert_large_batches_let_other_tasks_run,
    assert_nesting_limit_holds,
    assert_size_limit_holds,
    assert_subclass_fields_are_never_dropped,
    assert_unreadable_content_refused,
    assert_unvalidated_fields_refused,
    assert_writes_keep_the_item_as_called,
    nested,
    ticking,
)

__all__ = [
    "AWKWARD",
    "STORE_CHECKS",
    "TIMES",
    "UNICODE_MATCHES",
    "UNICODE_TEXTS",
    "UNREADABLE_CONTENT",
    "UNSTORABLE",
    "Batching",
    "EqualsNone",
    "LabelledQuery",
    "Note",
    "Pause",
    "StoreCheck",
    "Tagged",
    "assert_async_with_closes_it",
    "assert_batches_checked",
    "assert_big_integers_exact",
    "assert_call_arguments_checked",
    "assert_cancelled_writes_stay_whole",
    "assert_copies_refused",
    "assert_created_at_bit_exact",
    "assert_filter_operators_agree",
    "assert_forgetting_agrees_with_the_reference",
    "assert_forgetting_follows_the_reference",
    "assert_forked_child_refused",
    "assert_freed_once_dropped",
    "assert_large_batches_let_other_tasks_run",
    "assert_limits_beyond_64_bits_agree",
    "assert_long_tags_agree",
    "assert_many_filters_agree",
    "assert_many_tags_agree",
    "assert_nesting_limit_holds",
    "assert_scan_hands_over_everything_in_order",
    "assert_search_newest_agrees",
    "assert_searches_agree",
    "assert_size_limit_holds",
    "assert_subclass_fields_are_never_dropped",
    "assert_unicode_text_agrees",
    "assert_unreadable_content_refused",
    "assert_unstorable_queries_agree",
    "assert_unvalidated_fields_refused",
    "assert_writes_keep_the_item_as_called",
    "nested",
    "ticking",
]

StoreCheck = Callable[[Any], Coroutine[Any, Any, None]]


STORE_CHECKS: list[StoreCheck] = [
    assert_copies_refused,
    assert_call_arguments_checked,
    assert_batches_checked,
    assert_big_integers_exact,
    assert_limits_beyond_64_bits_agree,
    assert_many_filters_agree,
    assert_filter_operators_agree,
    assert_search_newest_agrees,
    assert_many_tags_agree,
    assert_unicode_text_agrees,
    assert_subclass_fields_are_never_dropped,
    assert_unvalidated_fields_refused,
    assert_unstorable_queries_agree,
    assert_forked_child_refused,
    assert_nesting_limit_holds,
    assert_unreadable_content_refused,
    assert_forgetting_follows_the_reference,
    assert_forgetting_agrees_with_the_reference,
    assert_scan_hands_over_everything_in_order,
    assert_size_limit_holds,
    assert_long_tags_agree,
    assert_created_at_bit_exact,
    assert_large_batches_let_other_tasks_run,
    assert_cancelled_writes_stay_whole,
    assert_async_with_closes_it,
]
"""The checks above that need nothing but a store with `store_many`; each durable
store's tests run every one on a fresh store."""
