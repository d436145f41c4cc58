"""What a GRPO-against-GDPO comparison reads and writes (labs/gsm8k_multireward/training/
gsm8k_grpo_gdpo.py): the GSM8K slice and warm-start rows, pass@k and intervals, the resolved
launcher file, the curves read from a run's logs, and the tables and plot. No torch, so the tests
run it in the main venv; matplotlib and pyarrow are imported where used."""

from __future__ import annotations

import json
import math
import os
import re
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

CALC = re.compile(r"<<[^>]*>>")
METRICS = ("correct_answer", "length_reward", "reward", "tokens")
REWARD_KEYS = ("correct_answer", "length_reward")
PRECISIONS = ("fp32", "bf16", "fp16")
TOOL_METRICS = {
    "tool_calls": ("tools/call_frequency", "tool calls per completion"),
    "tool_failures": ("tools/failure_frequency", "share of tool calls TRL could not make"),
}
"""Curve name -> TRL's log key and what it counts, for runs whose environment has tools (a
failure: an unknown tool, or arguments the tool does not take)."""


def calc_steps(solution: str) -> int:
    """The calculation steps (`<<a*b=c>>` annotations) of a GSM8K reference solution."""
    return len(CALC.findall(solution))


def slice_records(records: Iterable[Mapping[str, Any]], max_steps: int) -> list[dict[str, Any]]:
    """The records whose reference solution has at most `max_steps` calculation steps, in file
    order (the rule reads only the question's own solution)."""
    if max_steps < 0:
        raise ValueError(f"max_steps must be >= 0, got {max_steps}")
    return [dict(r) for r in records if calc_steps(str(r["answer"])) <= max_steps]


def boxed_solution(solution: str) -> str:
    """A GSM8K reference solution written as the launcher prompt's examples answer: calculator
    annotations dropped, lines joined, the final answer boxed (\"The answer is \\boxed{N}.\").
    The boxed number is the grader's own gold (`gold_from_solution`)."""
    from gsm8k_multireward.grading import gold_from_solution

    answer = gold_from_solution(solution)  # raises ValueError without a '####' number
    body = solution.rpartition("####")[0]
    steps = " ".join(line.strip() for line in CALC.sub("", body).splitlines() if line.strip())
    return f"{steps} The answer is \\boxed{{{answer}}}.".strip()


def sft_conversations(
    records: Iterable[Mapping[str, Any]], system_prompt: str | None
) -> list[dict[str, Any]]:
    """Warm-start conversations (`messages` rows, the format labs/fathom_rlm/training/fathom_sft.py
    trains on):
    the environment's own prompt for each question, and its reference solution, boxed."""
    from gsm8k_multireward.data import build_prompt

    return [
        {
            "messages": [
                *build_prompt(str(r["question"]), system_prompt),
                {"role": "assistant", "content": boxed_solution(str(r["answer"]))},
            ]
        }
        for r in records
    ]


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a JSONL file (blank lines skipped)."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row) + "\n")


def pass_at_k(correct: Sequence[Sequence[float]]) -> float:
    """Share of questions with at least one correct sample (each inner list: one question)."""
    if not correct:
        raise ValueError("no questions")
    return sum(1.0 for samples in correct if any(c == 1.0 for c in samples)) / len(correct)


def summarise(scores: Sequence[Mapping[str, float]], seed: int = 0) -> dict[str, dict[str, Any]]:
    """Mean and bootstrap 95% interval of each metric over per-question scores."""
    from envtools.stats import mean_ci

    return {key: mean_ci([s[key] for s in scores], seed=seed).to_dict() for key in METRICS}


def load_snapshot() -> dict[str, Any]:
    """Date, load and host size, stated next to every number."""
    load = os.getloadavg() if hasattr(os, "getloadavg") else (math.nan,) * 3
    return {
        "utc": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "load_1_5_15": [round(x, 2) for x in load],
        "cpus": os.cpu_count(),
    }


