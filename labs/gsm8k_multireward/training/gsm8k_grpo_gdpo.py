"""GRPO against GDPO on gsm8k-multireward: slice the data, evaluate, train, report.

    python labs/gsm8k_multireward/training/gsm8k_grpo_gdpo.py slice --train TRAIN.jsonl --test \\
        TEST.jsonl \
        --config orchestrator_configs/trl/smollm2-gsm8k-grpo.toml --out DIR
    # --sft 400: also set 400 train-slice questions aside as warm-start conversations (sft.jsonl,
    # for labs/fathom_rlm/training/fathom_sft.py train); --sample 0: no pass@k, no model loaded
    python labs/gsm8k_multireward/training/gsm8k_grpo_gdpo.py eval --model local:smollm2-135m \\
        --data DIR/test.jsonl \
        --config orchestrator_configs/trl/smollm2-gsm8k-grpo.toml --out base.json
    python labs/gsm8k_multireward/training/gsm8k_grpo_gdpo.py train \
        --config orchestrator_configs/trl/smollm2-gsm8k-gdpo.toml --data DIR/train.jsonl \
        --seed 0 --steps 20 --out runs/gdpo-0
    python labs/gsm8k_multireward/training/gsm8k_grpo_gdpo.py report --evals a.json b.json \\
        --runs runs/* --out DIR

`train` and `report` take any launcher file: fathom-rlm builds its own rows, so its runs give
no --data (orchestrator_configs/trl/smollm2-fathom-grpo.toml names the sub-call endpoint).

Why each part is here: a 135M model solves little of GSM8K, so training and evaluation use a
slice of questions whose reference solution has few calculation steps (a property of the
question, never of any model's success); `slice` also measures the untrained model's pass@k on
train-slice questions, because GRPO and GDPO learn nothing from groups that never succeed.
`eval` scores greedy completions with the environment's own core (`score_completion`, the
launcher file's [env.args]) and bootstrap 95% intervals. `train` runs the project's launcher on
a committed TOML file with the seed, steps, data, model, device and precision given as flags,
times generation against the rest of each step, and writes curves, a JSON and a PNG.

Model, device and precision are flags, so the same commands train a bigger model on a GPU.
torch, transformers and TRL are imported only inside the functions that use them.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
import tomllib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from gsm8k_lab.comparison import (
    PRECISIONS,
    REWARD_KEYS,
    advantage_curves,
    dir_size_bytes,
    env_args,
    load_snapshot,
    pass_at_k,
    plot_runs,
    read_advantages,
    read_completions,
    read_jsonl,
    resolved_config,
    runs_markdown,
    sft_conversations,
    slice_records,
    step_curves,
    summarise,
    table_markdown,
    to_toml,
    write_jsonl,
)

from envtools.cli import integer

# ----------------------------------------------------------------------------- model parts


def set_threads(threads: int) -> None:
    """One torch thread per process by default: the machine is shared."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import torch

    torch.set_num_threads(threads)


