"""What a question asks, read off its wording with the question grammar alone.

:func:`parse_question` is the "perfect reading of the question" an honest planner may use: it
matches the question against every wording template of :mod:`.wordings` and returns the
relation, the family, the entities named in their roles, the ordinal and the chapter range. It
never looks at a task row, a document or a world, so it knows nothing a policy could not read
from the question itself.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .wordings import ORDINALS, RELATIONS, TIMES

# Family name -> the recursion depth the data supports under the default rollout caps (see
# docs/questions.md, "Depth": sub-calls share one budget over all depths, so depth 2 never
# reaches text that depth 1 cannot). A label stays only where the reference held below it does
# measurably worse (docs/results/fathom-depth-by-family.md). single_hop and comparison read a few
# windows around one or two names' hits, which the root reads about as cheaply itself, so they
# are depth 0; a chain, a history and a counted chapter range cost the root far more (or fail)
# without sub-calls.
FAMILIES: dict[str, int] = {
    "exact_id": 0,
    "single_hop": 0,
    "multi_hop": 1,
    "temporal": 1,
    "aggregation": 1,
    "comparison": 0,
}
# Families a grep of the question's own token answers by design (the ID lookup). Every other
# family needs its text read, whatever its depth label: the wording-overlap check and the
# adversaries' bars apply to all of them.
GREP_FAMILIES: frozenset[str] = frozenset({"exact_id"})
READING_FAMILIES: tuple[str, ...] = tuple(f for f in FAMILIES if f not in GREP_FAMILIES)


@dataclass(frozen=True)
class QuestionIntent:
    """The meaning of one question. Names are written as in the question (full names, with
    "the" for objects and organisations); unused roles are None."""

    relation: str  # a key of wordings.RELATIONS, e.g. "home_after_moves"
    family: str
    answer_type: str  # person / place / organisation / artefact / role / year / number
    person: str | None = None
    person2: str | None = None
    artefact: str | None = None
    org: str | None = None
    org2: str | None = None
    town: str | None = None
    token: str | None = None  # a permit or registry mark
    nth: int | None = None  # the k of "after the k-th change"
    chapters: tuple[int, int] | None = None  # printed chapter numbers, first and last

    @property
    def depth(self) -> int:
        return FAMILIES[self.family]

    def entities(self) -> tuple[str, ...]:
        """The names the question mentions, in role order (people, objects, organisations,
        towns)."""
        roles = (self.person, self.person2, self.artefact, self.org, self.org2, self.town)
        return tuple(x for x in roles if x is not None)


class QuestionParseError(ValueError):
    """The question is not a sentence of the question grammar."""


_WORD = r"[A-Z][a-z]+"
_SLOT_PATTERNS = {
    "person": rf"{_WORD} {_WORD}",
    "person2": rf"{_WORD} {_WORD}",
    "artefact": rf"the {_WORD}(?: {_WORD})+",
    "org": rf"the {_WORD}(?: {_WORD})+",
    "org2": rf"the {_WORD}(?: {_WORD})+",
    "town": rf"{_WORD}(?: {_WORD})*",
    "token": r"[A-Z]{2}-\d{4}",
    "ord": "|".join(ORDINALS[1:]),
    "times": "|".join(sorted(TIMES[1:], key=len, reverse=True)),
    "poss": "his|her",
    "pron": "he|she",
    "first": r"\d{1,4}",
    "last": r"\d{1,4}",
}
_SLOT = re.compile(r"\{(\w+)\}")


def template_pattern(template: str) -> re.Pattern[str]:
    """A regex that matches exactly the questions ``template`` can produce."""
    parts: list[str] = []
    seen: set[str] = set()
    at = 0
    for m in _SLOT.finditer(template):
        parts.append(re.escape(template[at : m.start()]))
        slot = m.group(1)
        if slot not in _SLOT_PATTERNS:
            raise ValueError(f"unknown slot {{{slot}}} in {template!r}")
        if slot in seen:
            parts.append(f"(?P={slot})")
        else:
            seen.add(slot)
            parts.append(f"(?P<{slot}>{_SLOT_PATTERNS[slot]})")
        at = m.end()
    parts.append(re.escape(template[at:]))
    return re.compile("".join(parts))


@lru_cache(maxsize=1)
def _patterns() -> tuple[tuple[re.Pattern[str], str], ...]:
    return tuple(
        (template_pattern(t), rel.name) for rel in RELATIONS.values() for t in rel.templates
    )


def intent_from_slots(relation: str, slots: dict[str, str]) -> QuestionIntent:
    """The intent of a question of ``relation`` whose template slots held ``slots``."""
    rel = RELATIONS[relation]
    nth = None
    if "ord" in slots:
        nth = ORDINALS.index(slots["ord"])
    elif "times" in slots:
        nth = TIMES.index(slots["times"])
    chapters = None
    if "first" in slots:
        chapters = (int(slots["first"]), int(slots["last"]))
    return QuestionIntent(
        relation=relation,
        family=rel.family,
        answer_type=rel.answer_type,
        person=slots.get("person"),
        person2=slots.get("person2"),
        artefact=slots.get("artefact"),
        org=slots.get("org"),
        org2=slots.get("org2"),
        town=slots.get("town"),
        token=slots.get("token"),
        nth=nth,
        chapters=chapters,
    )


def parse_question(question: str) -> QuestionIntent:
    """The intent of a generated question; raises :class:`QuestionParseError` for any other."""
    text = " ".join(question.split())
    found: list[QuestionIntent] = []
    for pattern, relation in _patterns():
        m = pattern.fullmatch(text)
        if m:
            intent = intent_from_slots(relation, m.groupdict())
            if intent not in found:
                found.append(intent)
    if not found:
        raise QuestionParseError(f"not a question of the grammar: {question[:120]!r}")
    if len(found) > 1:
        raise QuestionParseError(f"ambiguous question ({len(found)} readings): {question[:120]!r}")
    return found[0]
