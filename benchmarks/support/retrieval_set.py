"""A retrieval set in the manner of long-memory benchmarks, made offline from a seed:
many sessions of an assistant's conversation turns, with questions labelled with the
turns that answer them.

Four kinds of question, each over facts hidden among look-alikes and everyday chatter:

- `paraphrase`: a fact stated once, asked in other words;
- `identifier`: a ticket, order or code among many of the same shape;
- `updated`: a fact stated, then changed in a later session; only the newer turn answers;
- `time`: what happened on a date, among the same event on other dates.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from lionmem.testing.notes import everyday_notes

KINDS = ("paraphrase", "identifier", "updated", "time")


@dataclass(frozen=True)
class Question:
    """A question, its kind, and the indexes of the turns that answer it."""

    text: str
    kind: str
    answers: tuple[int, ...]


@dataclass(frozen=True)
class RetrievalSet:
    """The turns in the order they were said, and the questions asked of them."""

    turns: list[str]
    questions: list[Question]


_PARAPHRASES = [
    ("My sister {name} moved to {city} last spring.", "Which city does {name}, my sister, live in now?"),
    ("{name} can't eat anything with {food} in it.", "What is {name} allergic to?"),
    ("I promised {name} I'd water her {plant} while she's away.", "What did I agree to look after for {name}?"),
    ("{name} is training for the {city} marathon in the autumn.", "Which race is {name} preparing for?"),
    ("The team agreed that {name} leads the {project} redesign from now on.", "Who is in charge of {project}?"),
]
_FOODS = ["peanuts", "shellfish", "gluten", "dairy", "sesame", "soy"]
_PLANTS = ["orchids", "tomatoes", "ferns", "bonsai", "basil", "cactus"]
_NAMES = [
    "Marisol",
    "Thandiwe",
    "Ingrid",
    "Rohan",
    "Beatrix",
    "Kofi",
    "Svetlana",
    "Anouk",
    "Teodor",
    "Yuki",
    "Leilani",
    "Casimir",
]
_CITIES = ["Valparaiso", "Tromso", "Ljubljana", "Cartagena", "Hobart", "Tbilisi", "Windhoek", "Galway"]
_PROJECTS = ["Kestrel", "Lantern", "Orchard", "Quarry", "Juniper", "Saffron"]
_TICKET_STATES = [
    "is waiting on the vendor's patch",
    "is blocked by the database migration",
    "needs a review from legal",
    "was reopened by the customer",
    "is waiting on the design review",
    "was closed as a duplicate",
]
_UPDATES = [
    ("The {project} launch is set for {old}.", "The {project} launch moved to {new}.", "When does {project} launch?"),
    ("{name}'s desk is on floor {old}.", "{name} moved desks to floor {new}.", "Which floor does {name} sit on?"),
    (
        "Our {project} budget is {old} thousand.",
        "The {project} budget was cut to {new} thousand.",
        "What is the {project} budget?",
    ),
]
_DATES = ["March 3", "March 14", "April 2", "April 21", "May 9", "May 30", "June 12", "June 27", "July 8", "July 19"]
_EVENTS = ["booked a table at {place}", "had a call with {place}", "visited the {place} office"]
_PLACES = ["Casa Verde", "Northwind", "Bluefin", "Ostara", "Kilnworks", "Marigold", "Tallow", "Brightwater"]


def retrieval_set(sessions: int = 200, turns_per_session: int = 12, *, seed: int = 0) -> RetrievalSet:
    """`sessions` sessions of `turns_per_session` turns each: chatter from
    `everyday_notes`, with facts and their look-alikes put in at drawn places."""
    draw = random.Random(seed)
    chatter = everyday_notes(sessions * turns_per_session, seed=seed)
    slots: list[list[str]] = [chatter[s * turns_per_session : (s + 1) * turns_per_session] for s in range(sessions)]
    pending: list[tuple[str, str, str]] = []  # (fact, kind, question): the turn's place is found last

    def put(session: int, text: str) -> None:
        slots[session].insert(draw.randrange(len(slots[session]) + 1), text)

    for n, (said, asked) in enumerate(_PARAPHRASES * 4):
        name, city = _NAMES[n % len(_NAMES)], _CITIES[n % len(_CITIES)]
        values = {
            "name": name,
            "city": city,
            "food": _FOODS[n % len(_FOODS)],
            "plant": _PLANTS[n % len(_PLANTS)],
            "project": _PROJECTS[n % len(_PROJECTS)],
        }
        fact = said.format(**values)
        put(draw.randrange(sessions), fact)
        pending.append((fact, "paraphrase", asked.format(**values)))
    tickets = draw.sample(range(10_000, 99_999), 160)
    for n, number in enumerate(tickets):
        fact = f"Ticket {number} {_TICKET_STATES[n % len(_TICKET_STATES)]}."
        put(draw.randrange(sessions), fact)
        if n < 20:
            pending.append((fact, "identifier", f"What is the status of ticket {number}?"))
    for n in range(18):
        said, changed, asked = _UPDATES[n % len(_UPDATES)]
        values = {"name": _NAMES[n % len(_NAMES)], "project": _PROJECTS[n % len(_PROJECTS)]}
        old, new = draw.sample(range(2, 60), 2)
        first = draw.randrange(sessions // 2)
        later = draw.randrange(sessions // 2, sessions)
        put(first, said.format(**values, old=old))
        fact = changed.format(**values, new=new)
        put(later, fact)
        pending.append((fact, "updated", asked.format(**values)))
    on_date: list[tuple[str, list[str]]] = []
    for n, date in enumerate(_DATES):
        facts = []
        for m in range(2):
            event = _EVENTS[(n + m) % len(_EVENTS)].format(place=_PLACES[(n * 3 + m) % len(_PLACES)])
            facts.append(f"On {date} I {event}.")
            put(draw.randrange(sessions), facts[-1])
        on_date.append((f"What did I do on {date}?", facts))
    turns = [turn for session in slots for turn in session]
    where: dict[str, int] = {}
    for index, turn in enumerate(turns):
        where.setdefault(turn, index)
    questions = [Question(asked, kind, (where[fact],)) for fact, kind, asked in pending]
    questions += [Question(asked, "time", tuple(where[fact] for fact in facts)) for asked, facts in on_date]
    return RetrievalSet(turns, questions)
