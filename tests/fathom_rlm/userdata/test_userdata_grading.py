"""Grading by answer kind: hand-written answers for every kind, pathological ones included."""

from __future__ import annotations

from typing import Any

import pytest
from fathom_rlm.documents import TaskRecord
from fathom_rlm.documents.store import document_id
from fathom_rlm.userdata.grading import (
    MAX_GRADED_CHARS,
    answer_char_cap,
    choice_letter,
    grade_answer,
    parse_number,
    parse_year,
    task_question,
)


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


PATHOLOGICAL = [
    "",
    " ",
    "\n\t",
    "x" * (MAX_GRADED_CHARS + 1),
    "🙂" * 500,
    "\x00\x01",
    "((((",
    "[]",
    # Inputs that once made a pattern backtrack for seconds to hours (whitespace runs).
    "B" + " " * 19_000 + "x",
    "(B" + " " * 19_000 + "x",
    "B) " + "or " * 6_000 + "C",
    "The answer is" + " " * 19_000 + "1",
]


def test_text_is_normalised_exact_match_with_aliases() -> None:
    task = _task("Agnes Tolliver", "Tolliver", "Mrs. Tolliver")
    for right in (
        "Agnes Tolliver",
        "agnes  tolliver.",
        "The Agnes Tolliver",
        "TOLLIVER",
        "mrs tolliver",
    ):
        assert grade_answer(right, task).correct, right
    for wrong in ("Agnes", "Agnes Tolliver and Elias Marsh", "Tolliver, Marsh", "Agnès Tolliver"):
        assert not grade_answer(wrong, task).correct, wrong
    unicode_task = _task("Zoë Ångström")
    assert grade_answer("zoë ångström", unicode_task).correct
    assert grade_answer("ｚｏë ångström", unicode_task).correct  # NFKC: full-width letters
    for bad in PATHOLOGICAL:
        assert grade_answer(bad, task) == grade_answer(bad, task)
        assert not grade_answer(bad, task).correct


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,234", 1234.0),
        ("1234.0", 1234.0),
        ("$5", 5.0),
        ("-3", -3.0),
        ("\u22123", -3.0),
        ("-$5", -5.0),
        ("12.5%", 12.5),
        ("about 214 ships", 214.0),
        ("1,234,567.25", 1234567.25),
        (".5", 0.5),
        ("3 and 4", None),
        ("five", 5.0),  # number words up to ninety-nine are read
        ("twenty-one", 21.0),
        ("1e3", 1000.0),  # scientific notation is a number
        ("4.2e1", 42.0),
        ("1.2 million", 1_200_000.0),
        ("two hundred", 200.0),
        ("the one with 5 masts", None),  # "one" and 5: two numbers
        ("", None),
    ],
)
def test_numbers_are_parsed_from_common_writings(text: str, value: float | None) -> None:
    assert parse_number(text) == value


def test_numbers_match_within_the_tolerance() -> None:
    exact = _task("1234", kind="number")
    assert grade_answer("1,234", exact).correct and grade_answer("1234.0", exact).correct
    assert not grade_answer("1235", exact).correct
    assert not grade_answer("1234 or 1235", exact).correct  # a candidate list
    loose = _task("3.5", kind="number", tolerance=0.25)
    assert grade_answer("3.7", loose).correct and grade_answer("$3.25", loose).correct
    assert not grade_answer("3.8", loose).correct
    assert grade_answer("0.3", _task("0.30000000000000004", kind="number")).correct
    negative = _task("-3", kind="number")
    assert grade_answer("-3", negative).correct and not grade_answer("3", negative).correct
    for bad in [*PATHOLOGICAL, "9" * 400]:
        assert not grade_answer(bad, exact).correct


