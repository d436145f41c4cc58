"""The English reader's rule (fathom_lab.audit.english_reader): its word lists and how it
signs a word, a verdict's frame, the pupil as the subject of a teaching sentence, whole-word
aliases in the grouping, and the search's soft costs and fact-sized groups."""

import numpy as np
from fathom_lab.audit import english_lists
from fathom_lab.audit.english_reader import (
    EnglishSigns,
    frame_sign,
    frame_signs,
    lemmas,
    teacher_subject,
)
from fathom_lab.audit.keyword_solver import Text
from fathom_lab.audit.verdict_attacks import solve_exactly_one
from fathom_lab.audit.verdict_text import Verdict, statement_subjects


def test_no_word_is_listed_with_both_signs():
    assert not english_lists.APPROVE_VERBS & english_lists.REJECT_VERBS
    assert not english_lists.RULING_NOUNS & english_lists.CHALLENGE_NOUNS


def test_past_forms_go_back_to_the_listed_base_form():
    assert "uphold" in lemmas("upheld")
    assert "deny" in lemmas("denied")
    assert "vet" in lemmas("vetted")
    assert "favor" in lemmas("favoured")
    signs = EnglishSigns()
    assert signs.verb("upheld") == signs.verb("endorsed") == signs.verb("favoured") == 1
    assert signs.verb("quashed") == signs.verb("refuted") == signs.verb("struck") == -1
    assert signs.verb("ossmered") == 0


def test_outcomes_are_rulings_or_challenges():
    signs = EnglishSigns()
    assert signs.outcome("decree") == signs.outcome("findings") == 1
    assert signs.outcome("appeal") == signs.outcome("objections") == -1
    assert signs.outcome("harbour") == 0


def test_a_forgotten_word_is_unknown_but_its_shape_still_hints():
    """`forget` makes the lists treat words as unseen; a noun made from a listed verb and a verb
    with a turning prefix still get a weak sign of the right direction."""
    signs = EnglishSigns(frozenset({"confirmation", "upheld"}))
    assert signs.outcome("confirmation") == 0 and signs.verb("upheld") == 0
    assert signs.outcome_hint("confirmation") > 0  # confirm + -ation
    assert EnglishSigns().outcome("confirmation") == 1
    assert EnglishSigns().verb_hint("unendorsed") < 0  # un- + endorse


def _verdict(sentence: str, first: str, second: str, outcome: str) -> Verdict:
    return Verdict(sentence, 0, first, second, outcome)


def test_the_frame_counts_negations_and_an_attacking_object():
    plain = _verdict(
        "The notary upheld the entry; later, the council upheld the decree.",
        "upheld",
        "upheld",
        "decree",
    )
    negated = _verdict(
        "Not one of the elders upheld the entry; later, the council upheld the decree.",
        "upheld",
        "upheld",
        "decree",
    )
    paired = _verdict(
        "Nobody upheld the doubts about it; later, the council upheld the decree.",
        "upheld",
        "upheld",
        "decree",
    )
    attacked = _verdict(
        "The notary upheld the charge of a misreading; later, the council upheld the decree.",
        "upheld",
        "upheld",
        "decree",
    )
    assert frame_sign(plain) == 1
    assert frame_sign(negated) == -1
    assert frame_sign(paired) == 1  # a negated subject and an attack as the object cancel
    assert frame_sign(attacked) == -1
    # A document that reads almost every verdict as positive follows the pairing throughout.
    assert list(frame_signs([plain] * 9 + [negated])) == [1] * 10
    assert list(frame_signs([plain, negated])) == [1, -1]


def test_a_teaching_sentence_is_about_the_pupil():
    people = [(0, "Ulm Tarrow"), (20, "Ada Vey")]
    assert teacher_subject("Master Tarrow took Ada Vey on as a pupil.", people) == "Ada Vey"
    assert teacher_subject("Master Tarrow instructed Ada Vey in 1701.", people) == "Ada Vey"
    assert teacher_subject("Ada Vey was taught by Master Tarrow.", people) is None
    assert teacher_subject("Ada Vey studied under Master Tarrow.", people) is None
    assert teacher_subject("Master Tarrow was born in Dricross.", people[:1]) is None


def test_an_alias_is_matched_as_whole_words():
    """An alias read from the text ("the record", from "... as a pupil, for the record") names
    its person where it stands as words, not inside "The records show"."""
    doc = Text(
        "Sure enough, Master Neidraus took Kirouka Neidraes on as a pupil, for the record. "
        "The records show that Ada Vey was born at Jirfald. "
        "Sure enough, the record came down to the quay."
    )
    assert doc.aliases == {"the record": "Kirouka Neidraes"}
    assert statement_subjects(doc)[1:] == ["Ada Vey", "Kirouka Neidraes"]


def test_the_search_weighs_a_penalty_against_the_groups():
    """Two rows, one part each, one group: either part may stand; a penalty on one sign
    decides, and the groups overrule a penalty smaller than a group's misfit."""
    ids, owner = np.array([[0], [1]]), np.array([0, 0])

    def prefer_first(signs: np.ndarray) -> float:
        return 0.5 * (signs[0] < 0) + 0.5 * (signs[1] > 0)

    signs = solve_exactly_one(ids, owner, 2, 500, 4, 0, penalty=prefer_first)
    assert list(signs) == [1, -1]

    def both(signs: np.ndarray) -> float:
        return 0.4 * ((signs[0] < 0) + (signs[1] < 0))

    assert (solve_exactly_one(ids, owner, 2, 500, 4, 0, penalty=both) > 0).sum() == 1


def test_fact_sized_groups_want_one_standing_row_per_fact():
    """With six statements to a fact, a group of twelve wants two standing rows, a group of
    three at most one (here none, as the penalty prefers)."""
    ids = np.arange(15).reshape(-1, 1)
    owner = np.array([0] * 12 + [1] * 3)

    def few(signs: np.ndarray) -> float:
        return 0.1 * float((signs > 0).sum())

    signs = solve_exactly_one(ids, owner, 15, 4000, 4, 0, penalty=few, fact_size=6)
    assert (signs[:12] > 0).sum() == 2
    assert (signs[12:] > 0).sum() == 0
    plain = solve_exactly_one(ids, owner, 15, 4000, 4, 0)
    assert (plain[:12] > 0).sum() == 1 and (plain[12:] > 0).sum() == 1
