"""The shared adapter arguments: validation, and the caps reaching the reward."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.scoring import reward_config, score
from fathom_rlm.agent import RolloutCaps, RolloutRecord
from fathom_rlm.documents import TaskRecord
from fathom_rlm.rewards import RewardConfig


@pytest.mark.parametrize("name", ["num_examples", "sub_max_completion_tokens"])
@pytest.mark.parametrize("value", [0, -3])
def test_counts_below_one_are_rejected_by_name(name: str, value: int) -> None:
    with pytest.raises(ValueError, match=rf"{name} must be None or >= 1, got {value}"):
        FathomArguments(**{name: value})


@pytest.mark.parametrize("name", ["num_examples", "sub_max_completion_tokens"])
def test_counts_may_be_none_or_positive(name: str) -> None:
    assert getattr(FathomArguments(**{name: None}), name) is None
    assert getattr(FathomArguments(**{name: 1}), name) == 1


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("split", "tarin", r"split must be one of \['eval', 'heldout', 'train'\], got 'tarin'"),
        ("doc_tokens", -5, "doc_tokens must be >= 3000, got -5"),
        ("doc_tokens", 2_999, "doc_tokens must be >= 3000"),
        ("doc_tokens", "16000", "doc_tokens must be an int"),
    ],
)
def test_a_bad_split_or_document_length_fails_before_any_document_is_built(
    name: str, value: Any, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        FathomArguments(**{name: value})
    assert FathomArguments(split="heldout", doc_tokens=3_000).doc_tokens == 3_000


def test_reward_config_follows_the_caps() -> None:
    args = FathomArguments(max_answer_chars=5, max_slice_chars=6_000)
    cfg = reward_config(args)
    assert cfg == RewardConfig.from_caps(args.caps())
    assert (cfg.max_answer_chars, cfg.max_slice_chars) == (5, 6_000)
    # Every other reward setting keeps its default.
    assert cfg == RewardConfig(max_answer_chars=5, max_slice_chars=6_000)
    assert RewardConfig.from_caps(None) == RewardConfig.from_caps(RolloutCaps()) == RewardConfig()
    assert RewardConfig.from_caps(RolloutCaps(), budget_k=2.0).budget_k == 2.0


def test_a_non_default_answer_cap_reaches_the_score() -> None:
    row = TaskRecord.from_json(
        {
            "question": "Who is the holder of permit QX-1?",
            "answer": "Dyjirn Shoudo",
            "aliases": [],
            "seed": 1,
            "family": "exact_id",
            "depth": 0,
            "spans": [],
            "doc_tokens": 16_000,
            "region": None,
        }
    )
    record = RolloutRecord(
        final_message="<answer>Dyjirn Shoudo</answer>", touched_document=True, ended_by="answer"
    )
    assert score(record, row, FathomArguments())["correctness"] == 1.0
    capped = score(record, row, FathomArguments(max_answer_chars=5))
    assert capped["format_gate"] == 1.0 and capped["correctness"] == 0.0


def test_time_budget_reaches_both_adapters() -> None:
    from fathom_rlm.adapters.legacy import FathomLegacyEnv, ended_by_from_stop
    from fathom_rlm.adapters.v1 import FathomTasksetConfig

    args = FathomArguments(time_budget_s=42.5, num_examples=1, doc_tokens=16_000)
    assert args.caps().time_budget_s == 42.5
    # legacy: verifiers' own rollout timeout, reported as the core's reason
    assert FathomLegacyEnv(args).timeout_seconds == 42.5
    assert ended_by_from_stop("timeout_reached") == "time_budget"
    # v1: a taskset field, carried into the caps the harness runs with
    assert FathomTasksetConfig(time_budget_s=42.5).arguments().caps().time_budget_s == 42.5
    assert FathomArguments(time_budget_s=None).caps().time_budget_s is None
    with pytest.raises(ValueError, match="time_budget_s"):
        FathomArguments(time_budget_s=0)


USER_ROWS = Path(__file__).resolve().parents[1] / "userdata" / "fixtures"


def test_a_source_serves_its_first_rows_with_their_documents_loaded() -> None:
    from fathom_rlm.adapters.scoring import build_rows, load_document

    args = FathomArguments(source=str(USER_ROWS / "harbour.jsonl"), num_examples=2)
    rows = build_rows(args)
    assert [r.row_id for r in rows] == ["founder", "ships"]
    assert all(r.source == "user" for r in rows)
    assert "Agnes Tolliver" in load_document(rows[0])
    # The path is made absolute, so a worker process started elsewhere reads the same file.
    assert Path(args.source).is_absolute()
    assert FathomArguments(**args.as_dict()) == args
    assert len(build_rows(FathomArguments(source=str(USER_ROWS / "harbour.jsonl")))) == 6
    oolong = FathomArguments(source=str(USER_ROWS / "oolong.jsonl"), source_format="oolong")
    assert build_rows(oolong)[0].answer_kind == "number"


def test_a_source_reads_only_the_rows_it_serves(tmp_path: Path) -> None:
    """num_examples stops the reading: a huge file's tail is never parsed (or its documents
    read) when the first rows are all that is served."""
    from fathom_rlm.adapters.scoring import build_rows

    rows = (USER_ROWS / "harbour.jsonl").read_text(encoding="utf-8").splitlines()[:2]
    (tmp_path / "harbour.txt").write_bytes((USER_ROWS / "harbour.txt").read_bytes())
    (tmp_path / "rows.jsonl").write_text("\n".join([*rows, "{not json"]) + "\n")
    source = str(tmp_path / "rows.jsonl")
    assert [r.row_id for r in build_rows(FathomArguments(source=source, num_examples=2))] == [
        "founder",
        "ships",
    ]
    with pytest.raises(ValueError, match="line 3"):
        FathomArguments(source=source)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"source": "no/such/rows.jsonl"}, r"source: .*rows.jsonl: cannot read the rows"),
        ({"source": str(USER_ROWS / "bad_rows.jsonl")}, r"line 2: answer_kind: must be one of"),
        ({"source": str(USER_ROWS / "harbour.jsonl"), "source_format": "needle"}, "line 1"),
        ({"source": str(USER_ROWS / "harbour.jsonl"), "split": "train"}, "split does not apply"),
        ({"source": str(USER_ROWS / "harbour.jsonl"), "doc_tokens": 16_000}, "doc_tokens does"),
        (
            {"source": str(USER_ROWS / "harbour.jsonl"), "family_mix": {"exact_id": 1.0}},
            "family_mix does not apply",
        ),
        ({"source_format": "oolong"}, "source_format applies only with a source"),
        ({"source": "x.jsonl", "source_format": "csv"}, r"source_format must be one of"),
        ({"source": ""}, "source must be a file path"),
    ],
)
def test_a_bad_source_is_one_line_when_the_arguments_are_made(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError, match=message) as failed:
        FathomArguments(**kwargs)
    assert "\n" not in str(failed.value)


def test_the_v1_config_reads_a_source_and_refuses_a_bad_one() -> None:
    from fathom_rlm.adapters.v1 import FathomTasksetConfig
    from pydantic import ValidationError

    config = FathomTasksetConfig(source=str(USER_ROWS / "harbour.jsonl"))
    assert config.arguments().source == str(USER_ROWS / "harbour.jsonl")
    with pytest.raises(ValidationError, match="line 2: answer_kind"):
        FathomTasksetConfig(source=str(USER_ROWS / "bad_rows.jsonl"))
    with pytest.raises(
        ValidationError, match="'native', 'oolong', 'longbench', 'needle', 'ruler' or 'needle-tool'"
    ):
        FathomTasksetConfig(source=str(USER_ROWS / "harbour.jsonl"), source_format="csv")


def test_the_gold_of_a_user_row_without_evidence_is_gradable() -> None:
    from fathom_rlm.adapters.scoring import build_rows, gold_problems

    args = FathomArguments(source=str(USER_ROWS / "harbour.jsonl"))
    rows = build_rows(args)
    assert any(not r.spans for r in rows) and any(r.spans for r in rows)
    assert all(gold_problems(r, args) == [] for r in rows)