def load_model(model: str, device: str, precision: str) -> tuple[Any, Any]:
    """Model and left-padding tokenizer for batched generation."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from envtools.trl_launch import resolve_model

    path = resolve_model(model)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]
    tokenizer = AutoTokenizer.from_pretrained(path, padding_side="left")
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    net = AutoModelForCausalLM.from_pretrained(path, dtype=dtype).to(device).eval()
    return net, tokenizer


def generate(
    net: Any,
    tokenizer: Any,
    prompts: Sequence[list[dict]],
    *,
    max_new_tokens: int,
    batch_size: int,
    samples: int = 1,
    temperature: float = 0.0,
    seed: int = 0,
) -> list[list[tuple[str, int]]]:
    """(text, completion tokens) per sample per prompt; greedy when temperature is 0. Prompts
    are batched by length to keep padding small. The token count includes the end-of-turn token,
    as TRL counts the completion ids it passes to reward functions."""
    import torch

    texts = [
        tokenizer.apply_chat_template(p, tokenize=False, add_generation_prompt=True)
        for p in prompts
    ]
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out: list[list[tuple[str, int]]] = [[] for _ in texts]
    per_batch = max(1, batch_size // samples)
    torch.manual_seed(seed)
    for start in range(0, len(order), per_batch):
        idx = order[start : start + per_batch]
        enc = tokenizer([texts[i] for i in idx], return_tensors="pt", padding=True).to(net.device)
        kwargs: dict[str, Any] = {"do_sample": temperature > 0, "num_return_sequences": samples}
        if temperature > 0:
            kwargs.update(temperature=temperature, top_p=1.0, top_k=0)
        with torch.no_grad():
            seqs = net.generate(
                **enc, max_new_tokens=max_new_tokens, pad_token_id=tokenizer.pad_token_id, **kwargs
            )
        new = seqs[:, enc["input_ids"].shape[1] :].tolist()
        for row, ids in enumerate(new):
            n = _completion_len(ids, tokenizer.eos_token_id, tokenizer.pad_token_id)
            text = tokenizer.decode(ids[:n], skip_special_tokens=True)
            out[idx[row // samples]].append((text, n))
        done = min(start + per_batch, len(order))
        print(f"generated {done}/{len(order)} prompts", file=sys.stderr, flush=True)
    return out


def _completion_len(ids: Sequence[int], eos: int, pad: int) -> int:
    for n, token in enumerate(ids):
        if token == eos:
            return n + 1
        if token == pad and pad != eos:
            return n
    return len(ids)


def score_all(
    rows: Sequence[Mapping[str, Any]],
    outputs: Sequence[Sequence[tuple[str, int]]],
    args: Mapping[str, Any],
) -> list[list[dict[str, float]]]:
    """The environment's own scores of every sample (its core and grader, the run's arguments)."""
    from gsm8k_multireward.config import GSM8KConfig
    from gsm8k_multireward.grading import MathGrader, gold_from_solution
    from gsm8k_multireward.rewards import score_completion

    config = GSM8KConfig(**{**args, "math_verify_max_workers": 1})
    grader = MathGrader(max_workers=1, timeout=config.math_verify_timeout)
    try:
        scored = []
        for row, samples in zip(rows, outputs, strict=True):
            gold = gold_from_solution(row["answer"])
            scored.append(
                [
                    {**score_completion(t, gold, grader, config, reported_tokens=n), "tokens": n}
                    for t, n in samples
                ]
            )
        return scored
    finally:
        grader.close()


def prompts_for(rows: Sequence[Mapping[str, Any]], args: Mapping[str, Any]) -> list[list[dict]]:
    """The chat prompts the environment serves for these rows (its system prompt)."""
    from gsm8k_multireward.data import build_prompt

    return [build_prompt(r["question"], args.get("system_prompt")) for r in rows]


# ----------------------------------------------------------------------------- commands


def _complete_and_score(
    opts: argparse.Namespace, rows: list[dict[str, Any]], args: dict[str, Any], **sampling: Any
) -> tuple[list[list[tuple[str, int]]], list[list[dict[str, float]]]]:
    """The named model's completions of every row's prompt (greedy unless `sampling` says
    otherwise), and the environment's scores of each."""
    set_threads(opts.threads)
    net, tok = load_model(opts.model, opts.device, opts.precision)
    outputs = generate(
        net,
        tok,
        prompts_for(rows, args),
        max_new_tokens=opts.max_new_tokens,
        batch_size=opts.batch_size,
        **sampling,
    )
    return outputs, score_all(rows, outputs, args)


