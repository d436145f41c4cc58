"""User rows end to end: the scripted reference through the real agent loop, sandbox and reward,
and `fathom_lab.evaluate --data` on a small fixture."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from fathom_lab import evaluate
from fathom_lab.evaluate import policy_chat
from fathom_lab.ladder.overlap_reader import read_by_overlap, reading_any_text
from fathom_lab.policies import FathomReference
from fathom_rlm.agent import run_rollout
from fathom_rlm.documents import task_document
from fathom_rlm.rewards import SCORE_NAMES, score_rollout
from fathom_rlm.userdata import load_rows, task_question

pytestmark = pytest.mark.xdist_group("test_evaluate")

FIXTURES = Path(__file__).parent / "fixtures"


def test_the_reference_answers_a_user_row_through_the_real_loop_and_sandbox() -> None:
    rows = {r.row_id: r for r in load_rows(FIXTURES / "harbour.jsonl")}
    task = rows["founder"]  # a text row with evidence and a depth
    document = task_document(task)

    async def rollout() -> Any:
        with reading_any_text():
            return await run_rollout(document, task_question(task), policy_chat(FathomReference()))

    record = asyncio.run(rollout())
    assert record.ended_by == "answer" and record.final_answer == "Agnes Tolliver"
    assert record.touched_document and record.llm_calls >= 1 and record.depth_used >= 1
    scores = score_rollout(record, task)
    assert tuple(scores) == SCORE_NAMES
    assert scores["correctness"] == 1.0 and scores["evidence_seen"] == 1.0
    assert scores["evidence_applicable"] == scores["recursion_efficiency_applicable"] == 1.0
    assert 0.75 < scores["reward"] <= 1.0


def test_without_the_any_text_context_the_grammar_reader_finds_nothing() -> None:
    """Synthetic runs keep the slice reader's old behaviour: an unparsed question is not found."""
    from fathom_lab.ladder.reader import read_slice

    text = (FIXTURES / "harbour.txt").read_text(encoding="utf-8")
    question = "Who was the first harbourmaster of Wrenmouth?"
    assert read_slice(question, text) == "not found"
    with reading_any_text():
        assert "Agnes Tolliver" in read_slice(question, text)
    assert read_by_overlap(question, text, complete=True) == "Agnes Tolliver"
    assert read_by_overlap("Why is the sky green?", text) == "not found"


def _choice_question(question: str, options: list[str]) -> str:
    from fathom_rlm.userdata.grading import answer_instruction

    lines = [f"{letter}) {text}" for letter, text in zip("ABCD", options, strict=False)]
    return "\n".join([question, *lines, answer_instruction("choice")])


_LEDGER = (
    "The keeper of the mill wrote in his ledger every evening. On the first day of the fair he "
    "counted the sacks and found that nine sacks of barley had come in, and seven of oats the "
    "next morning. Years later a traveller asked him about the flood. The water rose to the "
    "second window, he said, and the miller's grey mare swam out through the yard gate while "
    "the geese sat on the roof. His daughter kept a grey cat and a brown dog in the loft."
)


@pytest.mark.parametrize(
    ("question", "options", "answer"),
    [
        # Two options in one passage: the one next to the question's words.
        ("How many sacks of barley came in on the first day?", ["seven", "nine", "ten"], "B"),
        # An option whose words are all there, not one sharing a word with it.
        ("What swam out of the yard in the flood?", ["the grey cat", "the grey mare"], "B"),
        # The text names no option near the question: no guess.
        ("What did the keeper eat at the fair?", ["bread", "apples", "cheese"], "not found"),
    ],
)
def test_the_overlap_reader_picks_the_option_its_passage_names(
    question: str, options: list[str], answer: str
) -> None:
    from fathom_lab.ladder.overlap_reader import content_terms

    prompt = _choice_question(question, options)
    assert read_by_overlap(prompt, _LEDGER, complete=True) == answer
    # The root greps for each option's own words, beside the question's.
    assert set(content_terms(prompt)) >= {max(o.split(), key=len) for o in options} - {"grey"}


def test_evaluate_data_runs_every_user_row_policy_and_says_which_source(
    tmp_path: Path, capsys: Any
) -> None:
    data = FIXTURES / "harbour.jsonl"
    code = evaluate.main(["--data", str(data), "--resamples", "1000", "--out", str(tmp_path)])
    assert code == 0
    report = capsys.readouterr().out
    assert f"6 user rows from `{data}` (format `native`)" in report
    assert "answer kinds: choice 1, list 1, number 1, text 2, year 1" in report
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["config"]["source"] == "user rows"
    assert list(results["policies"]) == list(evaluate.USER_ROW_POLICIES)
    assert not results["errors"]
    assert [t["id"] for t in results["tasks"]] == [
        "founder",
        "ships",
        "storm-year",
        "cargoes",
        "wall",
        "mason",
    ]
    policies = results["policies"]
    reference = policies["fathom-reference"]
    for other in ("fathom-grep-only", "fathom-code-only", "fathom-closed-book"):
        assert policies[other]["rewards"]["reward"]["mean"] < reference["rewards"]["reward"]["mean"]
    assert policies["fathom-closed-book"]["rewards"]["correctness"]["mean"] == 0.0
    # Scores that apply to some rows only are averaged over those rows.
    assert reference["rewards"]["recursion_efficiency"]["n"] == 1  # one row states a depth
    assert reference["metrics"]["evidence_recall"]["n"] == 2  # two rows name evidence
    assert reference["metrics"]["list_partial_credit"]["n"] == 1
    rollouts = [json.loads(line) for line in (tmp_path / "rollouts.jsonl").open()]
    assert len(rollouts) == 6 * len(evaluate.USER_ROW_POLICIES)
    assert all("document" not in r for r in rollouts)
    assert {r["answer_kind"] for r in rollouts} == {"text", "number", "year", "list", "choice"}
    assert (tmp_path / evaluate.CHART_NAME).is_file()


def test_evaluate_data_takes_the_first_n_rows_and_a_public_format(tmp_path: Path) -> None:
    code = evaluate.main(
        [
            "--data",
            str(FIXTURES / "longbench.jsonl"),
            "--data-format",
            "longbench",
            "--policies",
            "fathom-reference,fathom-closed-book",
            "--resamples",
            "1000",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["config"]["format"] == "longbench" and results["config"]["n"] == 1
    reference = results["policies"]["fathom-reference"]
    assert reference["rewards"]["correctness"]["mean"] == 1.0
    code = evaluate.main(
        [
            "--data",
            str(FIXTURES / "harbour.jsonl"),
            "--n",
            "2",
            "--policies",
            "fathom-closed-book",
            "--resamples",
            "1000",
            "--out",
            str(tmp_path),
        ]
    )
    assert code == 0
    assert json.loads((tmp_path / "results.json").read_text())["config"]["n"] == 2
