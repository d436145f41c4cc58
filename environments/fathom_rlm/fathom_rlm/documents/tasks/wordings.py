"""The question grammar: every relation a question can ask about, and its wordings per split.

A wording is a template whose slots name what the question is about:

* ``{person}``, ``{person2}``: a person's full name; ``{artefact}``, ``{org}``, ``{org2}``: an
  object's or organisation's name with its article; ``{town}``: a place; ``{token}``: a permit
  or registry mark;
* ``{ord}`` / ``{times}``: the k-th change ("third", "three times"); ``{first}``, ``{last}``:
  the printed numbers of a chapter range;
* ``{poss}``, ``{pron}``: the possessive and subject pronoun of ``{person}`` (grammar only, they
  carry no meaning of their own).

Wordings are split-disjoint: of a relation's list, the last one (two for a relation with eight
or more) is only used for ``heldout`` documents, the one (two) before it only for ``eval``, the
rest only for ``train``. A document outside
the three seed ranges (tests, benchmarks) may use any wording. So a policy tuned on train
wordings meets new ones on eval and held-out. The same table drives generation and
:func:`fathom_rlm.documents.tasks.intent.parse_question`, so the parser reads exactly this grammar.
"""

from __future__ import annotations

from dataclasses import dataclass

ORDINALS = ("zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh")
TIMES = ("never", "once", "twice", "three times", "four times", "five times", "six times")


@dataclass(frozen=True)
class Relation:
    """One kind of question: its family, the type of its answer and its wordings."""

    name: str
    family: str
    answer_type: str  # person / place / organisation / artefact / role / year / number
    templates: tuple[str, ...]

    def wordings(self, split: str | None) -> tuple[str, ...]:
        """The templates a document of ``split`` may use (all of them when split is None): the
        last k go to heldout, the k before them to eval, the rest to train; k is 2 for a
        relation with eight or more wordings, else 1."""
        t = self.templates
        k = 2 if len(t) >= 8 else 1
        if split is None:
            return t
        if split == "heldout":
            return t[-k:]
        if split == "eval":
            return t[-2 * k : -k]
        if split == "train":
            return t[: -2 * k]
        raise ValueError(f"unknown split {split!r}")


def _rel(name: str, family: str, answer_type: str, *templates: str) -> Relation:
    if len(templates) < 3:
        raise ValueError(f"{name}: a relation needs at least three wordings (one per split)")
    return Relation(name, family, answer_type, templates)


