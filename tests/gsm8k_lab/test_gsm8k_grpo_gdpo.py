"""The GRPO-against-GDPO comparison (labs/gsm8k_multireward/training/gsm8k_grpo_gdpo.py and
gsm8k_lab.comparison), in the main venv (no torch): the slice rule, pass@k, the intervals, the
resolved launcher file, and the curves read from a Trainer log and TRL's completions files."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import tomllib
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from gsm8k_lab import comparison

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "labs" / "gsm8k_multireward" / "training" / "gsm8k_grpo_gdpo.py"
CONFIGS = [
    ROOT / "orchestrator_configs" / "trl" / f"smollm2-gsm8k-{a}.toml" for a in ("grpo", "gdpo")
]


def _load():
    spec = importlib.util.spec_from_file_location("gsm8k_grpo_gdpo", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


run = _load()
parts = comparison


def test_slice_rule_counts_calculation_steps() -> None:
    two = "a <<2*3=6>>6 then <<6+1=7>>7\n#### 7"
    three = "<<1+1=2>>2 <<2+2=4>>4 <<4+4=8>>8\n#### 8"
    none = "No arithmetic.\n#### 3"
    assert [parts.calc_steps(s) for s in (two, three, none)] == [2, 3, 0]
    rows = [{"question": q, "answer": a} for q, a in (("q2", two), ("q3", three), ("q0", none))]
    assert [r["question"] for r in parts.slice_records(rows, 2)] == ["q2", "q0"]
    assert parts.slice_records(rows, 0) == [rows[2]]
    with pytest.raises(ValueError):
        parts.slice_records(rows, -1)


def test_pass_at_k() -> None:
    assert parts.pass_at_k([[0.0, 1.0], [0.0, 0.0]]) == 0.5
    with pytest.raises(ValueError):
        parts.pass_at_k([])


def test_summary_has_every_metric_with_an_interval() -> None:
    scores = [
        {"correct_answer": c, "length_reward": c, "reward": 2 * c, "tokens": 50.0 + i}
        for i, c in enumerate([1.0, 0.0, 0.0, 1.0])
    ]
    summary = parts.summarise(scores)
    assert set(summary) == set(parts.METRICS)
    est = summary["correct_answer"]
    assert est["mean"] == 0.5 and est["n"] == 4 and 0.0 <= est["low"] <= 0.5 <= est["high"] <= 1.0
    assert summary == parts.summarise(scores)  # seeded: reproducible to the last digit


def test_resolved_config_is_a_launcher_file_with_the_flags() -> None:
    base = tomllib.loads(CONFIGS[1].read_text())
    config = parts.resolved_config(
        base,
        data="d/train.jsonl",
        seed=3,
        steps=5,
        out="o",
        model=None,
        device="cuda",
        precision="bf16",
    )
    parsed = tomllib.loads(parts.to_toml(config))
    assert parsed == config
    assert parsed["model"] == base["model"] and parsed["advantage"] == "gdpo"
    assert parsed["env"]["args"]["dataset_name"] == "d/train.jsonl"
    trainer = parsed["trainer"]
    assert (trainer["seed"], trainer["max_steps"], trainer["output_dir"]) == (3, 5, "o")
    assert (trainer["use_cpu"], trainer["bf16"], trainer["fp16"]) == (False, True, False)
    assert base["trainer"]["seed"] == 0  # the committed file is not changed
    cpu = parts.resolved_config(
        base, data="d", seed=0, steps=1, out="o", model="m", device="cpu", precision="fp32"
    )
    assert cpu["model"] == "m" and cpu["trainer"]["use_cpu"] and not cpu["trainer"]["bf16"]
    with pytest.raises(ValueError):
        parts.resolved_config(
            base, data="d", seed=0, steps=1, out="o", model=None, device="cpu", precision="int8"
        )


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_committed_files_score_as_they_train(path: Path) -> None:
    """Eval scores with the file's [env.args]; only the data path is dropped."""
    args = parts.env_args(path)
    assert "dataset_name" not in args and args["length_threshold_tokens"] > 0
    trainer = tomllib.loads(path.read_text())["trainer"]
    assert args["length_threshold_tokens"] < trainer["max_completion_length"]


def test_step_curves_from_a_log_history() -> None:
    history = [
        {
            "loss": 0.1,
            "step": 1,
            "rewards/correct_answer/mean": 0.25,
            "reward": 0.5,
            "rewards/length_reward/mean": 0.25,
            "completions/mean_length": 90.0,
        },
        {"loss": 0.2, "step": 2, "rewards/correct_answer/mean": 0.5},
        {"train_runtime": 10.0, "step": 2},
    ]
    curves = parts.step_curves(history)
    assert curves["step"] == [1, 2]
    assert curves["correct_answer"] == [0.25, 0.5]
    assert curves["length_reward"] == [0.25, None]
    assert curves["completion_length"] == [90.0, None]