def cmd_slice(opts: argparse.Namespace) -> dict[str, Any]:
    """Write the train and test slices, and the untrained model's pass@k on a train sample."""
    started = time.monotonic()
    before = load_snapshot()
    train = slice_records(read_jsonl(opts.train), opts.max_calc_steps)
    test = slice_records(read_jsonl(opts.test), opts.max_calc_steps)
    args = env_args(opts.config)
    sft: list[dict[str, Any]] = []
    if opts.sft:  # a seeded sample of train-slice questions for the warm start, kept out of RL
        chosen = set(random.Random(opts.seed).sample(range(len(train)), min(opts.sft, len(train))))
        sft = [r for i, r in enumerate(train) if i in chosen]
        train = [r for i, r in enumerate(train) if i not in chosen]
        write_jsonl(opts.out / "sft.jsonl", sft_conversations(sft, args.get("system_prompt")))
    write_jsonl(opts.out / "train.jsonl", train)
    write_jsonl(opts.out / "test.jsonl", test)
    result: dict[str, Any] = {
        "rule": f"reference solution has at most {opts.max_calc_steps} <<...>> calculation steps",
        "train_rows": len(train),
        "test_rows": len(test),
        "sft_rows": len(sft),
    }
    if opts.sample:
        sample = random.Random(opts.seed).sample(train, min(opts.sample, len(train)))
        _, scores = _complete_and_score(
            opts, sample, args, samples=opts.k, temperature=opts.temperature, seed=opts.seed
        )
        correct = [[s["correct_answer"] for s in q] for q in scores]
        result["pass_at_k"] = {"k": opts.k, "questions": len(sample), "value": pass_at_k(correct)}
        result["sample_correct"] = summarise([s for q in scores for s in q])
    result |= {
        "model": opts.model if opts.sample else None,
        "temperature": opts.temperature,
        "max_new_tokens": opts.max_new_tokens,
        "scoring_args": args,
        "before": before,
        "after": load_snapshot(),
        "wall_s": round(time.monotonic() - started, 1),
    }
    _write_json(opts.out / "slice.json", result)
    return result


def cmd_eval(opts: argparse.Namespace) -> dict[str, Any]:
    """Greedy completions on the first `n` test-slice questions, scored by the environment."""
    started = time.monotonic()
    before = load_snapshot()
    rows = read_jsonl(opts.data)[: opts.n]
    args = env_args(opts.config)
    outputs, scored = _complete_and_score(opts, rows, args)
    scores = [q[0] for q in scored]
    result = {
        "model": opts.model,
        "label": opts.label or opts.model,
        "questions": len(rows),
        "greedy": True,
        "max_new_tokens": opts.max_new_tokens,
        "scoring_args": args,
        "summary": summarise(scores),
        "truncated": sum(1 for (_, n) in (q[0] for q in outputs) if n >= opts.max_new_tokens),
        "per_question": [{**s, "text": q[0][0]} for s, q in zip(scores, outputs, strict=True)],
        "before": before,
        "after": load_snapshot(),
        "wall_s": round(time.monotonic() - started, 1),
    }
    _write_json(opts.out, result)
    return result


def cmd_train(opts: argparse.Namespace) -> dict[str, Any]:
    """Train through the launcher from the committed file, timing generation per step."""
    started = time.monotonic()
    before = load_snapshot()
    base = tomllib.loads(opts.config.read_text(encoding="utf-8"))
    config = resolved_config(
        base,
        data=None if opts.data is None else str(opts.data),
        seed=opts.seed,
        steps=opts.steps,
        out=str(opts.out),
        model=opts.model,
        device=opts.device,
        precision=opts.precision,
    )
    opts.out.mkdir(parents=True, exist_ok=True)
    toml_path = opts.out / "launch.toml"
    toml_path.write_text(to_toml(config), encoding="utf-8")
    if opts.device == "cpu":
        set_threads(opts.threads)
    timings = _timed_launch(toml_path)
    history = json.loads((opts.out / "log_history.json").read_text())
    group = int(config["trainer"].get("num_generations", 8))
    result = {
        "advantage": config["advantage"],
        "seed": opts.seed,
        "steps": opts.steps,
        "launch_toml": to_toml(config),
        "reward_keys": list(config["env"]["reward_keys"]),
        "curves": step_curves(history, config["env"]["reward_keys"]),
        "advantages": advantage_curves(read_advantages(opts.out / "completions"), group),
        "step_seconds": timings,
        "rows_seen": _rows_seen(config, opts.steps),
        "completion_tokens": _completion_tokens(history, config),
        "checkpoint_bytes": dir_size_bytes(opts.out),
        "weight_change": weight_change(opts.out, str(config["model"])),
        "before": before,
        "after": load_snapshot(),
        "wall_s": round(time.monotonic() - started, 1),
    }
    _write_json(opts.out / "train.json", result)
    _plot_or_say([result], opts.out / "curves.png")
    return result


