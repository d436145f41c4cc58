"""Correctness grading: equivalent forms pass, wrong or gamed forms fail, the API contract."""

from __future__ import annotations

import asyncio
from fractions import Fraction

import pytest
from gsm8k_multireward import MathGrader, gold_from_solution
from gsm8k_multireward.answer_forms import is_pathological, plain_number
from gsm8k_multireward.grading import quick_decision


@pytest.mark.parametrize(
    ("solution", "gold"),
    [
        ("6 * 3 = <<6*3=18>>18\n#### 18", "18"),
        ("... #### 1,000", "1000"),
        ("#### -7", "-7"),
        ("#### 2.5", "2.5"),
        ("first #### 3\nrevised #### 4", "4"),
        ("#### $1,200", "1200"),
    ],
)
def test_gold_from_solution(solution: str, gold: str) -> None:
    assert gold_from_solution(solution) == gold


@pytest.mark.parametrize("solution", ["no marker here", "#### ", "#### twelve"])
def test_gold_from_solution_errors(solution: str) -> None:
    with pytest.raises(ValueError):
        gold_from_solution(solution)


CORRECT = [
    ("18", "18"),
    ("18.0", "18"),
    ("18.00", "18"),
    ("18.", "18"),
    ("\\$18", "18"),
    ("$18", "18"),
    ("\\$18.00", "18"),
    ("$18$", "18"),
    ("\\(18\\)", "18"),
    ("1,000", "1000"),
    ("1000", "1,000"),
    ("1{,}000", "1000"),
    ("1\\,000", "1000"),
    ("\\$1,000.00", "1000"),
    ("\\frac{36}{2}", "18"),
    ("\\dfrac{36}{2}", "18"),
    ("36/2", "18"),
    ("18\\text{ dollars}", "18"),
    ("18 \\text{dollars}", "18"),
    ("18\\,\\text{dollars}", "18"),
    ("\\text{18}", "18"),
    ("\\textbf{18}", "18"),
    ("18\\mbox{ apples}", "18"),
    ("18 dollars", "18"),  # plain unit words after a number are accepted
    ("18 dollars.", "18"),
    ("18 red apples", "18"),
    ("-7", "-7"),
    ("\u22127", "-7"),
    ("18\\%", "18"),  # GSM8K percent questions have the bare number as gold
    ("18%", "18"),
    ("18 percent", "18"),
    ("30^\\circ", "30"),
]

# Answers the fast path does not read: math-verify decides them in a worker process.
CORRECT_SYMBOLIC = [
    ("2 \\times 9", "18"),
    ("x = 18", "18"),
    ("\\sqrt{324}", "18"),
    ("3 \\cdot 6", "18"),
]

WRONG = [
    ("0.18", "18"),
    ("18.0000001", "18"),
    ("17", "18"),
    ("180", "18"),
    ("1.8", "18"),
    ("-18", "18"),
    ("18 thousand", "18"),  # value-changing words are not units
    ("18 dozen", "18"),
    ("18 and a half", "18"),
    ("\\frac{1}{18}", "18"),
    ("17, 18", "18"),  # several candidates in one box do not pay
    ("17 or 18", "18"),
    ("\\{17, 18\\}", "18"),
    ("18k", "18"),
    ("18 \\times 2", "18"),
    ("eighteen", "18"),
    ("", "18"),
    ("   ", "18"),
    ("1" * 2000, "18"),
    ("10^{10^{10}}", "10"),
    ("9^{9^{9^{9}}}", "18"),
    ("{" * 5000 + "18" + "}" * 5000, "18"),
    ("\\sum_{i=1}^{18} 1", "18"),
    ("1000!", "18"),
]


@pytest.mark.parametrize(("answer", "gold"), CORRECT)
def test_equivalent_forms_are_correct(grader: MathGrader, answer: str, gold: str) -> None:
    assert grader.grade(answer, gold) == 1.0
    # These are all decided exactly, without math-verify.
    assert quick_decision(answer, gold) == 1.0


@pytest.mark.parametrize(("answer", "gold"), CORRECT_SYMBOLIC)
def test_symbolic_forms_use_math_verify(grader: MathGrader, answer: str, gold: str) -> None:
    assert quick_decision(answer, gold) is None
    assert grader.grade(answer, gold) == 1.0


@pytest.mark.parametrize(("answer", "gold"), WRONG)
def test_wrong_and_gamed_answers_score_zero(grader: MathGrader, answer: str, gold: str) -> None:
    assert grader.grade(answer, gold) == 0.0


def test_no_answer_scores_zero(grader: MathGrader) -> None:
    assert grader.grade(None, "18") == 0.0


def test_percent_matches_number_or_fraction(grader: MathGrader) -> None:
    assert grader.grade("25\\%", "25") == 1.0
    assert grader.grade("25\\%", "0.25") == 1.0
    assert grader.grade("25", "0.25") == 0.0


def test_plain_number_reading() -> None:
    assert plain_number("1,000") == (Fraction(1000), False)
    assert plain_number("12,34") is None  # not a valid thousands grouping
    assert plain_number("18 km/h") is None  # single-letter unit pieces are not read
    assert plain_number("x = 18") is None
    assert plain_number("18\\%") == (Fraction(18), True)


@pytest.mark.parametrize(
    ("answer", "pathological"),
    [
        ("2^{10}", False),
        ("1.8 \\times 10^{1}", False),
        ("100!", False),
        ("\\frac{\\frac{1}{2}}{3}", False),
        ("10^{10^{10}}", True),
        ("9^{9^{9^9}}", True),
        ("2^3^4", True),
        ("10^{1000}", True),
        ("1000!", True),
        ("(10!)!", True),
        ("{" * 13 + "1" + "}" * 13, True),
        ("\\prod_{i=1}^{9} i", True),
        ("x" * 1001, True),
    ],
)
def test_prefilter(answer: str, pathological: bool) -> None:
    assert is_pathological(answer) is pathological


def test_grade_many_keeps_order(grader: MathGrader) -> None:
    pairs = [
        ("18", "18"),
        ("2 \\times 9", "18"),
        (None, "18"),
        ("17", "18"),
        ("\\sqrt{324}", "18"),
        ("3 \\cdot 5", "18"),
        ("10^{10^{10}}", "10"),
    ]
    assert grader.grade_many(pairs) == [1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 0.0]
    assert grader.grade_many([]) == []


def test_agrade(grader: MathGrader) -> None:
    async def run() -> list[float]:
        return await asyncio.gather(
            grader.agrade("18", "18"),
            grader.agrade("2 \\times 9", "18"),
            grader.agrade("19", "18"),
            grader.agrade(None, "18"),
        )

    assert asyncio.run(run()) == [1.0, 1.0, 0.0, 0.0]


def test_grader_starts_workers_lazily_and_closes() -> None:
    grader = MathGrader(max_workers=3, timeout=5.0)
    try:
        assert grader.grade("18", "18") == 1.0
        assert grader.grade_many([("1,000", "1000"), ("7", "8")]) == [1.0, 0.0]
        assert grader.pool.live_workers == 0  # the fast path needs no process
    finally:
        grader.close()
    grader.close()  # idempotent
    with pytest.raises(RuntimeError):
        grader.grade("18", "18")


@pytest.mark.parametrize(
    "kwargs", [{"max_workers": 0}, {"max_workers": True}, {"timeout": 0}, {"timeout": -1.0}]
)
def test_grader_argument_errors(kwargs: dict) -> None:
    with pytest.raises(ValueError):
        MathGrader(**kwargs)