FATHOM_CONFIGS = [
    ROOT / "orchestrator_configs" / "trl" / f"smollm2-fathom-{a}.toml" for a in ("grpo", "gdpo")
]


@pytest.mark.parametrize("path", FATHOM_CONFIGS, ids=lambda p: p.name)
def test_a_fathom_run_keeps_its_arguments_and_logs_every_reward(path: Path) -> None:
    """fathom-rlm builds its rows: no data file is set; every score is logged, and only the
    weights of the file's advantage train (the combined reward for GRPO, the parts for GDPO)."""
    base = tomllib.loads(path.read_text())
    config = parts.resolved_config(
        base, data=None, seed=1, steps=2, out="o", model="ckpt", device="cpu", precision="fp32"
    )
    assert config["env"]["args"] == base["env"]["args"]
    assert config["model"] == "ckpt" and config["trainer"]["seed"] == 1
    weights = dict(zip(base["env"]["reward_keys"], base["env"]["reward_weights"], strict=True))
    assert set(weights) == {
        "reward",
        "correctness",
        "format_gate",
        "gated_token_budget",
        "gated_recursion_efficiency",
    }
    trained = {k for k, w in weights.items() if w > 0}
    assert trained == ({"reward"} if base["advantage"] == "grpo" else set(weights) - {"reward"})


def test_fathom_curves_have_its_rewards_and_tool_counts(tmp_path: Path) -> None:
    history = [
        {
            "loss": 0.0,
            "step": 1,
            "rewards/format_gate/mean": 0.25,
            "tools/call_frequency": 1.5,
            "tools/failure_frequency": 0.5,
        }
    ]
    history[0].update({"rewards/reward/mean": 0.0, "reward": 0.0625})  # TRL's weighted total
    curves = parts.step_curves(history, ["format_gate", "correctness", "reward"])
    assert curves["format_gate"] == [0.25] and curves["correctness"] == [None]
    assert curves["reward"] == [0.0]  # the environment's combined reward, not TRL's total
    assert curves["tool_calls"] == [1.5] and curves["tool_failures"] == [0.5]
    assert "tool_calls" not in parts.step_curves([{"loss": 0.0, "step": 1}])
    advantages = {"step": [1.0], "std": [1.0], "abs_mean": [1.0], "zero_groups": [0.0]}
    run = {"advantage": "gdpo", "seed": 0, "reward_keys": ["format_gate", "correctness"]}
    path = tmp_path / "curves.png"
    parts.plot_runs([{**run, "curves": curves, "advantages": advantages}], path)
    assert path.read_bytes().startswith(b"\x89PNG")


def test_completions_keep_the_question_messages_rewards_and_advantage(tmp_path: Path) -> None:
    prompt = [
        {"role": "system", "content": "the launcher's prompt"},
        {"role": "user", "content": "Question: who?"},
    ]
    completion = [
        {"role": "assistant", "content": "<tool_call>{...}</tool_call>"},
        {"role": "tool", "content": "(no output)"},
    ]
    for step in (2, 1):
        table = pa.table(
            {
                "step": [step],
                "prompt": [prompt],
                "completion": [completion],
                "format_gate": [1.0],
                "advantage": [0.5],
            }
        )
        pq.write_table(table, tmp_path / f"completions_{step:05d}.parquet")
    rows = parts.read_completions(tmp_path)
    assert [r["step"] for r in rows] == [1, 2]
    assert rows[0]["question"] == "Question: who?" and rows[0]["completion"] == completion
    assert (rows[0]["format_gate"], rows[0]["advantage"]) == (1.0, 0.5)
    assert parts.read_completions(tmp_path / "none") == []


def test_advantage_curves_from_completions_files(tmp_path: Path) -> None:
    for step, adv in ((2, [0.0, 0.0, 1.0, -1.0]), (1, [0.5, -0.5, 0.0, 0.0])):
        table = pa.table({"step": [step] * 4, "advantage": adv})
        pq.write_table(table, tmp_path / f"completions_{step:05d}.parquet")
    tables = parts.read_advantages(tmp_path)
    curves = parts.advantage_curves(tables, group=2)
    assert curves["step"] == [1.0, 2.0]
    assert curves["zero_groups"] == [0.5, 0.5]
    assert curves["abs_mean"] == [0.25, 0.5]
    assert curves["mean"] == [0.0, 0.0]
    with pytest.raises(ValueError):
        parts.advantage_stats([], 2)


def test_checkpoint_size_counts_weight_files_only(tmp_path: Path) -> None:
    (tmp_path / "model.safetensors").write_bytes(b"x" * 10)
    (tmp_path / "log_history.json").write_text("[]")
    assert parts.dir_size_bytes(tmp_path) == 10


