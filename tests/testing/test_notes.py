"""The everyday notes and questions: the same for a seed, of the kind an agent keeps,
with exact repeats and near twins, and their arguments checked."""

from __future__ import annotations

import pytest

from lionmem.testing import everyday_notes, everyday_questions


def test_the_same_seed_gives_the_same_notes_and_another_seed_others() -> None:
    assert everyday_notes(300) == everyday_notes(300)
    assert everyday_notes(300, seed=1) != everyday_notes(300)
    assert everyday_notes(300)[:100] == everyday_notes(100)
    assert everyday_questions(20, seed=2) == everyday_questions(20, seed=2) != everyday_questions(20)
    assert everyday_notes(0) == everyday_questions(0) == []


def test_notes_repeat_exactly_and_differ_from_each_other_by_a_name() -> None:
    notes = everyday_notes(5_000)
    repeated = len(notes) - len(set(notes))
    assert 300 < repeated < 600  # one in forty on purpose, and short templates meet by chance
    first_words = {note.split(" ", 2)[-1] for note in notes}
    assert len(first_words) < len(set(notes))  # one template, another name
    questions = everyday_questions(100)
    assert all(question.endswith("?") for question in questions)
    assert not set(questions) & set(notes)


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ((-1,), ValueError, "count must be at least 0, got -1"),
        ((2.0,), TypeError, "count must be an int"),
        ((2, "x"), TypeError, "seed must be an int"),
    ],
)
def test_bad_arguments_are_refused_by_name(arguments: tuple[object, ...], error: type[Exception], message: str) -> None:
    count, *seed = arguments
    for make in (everyday_notes, everyday_questions):
        with pytest.raises(error, match=message):
            make(count, **({"seed": seed[0]} if seed else {}))  # type: ignore[arg-type]