def test_years_are_one_whole_number_of_at_most_four_digits() -> None:
    task = _task("1771", kind="year")
    for right in ("1771", "in 1771", "c. 1771", "1771 AD", "1771."):
        assert grade_answer(right, task).correct, right
    for wrong in ("1772", "1771s", "1,771", "17710", "1771.5", "1770 or 1771", "the 18th century"):
        assert not grade_answer(wrong, task).correct, wrong
    assert parse_year("44 BC") == -44 and parse_year("44 BCE") == -44
    assert grade_answer("44 B.C.", _task("44 BC", kind="year")).correct
    assert not grade_answer("44", _task("44 BC", kind="year")).correct
    for bad in PATHOLOGICAL:
        assert not grade_answer(bad, task).correct


def test_lists_are_unordered_sets_and_partial_credit_is_item_f1() -> None:
    task = _list(("timber", "salt fish", "wool", "slate"))
    for right in (
        "timber, salt fish, wool, slate",
        "Slate; wool; salt fish; timber",
        "- timber\n- salt fish\n- wool\n- slate",
        "timber, salt fish, wool and slate",
        "timber, salt fish, wool, and slate",
        "[timber, salt fish, wool, slate]",
        "timber, timber, salt fish, wool, slate",  # a repeat counts once
    ):
        grade = grade_answer(right, task)
        assert grade.correct and grade.partial == 1.0, right
    missing = grade_answer("timber, wool", task)  # precision 1, recall 1/2
    assert not missing.correct and missing.partial == pytest.approx(2 / 3)
    extra = grade_answer("timber, salt fish, wool, slate, tin", task)  # precision 4/5, recall 1
    assert not extra.correct and extra.partial == pytest.approx(8 / 9)
    assert grade_answer("copper, tin", task).partial == 0.0
    # Any accepted set will do; the best one gives the partial credit.
    two = _list(("wheel", "river"), ("wheel", "river", "mill"))
    assert grade_answer("mill, river, wheel", two).correct
    assert grade_answer("wheel", two).partial == pytest.approx(2 / 3)
    # An item that holds "and" is one item when the accepted set says so.
    titled = _list(("Romeo and Juliet", "Hamlet"))
    assert grade_answer("Hamlet, Romeo and Juliet", titled).correct
    for bad in [*PATHOLOGICAL, ", , ;\n"]:
        grade = grade_answer(bad, task)
        assert not grade.correct and grade.partial == 0.0


@pytest.mark.parametrize(
    ("text", "letter"),
    [
        ("B", "B"),
        ("b", "B"),
        ("(B)", "B"),
        ("[B]", "B"),
        ("B.", "B"),
        ("B) dressed granite", "B"),
        ("(B) dressed granite", "B"),
        ("B. dressed granite", "B"),
        ("answer: b", "B"),
        ("Answer: (B)", "B"),
        ("The answer is B", "B"),
        ("The correct answer is (B).", "B"),
        ("option B", "B"),
        ("dressed granite", None),
        ("I think B", None),
        ("BC", None),
        ("", None),
    ],
)
def test_choice_letters_are_read_in_common_writings(text: str, letter: str | None) -> None:
    assert choice_letter(text) == letter


def test_choices_match_the_accepted_letter_only() -> None:
    task = _task("B", kind="choice")
    assert grade_answer("(b) dressed granite", task).correct
    assert not grade_answer("A", task).correct and not grade_answer("B or C", task).correct
    for bad in PATHOLOGICAL:
        assert not grade_answer(bad, task).correct


def test_the_question_carries_an_answer_line_and_lists_get_room() -> None:
    assert task_question(_task("x")) == "What is asked?"
    assert task_question(_task("B", kind="choice")).endswith(
        "\n\nAnswer with the letter of the right choice."
    )
    synthetic = TaskRecord("q?", "a", (), 1, "exact_id", 0, (), 16_000, None)
    assert task_question(synthetic) == "q?" and answer_char_cap(synthetic, 64) == 64
    long_list = _list(tuple(f"item number {i}" for i in range(10)))
    assert answer_char_cap(long_list, 64) == 2 * len(long_list.answer)
    assert answer_char_cap(_task("short"), 64) == 64
