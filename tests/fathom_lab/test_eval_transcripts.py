"""`fathom_lab.evaluate` saves every conversation, and `envtools.replay` re-scores it with no model:
each saved score must equal what the loop and reward compute from the saved replies."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fathom_lab import evaluate

from envtools import replay

pytestmark = pytest.mark.xdist_group("test_eval_transcripts")

POLICIES = "fathom-reference,fathom-closed-book,fathom-grep-only"


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("eval")
    argv = ["--n", "4", "--doc-tokens", "4000", "--policies", POLICIES, "--out", str(out)]
    assert evaluate.main(argv) == 0
    return out


def lines(path: Path) -> list[dict]:
    return [json.loads(text) for text in path.read_text().splitlines()]


def test_one_transcript_per_rollout_with_the_conversation_and_every_reply(run_dir: Path) -> None:
    rollouts = lines(run_dir / "rollouts.jsonl")
    transcripts = lines(run_dir / evaluate.TRANSCRIPTS_NAME)
    assert len(transcripts) == len(rollouts) == 12
    for rollout, transcript in zip(rollouts, transcripts, strict=True):
        assert "transcript" not in rollout  # the summaries stay small
        assert (transcript["policy"], transcript["task"]) == (rollout["policy"], rollout["task"])
        assert transcript["scores"] == rollout["scores"]
        messages = transcript["messages"]
        assert [m["role"] for m in messages[:2]] == ["system", "user"]
        root_turns = [m for m in messages if m["role"] == "assistant"]
        assert len(root_turns) == rollout["summary"]["turns"]
        # Every root turn is among the replies (sub-calls add theirs).
        assert len(transcript["replies"]) >= len(root_turns) >= 1
        assert transcript["task_row"]["question"] == rollout["question"]


def test_replay_recomputes_every_saved_score(run_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert replay.main([str(run_dir / evaluate.TRANSCRIPTS_NAME)]) == 0
    assert "12 rollouts replayed, 0 skipped" in capsys.readouterr().out


def test_replay_reports_a_score_that_differs(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    transcripts = lines(run_dir / evaluate.TRANSCRIPTS_NAME)
    honest = next(t for t in transcripts if t["scores"]["reward"] > 0)
    honest["scores"]["reward"] = 0.0
    tampered = tmp_path / "t.jsonl"
    tampered.write_text(json.dumps(honest) + "\n")
    assert replay.main([str(tampered)]) == 1
    captured = capsys.readouterr()
    assert "reward: saved 0.0 != replayed" in captured.err and "1 mismatches" in captured.out


def test_replay_reads_older_runs_and_reports_a_score_the_core_no_longer_gives(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    line = lines(run_dir / evaluate.TRANSCRIPTS_NAME)[0]
    older = tmp_path / "older.jsonl"
    del line["scores"]["number_partial_credit"]  # saved before the core computed it
    older.write_text(json.dumps(line) + "\n")
    assert replay.main([str(older)]) == 0
    line["scores"]["made_up_score"] = 1.0  # a score the core does not give
    older.write_text(json.dumps(line) + "\n")
    assert replay.main([str(older)]) == 1
    assert "made_up_score: saved 1.0 != replayed None" in capsys.readouterr().err


def test_replay_reports_a_transcript_missing_replies(
    run_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    transcript = lines(run_dir / evaluate.TRANSCRIPTS_NAME)[0]
    transcript["replies"] = transcript["replies"][:-1]
    cut = tmp_path / "t.jsonl"
    cut.write_text(json.dumps(transcript) + "\n")
    assert replay.main([str(cut)]) == 1
    assert "more than the" in capsys.readouterr().err


def test_no_transcripts_writes_none_and_removes_an_old_one(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "run"
    out.mkdir()
    (out / evaluate.TRANSCRIPTS_NAME).write_text("old\n")
    argv = ["--n", "2", "--doc-tokens", "4000", "--policies", "fathom-closed-book"]
    assert evaluate.main([*argv, "--out", str(out), "--no-transcripts"]) == 0
    assert not (out / evaluate.TRANSCRIPTS_NAME).exists()
    assert (out / "rollouts.jsonl").exists()


def test_replay_of_a_file_that_is_not_transcripts_is_a_usage_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"policy": "x"}\n')
    with pytest.raises(SystemExit) as exit_info:
        replay.main([str(bad)])
    assert exit_info.value.code == 2