def _plot_or_say(runs: Sequence[Mapping[str, Any]], path: Path) -> None:
    """The PNG needs matplotlib, which a training venv may lack: the JSON holds every curve, and
    `report` draws them where matplotlib is installed."""
    try:
        plot_runs(runs, path)
    except ImportError as exc:
        print(f"no {path.name}: {exc} (pip install matplotlib; `report` draws it)", file=sys.stderr)


def weight_change(checkpoint: Path, base_model: str) -> dict[str, Any] | None:
    """How far training moved the weights from the starting model: a step whose advantages are
    all 0 has a zero gradient, and AdamW (no weight decay) then leaves the weights unchanged.
    None when the starting weights are not a local safetensors file (a hub id)."""
    try:
        from safetensors.torch import load_file

        from envtools.trl_launch import resolve_model

        new = load_file(str(checkpoint / "model.safetensors"))
        old = load_file(str(Path(resolve_model(base_model)) / "model.safetensors"))
    except (OSError, ValueError, ImportError):
        return None
    diffs = {
        name: float((tensor.float() - old[name].float()).abs().max())
        for name, tensor in new.items()
        if name in old and old[name].shape == tensor.shape
    }
    return {
        "tensors_compared": len(diffs),
        "tensors_changed": sum(1 for d in diffs.values() if d > 0),
        "max_abs_change": max(diffs.values(), default=0.0),
    }


def _rows_seen(config: Mapping[str, Any], steps: int) -> dict[str, int]:
    trainer = config["trainer"]
    completions = int(trainer.get("per_device_train_batch_size", 8)) * int(
        trainer.get("gradient_accumulation_steps", 1)
    )
    group = int(trainer.get("num_generations", 8))
    return {"questions": steps * completions // group, "completions": steps * completions}


def _completion_tokens(history: Sequence[Mapping[str, Any]], config: Mapping[str, Any]) -> int:
    """Completion tokens generated over the run: mean length x completions, summed per step."""
    per_step = int(config["trainer"].get("per_device_train_batch_size", 8))
    lengths = [v for v in step_curves(history)["completion_length"] if v is not None]
    return round(sum(lengths) * per_step)


def _timed_launch(toml_path: Path) -> list[dict[str, float]]:
    """Run `envtools.trl_launch` on the file; per step, seconds in generation and scoring
    (`_generate_and_score_completions`) and in the whole step (the rest is the loss and the
    optimizer: forward, backward, AdamW)."""
    from transformers import TrainerCallback
    from trl import GRPOTrainer

    from envtools import trl_launch

    steps: list[dict[str, float]] = []
    gen = {"s": 0.0}
    original = GRPOTrainer._generate_and_score_completions

    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        t0 = time.monotonic()
        try:
            return original(self, *args, **kwargs)
        finally:
            gen["s"] += time.monotonic() - t0

    class StepTimer(TrainerCallback):
        def on_step_begin(self, *_: Any, **__: Any) -> None:
            gen["s"], gen["t0"] = 0.0, time.monotonic()

        def on_step_end(self, *_: Any, **__: Any) -> None:
            total = time.monotonic() - gen["t0"]
            steps.append({"total": round(total, 2), "generation": round(gen["s"], 2)})

    original_build = trl_launch.build

    def build(config: Any) -> Any:
        launch = original_build(config)
        launch.trainer.add_callback(StepTimer())
        return launch

    GRPOTrainer._generate_and_score_completions = timed
    trl_launch.build = build
    try:
        trl_launch.train(trl_launch.load_config(toml_path))
    finally:
        GRPOTrainer._generate_and_score_completions = original
        trl_launch.build = original_build
    return steps


def cmd_report(opts: argparse.Namespace) -> dict[str, Any]:
    """One JSON and one PNG over every eval and run: the table the docs show; beside them, each
    run's logged completions as one JSONL file."""
    evals = [json.loads(Path(p).read_text()) for p in opts.evals]
    runs = []
    for directory in map(Path, opts.runs):
        run = json.loads((directory / "train.json").read_text())
        if (directory / "log_history.json").is_file():  # the curves, from the log itself
            history = json.loads((directory / "log_history.json").read_text())
            run["curves"] = step_curves(history, run.get("reward_keys", REWARD_KEYS))
        rollouts = read_completions(directory / "completions")
        if rollouts:  # what each step's completions were, beside the curves
            name = f"completions-{run['advantage']}-{run['seed']}.jsonl"
            write_jsonl(opts.out / name, rollouts)
        if run.get("weight_change") is None:  # a run written before the check existed
            model = tomllib.loads(run["launch_toml"])["model"]
            run["weight_change"] = weight_change(directory, model)
        runs.append(run)
    table = [{"label": e["label"], **e["summary"], "wall_s": e["wall_s"]} for e in evals]
    report = {
        "evals": table,
        "runs": [
            {
                "advantage": r["advantage"],
                "seed": r["seed"],
                "steps": r["steps"],
                "rows_seen": r["rows_seen"],
                "wall_s": r["wall_s"],
                "load_before": r["before"]["load_1_5_15"],
                "checkpoint_bytes": r["checkpoint_bytes"],
                "weight_change": r["weight_change"],
                "completion_tokens": r["completion_tokens"],
                "nonzero_advantage_steps": sum(1 for a in r["advantages"]["abs_mean"] if a > 0),
                "mean_step_s": _mean([s["total"] for s in r["step_seconds"]]),
                "mean_generation_s": _mean([s["generation"] for s in r["step_seconds"]]),
            }
            for r in runs
        ],
        "made": load_snapshot(),
    }
    opts.out.mkdir(parents=True, exist_ok=True)
    _write_json(opts.out / "report.json", report)
    markdown = (table_markdown(table) + "\n" if table else "") + runs_markdown(report["runs"])
    (opts.out / "table.md").write_text(markdown, encoding="utf-8")
    _plot_or_say(runs, opts.out / "curves.png")
    return report


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 2) if values else None


