"""Each decision of the user-row graders (docs/rewards.md, "What each answer kind accepts"), one
case per line: the lenient ones that real answers need and the strict ones that keep a wrong or
hedged answer from being paid."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fathom_rlm.documents import TaskRecord
from fathom_rlm.documents.store import document_id
from fathom_rlm.userdata import UserRowError, grade_answer, load_rows


def _task(answer: str, *aliases: str, kind: str = "text", **extra: Any) -> TaskRecord:
    return TaskRecord(
        question="What is asked?",
        answer=answer,
        aliases=aliases,
        seed=0,
        family="user",
        depth=None,
        spans=(),
        doc_tokens=100,
        region=None,
        source="user",
        document_id=document_id("a document"),
        answer_kind=kind,
        **extra,
    )


def _list(*accepted: tuple[str, ...]) -> TaskRecord:
    return _task(", ".join(accepted[0]), kind="list", answer_lists=accepted)


# (gold, answer, correct): marks that carry meaning stay, the others go.
TEXT = [
    ("128+N", "128+N", True),
    ("128+N", "128-N", False),
    ("128+N", "128*N", False),
    ("128+N", "128 N", False),
    ("C++", "C", False),
    ("C#", "C", False),
    ("C++", "c++", True),
    ("C#", "C#.", True),
    ("3.8.6", "3/8/6", False),
    ("3.8.6", "3.8.6", True),
    ("3.8.6", "3 8 6", False),
    ("-5 degrees", "5 degrees", False),
    ("-5 degrees", "\u22125 degrees", True),  # the minus sign is a minus
    ("-5 degrees", "-5 degrees.", True),
    ("Mrs. Tolliver", "mrs tolliver", True),  # a full stop that ends a word means nothing
    ("well-known", "well known", True),  # nor does a hyphen between two letters
    ("The Tempest", "tempest", True),
    ("A", "a", True),  # an article alone is kept: it is the answer
    ("A", "the", False),
    ("4471", "User: 4471", True),  # the label OOLONG's questions ask for
    ("spam", "Label: spam", True),
    ("spam", "Answer: spam", True),
    ("spam", "Tag: spam", False),
]


@pytest.mark.parametrize(("gold", "answer", "correct"), TEXT)
def test_text_keeps_the_marks_that_carry_meaning(gold: str, answer: str, correct: bool) -> None:
    assert grade_answer(answer, _task(gold)).correct is correct


def test_list_items_that_normalise_to_nothing_are_kept() -> None:
    letters = _list(("A", "B", "C"))
    assert grade_answer("A, B, C", letters).correct
    assert grade_answer("a; b; c", letters).correct
    missing = grade_answer("B, C", letters)  # "A" is an item, not an article
    assert not missing.correct and missing.partial == pytest.approx(0.8)
    # Junk pieces are items that match nothing: they cost precision.
    task = _list(("timber", "wool"))
    junk = grade_answer("timber, wool, or, and, -, ?", task)
    assert not junk.correct and junk.partial == pytest.approx(2 * (2 / 6) / (2 / 6 + 1))
    assert grade_answer("timber, wool,", task).correct  # a trailing comma is no item
    assert grade_answer("- timber\n- wool", task).correct  # bullets are not items
    assert grade_answer("Answer: timber, wool", task).correct  # nor is a leading label


@pytest.mark.parametrize("item", ["_", "-", "?", " "])
def test_a_list_row_with_an_item_that_normalises_to_nothing_is_refused(
    tmp_path: Path, item: str
) -> None:
    path = tmp_path / "rows.jsonl"
    row = {"document": "Text.", "question": "Which?", "answer": ["x", item], "answer_kind": "list"}
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(UserRowError) as error:
        load_rows(path)
    message = str(error.value)
    assert "\n" not in message and f"the item {item!r}" in message and "line 1: answer:" in message


# (gold, answer, correct)
YEARS = [
    ("2007", "-2007", False),  # a year keeps its sign
    ("-44", "44 BC", True),
    ("44 BC", "-44", True),
    ("1771", "c.1771", True),
    ("1771", "c. 1771", True),
    ("1771", "ca.1771", True),
    ("1771", "circa 1771", True),
    ("1771", "March 1771", True),  # one number: the year
    ("1771", "12 March 1771", False),  # a full date names a day, not a year
    ("1771", "1771-03-12", False),
    ("1771", "1770 or 1771", False),
]


@pytest.mark.parametrize(("gold", "answer", "correct"), YEARS)
def test_years_keep_their_sign_and_refuse_full_dates(gold: str, answer: str, correct: bool) -> None:
    assert grade_answer(answer, _task(gold, kind="year")).correct is correct


# (gold, answer, correct)
NUMBERS = [
    ("42 km", "42 miles", False),  # the unit counts when the gold has one
    ("42 km", "42 km", True),
    ("42 km", "42km", True),
    ("42 km", "42", True),  # a bare number is read in the question's unit
    ("42 miles", "42 mile", True),
    ("$5", "5 dollars", True),
    ("$5", "€5", False),
    ("12.5%", "12.5 percent", True),
    ("214", "about 214 ships", True),  # no unit in the gold: words around the value are free
    ("3", "three", True),  # number words up to ninety-nine
    ("21", "twenty-one", True),
    ("21", "twenty one", True),
    ("3", "three or 4", False),  # two numbers: a candidate list
    ("42", "4.2e1", True),
    ("1200000", "1.2 million", True),
    ("200", "two hundred", True),
    ("205", "two hundred and five", False),  # not read: two numbers
    ("-3", "minus three", False),  # a sign is a symbol, never a word
    ("6", "6 or7", False),  # a candidate list, however written
    ("6", "6 (maybe a dozen)", False),
    ("6", "not 6", False),  # a negation
    ("6", "at least 6", False),  # a range
    ("6", "6 or more", False),
    ("6", "6½", False),  # 6.5, not 6
    ("6", "６", True),  # a full-width digit is the digit
]


@pytest.mark.parametrize(("gold", "answer", "correct"), NUMBERS)
def test_numbers_read_words_exponents_and_units(gold: str, answer: str, correct: bool) -> None:
    assert grade_answer(answer, _task(gold, kind="number")).correct is correct


@pytest.mark.parametrize(
    "answer",
    [
        "(B) or (C)",
        "B) or C)",
        "the answer is B or C",
        "option B or C",
        "choice B C D",
        "B. or C.",
        "The answer is B, C",
        "answer: B and C",
        "(B) granite, or (C) slate",
        "B/C",
        "B: or maybe C",
        "B, or maybe C",
        "B) Paris, maybe c",  # a lower-case letter
        "B) Paris or perhaps... C",  # punctuation in between
        "B) Paris; maybe; C",
        "B) Paris or maybe 'C'",  # a quoted letter
        "B) Paris, unless it's C",
        "B) Paris, if not C",
        "B) Paris, possibly \u0421",  # a Cyrillic look-alike
        "B) Paris, possibly \uff23",  # a full-width letter
        "B) Paris (C is also plausible)",
        "B) Paris. Final answer: C",  # a second pick
        "B. C. D.",
        "The answer is B + C",
        "The answer is B vs C",
        "B (perhaps C)",
        "The answer is B, possibly C",
        "B. Otherwise C.",
        "answer: B or else C",
    ],
)
def test_a_choice_answer_naming_two_letters_earns_nothing(answer: str) -> None:
    for gold in "BC":
        assert not grade_answer(answer, _task(gold, kind="choice")).correct


@pytest.mark.parametrize(
    "answer",
    [
        "B",
        "(B) A granite block",
        "B) dressed granite",
        "The answer is B because C is wrong",
        "B: so I think, or at least I hope",  # "I" is the pronoun, not a choice
        "B: granite or slate, maybe both",  # a hedge between words, not between choices
        "B. It is not C, perhaps because of the date",
        "**B**",  # emphasis
        "The correct answer is **B**.",
        "B) Paris. Or, to be precise, B.",  # the same letter again
    ],
)
def test_a_choice_answer_naming_one_letter_is_read(answer: str) -> None:
    assert grade_answer(answer, _task("B", kind="choice")).correct


CITY = "Which city is the capital of France?\n(A) London\n(B) Paris\n(C) Rome\n(D) Berlin"


@pytest.mark.parametrize(
    ("answer", "picks"),
    [
        # A lone capital that is not one of the question's letters is no second choice.
        ("B. This is probably because F = ma.", True),
        ("B) Paris, probably X-rated for tourists", True),
        ("B) Paris, maybe because of plan B", True),
        # One of its letters, or a look-alike of one, is.
        ("B) Paris, maybe c", False),
        ("B) Paris, possibly \u0421", False),
        ("B) Paris. Final answer: D", False),
    ],
)
def test_a_hedge_counts_only_the_questions_own_letters(answer: str, picks: bool) -> None:
    from dataclasses import replace

    task = replace(_task("B", kind="choice"), question=CITY)
    assert grade_answer(answer, task).correct is picks