def test_the_script_imports_without_torch() -> None:
    code = (
        "import runpy, sys; runpy.run_path(sys.argv[1], run_name='x'); "
        "assert 'torch' not in sys.modules and 'trl' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code, str(SCRIPT)], check=True, timeout=120)
    options = run.build_parser().parse_args(
        ["eval", "--data", "t.jsonl", "--config", "c.toml", "--out", "o.json"]
    )
    assert options.n == 200 and options.model == "local:smollm2-135m"


def test_table_has_a_row_per_model_with_intervals() -> None:
    est = {"mean": 0.05, "low": 0.02, "high": 0.08, "n": 200}
    tok = {"mean": 120.25, "low": 118.0, "high": 122.5, "n": 200}
    row = {
        "label": "base",
        "correct_answer": est,
        "length_reward": est,
        "reward": est,
        "tokens": tok,
    }
    table = parts.table_markdown([row]).splitlines()
    assert table[0] == "| model | correct_answer | length_reward | reward | tokens |"
    assert table[2] == (
        "| base | 0.050 [0.020, 0.080] | 0.050 [0.020, 0.080] | 0.050 [0.020, 0.080] "
        "| 120.2 [118.0, 122.5] |"
    )


def test_runs_table_states_what_each_run_saw_and_changed() -> None:
    row = {
        "advantage": "gdpo",
        "seed": 1,
        "steps": 6,
        "rows_seen": {"questions": 12, "completions": 48},
        "completion_tokens": 6019,
        "wall_s": 884.2,
        "load_before": [3.77, 3.81, 3.83],
        "mean_step_s": 145.2,
        "mean_generation_s": 49.3,
        "checkpoint_bytes": 538098105,
        "weight_change": {"tensors_compared": 271, "tensors_changed": 0, "max_abs_change": 0.0},
        "nonzero_advantage_steps": 0,
    }
    lines = parts.runs_markdown([row, {**row, "weight_change": None}]).splitlines()
    assert lines[2] == (
        "| GDPO seed 1 | 6 | 12 / 48 | 6,019 | 884 | 3.77 3.81 3.83 | 145 (49) | 538.1 "
        "| 0 of 271 | 0 |"
    )
    assert "| - |" in lines[3]


def test_boxed_solution_keeps_the_steps_and_boxes_the_gold() -> None:
    solution = "She has 3*4 = <<3*4=12>>12 apples.\nThen 12-2 = <<12-2=10>>10 remain.\n#### 1,010"
    assert parts.boxed_solution(solution) == (
        "She has 3*4 = 12 apples. Then 12-2 = 10 remain. The answer is \\boxed{1010}."
    )
    with pytest.raises(ValueError):
        parts.boxed_solution("no final answer")


def test_slice_sets_aside_warm_start_questions_the_environment_scores_correct(
    tmp_path: Path,
) -> None:
    from gsm8k_multireward.config import GSM8KConfig
    from gsm8k_multireward.grading import MathGrader, gold_from_solution
    from gsm8k_multireward.rewards import score_completion

    rows = [
        {
            "question": f"What is {i} + {i}?",
            "answer": f"{i}+{i} = <<{i}+{i}={2 * i}>>{2 * i}\n#### {2 * i}",
        }
        for i in range(1, 11)
    ] + [{"question": "long", "answer": "<<1+1=2>>2 <<2+2=4>>4 <<4+4=8>>8\n#### 8"}]
    train, test = tmp_path / "train.jsonl", tmp_path / "test.jsonl"
    parts.write_jsonl(train, rows)
    parts.write_jsonl(test, rows)
    out = tmp_path / "slice"
    args = ["slice", "--train", str(train), "--test", str(test), "--config", str(CONFIGS[0])]
    assert run.main([*args, "--out", str(out), "--sample", "0", "--sft", "4"]) == 0

    sft = parts.read_jsonl(out / "sft.jsonl")
    rest = parts.read_jsonl(out / "train.jsonl")
    assert len(sft) == 4 and len(rest) == 6 and len(parts.read_jsonl(out / "test.jsonl")) == 10
    questions = {c["messages"][1]["content"] for c in sft}
    assert questions.isdisjoint(r["question"] for r in rest)
    assert questions | {r["question"] for r in rest} == {r["question"] for r in rows[:10]}
    env = parts.env_args(CONFIGS[0])
    by_question = {r["question"]: r for r in rows}
    grader = MathGrader(max_workers=1)
    try:
        for conversation in sft:
            system, user, reply = conversation["messages"]
            assert system == {"role": "system", "content": env["system_prompt"]}
            gold = gold_from_solution(by_question[user["content"]]["answer"])
            scores = score_completion(reply["content"], gold, grader, GSM8KConfig(**env))
            assert scores["correct_answer"] == 1.0, reply
    finally:
        grader.close()
    assert "pass_at_k" not in json.loads((out / "slice.json").read_text())
    for bad in (["--sft", "-1"], ["--sample", "-2"]):
        with pytest.raises(SystemExit) as refused:
            run.build_parser().parse_args([*args, "--out", str(out), *bad])
        assert refused.value.code == 2
