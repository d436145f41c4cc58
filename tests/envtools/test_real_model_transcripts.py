"""Real model output, replayed with no model: what SmolLM2-135M-Instruct wrote through
`envtools.local_model` (saved by `fathom_lab.evaluate` and legacy `vf-eval`) goes back through the
agent loop and the reward (fathom-rlm) or the grader (gsm8k-multireward). Each ends with a
recorded reason and the same scores it was given when the model ran; none crashes.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from envtools.replay import mismatches, replay_rollout

FIXTURES = Path(__file__).parent / "fixtures" / "real_model"
FATHOM = sorted(FIXTURES.glob("fathom-*.json"))
GSM8K = sorted(FIXTURES.glob("gsm8k-*.json"))


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())


def test_there_are_real_transcripts_of_both_environments() -> None:
    assert len(FATHOM) >= 3 and len(GSM8K) >= 2


@pytest.mark.parametrize("path", FATHOM, ids=lambda p: p.stem)
def test_a_real_fathom_transcript_replays_to_its_saved_ending_and_scores(path: Path) -> None:
    saved = load(path)
    record, scores = asyncio.run(replay_rollout(saved))
    assert record.ended_by == saved["ended_by"]
    assert mismatches(saved["scores"], scores) == []
    # None of them earned anything: the format gate is the first thing a real model misses.
    assert scores["reward"] == 0.0


def test_the_cut_runaway_reply_is_truncated_not_an_answer() -> None:
    saved = load(FIXTURES / "fathom-runaway-repetition-truncated.json")
    assert saved["replies"][-1]["finish_reason"] == "length"
    record, scores = asyncio.run(replay_rollout(saved))
    assert record.ended_by == "truncated" and record.final_message is None
    assert scores["format_gate"] == 0.0 and scores["gated_token_budget"] == 0.0


@pytest.mark.parametrize("path", GSM8K, ids=lambda p: p.stem)
def test_a_real_gsm8k_completion_regrades_to_its_saved_scores(path: Path) -> None:
    from gsm8k_multireward import GSM8KConfig, MathGrader, score_completion

    saved = load(path)
    with MathGrader(max_workers=1, timeout=5.0) as grader:
        scores = score_completion(
            saved["completion"], saved["answer"], grader, GSM8KConfig(), saved["completion_tokens"]
        )
    assert scores == pytest.approx(saved["scores"])
    assert "\\boxed" not in saved["completion"] and scores["correct_answer"] == 0.0
