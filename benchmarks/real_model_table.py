"""The real-model table (docs/results/smollm2-real-model.md), from saved runs.

    uv run python benchmarks/real_model_table.py \\
        --fathom "4K=outputs/real/base-4k" "4K=outputs/real/scripted-4k" \\
        --gsm8k "GSM8K test=outputs/evals/gsm8k-multireward--smollm2-135m/ID/results.jsonl" \\
        --out outputs/real/table

Each `--fathom LABEL=DIR` is an `fathom_lab.evaluate` output folder (a model run, or scripted
policies); folders that share a label must hold the same tasks (the same `--n`, `--doc-tokens`
or `--data`, and `--seed`), so the model and its baselines sit on the same rows. Each `--gsm8k
LABEL=FILE` is a legacy `vf-eval -s` results.jsonl. For every policy the table gives format-gate
pass rate, tool calls, turns, sub-calls, correctness and reward (mean [95% bootstrap interval]),
total tokens, wall time and how rollouts ended; a second table counts the model's mistakes by kind
(`envtools.mistakes`).

Before writing, every saved score is checked against the core: each synthetic fathom-rlm
transcript is replayed through the loop and reward (`envtools.replay`; rows of the user's own
documents are skipped, their text is not saved) and each gsm8k-multireward completion is graded
again (`score_completion`). A mismatch is printed and the exit status is 1. Writes table.md and
table.json to `--out`.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from envtools import cli, mistakes
from envtools.replay import check_file, mismatches
from envtools.stats import Estimate, mean_ci
from envtools.tool_calls import text_of

RESAMPLES = 2000


def labelled(text: str) -> tuple[str, Path]:
    label, sep, path = text.partition("=")
    if not sep or not label or not path:
        raise argparse.ArgumentTypeError(f"expected LABEL=PATH, got {text!r}")
    return label, Path(path)


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _estimate(values: list[float]) -> dict[str, Any]:
    return mean_ci(values, resamples=RESAMPLES).to_dict()


def fathom_rows(label: str, folder: Path) -> list[dict[str, Any]]:
    """One row per policy of an `fathom_lab.evaluate` folder."""
    transcripts = read_jsonl(folder / "transcripts.jsonl")
    rollouts = read_jsonl(folder / "rollouts.jsonl")
    by_policy: dict[str, list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for rollout, transcript in zip(rollouts, transcripts, strict=True):
        by_policy[rollout["policy"]].append((rollout, transcript))
    config = json.loads((folder / "results.json").read_text())["config"]
    rows = []
    for policy, pairs in by_policy.items():
        done = [(r, t) for r, t in pairs if r["scores"] is not None]
        graded = ("format_gate", "correctness", "reward")
        score = {k: [r["scores"][k] for r, _ in done] for k in graded}
        counts = [mistakes.fathom_mistakes(t) for _, t in pairs]
        rows.append(
            {
                "cell": label,
                "policy": policy,
                "model": config.get("model") is not None,
                "folder": str(folder),
                "command": config.get("command"),
                "rollouts": len(pairs),
                "errors": len(pairs) - len(done),
                **{k: _estimate(v) for k, v in score.items()},
                "first_reply_calls": sum(_first_reply_calls(t) for _, t in pairs),
                "tool_calls": statistics.fmean(r["scores"]["tool_calls"] for r, _ in done),
                "turns": statistics.fmean(r["summary"]["turns"] for r, _ in done),
                "sub_calls": statistics.fmean(r["summary"]["llm_calls"] for r, _ in done),
                "touched_document": statistics.fmean(
                    r["scores"]["touched_document"] for r, _ in done
                ),
                "tokens": statistics.fmean(r["scores"]["total_tokens"] for r, _ in done),
                "wall_s": statistics.fmean(r["wall_s"] for r, _ in pairs),
                "wall_s_median": statistics.median(r["wall_s"] for r, _ in pairs),
                "ended_by": dict(Counter(r["ended_by"] or "error" for r, _ in pairs)),
                "mistakes": dict(mistakes.total(counts)),
                "rollouts_with": dict(mistakes.total(Counter(set(c)) for c in counts)),
                "tasks": [r["question"] for r, _ in pairs],
            }
        )
    return rows


def _first_reply_calls(transcript: dict[str, Any]) -> bool:
    """Whether the rollout's first reply holds a tool call (whole, or cut off by the cap)."""
    replies = [m for m in transcript["messages"] if m.get("role") == "assistant"]
    return bool(replies and replies[0].get("tool_calls"))


def gsm8k_row(label: str, path: Path) -> tuple[dict[str, Any], list[str]]:
    """The row of a legacy `vf-eval -s` results.jsonl, and every score the grader disagrees with."""
    from gsm8k_multireward import GSM8KConfig, MathGrader, score_completion

    results = read_jsonl(path)
    problems = []
    counts = []
    names = ("correct_answer", "length_reward", "reward")
    with MathGrader(max_workers=1, timeout=5.0) as grader:
        for result in results:
            text = text_of(result["completion"][-1]["content"]) if result["completion"] else ""
            tokens = int(result["token_usage"]["output_tokens"])
            again = score_completion(text, result["answer"], grader, GSM8KConfig(), tokens)
            problems += [
                f"{path} example {result['example_id']}: {m}"
                for m in mismatches({k: result[k] for k in names}, again)
            ]
            counts.append(mistakes.gsm8k_mistakes(text, truncated=bool(result["is_truncated"])))
    row = {
        "cell": label,
        "policy": results[0].get("model", "model") if results else "model",
        "file": str(path),
        "rollouts": len(results),
        "boxed": _estimate([float(not c["no_boxed_answer"]) for c in counts]),
        **{k: _estimate([r[k] for r in results]) for k in names},
        "completion_tokens": statistics.fmean(r["token_usage"]["output_tokens"] for r in results),
        "mistakes": dict(mistakes.total(counts)),
    }
    return row, problems


