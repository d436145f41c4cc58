"""Reward truth tables and oracle costs: pure functions, no sandbox."""

from __future__ import annotations

from dataclasses import replace

import pytest
from fathom_rlm.agent import RolloutRecord, SubCallRecord
from fathom_rlm.documents import TaskRecord
from fathom_rlm.rewards import (
    SCORE_NAMES,
    RewardConfig,
    combined_reward,
    correctness,
    correctness_vetoes,
    evidence_recall,
    format_gate,
    oracle_tokens,
    recursion_efficiency,
    score_rollout,
    token_budget,
)


@pytest.mark.parametrize(
    ("message", "gate"),
    [
        ("<answer>Denhan</answer>", 1.0),
        ("Thinking aloud. <answer> Denhan </answer> done", 1.0),
        ("<think>maybe <answer>x</answer></think><answer>Denhan</answer>", 1.0),
        ("<answer>Denhan</answer><answer>Hekra</answer>", 0.0),
        ("<answer>Denhan", 0.0),
        ("Denhan", 0.0),
        ("<answer>a <answer>b</answer>", 0.0),
        ("", 0.0),
        (None, 0.0),
    ],
)
def test_format_gate(message: str | None, gate: float) -> None:
    assert format_gate(message) == gate


def test_correctness_matches_gold_and_aliases_after_normalisation() -> None:
    aliases = ["Master Shoudo", "Shoudo"]
    assert correctness("Dyjirn Shoudo", "Dyjirn Shoudo", aliases) == 1.0
    assert correctness("  dyjirn shoudo. ", "Dyjirn Shoudo", aliases) == 1.0
    assert correctness("Master Shoudo", "Dyjirn Shoudo", aliases) == 1.0
    assert correctness("the Kroulum Mirror", "the Kroulum Mirror") == 1.0
    assert correctness("Kroulum Mirror", "the Kroulum Mirror") == 1.0
    assert correctness("Dyjirn", "Dyjirn Shoudo", aliases) == 0.0


@pytest.mark.parametrize(
    "answer",
    [
        "Dyjirn Shoudo, Detrum Zudrothoux",  # several candidates
        "The answer is Dyjirn Shoudo",  # padding
        "Dyjirn Shoudo " + "x" * 60,  # over the length cap
        "",  # empty
        None,  # no answer block
    ],
)
def test_correctness_vetoes(answer: str | None) -> None:
    assert correctness(answer, "Dyjirn Shoudo", ["Shoudo"]) == 0.0


def test_correctness_requires_a_touched_document() -> None:
    assert correctness("Denhan", "Denhan", touched_document=False) == 0.0


def test_question_copy_scores_zero_even_if_it_would_match() -> None:
    question = "Which master schooled the creator of the Trothox Sextant?"
    # An alias that happens to occur in the question cannot be earned by copying it.
    assert (
        correctness("Trothox Sextant", "Dyjirn Shoudo", ["Trothox Sextant"], question=question)
        == 0.0
    )
    assert correctness(question, "Dyjirn Shoudo", question=question, max_answer_chars=200) == 0.0
    assert correctness("Dyjirn Shoudo", "Dyjirn Shoudo", question=question) == 1.0


def test_token_budget_and_recursion_efficiency() -> None:
    assert token_budget(0, 1000, 3) == 1.0
    assert token_budget(1000, 1000, 3) == pytest.approx(2 / 3)
    assert token_budget(3000, 1000, 3) == 0.0
    assert token_budget(9000, 1000, 3) == 0.0
    assert token_budget(10, 0, 3) == 0.0
    # Depth used over depth required, capped at 1: under-recursion earns less...
    assert recursion_efficiency(0, 0) == 1.0
    assert recursion_efficiency(0, 1) == 0.0
    assert recursion_efficiency(1, 2) == 0.5
    assert recursion_efficiency(0, 2) == 0.0
    assert recursion_efficiency(1, 1) == 1.0
    assert recursion_efficiency(2, 2) == 1.0
    # ...and it falls again beyond the requirement.
    assert recursion_efficiency(2, 1) == 0.5
    assert recursion_efficiency(1, 0) == 0.5
    assert recursion_efficiency(2, 0) == 0.0
    assert recursion_efficiency(5, 0) == 0.0


@pytest.mark.parametrize(
    ("fmt", "correct", "budget", "eff", "reward"),
    [
        (1, 1, 1, 1, 1.0),
        (1, 1, 0, 0, 0.75),
        (1, 1, 0.5, 1, 0.90),
        (1, 0, 1, 1, 0.0),  # cheap but wrong: the cost terms pay nothing
        (0, 1, 1, 1, 0.0),  # right but malformed: the gate closes
        (0, 0, 1, 1, 0.0),
    ],
)
def test_combined_reward_gates_secondary_terms(
    fmt: float, correct: float, budget: float, eff: float, reward: float
) -> None:
    assert combined_reward(fmt, correct, budget, eff) == pytest.approx(reward)