def step_curves(
    history: Sequence[Mapping[str, Any]], keys: Sequence[str] = REWARD_KEYS
) -> dict[str, list[float | None]]:
    """Per-step `rewards/<key>/mean` (and the total `reward`, completion length and loss) from
    a Trainer log history; steps without a training log are skipped."""
    entries = [e for e in history if "loss" in e and "step" in e]
    curves: dict[str, list[float | None]] = {"step": [int(e["step"]) for e in entries]}
    for key in keys:
        curves[key] = [e.get(f"rewards/{key}/mean") for e in entries]
        curves[f"{key}_std"] = [e.get(f"rewards/{key}/std") for e in entries]
    # TRL's weighted total, unless the environment has a reward of that name (fathom-rlm's
    # combined `reward`, logged as rewards/reward/mean), which keeps its own curve.
    curves.setdefault("reward", [e.get("reward") for e in entries])
    curves["completion_length"] = [e.get("completions/mean_length") for e in entries]
    curves["loss"] = [e.get("loss") for e in entries]
    # Environments with tools (fathom-rlm): TRL's tool-loop counts, per completion.
    for name, (key, _) in TOOL_METRICS.items():
        if any(key in e for e in entries):
            curves[name] = [e.get(key) for e in entries]
    return curves


def advantage_stats(advantages: Sequence[float], group: int) -> dict[str, float]:
    """One step's advantages: mean, std, mean |A|, and the share of groups whose advantages are
    all 0 (every rollout scored alike: no learning signal from that question)."""
    values = [float(a) for a in advantages]
    if not values:
        raise ValueError("no advantages")
    n = len(values)
    mean = sum(values) / n
    std = math.sqrt(sum((v - mean) ** 2 for v in values) / n)
    groups = [values[i : i + group] for i in range(0, n, group)]
    flat = sum(1 for g in groups if all(abs(v) < 1e-6 for v in g))
    return {
        "mean": mean,
        "std": std,
        "abs_mean": sum(abs(v) for v in values) / n,
        "zero_groups": flat / len(groups),
    }


def advantage_curves(tables: Mapping[int, Sequence[float]], group: int) -> dict[str, list[float]]:
    """`advantage_stats` per step, steps in order (`tables`: step -> that step's advantages)."""
    steps = sorted(tables)
    stats = [advantage_stats(tables[s], group) for s in steps]
    out: dict[str, list[float]] = {"step": [float(s) for s in steps]}
    for name in ("mean", "std", "abs_mean", "zero_groups"):
        out[name] = [s[name] for s in stats]
    return out


def read_advantages(completions_dir: Path) -> dict[int, list[float]]:
    """step -> advantages, from TRL's `completions/completions_<step>.parquet` files."""
    import pyarrow.parquet as pq

    tables: dict[int, list[float]] = {}
    for path in sorted(completions_dir.glob("completions_*.parquet")):
        table = pq.read_table(path, columns=["step", "advantage"]).to_pydict()
        step = int(path.stem.rsplit("_", 1)[1])
        tables[step] = [float(a) for a in table["advantage"]]
    return tables


def read_completions(completions_dir: Path) -> list[dict[str, Any]]:
    """Every completion TRL logged (`log_completions`), steps in order: the step, the question
    (the prompt's last user message; the system prompt is the launcher file's), the completion's
    messages (with tool results), each reward and the advantage."""
    import pyarrow.parquet as pq

    rows: list[dict[str, Any]] = []
    for path in sorted(completions_dir.glob("completions_*.parquet")):
        for row in pq.read_table(path).to_pylist():
            prompt = row.pop("prompt")
            users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
            question = users[-1]["content"] if users else prompt
            rows.append({"step": row.pop("step"), "question": question, **row})
    return rows


def resolved_config(
    base: Mapping[str, Any],
    *,
    data: str | None,
    seed: int,
    steps: int,
    out: str,
    model: str | None,
    device: str,
    precision: str,
) -> dict[str, Any]:
    """The launcher file a run trains from: the committed file with this run's data, seed, steps,
    output directory, model, device and precision (`data`, when given, is the dataset file:
    gsm8k-multireward's `dataset_name`)."""
    if precision not in PRECISIONS:
        raise ValueError(f"precision must be one of {PRECISIONS}, got {precision!r}")
    config = json.loads(json.dumps(base))  # a deep copy of plain TOML values
    if model:
        config["model"] = model
    if data is not None:
        config.setdefault("env", {}).setdefault("args", {})["dataset_name"] = data
    trainer = config.setdefault("trainer", {})
    trainer.update(seed=seed, max_steps=steps, output_dir=out, use_cpu=device == "cpu")
    trainer["bf16"] = precision == "bf16"
    trainer["fp16"] = precision == "fp16"
    return config


def to_toml(config: Mapping[str, Any]) -> str:
    """Plain TOML for a launcher file (tables of strings, numbers, booleans and lists)."""
    lines: list[str] = []
    tables: list[tuple[str, Mapping[str, Any]]] = []

    def emit(prefix: str, table: Mapping[str, Any]) -> None:
        for key, value in table.items():
            if isinstance(value, Mapping):
                tables.append((f"{prefix}{key}", value))
            else:
                lines.append(f"{key} = {json.dumps(value)}")

    emit("", config)
    while tables:
        name, table = tables.pop(0)
        lines.append(f"\n[{name}]")
        emit(f"{name}.", table)
    return "\n".join(lines) + "\n"


