"""Everyday agent notes and the questions an agent asks of them, made deterministically
from templates, for measuring recall on data like an agent's own.

Random vectors, or notes drawn from a dozen words, spread evenly and are easy for an
approximate index; an agent's notes are not: they repeat one template with one name
changed, mention the same people and places again and again, and hold exact repeats.
The kit measures a declared `minimum_recall` on these, and the benchmarks report recall
on them. Nothing is fetched: every word is in this module.
Governed by [ADR-0103][adr-0103-d3].
"""

from __future__ import annotations

import random

from lionmem._internal.arguments import require_type

__all__ = ["everyday_notes", "everyday_questions"]


def _words(text: str) -> tuple[str, ...]:
    """The words of `text`, a pool to draw from."""
    return tuple(text.split())


_FIRST = _words(
    "Ada Alice Amir Ana Arjun Astrid Beatriz Ben Bruno Carla Chen Chloe Daniel Dara Diego Elena Emil "
    "Emma Erik Fatima Felix Freya Gabriel Grace Hana Hugo Ines Ivan Jade Jamal Jonas Julia Kai Karin "
    "Kenji Lara Leo Lina Luca Mai Marco Maria Mateo Maya Mila Nadia Nina Noah Olga Omar Oscar Paula "
    "Pedro Priya Rafael Rosa Ruth Sam Sara Sofia Tariq Theo Tomas Uma Vera Victor Wei Yara Yusuf Zoe"
)
_LAST = _words(
    "Adams Alvarez Berg Brooks Costa Dahl Diaz Dubois Evans Fischer Garcia Haddad Hansen Ibrahim Ito "
    "Jensen Kaur Khan Kim Klein Kowalski Larsen Lee Lopez Martin Meyer Moreau Nakamura Novak Okafor "
    "Olsen Park Patel Petrov Quinn Rossi Sato Schmidt Silva Singh Smith Tanaka Torres Varga Wagner "
    "Walsh Weber Wong Young Zhang"
)
_CITIES = _words(
    "Lisbon Porto Madrid Seville Paris Lyon Berlin Munich Hamburg Vienna Zurich Geneva Milan Rome "
    "Naples Athens Oslo Bergen Stockholm Helsinki Copenhagen Dublin London Leeds Glasgow Toronto "
    "Montreal Boston Chicago Denver Austin Seattle Portland Mexico-City Lima Bogota Santiago Nairobi "
    "Lagos Cairo Dubai Mumbai Delhi Bangalore Singapore Jakarta Manila Seoul Tokyo Osaka Sydney "
    "Melbourne Auckland"
)
_PROJECTS = _words(
    "Falcon Heron Osprey Kestrel Albatross Pelican Condor Magpie Starling Swift Atlas Beacon Compass "
    "Harbor Lantern Meridian Nimbus Orchard Quarry Summit Tundra Willow Zephyr Cobalt Ember Granite "
    "Juniper Saffron"
)
_FOODS = _words(
    "sushi ramen pizza tacos curry paella pho falafel dumplings lasagne risotto kimchi pierogi "
    "couscous burritos gnocchi biryani ceviche shakshuka pancakes"
)
_CONTACT = ["email", "a phone call", "a text message", "Slack", "a video call", "a letter", "WhatsApp"]
_DAYS = _words("Monday Tuesday Wednesday Thursday Friday Saturday Sunday")
_MONTHS = _words("January February March April May June July August September October November December")
_TIMES = ["8:30", "9:00", "9:30", "10:00", "11:15", "13:00", "14:30", "15:00", "16:45", "18:00"]
_HOBBIES = _words(
    "climbing chess sailing pottery running cycling painting birdwatching gardening photography "
    "baking surfing knitting skiing tennis"
)
_LANGUAGES = _words("English Spanish Portuguese French German Italian Japanese Korean Mandarin Hindi Arabic Swahili")
_ALLERGIES = ["peanuts", "shellfish", "gluten", "dairy", "eggs", "cats", "pollen", "penicillin"]
_PETS = ["a dog called Biscuit", "two cats", "a parrot", "a rabbit named Clover", "a goldfish", "a tortoise"]
_ROLES = _words(
    "designer engineer accountant nurse teacher lawyer analyst manager chef architect researcher pharmacist"
)
_TOOLS = ["Jira", "Notion", "Figma", "Excel", "GitHub", "Trello", "Asana", "Confluence"]