_TABLE = (
    # ------------------------------------------------------------------ exact_id (depth 0)
    _rel(
        "permit_holder", "exact_id", "person",
        "Whose name is on travel permit {token}?",
        "Who is the holder of permit {token}?",
        "Which person does permit {token} belong to?",
        "To whom was permit {token} issued?",
        "Who carried the papers numbered {token}?",
    ),
    _rel(
        "marked_object", "exact_id", "artefact",
        "Which object carries the registry mark {token}?",
        "What item was logged under the mark {token}?",
        "Which piece is listed in the registry as {token}?",
        "What object is registry entry {token}?",
        "Which item bears the number {token} in the registry?",
    ),
    # ---------------------------------------------------------------- single_hop (depth 0)
    _rel(
        "maker", "single_hop", "person",
        "Who is credited as the creator of {artefact}?",
        "Whose craftsmanship produced {artefact}?",
        "Which artisan is responsible for {artefact}?",
        "Whose hands shaped {artefact}?",
        "To which artisan does {artefact} owe its existence?",
    ),
    _rel(
        "mentor", "single_hop", "person",
        "Who was {person}'s teacher?",
        "Which master instructed {person}?",
        "From whom did {person} receive instruction?",
        "Under whose guidance did {person} master a craft?",
        "Who schooled {person} in {poss} youth?",
    ),
    _rel(
        "birthplace", "single_hop", "place",
        "What town is {person}'s birthplace?",
        "Where does {person} originally hail from?",
        "In which town did {person}'s life begin?",
        "What is the native town of {person}?",
        "Which town can {person} name as {poss} place of origin?",
    ),
    _rel(
        "birth_year", "single_hop", "year",
        "What is {person}'s year of birth?",
        "In which year did {person}'s life begin?",
        "In what year was {person} a newborn?",
        "Which year saw the arrival of {person} into the world?",
        "Which year is given as the birthdate of {person}?",
    ),
    _rel(
        "seat", "single_hop", "place",
        "Where is {org} based?",
        "Which town hosts the main hall of {org}?",
        "In what town does {org} have its base?",
        "Where does {org} keep its headquarters?",
        "From which town is {org} governed?",
    ),
    _rel(
        "founder", "single_hop", "person",
        "Who was the originator of {org}?",
        "Name the person behind the creation of {org}.",
        "Whom does {org} have to thank for its beginning?",
        "Who brought {org} into being?",
        "Who first convened {org}?",
    ),
    _rel(
        "founded_year", "single_hop", "year",
        "In what year did {org} begin?",
        "What is the year of origin of {org}?",
        "Since what year has {org} existed?",
        "In which year was {org} first convened?",
        "What year marks the beginning of {org}?",
    ),
    # ----------------------------------------------------------------- multi_hop (depth 1)
    _rel(
        "maker_birthplace", "multi_hop", "place",
        "What is the birthplace of the craftsperson responsible for {artefact}?",
        "In which town did the life of the artisan behind {artefact} begin?",
        "Where does the maker of {artefact} originally hail from?",
        "What is the native town of whoever shaped {artefact}?",
    ),
    _rel(
        "maker_mentor", "multi_hop", "person",
        "Who instructed the artisan responsible for {artefact}?",
        "Which master schooled the creator of {artefact}?",
        "Under whose guidance did the maker of {artefact} master a craft?",
        "Who was the teacher of whoever shaped {artefact}?",
    ),
    _rel(
        "maker_mentor_birthplace", "multi_hop", "place",
        "What is the birthplace of the instructor of the artisan behind {artefact}?",
        "In which town did the life of the master who schooled the creator of {artefact} begin?",
        "Where does the teacher of the maker of {artefact} originally hail from?",
        "What is the native town of the master of whoever shaped {artefact}?",
    ),
    _rel(
        "founder_birthplace", "multi_hop", "place",
        "What is the birthplace of the originator of {org}?",
        "In which town did the life of the person who set up {org} begin?",
        "Where does the person who brought {org} into being originally hail from?",
        "What is the native town of whoever first convened {org}?",
    ),
    _rel(
        "founder_mentor", "multi_hop", "person",
        "Who instructed the originator of {org}?",
        "Which master schooled the person behind the creation of {org}?",
        "Under whose guidance did the person who brought {org} into being master a craft?",
        "Who was the teacher of whoever first convened {org}?",
    ),
    _rel(
        "mentor_birthplace", "multi_hop", "place",
        "What is the birthplace of {person}'s teacher?",
        "In which town did the life of the master who instructed {person} begin?",
        "Where does the person who schooled {person} originally hail from?",
        "What is the native town of {person}'s instructor?",
    ),
    _rel(
        "mentor_birth_year", "multi_hop", "year",
        "In which year did the life of {person}'s teacher begin?",
        "What is the year of birth of the master who instructed {person}?",
        "In what year was the person who schooled {person} a newborn?",
        "Which year saw the arrival into the world of {person}'s instructor?",
    ),
    # ------------------------------------------------------------------ temporal (depth 1)
    _rel(
        "home_after_moves", "temporal", "place",
        "After {person}'s {ord} change of address, which town was home?",
        "Which town did {person} call home following {poss} {ord} relocation?",
        "Once {person} had changed towns {times}, where was {poss} home?",
        "Where did {person} reside after changing address for the {ord} time?",
        "Which town housed {person} once {pron} had switched towns {times}?",
    ),
    _rel(
        "home_before_town", "temporal", "place",
        "Which town was {person}'s home just before {town}?",
        "Where was {person} staying immediately prior to {town}?",
        "Which town did {person} give up when {pron} went to {town}?",
        "Before {town}, in which town did {person} reside?",
        "Out of which town did {person} come on {poss} way to {town}?",
    ),
    _rel(
        "owner_before_person", "temporal", "person",
        "Who had {artefact} immediately before {person} did?",
        "Who held {artefact} right before it came to {person}?",
        "Who possessed {artefact} just ahead of {person}?",
        "From whose keeping did {artefact} reach {person}?",
        "Whose was {artefact} directly before {person} had it?",
    ),
    _rel(
        "owner_after_transfers", "temporal", "person",
        "Who held {artefact} after its {ord} change of hands?",
        "In whose possession was {artefact} after it had changed hands {times}?",
        "Who had custody of {artefact} following its {ord} transfer?",
        "Once {artefact} had switched keepers {times}, who kept it?",
        "Whose was {artefact} after its {ord} move between keepers?",
    ),
    _rel(
        "employer_after_changes", "temporal", "organisation",
        "Which organisation did {person} serve after {poss} {ord} change of employer?",
        "For which organisation was {person} working once {pron} had changed employers {times}?",
        "Which organisation employed {person} following {poss} {ord} switch of employer?",
        "After switching employers {times}, for which organisation did {person} labour?",
        "Which organisation paid {person} after {poss} {ord} move between employers?",
    ),
    _rel(
        "post_after_changes", "temporal", "role",
        "What post did {person} hold after {poss} {ord} change of employer?",
        "What was {person}'s occupation once {pron} had changed employers {times}?",
        "In what capacity did {person} work following {poss} {ord} switch of employer?",
        "What trade did {person} practise after switching employers {times}?",
        "What was {person}'s line of work after {poss} {ord} move between employers?",
    ),
    # --------------------------------------------------------------- aggregation (depth 1)
    _rel(
        "arrivals", "aggregation", "number",
        "Across chapters {first} to {last}, how many times did someone take up residence in "
        "{town}?",
        "How many arrivals of new residents did {town} see between chapter {first} and chapter "
        "{last}?",
        "From chapter {first} through chapter {last}, how many times did a person make {town} "
        "their new home?",
        "Counting only chapters {first} to {last}, how often did somebody come to live in {town}?",
        "Within chapters {first} to {last}, on how many occasions did {town} gain a resident?",
        "Over chapters {first} to {last}, how many times did {town} acquire an inhabitant?",
        "In chapters {first} to {last}, how many people became residents of {town}?",
        "Between chapter {first} and chapter {last}, how many newcomers did {town} receive?",
    ),
    # ---------------------------------------------------------------- comparison (depth 1)
    _rel(
        "older_birth_year", "comparison", "year",
        "What is the year of birth of whichever of {person} and {person2} is older?",
        "Give the birth year of the senior of {person} and {person2}.",
        "Of {person} and {person2}, in what year was the elder one born?",
        "Between {person} and {person2}, what birth year has the one who came first?",
        "Which birth year belongs to the elder of {person} and {person2}?",
    ),
    _rel(
        "younger_birth_year", "comparison", "year",
        "What is the year of birth of whichever of {person} and {person2} is younger?",
        "Give the birth year of the junior of {person} and {person2}.",
        "Of {person} and {person2}, in what year was the younger one born?",
        "Between {person} and {person2}, what birth year has the one who came later?",
        "Which birth year belongs to the younger of {person} and {person2}?",
    ),
    _rel(
        "age_gap", "comparison", "number",
        "How many years separate the births of {person} and {person2}?",
        "What is the age gap, in years, between {person} and {person2}?",
        "How many years apart were {person} and {person2} born?",
        "How many years lie between the births of {person} and {person2}?",
        "What is the difference in years between the birth years of {person} and {person2}?",
    ),
    _rel(
        "older_org_year", "comparison", "year",
        "In what year did the older of {org} and {org2} begin?",
        "Of {org} and {org2}, what is the year of origin of the senior one?",
        "What year marks the beginning of the elder of {org} and {org2}?",
        "Which year of origin belongs to the earlier of {org} and {org2}?",
        "Since what year has the older of {org} and {org2} existed?",
    ),
    _rel(
        "org_year_gap", "comparison", "number",
        "How many years separate the beginnings of {org} and {org2}?",
        "By how many years is the elder of {org} and {org2} the older?",
        "How many years apart did {org} and {org2} come into being?",
        "What is the gap, in years, between the origins of {org} and {org2}?",
        "How many years lie between the starts of {org} and {org2}?",
    ),
)  # fmt: skip

RELATIONS: dict[str, Relation] = {r.name: r for r in _TABLE}