def dir_size_bytes(path: Path, names: Iterable[str] = ("*.safetensors", "*.bin")) -> int:
    """Bytes of the weight files directly in `path` (the saved checkpoint, not its logs)."""
    return sum(f.stat().st_size for pattern in names for f in path.glob(pattern) if f.is_file())


def env_args(config_path: Path) -> dict[str, Any]:
    """The launcher file's [env.args] without its data path: what scoring reads."""
    raw = tomllib.loads(config_path.read_text(encoding="utf-8"))
    args = dict(raw.get("env", {}).get("args", {}))
    args.pop("dataset_name", None)
    return args


def table_markdown(rows: Sequence[Mapping[str, Any]]) -> str:
    """The before/after table: each metric's mean and 95% interval per evaluated model."""
    head = "| model | " + " | ".join(METRICS) + " |"
    lines = [head, "|---" * (len(METRICS) + 1) + "|"]
    for row in rows:
        cells = []
        for key in METRICS:
            est, digits = row[key], 1 if key == "tokens" else 3
            cells.append(
                f"{est['mean']:.{digits}f} [{est['low']:.{digits}f}, {est['high']:.{digits}f}]"
            )
        lines.append(f"| {row['label']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def runs_markdown(runs: Sequence[Mapping[str, Any]]) -> str:
    """One row per training run: what it saw, how long it took, and whether its weights moved."""
    lines = [
        "| run | steps | questions / completions | completion tokens | wall s | load at start "
        "| mean step s (generation) | checkpoint MB | tensors changed | steps with a nonzero "
        "advantage |",
        "|---" * 10 + "|",
    ]
    for r in runs:
        change = r.get("weight_change") or {}
        changed = f"{change['tensors_changed']} of {change['tensors_compared']}" if change else "-"
        lines.append(
            f"| {r['advantage'].upper()} seed {r['seed']} | {r['steps']} "
            f"| {r['rows_seen']['questions']} / {r['rows_seen']['completions']} "
            f"| {r['completion_tokens']:,} | {r['wall_s']:.0f} "
            f"| {' '.join(f'{x:.2f}' for x in r['load_before'])} "
            f"| {r['mean_step_s']:.0f} ({r['mean_generation_s']:.0f}) "
            f"| {r['checkpoint_bytes'] / 1e6:.1f} | {changed} | {r['nonzero_advantage_steps']} |"
        )
    return "\n".join(lines) + "\n"


def plot_runs(runs: Sequence[Mapping[str, Any]], path: Path) -> None:
    """Per step: each reward component's mean (the runs' `reward_keys`), the completion length,
    and the advantages' std, |A| mean and share of all-zero groups; one line per run (GRPO solid,
    GDPO dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = dict.fromkeys(k for run in runs for k in run.get("reward_keys", REWARD_KEYS))
    panels = [("curves", key, f"{key} mean") for key in keys]
    panels += [
        ("curves", "completion_length", "completion tokens, mean"),
        ("advantages", "std", "advantage std"),
        ("advantages", "abs_mean", "mean |advantage|"),
        ("advantages", "zero_groups", "share of groups with all-zero advantage"),
    ]
    panels += [
        ("curves", name, title)
        for name, (_, title) in TOOL_METRICS.items()
        if any(name in run["curves"] for run in runs)
    ]
    rows = math.ceil(len(panels) / 2)
    fig, axes = plt.subplots(rows, 2, figsize=(9, 2.7 * rows), dpi=80)
    for ax in axes.flat[len(panels) :]:
        ax.set_visible(False)
    for ax, (part, key, title) in zip(axes.flat, panels, strict=False):
        for run in runs:
            if key not in run[part]:
                continue
            x, y = run[part]["step"], run[part][key]
            grpo = run["advantage"] == "grpo"
            label = f"{run['advantage'].upper()} seed {run['seed']}"
            values = [math.nan if v is None else v for v in y]
            # Runs can coincide exactly: markers of different sizes keep each one visible.
            ax.plot(
                x,
                values,
                "-" if grpo else "--",
                marker="o" if grpo else "x",
                markersize=7 if grpo else 5,
                label=label,
            )
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("step")
    axes.flat[0].legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