# Each note template names its slots; `_fill` draws every slot from its pool.
_NOTE_TEMPLATES = (
    "{name} lives in {city} and works on Project {project}.",
    "{name} prefers {contact} for anything about Project {project}.",
    "Meeting with {name} about Project {project} on {day} at {time}.",
    "{name}'s favourite food is {food}.",
    "Reminder: the Project {project} review moved to {day} {month} {date}.",
    "{name} is allergic to {allergy}.",
    "The Project {project} budget for {month} is {amount} dollars.",
    "{name} travels to {city} on {month} {date} and comes back on {day}.",
    "{name} is a {role} based in {city}.",
    "{name} speaks {language} and a little {language2}.",
    "{name} has {pet}.",
    "{name} spends weekends on {hobby}.",
    "The user asked me to book a table for {food} in {city} on {day}.",
    "{name} tracks Project {project} in {tool}.",
    "Call {name} back on {day} about the {project} invoice.",
    "{name} said the {project} launch slips to {month}.",
    "{name} and {name2} share the Project {project} on-call rota.",
    "The user's dentist appointment is on {day} at {time}.",
    "{name} would rather not be contacted before {time}.",
    "{name}'s birthday is on {month} {date}.",
    "The {city} office closes early on {day}s.",
    "{name} asked for the {project} slides by {day}.",
    "The user is learning {language} for a trip to {city} in {month}.",
    "{name} recommended a {food} place near the {city} office.",
    "Order a gift for {name}, who likes {hobby}.",
    "{name} moved from {city} to {city2} in {month}.",
    "The weekly {project} stand-up is on {day}s at {time}.",
    "{name} reports to {name2} on Project {project}.",
    "The user prefers {contact} over meetings.",
    "{name} is on leave in {city} until {month} {date}.",
)
_QUESTION_TEMPLATES = (
    "Where does {name} live?",
    "How should I get in touch with {name}?",
    "When is the next meeting about {project}?",
    "What does {name} like to eat?",
    "Is {name} allergic to anything?",
    "How much money does Project {project} have?",
    "When is {name} travelling, and where to?",
    "What does {name} do for a living?",
    "Which languages does {name} speak?",
    "Does {name} have any pets?",
    "What are {name}'s hobbies?",
    "Who works on Project {project}?",
    "When is the {project} launch?",
    "When is {name}'s birthday?",
    "Where should we eat {food} in {city}?",
    "Who is on call for {project}?",
    "When can I call {name} in the morning?",
    "When does the {city} office close?",
)
_REPEAT_EVERY = 40
"""One note in about this many repeats an earlier note exactly."""


def _person(draw: random.Random) -> str:
    return f"{draw.choice(_FIRST)} {draw.choice(_LAST)}"


def _fill(template: str, draw: random.Random) -> str:
    """`template` with each slot drawn from its pool."""
    pools = {
        "city": _CITIES,
        "city2": _CITIES,
        "project": _PROJECTS,
        "food": _FOODS,
        "contact": _CONTACT,
        "day": _DAYS,
        "month": _MONTHS,
        "time": _TIMES,
        "hobby": _HOBBIES,
        "language": _LANGUAGES,
        "language2": _LANGUAGES,
        "allergy": _ALLERGIES,
        "pet": _PETS,
        "role": _ROLES,
        "tool": _TOOLS,
    }
    values = {slot: draw.choice(pool) for slot, pool in pools.items() if "{" + slot + "}" in template}
    for slot in ("name", "name2"):
        if "{" + slot + "}" in template:
            values[slot] = _person(draw)
    if "{date}" in template:
        values["date"] = str(draw.randint(1, 28))
    if "{amount}" in template:
        values["amount"] = f"{draw.randint(2, 90) * 500:,}"
    return template.format(**values)


def everyday_notes(count: int, *, seed: int = 0) -> list[str]:
    """`count` notes of the kind an agent keeps, the same for the same `seed`: people,
    places, projects, preferences and schedules from thirty templates, so many notes
    differ from another in one name. One in forty repeats an earlier note on purpose,
    and short templates meet again by chance: about one note in twelve is a repeat.

    Examples:
        >>> everyday_notes(2)
        ['Chloe Singh is on leave in Toronto until June 2.', 'Amir Kim moved from Delhi to Geneva in September.']
        >>> everyday_notes(500) == everyday_notes(500)
        True

    Raises:
        TypeError: `count` or `seed` is not an int.
        ValueError: `count` is negative.
    """
    draw = _checked(count, seed)
    notes: list[str] = []
    for _ in range(count):
        if len(notes) > 1 and draw.randrange(_REPEAT_EVERY) == 0:
            notes.append(draw.choice(notes))
        else:
            notes.append(_fill(draw.choice(_NOTE_TEMPLATES), draw))
    return notes


def everyday_questions(count: int, *, seed: int = 0) -> list[str]:
    """`count` questions an agent asks of its notes, in other words than the notes',
    the same for the same `seed`.

    Examples:
        >>> everyday_questions(1)
        ['When is the Atlas launch?']

    Raises:
        TypeError: `count` or `seed` is not an int.
        ValueError: `count` is negative.
    """
    draw = _checked(count, seed)
    return [_fill(draw.choice(_QUESTION_TEMPLATES), draw) for _ in range(count)]


def _checked(count: object, seed: object) -> random.Random:
    require_type(count, "count", int)
    require_type(seed, "seed", int)
    if count < 0:  # type: ignore[operator]
        raise ValueError(f"count must be at least 0, got {count}")
    return random.Random(f"lionmem-notes-{seed}")
