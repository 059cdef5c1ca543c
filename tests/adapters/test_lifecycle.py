"""What every durable store shares when opened: tracking the process it was opened in."""

from __future__ import annotations

import os

import pytest

from lionmem.adapters import lifecycle


def test_the_fork_hook_tracks_the_process_and_the_refusal_names_both() -> None:
    # Both run for real only in a forked child (assert_forked_child_refused), which
    # coverage does not follow.
    lifecycle._forked()
    assert lifecycle.process_id() == os.getpid()
    lifecycle.refuse_forked(os.getpid(), "the store")
    with pytest.raises(
        RuntimeError, match=rf"^the store was opened in process 1, and this is process {os.getpid()}, forked"
    ):
        lifecycle.refuse_forked(1, "the store")