def test_combined_reward_weights_come_from_the_config() -> None:
    cfg = RewardConfig(base_weight=0.5, budget_weight=0.3, recursion_weight=0.2)
    assert combined_reward(1, 1, 1, 0, cfg) == pytest.approx(0.8)
    assert combined_reward(1, 1, 0, 1, cfg) == pytest.approx(0.7)


def _row(**changes: object) -> TaskRecord:
    row = {
        "question": "Which master schooled the creator of the Trothox Sextant?",
        "answer": "Dyjirn Shoudo",
        "aliases": ["Shoudo"],
        "seed": 1,
        "family": "single_hop",
        "depth": 1,
        "spans": [[100, 160]],
        "doc_tokens": 16_000,
        "region": None,
    }
    row.update(changes)
    return TaskRecord.from_json(row)


def test_oracle_costs_per_family() -> None:
    cfg = RewardConfig()
    fixed = cfg.oracle_fixed_tokens
    assert oracle_tokens(_row(family="exact_id", depth=0), cfg) == fixed["exact_id"]
    assert oracle_tokens(_row(), cfg) == fixed["single_hop"]
    # Search-then-read families: the fixed measured cost, whatever the spans.
    assert oracle_tokens(_row(spans=[[100, 160], [40_000, 40_060]]), cfg) == fixed["single_hop"]
    question = "How many arrivals of new residents did Denhan see between chapter 5 and chapter 11?"
    agg = _row(
        family="aggregation",
        depth=2,
        question=question,
        spans=[[30_000, 30_100]],
        region=[10_000, 50_000],
    )
    # Aggregation adds the counted chapters, which every plan must read: 40K chars = 10K tokens.
    expected = fixed["aggregation"] + 10_000
    assert oracle_tokens(agg, cfg) == expected
    # The region, not the question's wording, sets the cost.
    assert oracle_tokens(replace(agg, question="How many, in chapters 1 to 2?"), cfg) == expected
    # A row without a region falls back to the extent of its spans.
    spread = replace(agg, region=None, spans=((30_000, 30_100), (32_000, 32_100)))
    assert oracle_tokens(spread, cfg) == fixed["aggregation"] + 525
    # The constants are config: another ratio or table changes the cost.
    assert oracle_tokens(agg, RewardConfig(chars_per_token=2.0)) == fixed["aggregation"] + 20_000
    custom = RewardConfig(oracle_fixed_tokens={"single_hop": 7})
    assert oracle_tokens(_row(), custom) == 7
    assert oracle_tokens(_row(family="new"), custom) == custom.default_fixed_tokens


def test_evidence_recall_from_ranges_and_texts() -> None:
    document = "a" * 100 + "NEEDLE ONE." + "b" * 100 + "NEEDLE TWO." + "c" * 100
    spans = [[100, 111], [211, 222]]
    record = RolloutRecord()
    assert evidence_recall(record, spans, document) == 0.0
    record.show_range(90, 150)
    assert evidence_recall(record, spans, document) == 0.5
    record.show_text("... NEEDLE TWO. ...")
    assert evidence_recall(record, spans, document) == 1.0
    assert evidence_recall(RolloutRecord(), [], document) == 1.0


def test_score_rollout_names_and_values() -> None:
    document = "x" * 100 + "Dyjirn Shoudo taught him." + "y" * 100
    record = RolloutRecord(
        touched_document=True,
        final_message="<answer>Dyjirn Shoudo</answer>",
        root_prompt_tokens=400,
        root_completion_tokens=100,
        root_tool_output_tokens=300,
        sub_prompt_tokens=900,
        sub_completion_tokens=100,
    )
    # A depth-2 reader read its slice; the depth-1 agent above it only handed it on.
    record.sub_calls.append(SubCallRecord(1, "rlm", "tool", "range", 40, 20))
    read = "Dyjirn Shoudo taught him." + "y" * 15
    record.sub_calls.append(
        SubCallRecord(2, "plain", "repl", "repl", 40, 20, read_chars=40, read_texts=[read])
    )
    record.show_range(90, 200)
    scores = score_rollout(record, _row(spans=[[100, 125]]), document=document)
    assert tuple(scores) == SCORE_NAMES
    assert all(isinstance(v, float) for v in scores.values())
    assert scores["correctness"] == 1.0 and scores["format_gate"] == 1.0
    # Every model token counts, the root's own prompts and completions included.
    assert scores["budget_tokens"] == 1500
    assert scores["depth_used"] == 2 and scores["recursion_efficiency"] == 0.5
    assert scores["evidence_recall"] == 1.0
    assert scores["reward"] == pytest.approx(0.75 + 0.20 * scores["token_budget"] + 0.05 * 0.5)
    wrong = RolloutRecord.from_dict({**record.to_dict(), "final_message": "<answer>no</answer>"})
    scored = score_rollout(wrong, _row(spans=[[100, 125]]), document=document)
    assert scored["reward"] == 0.0 and scored["gated_token_budget"] == 0.0
    assert scored["token_budget"] == scores["token_budget"]  # reported, but gated out of reward