def _cell(estimate: dict[str, Any], digits: int = 2) -> str:
    return Estimate(**estimate).format(digits)


def markdown(fathom: list[dict[str, Any]], gsm8k: list[dict[str, Any]]) -> str:
    lines = [
        "| cell | policy | rollouts | format gate | first reply calls | tool calls | turns "
        "| sub-calls | touched doc | correctness | reward | tokens | wall s mean (median) "
        "| ended by |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in fathom:
        ended = ", ".join(f"{k} {v}" for k, v in sorted(r["ended_by"].items()))
        lines.append(
            f"| {r['cell']} | {r['policy']} | {r['rollouts']} | {_cell(r['format_gate'])} "
            f"| {r['first_reply_calls']} | {r['tool_calls']:.2f} | {r['turns']:.2f} "
            f"| {r['sub_calls']:.2f} "
            f"| {r['touched_document']:.2f} | {_cell(r['correctness'])} | {_cell(r['reward'])} "
            f"| {r['tokens']:,.0f} | {r['wall_s']:.1f} ({r['wall_s_median']:.1f}) | {ended} |"
        )
    kinds = [k for k in mistakes.KINDS if any(r["mistakes"].get(k) for r in fathom)]
    lines += ["", "Mistakes by kind (count; rollouts with it in brackets):", ""]
    lines += ["| cell | policy | " + " | ".join(kinds) + " |", "|---|---|" + "---|" * len(kinds)]
    for r in fathom:
        cells = [f"{r['mistakes'].get(k, 0)} ({r['rollouts_with'].get(k, 0)})" for k in kinds]
        lines.append(f"| {r['cell']} | {r['policy']} | " + " | ".join(cells) + " |")
    if gsm8k:
        lines += [
            "",
            "| cell | rollouts | `\\boxed{}` | correct_answer | length_reward | reward "
            "| completion tokens | " + " | ".join(mistakes.GSM8K_KINDS) + " |",
            "|---|---|---|---|---|---|---|" + "---|" * len(mistakes.GSM8K_KINDS),
        ]
        for r in gsm8k:
            kinds_cells = " | ".join(str(r["mistakes"].get(k, 0)) for k in mistakes.GSM8K_KINDS)
            lines.append(
                f"| {r['cell']} | {r['rollouts']} | {_cell(r['boxed'])} "
                f"| {_cell(r['correct_answer'])} | {_cell(r['length_reward'])} "
                f"| {_cell(r['reward'])} | {r['completion_tokens']:.0f} | {kinds_cells} |"
            )
    return "\n".join(lines) + "\n"


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python benchmarks/real_model_table.py", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--fathom", type=labelled, nargs="*", default=[], metavar="LABEL=DIR")
    parser.add_argument("--gsm8k", type=labelled, nargs="*", default=[], metavar="LABEL=FILE")
    parser.add_argument("--out", type=Path, required=True, help="folder for table.md, table.json")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not args.fathom and not args.gsm8k:
        parser.error("give at least one --fathom or --gsm8k run")
    fathom: list[dict[str, Any]] = []
    problems: list[str] = []
    replayed = skipped = 0
    for label, folder in args.fathom:
        parser.require_file("--fathom", folder / "transcripts.jsonl", "fathom_lab.evaluate output")
        fathom += fathom_rows(label, folder)
        done, passed, found = check_file(folder / "transcripts.jsonl")
        replayed, skipped, problems = replayed + done, skipped + passed, problems + found
    tasks: dict[str, list[str]] = {}
    for row in fathom:
        if tasks.setdefault(row["cell"], row["tasks"]) != row["tasks"]:
            parser.error(f"runs labelled {row['cell']!r} do not hold the same tasks")
    gsm8k = []
    for label, path in args.gsm8k:
        row, found = gsm8k_row(label, parser.require_file("--gsm8k", path, "results.jsonl"))
        gsm8k.append(row)
        problems += found
    for problem in problems:
        print(problem, file=sys.stderr)
    regraded = sum(r["rollouts"] for r in gsm8k)
    print(
        f"fathom-rlm: {replayed} transcripts replayed, {skipped} skipped (user rows or failed); "
        f"gsm8k-multireward: {regraded} completions graded again; "
        + ("every saved score matches" if not problems else f"{len(problems)} mismatches")
    )
    args.out.mkdir(parents=True, exist_ok=True)
    for row in fathom:
        del row["tasks"]
    (args.out / "table.json").write_text(json.dumps({"fathom": fathom, "gsm8k": gsm8k}, indent=1))
    (args.out / "table.md").write_text(markdown(fathom, gsm8k))
    print(markdown(fathom, gsm8k))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
