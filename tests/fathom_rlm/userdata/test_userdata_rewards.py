"""Rewards on user rows: a component a row cannot support is reported as not applicable, its
weight is left out and the rest renormalised; synthetic rows score exactly by the old formula;
every row returns the same keys."""

from __future__ import annotations

import math

import pytest
from fathom_rlm.agent import RolloutRecord
from fathom_rlm.documents import TaskRecord, build_split, get_document
from fathom_rlm.rewards import (
    SCORE_NAMES,
    RewardConfig,
    correctness_vetoes,
    graded_answer,
    oracle_tokens,
    score_rollout,
)
from fathom_rlm.userdata import records_from_rows

DOC = (
    "The lighthouse at Carrow Point was first lit in 1821. Its keeper, Isolde Varga, kept a log "
    "of every ship she saw. The tower is 31 metres tall and its lamp burned whale oil until "
    "1870. Gulls, terns and cormorants nest on the rocks below. " * 20
)
EVIDENCE = "Its keeper, Isolde Varga, kept a log of every ship she saw."
NEW_KEYS = (
    "evidence_applicable",
    "recursion_efficiency_applicable",
    "list_partial_credit",
    "list_partial_credit_applicable",
)


def _user(**fields: object) -> TaskRecord:
    row = {"document": DOC, "question": "Who kept the lighthouse log?", "answer": "Isolde Varga"}
    (record,) = records_from_rows([row | fields])
    return record


def _answered(answer: str, tokens: int = 0, *, shown: str | None = None) -> RolloutRecord:
    record = RolloutRecord(
        final_message=f"<answer>{answer}</answer>", touched_document=True, ended_by="answer"
    )
    record.root_prompt_tokens = tokens
    if shown is not None:
        record.show_text(shown)
    return record


def test_a_synthetic_row_scores_by_the_old_formula_with_every_component_applicable() -> None:
    task = build_split("eval", 1, doc_tokens=16_000)[0]
    document = get_document(task.seed, task.doc_tokens).text
    record = _answered(task.answer, 4_000)
    for start, end in task.spans:
        record.show_range(start, end)
    scores = score_rollout(record, task, document=document)
    assert tuple(scores) == SCORE_NAMES
    assert scores["correctness"] == scores["format_gate"] == scores["evidence_seen"] == 1.0
    budget = 1 - 4_000 / (3 * oracle_tokens(task))
    assert scores["token_budget"] == budget
    efficiency = scores["recursion_efficiency"]
    assert scores["reward"] == 0.75 + 0.20 * budget + 0.05 * efficiency
    assert [scores[k] for k in NEW_KEYS] == [1.0, 1.0, 0.0, 0.0]
    # Without its evidence shown, the synthetic veto still holds.
    bare = _answered(task.answer, 4_000)
    assert score_rollout(bare, task, document=document)["correctness"] == 0.0


def test_a_user_row_without_evidence_or_depth_reports_both_not_applicable() -> None:
    task = _user()
    scores = score_rollout(_answered("Isolde Varga", 2_000), task)
    assert tuple(scores) == SCORE_NAMES
    # No evidence: no veto, and recall is not applicable rather than a silent 0 or 1.
    assert scores["correctness"] == 1.0
    assert scores["evidence_applicable"] == 0.0
    assert scores["evidence_recall"] == 0.0 and scores["evidence_seen"] == 0.0
    # No depth: the recursion term is out and the other weights are renormalised.
    assert scores["recursion_efficiency_applicable"] == 0.0
    assert scores["recursion_efficiency"] == scores["gated_recursion_efficiency"] == 0.0
    budget = scores["token_budget"]
    assert 0 < budget < 1
    assert scores["reward"] == pytest.approx((0.75 + 0.20 * budget) / 0.95)
    # A free correct answer reaches the full reward of 1, as on a synthetic row.
    assert score_rollout(_answered("Isolde Varga", 0), task)["reward"] == pytest.approx(1.0)
    assert scores["list_partial_credit_applicable"] == 0.0


def test_renormalisation_follows_the_configured_weights() -> None:
    cfg = RewardConfig(base_weight=0.5, budget_weight=0.3, recursion_weight=0.2)
    scores = score_rollout(_answered("Isolde Varga", 5_000), _user(), cfg)
    budget = scores["token_budget"]
    assert scores["reward"] == pytest.approx((0.5 + 0.3 * budget) * 1.0 / 0.8)