def test_evidence_gate_is_lenient_but_stops_blind_guesses() -> None:
    document = "x" * 100 + "Orin Vale was not patient. She moved to Denhan at once." + "y" * 100
    spans = [[100, 155]]
    row = _row(answer="Denhan", aliases=[], spans=spans)
    guess = RolloutRecord(touched_document=True, final_message="<answer>Denhan</answer>")
    guess.show_text("Most common: Denhan 14, Hekra 9")
    assert score_rollout(guess, row, document=document)["correctness"] == 0.0
    assert (
        score_rollout(guess, row, RewardConfig(require_evidence=False), document=document)[
            "correctness"
        ]
        == 1.0
    )
    partial = RolloutRecord.from_dict(guess.to_dict())
    partial.show_text("... She moved to Denhan at once. ...")  # one sentence of the span is enough
    assert score_rollout(partial, row, document=document)["correctness"] == 1.0
    ranged = RolloutRecord.from_dict(guess.to_dict())
    ranged.show_range(120, 400)  # covers more than half the span
    assert score_rollout(ranged, row, document=document)["evidence_seen"] == 1.0


def test_depth_counts_only_levels_that_read() -> None:
    record = RolloutRecord(depth_reached=2)
    record.sub_calls.append(SubCallRecord(1, "rlm", "tool", "range", 4_000, 20))
    record.sub_calls.append(SubCallRecord(2, "rlm", "repl", "repl", 4_000, 20))
    assert record.depth_used == 0  # sub-calls started at two levels, none read anything
    record.sub_calls[0].read_chars = 300
    assert record.depth_used == 1
    restored = RolloutRecord.from_dict(record.to_dict())
    assert restored.depth_used == 1 and restored.depth_reached == 2


def test_recursion_credits_only_levels_that_read_support() -> None:
    """A level whose sub-call read text, but no supporting sentence, earns no recursion credit;
    the same record with the supporting sentence among what it read earns full credit."""
    document = "x" * 100 + "Dyjirn Shoudo taught him." + "y" * 100
    row = _row(spans=[[100, 125]])
    for read, expected in (("y" * 60, 0.0), (document[90:140], 1.0)):
        record = RolloutRecord(
            touched_document=True, final_message="<answer>Dyjirn Shoudo</answer>"
        )
        record.sub_calls.append(
            SubCallRecord(1, "rlm", "tool", "range", 60, 20, read_chars=60, read_texts=[read])
        )
        record.show_range(90, 200)
        scores = score_rollout(record, replace(row, depth=1), document=document)
        assert scores["depth_used"] == 1.0
        assert scores["recursion_efficiency"] == expected, read


SYNTHETIC = TaskRecord(
    question="Which master schooled the creator of the Trothox Sextant?",
    answer="Dyjirn Shoudo",
    aliases=("Shoudo",),
    seed=1,
    family="multi_hop",
    depth=1,
    spans=((0, 10),),
    doc_tokens=16_000,
    region=None,
)


@pytest.mark.parametrize(
    ("answer", "touched", "seen", "vetoes"),
    [
        ("Dyjirn Shoudo", True, True, []),
        ("Dyjirn Shoudo", False, True, ["untouched_document"]),
        ("Dyjirn Shoudo", True, False, ["no_evidence_seen"]),
        (None, True, True, ["no_answer"]),
        ("   ", False, False, ["no_answer", "untouched_document", "no_evidence_seen"]),
        ("Dyjirn Shoudo " + "x" * 60, True, True, ["over_length"]),
        ("Trothox Sextant", True, True, ["copies_question"]),
        ("Detrum Zudrothoux", True, True, []),  # wrong, but no veto: it simply does not match
    ],
)
def test_correctness_vetoes_name_every_reason_that_pays_nothing(
    answer: str | None, touched: bool, seen: bool, vetoes: list[str]
) -> None:
    named = correctness_vetoes(answer, SYNTHETIC, touched_document=touched, evidence_seen=seen)
    assert named == vetoes
    paid = correctness(
        answer,
        SYNTHETIC.answer,
        SYNTHETIC.aliases,
        question=SYNTHETIC.question,
        touched_document=touched,
        evidence_seen=seen,
    )
    # A named veto always means 0; the gold without one is paid.
    assert paid == (1.0 if not vetoes and answer == SYNTHETIC.answer else 0.0)