def _write_json(path: Path, data: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def _model_flags(parser: argparse.ArgumentParser, batch: int) -> None:
    parser.add_argument("--config", type=Path, required=True, help="the launcher TOML file")
    parser.add_argument("--model", default="local:smollm2-135m", help="id, directory or local:NAME")
    parser.add_argument("--device", default="cpu", help="cpu, cuda, cuda:0, ...")
    parser.add_argument("--precision", default="fp32", choices=PRECISIONS)
    parser.add_argument("--threads", type=int, default=1, help="torch threads on the CPU")
    parser.add_argument("--batch-size", type=int, default=batch, help="sequences per generate")
    parser.add_argument("--max-new-tokens", type=int, default=160)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("slice", help="write the slices; the untrained model's pass@k")
    p.add_argument("--train", type=Path, required=True, help="GSM8K train JSONL")
    p.add_argument("--test", type=Path, required=True, help="GSM8K test JSONL")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--max-calc-steps", type=int, default=2)
    p.add_argument(
        "--sample", type=integer(0), default=16, help="train-slice questions for pass@k (0: none)"
    )
    p.add_argument(
        "--sft", type=integer(0), default=0, help="train-slice questions set aside as sft.jsonl"
    )
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--seed", type=int, default=0)
    _model_flags(p, 16)
    p = sub.add_parser("eval", help="greedy evaluation on the test slice")
    p.add_argument("--data", type=Path, required=True, help="the test slice JSONL")
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--label", default=None)
    p.add_argument("--out", type=Path, required=True, help="the JSON to write")
    _model_flags(p, 16)
    p = sub.add_parser("train", help="train through the launcher; curves, JSON, PNG")
    p.add_argument(
        "--data", type=Path, default=None, help="the train slice JSONL (gsm8k-multireward)"
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--out", type=Path, required=True)
    _model_flags(p, 16)
    p.set_defaults(model=None)  # None: the launcher file's model
    p = sub.add_parser("report", help="one JSON and PNG over evals and runs")
    p.add_argument("--evals", nargs="+", default=[])
    p.add_argument("--runs", nargs="+", default=[])
    p.add_argument("--out", type=Path, required=True)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    opts = build_parser().parse_args(argv)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")
    command = {"slice": cmd_slice, "eval": cmd_eval, "train": cmd_train, "report": cmd_report}
    result = command[opts.command](opts)
    brief = {k: v for k, v in result.items() if k not in ("per_question", "curves", "launch_toml")}
    print(json.dumps(brief, indent=1)[:4000])
    return 0


if __name__ == "__main__":
    sys.exit(main())
