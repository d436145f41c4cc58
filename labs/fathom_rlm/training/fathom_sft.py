"""SFT warm start for fathom-rlm on a CPU: a real small model learns the tool-call protocol from
the reference's trajectories, then plays the environment through the local model server.

    # 1. trajectories on train documents (the scripted reference, scored by the environment)
    uv run python -m fathom_lab.sft_export --policy fathom-reference --split train --n 16 \\
        --doc-tokens 3000 --min-reward 0.5 --format trl --out outputs/sft/fathom-train-3k.jsonl
    # 2. train (the TRL venv: torch, transformers)
    .venvs/trl/bin/python labs/fathom_rlm/training/fathom_sft.py train --data \\
        outputs/sft/fathom-train-3k.jsonl \\
        --out outputs/trained/smollm2-fathom-sft
    # 3. evaluate on heldout, before (no --checkpoint) and after, then the table of both
    uv run python labs/fathom_rlm/training/fathom_sft.py eval --out outputs/trained/eval-base
    uv run python labs/fathom_rlm/training/fathom_sft.py eval --checkpoint \\
        outputs/trained/smollm2-fathom-sft \\
        --out outputs/trained/eval-sft
    uv run python labs/fathom_rlm/training/fathom_sft.py compare outputs/trained/eval-base \\
        outputs/trained/eval-sft

**What is learned, and how.** Each conversation is rendered exactly as `envtools.local_model`
renders a request at play time (`envtools.tool_calls.prepare_messages`: the tools described in
the system message, earlier calls as ``<tool_call>`` blocks, tool results as `tool` turns; then
the model's own chat template), so the model learns the very text the server parses. The loss
is on the assistant turns only (each turn's text and its end-of-turn token); the rest of the
conversation is context. Full-parameter AdamW: at 135M parameters the weights and optimiser
state fit a CPU's memory many times over, and a full update needs no adapter package.

**Evaluation** (`eval`): `envtools.local_model` serves the base weights or the checkpoint on
127.0.0.1 (from the venv `--model-python` names), and `fathom_lab.evaluate` plays heldout rows
through the core loop; the summary holds the protocol measures beside the scores, each a mean
with its 95% bootstrap interval: the format gate, rollouts with at least one tool call, valid
tool calls (parsed and run without error) per rollout and as a share of calls, calls per rollout,
whether the document was touched, correctness (overall and by family), and tokens.

`train` reads any file of `messages` rows (`tools` optional): the gsm8k-multireward warm start
of labs/gsm8k_multireward/training/gsm8k_grpo_gdpo.py (`slice --sft`) trains with it unchanged.

Model, device and precision are flags: the same command fine-tunes a bigger model on a GPU
(`--model <transformers directory or id> --device cuda --dtype bfloat16`; configured, not run).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from envtools.stats import mean_ci
from envtools.tool_calls import prepare_messages

IGNORE = -100  # the label torch's cross-entropy skips
LOCAL_MODEL = "smollm2-135m"


# ------------------------------------------------------------------------------ rendering


def render(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
) -> tuple[list[int], list[int]]:
    """A conversation's token ids and labels: assistant turns labelled, everything else IGNORE.

    The text is built turn by turn from the chat template's own prefixes (ChatML closes every
    turn with a special token, so the pieces tokenize as the whole does)."""
    ids: list[int] = []
    labels: list[int] = []
    done = ""
    for index, message in enumerate(messages):
        if message.get("role") != "assistant":
            continue
        prompt = _template(tokenizer, messages[:index], tools, generation_prompt=True)
        turn = _template(tokenizer, messages[: index + 1], tools, generation_prompt=False)
        if not (prompt.startswith(done) and turn.startswith(prompt)):
            raise ValueError("the chat template does not render turn by turn")
        context = tokenizer(prompt[len(done) :], add_special_tokens=False).input_ids
        reply = tokenizer(turn[len(prompt) :].rstrip("\n"), add_special_tokens=False).input_ids
        ids += context + reply
        labels += [IGNORE] * len(context) + reply
        done = turn.rstrip("\n")
    return ids, labels


def _template(
    tokenizer: Any, messages: list[dict[str, Any]], tools: list[dict[str, Any]], **flags: bool
) -> str:
    return tokenizer.apply_chat_template(
        prepare_messages(messages, tools or None),
        tokenize=False,
        add_generation_prompt=flags["generation_prompt"],
    )


def load_conversations(path: Path) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """(messages, tools) of each row of an `fathom_lab.sft_export` file (either format)."""
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        row = json.loads(line)
        tools = row.get("tools") or []
        tools = json.loads(tools) if isinstance(tools, str) else tools
        if not isinstance(row.get("messages"), list):
            raise ValueError(f"{path}:{number}: a row needs a `messages` list")
        rows.append((row["messages"], tools))
    return rows


# ------------------------------------------------------------------------------ training


def train(args: argparse.Namespace) -> dict[str, Any]:
    """Fine-tune, save the checkpoint, and return the run's numbers (also written as JSON)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    source = _model_source(args.model)
    tokenizer = AutoTokenizer.from_pretrained(source)
    dtype = getattr(torch, args.dtype)
    model = AutoModelForCausalLM.from_pretrained(source, dtype=dtype).to(args.device)
    rendered = [render(tokenizer, m, t) for m, t in load_conversations(args.data)]
    cut = [(i[: args.max_length], lab[: args.max_length]) for i, lab in rendered]
    examples = [(i, lab) for i, lab in cut if any(x != IGNORE for x in lab)]
    steps = math.ceil(len(examples) * args.epochs / args.grad_accum)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: _lr_scale(s, steps))
    order = random.Random(args.seed)
    log: list[dict[str, float]] = []
    start, load_before = time.monotonic(), os.getloadavg()[0]
    queue: list[tuple[list[int], list[int]]] = []
    model.train()
    for step in range(1, steps + 1):
        losses, tokens = [], 0
        for _ in range(args.grad_accum):
            if not queue:
                queue = order.sample(examples, len(examples))
            ids, labels = queue.pop()
            batch = torch.tensor([ids], device=args.device)
            target = torch.tensor([labels], device=args.device)
            loss = model(input_ids=batch, labels=target).loss
            (loss / args.grad_accum).backward()
            losses.append(float(loss.detach()))
            tokens += len(ids)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        log.append({"step": step, "loss": sum(losses) / len(losses), "tokens": tokens})
        print(json.dumps({**log[-1], "elapsed_s": round(time.monotonic() - start, 1)}), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    wall_s = time.monotonic() - start
    return _train_record(args, log, examples, len(cut) - len(examples), wall_s, load_before)


def _lr_scale(step: int, steps: int) -> float:
    """Linear warm-up over the first tenth of the steps, then linear decay to zero."""
    warmup = max(1, steps // 10)
    if step < warmup:
        return (step + 1) / warmup
    return max(0.0, (steps - step) / max(1, steps - warmup))


def _model_source(model: str) -> str:
    """A transformers directory or id; the registry-packaged model by its local name."""
    if model == LOCAL_MODEL:
        from envtools.local_model import converted_dir

        return str(converted_dir(model))
    return model


def _train_record(
    args: argparse.Namespace,
    log: list[dict[str, float]],
    examples: list[tuple[list[int], list[int]]],
    dropped: int,
    wall_s: float,
    load_before: float,
) -> dict[str, Any]:
    record = {
        "command": "labs/fathom_rlm/training/fathom_sft.py train",
        "args": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "conversations": len(examples),
        "without_reply_after_cut": dropped,  # cut by --max-length before their first reply
        "tokens_per_epoch": sum(len(ids) for ids, _ in examples),
        "labelled_tokens_per_epoch": sum(sum(x != IGNORE for x in lab) for _, lab in examples),
        "steps": log,
        "wall_s": round(wall_s, 1),
        "load_1min": {"before": load_before, "after": os.getloadavg()[0]},
        "checkpoint_bytes": sum(p.stat().st_size for p in args.out.iterdir() if p.is_file()),
        "date": time.strftime("%Y-%m-%d", time.gmtime()),
    }
    (args.out / "train.json").write_text(json.dumps(record, indent=1))
    _plot_loss(log, args.out / "loss.png", args.data)
    return record


def _plot_loss(log: list[dict[str, float]], path: Path, data: Path) -> None:
    """The loss per step on `data` as a PNG, when matplotlib is installed (`plot` draws it
    later where it is)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    figure, axis = plt.subplots(figsize=(6, 3.2))
    axis.plot([e["step"] for e in log], [e["loss"] for e in log], marker=".")
    axis.set_xlabel("optimizer step")
    axis.set_ylabel("loss (assistant tokens)")
    axis.set_title(f"SFT warm start ({data.name})")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


# ------------------------------------------------------------------------------ evaluation


def evaluate(args: argparse.Namespace) -> dict[str, Any]:
    """Serve the model, play heldout rows through `fathom_lab.evaluate`, summarise; returns the
    summary (also written to `<out>/protocol.json`)."""
    server = [str(args.model_python), "-m", "envtools.local_model", "--model", LOCAL_MODEL]
    server += ["--port", "0", "--timeout", str(args.timeout), "--threads", str(args.threads)]
    if args.checkpoint is not None:
        server += ["--checkpoint", str(args.checkpoint)]
    process = subprocess.Popen(server, stdout=subprocess.PIPE, text=True)
    start, load_before = time.monotonic(), os.getloadavg()[0]
    try:
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        if not url.startswith("http://"):
            raise SystemExit(f"error: the model server did not start ({url!r})")
        command = [sys.executable, "-m", "fathom_lab.evaluate", "--model", LOCAL_MODEL]
        command += ["--base-url", url, "--split", args.split, "--n", str(args.n)]
        command += ["--doc-tokens", str(args.doc_tokens), "--max-tokens", str(args.max_tokens)]
        command += ["--temperature", "0", "--concurrency", "1", "--timeout", str(args.timeout)]
        command += ["--max-failed-share", "1", "--out", str(args.out)]
        subprocess.run(command, check=True)
    finally:
        process.terminate()
        process.wait(timeout=60)
    summary = protocol_summary(args.out / "rollouts.jsonl")
    summary.update(
        checkpoint=str(args.checkpoint) if args.checkpoint else None,
        wall_s=round(time.monotonic() - start, 1),
        load_1min={"before": load_before, "after": os.getloadavg()[0]},
        date=time.strftime("%Y-%m-%d", time.gmtime()),
    )
    (args.out / "protocol.json").write_text(json.dumps(summary, indent=1))
    return summary


def protocol_summary(rollouts_file: Path) -> dict[str, Any]:
    """The protocol and score measures of an `fathom_lab.evaluate` run, each with its interval."""
    rows = [json.loads(line) for line in rollouts_file.read_text().splitlines() if line.strip()]
    scored = [r for r in rows if r.get("error") is None]
    calls = [r["scores"]["tool_calls"] for r in scored]
    valid = [r["scores"]["tool_calls"] - r["scores"]["tool_errors"] for r in scored]
    per_call = [1.0] * int(sum(valid)) + [0.0] * int(sum(calls) - sum(valid))
    measures = {
        "format_gate": [r["scores"]["format_gate"] for r in scored],
        "called_a_tool": [float(c > 0) for c in calls],
        "tool_calls": calls,
        "valid_tool_calls": valid,
        "valid_call_share": per_call,
        "touched_document": [r["scores"]["touched_document"] for r in scored],
        "correctness": [r["scores"]["correctness"] for r in scored],
        "reward": [r["scores"]["reward"] for r in scored],
        "total_tokens": [r["scores"]["total_tokens"] for r in scored],
    }
    first = _first_replies(rollouts_file.with_name("transcripts.jsonl"))
    if first is not None:  # a call attempted in the first reply, whole or cut at the token cap
        measures["first_reply_calls"] = [float(bool(reply.get("tool_calls"))) for reply in first]
    families = sorted({r["family"] for r in scored})
    ended: dict[str, int] = {}
    for r in rows:
        ended[r.get("ended_by") or "error"] = ended.get(r.get("ended_by") or "error", 0) + 1
    return {
        "rollouts": len(rows),
        "errors": len(rows) - len(scored),
        "ended_by": ended,
        "measures": {k: mean_ci(v).to_dict() for k, v in measures.items()},
        "correctness_by_family": {
            f: mean_ci([r["scores"]["correctness"] for r in scored if r["family"] == f]).to_dict()
            for f in families
        },
    }


def _first_replies(transcripts: Path) -> list[dict[str, Any]] | None:
    """Each rollout's first assistant message (`fathom_lab.evaluate` writes the transcripts)."""
    if not transcripts.is_file():
        return None
    firsts = []
    for line in transcripts.read_text(encoding="utf-8").splitlines():
        if line.strip():
            messages = json.loads(line).get("messages") or []
            replies = [m for m in messages if m.get("role") == "assistant"]
            firsts.append(replies[0] if replies else {})
    return firsts


def compare(before: Path, after: Path) -> str:
    """The Markdown table of two `eval` runs' protocol measures, side by side."""
    runs = [json.loads((p / "protocol.json").read_text()) for p in (before, after)]
    lines = [f"| measure | {before.name} | {after.name} |", "|---|---|---|"]
    for key in dict.fromkeys([*runs[0]["measures"], *runs[1]["measures"]]):
        digits = 0 if key == "total_tokens" else 2
        cells = [_cell(run["measures"].get(key, {"n": 0}), digits) for run in runs]
        lines.append(f"| {key} | {cells[0]} | {cells[1]} |")
    lines.append(f"| rollouts (errors) | {_count(runs[0])} | {_count(runs[1])} |")
    return "\n".join(lines)


def _cell(estimate: dict[str, float], digits: int) -> str:
    if estimate["n"] == 0:
        return "n/a"
    mean, low, high = (f"{estimate[k]:.{digits}f}" for k in ("mean", "low", "high"))
    return f"{mean} [{low}, {high}]"


def _count(run: dict[str, Any]) -> str:
    return f"{run['rollouts']} ({run['errors']})"


# ------------------------------------------------------------------------------ command line


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="labs/fathom_rlm/training/fathom_sft.py", description=__doc__.split("\n", 1)[0]
    )
    commands = parser.add_subparsers(dest="command", required=True)
    fit = commands.add_parser("train", help="fine-tune on sft_export conversations")
    fit.add_argument("--data", type=Path, required=True, help="an fathom_lab.sft_export JSONL file")
    fit.add_argument("--out", type=Path, required=True, help="checkpoint directory")
    fit.add_argument("--model", default=LOCAL_MODEL, help="smollm2-135m, a directory or an id")
    fit.add_argument("--device", default="cpu", help="cpu, cuda, ...")
    fit.add_argument("--dtype", default="float32", choices=("float32", "bfloat16", "float16"))
    fit.add_argument("--epochs", type=float, default=2.0)
    fit.add_argument("--lr", type=float, default=5e-5)
    fit.add_argument("--grad-accum", type=int, default=4, help="conversations per step")
    fit.add_argument("--max-length", type=int, default=4096, help="tokens per conversation")
    fit.add_argument("--threads", type=int, default=None, help="torch CPU threads")
    fit.add_argument("--seed", type=int, default=0)
    play = commands.add_parser("eval", help="serve a model and play heldout rows")
    play.add_argument("--out", type=Path, required=True)
    play.add_argument("--checkpoint", type=Path, default=None, help="default: the base weights")
    play.add_argument(
        "--model-python", type=Path, default=Path(".venvs/trl/bin/python"), help="torch's venv"
    )
    play.add_argument("--split", default="heldout", choices=("train", "eval", "heldout"))
    play.add_argument("--n", type=int, default=12)
    play.add_argument("--doc-tokens", type=int, default=3000)
    play.add_argument("--max-tokens", type=int, default=512, help="per model call")
    play.add_argument("--timeout", type=float, default=1800.0, help="seconds per rollout")
    play.add_argument("--threads", type=int, default=1, help="the server's torch threads")
    plot = commands.add_parser("plot", help="the loss curve of a train.json as a PNG")
    plot.add_argument("record", type=Path, help="the train.json a training run wrote")
    plot.add_argument("--out", type=Path, required=True, help="the PNG to write")
    table = commands.add_parser("compare", help="the Markdown table of two eval runs")
    table.add_argument("before", type=Path)
    table.add_argument("after", type=Path)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.command == "train":
        record = train(args)
        print(json.dumps({k: record[k] for k in ("conversations", "wall_s", "checkpoint_bytes")}))
    elif args.command == "plot":  # where matplotlib is (the main venv; the TRL venv lacks it)
        record = json.loads(args.record.read_text())
        _plot_loss(record["steps"], args.out, Path(record["args"]["data"]))
    elif args.command == "eval":
        print(json.dumps(evaluate(args)["measures"], indent=1))
    else:
        print(compare(args.before, args.after))
    return 0


if __name__ == "__main__":
    sys.exit(main())