def test_a_user_row_with_evidence_and_depth_applies_the_veto_and_the_recursion_term() -> None:
    task = _user(evidence=[EVIDENCE], depth=0)
    unseen = score_rollout(_answered("Isolde Varga"), task)
    assert unseen["evidence_applicable"] == 1.0 and unseen["evidence_seen"] == 0.0
    assert unseen["correctness"] == 0.0 and unseen["reward"] == 0.0
    seen = score_rollout(_answered("Isolde Varga", 1_000, shown=f"... {EVIDENCE} ..."), task)
    assert seen["correctness"] == seen["evidence_seen"] == seen["evidence_recall"] == 1.0
    assert seen["recursion_efficiency_applicable"] == 1.0
    assert seen["recursion_efficiency"] == 1.0  # depth 0 needed, none used
    budget = seen["token_budget"]
    assert seen["reward"] == 0.75 + 0.20 * budget + 0.05 * 1.0


def test_the_token_budget_scales_with_the_document() -> None:
    short, long = _user(), _user(document=DOC * 10)
    assert oracle_tokens(short) == 10_000 + math.ceil(0.5 * short.doc_tokens)
    assert oracle_tokens(long) == 10_000 + math.ceil(0.5 * long.doc_tokens)
    spent = _answered("Isolde Varga", 20_000)
    assert score_rollout(spent, long)["token_budget"] > score_rollout(spent, short)["token_budget"]


def test_list_rows_report_partial_credit_apart_from_correctness() -> None:
    task = _user(
        question="Which birds nest on the rocks?",
        answer=["gulls", "terns", "cormorants"],
        answer_kind="list",
    )
    full = score_rollout(_answered("Terns, gulls and cormorants"), task)
    assert full["correctness"] == 1.0 and full["list_partial_credit"] == 1.0
    part = score_rollout(_answered("gulls, terns"), task)
    assert part["correctness"] == 0.0 and part["reward"] == 0.0
    assert part["list_partial_credit"] == pytest.approx(0.8)
    assert part["list_partial_credit_applicable"] == 1.0
    # A list longer than the default 64-character cap has room when its gold needs it.
    long = _user(
        question="Which words?", answer=[f"word{i:02d}" for i in range(12)], answer_kind="list"
    )
    assert score_rollout(_answered(long.answer), long)["correctness"] == 1.0


def test_number_rows_with_a_credit_base_report_partial_credit_apart_from_correctness() -> None:
    task = _user(
        question="In what year was the lamp changed?",
        answer="1870",
        answer_kind="number",
        number_credit_base=0.75,
    )
    near = score_rollout(_answered("1872"), task)
    assert near["correctness"] == 0.0 and near["reward"] == 0.0
    assert near["number_partial_credit"] == pytest.approx(0.75**2)
    assert near["number_partial_credit_applicable"] == 1.0
    assert near["list_partial_credit"] == near["list_partial_credit_applicable"] == 0.0
    assert score_rollout(_answered("1870"), task)["number_partial_credit"] == 1.0
    # A veto pays no partial credit either.
    untouched = _answered("1872")
    untouched.touched_document = False
    assert score_rollout(untouched, task)["number_partial_credit"] == 0.0
    # A number row without a base has none to report.
    plain = score_rollout(_answered("1872"), _user(answer="1870", answer_kind="number"))
    assert plain["number_partial_credit"] == plain["number_partial_credit_applicable"] == 0.0


def test_user_rows_keep_the_vetoes_that_do_not_need_a_label() -> None:
    task = _user(
        question="Which letter names the keeper?\n(A) Isolde Varga\n(B) Carrow",
        answer="A",
        answer_kind="choice",
    )
    # The answer is part of the question (a choice), and that is allowed.
    assert score_rollout(_answered("(A) Isolde Varga"), task)["correctness"] == 1.0
    # Holding the whole question is not.
    copied = _answered(f"A {task.question}")
    assert score_rollout(copied, task)["correctness"] == 0.0
    untouched = _answered("A")
    untouched.touched_document = False
    assert score_rollout(untouched, task)["correctness"] == 0.0
    two = RolloutRecord(final_message="<answer>A</answer><answer>B</answer>", touched_document=True)
    assert score_rollout(two, task)["format_gate"] == 0.0
    assert score_rollout(_answered("A" * 100), _user())["correctness"] == 0.0


@pytest.mark.parametrize(
    ("answer", "touched", "vetoes"),
    [
        ("Isolde Varga", True, []),
        ("Isolde Varga", False, ["untouched_document"]),
        ("Who kept the lighthouse log? Isolde Varga", True, ["copies_question"]),
        ("Isolde Varga " + "y" * 80, True, ["over_length"]),
        ("", True, ["no_answer"]),
    ],
)
def test_user_row_vetoes_agree_with_its_grade(
    answer: str, touched: bool, vetoes: list[str]
) -> None:
    task, config = _user(), RewardConfig()
    named = correctness_vetoes(answer, task, touched_document=touched, evidence_seen=True)
    assert named == vetoes
    correct, _ = graded_answer(answer, task, touched, True, config)
    assert correct == (0.0 if vetoes else 1.0)
