"""Offline evaluation of fathom-rlm policies: reward, components and metrics with 95% intervals.

    uv run python -m fathom_lab.evaluate                      # every scripted fathom policy
    uv run python -m fathom_lab.evaluate --policies fathom-reference,fathom-closed-book --n 12
    uv run python -m fathom_lab.evaluate --model NAME --base-url http://host:port/v1
    uv run python -m fathom_lab.evaluate --data my_rows.jsonl   # your own documents

With `--data` the tasks are the user rows of a JSONL file (`fathom_rlm.userdata`; `--data-format`
names a public row schema) instead of a synthetic split, and the default policies are those
that run on any text (`USER_ROW_POLICIES`). Each policy answers a fixed, seeded sample of the
`eval` split (or every user row) through the real agent loop,
sandbox and reward, in this process: a scripted policy is called directly as the chat function; a
model is reached with the `openai` async client. A rollout that fails (the policy raises, the
endpoint errors, the rollout times out) is recorded with its error and scores 0 on every reward
component; the run goes on. Tool mistakes inside a rollout are not failures: the loop answers them
with an error message and they are counted in `tool_errors`. Failed rollouts make the command exit
1 with one line saying why (the count and the first error), unless `--max-failed-share` allows
that share; bad arguments exit 2.

Outputs under `--out`: report.md (also printed to stdout), results.json, rollouts.jsonl (one small
summary per rollout, never the document), transcripts.jsonl (what each policy wrote: one line per
rollout with its task row, the root conversation, every model reply in call order, root and
sub-calls, with usage and finish reason, and every sub-call's own conversation;
`--no-transcripts` leaves it out, e.g. for a large run: tool outputs in it quote the document),
viewer.html (every rollout to look at in a browser, opened from disk: `envtools.viewer`; long
texts folded, so it is written either way) and accuracy_vs_tokens.png (only when some policy
completed rollouts; there is nothing to draw otherwise). `python -m envtools.replay` re-scores
the transcripts through the loop and reward and checks each saved score.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import sys
import time
from collections.abc import Callable, Sequence
from contextlib import nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS
from fathom_rlm.agent import RolloutCaps
from fathom_rlm.documents import SPLIT_SIZES, TaskRecord

from envtools import cli, viewer
from envtools.measured import machine, source_commit
from envtools.stats import DEFAULT_RESAMPLES
from envtools.viewer.rollouts import fathom_rollout
from fathom_lab import policies as fathom
from fathom_lab.audit.attacks import choice_letters
from fathom_lab.eval_report import (
    CHART_NAME,
    METRIC_KEYS,
    REWARD_KEYS,
    USER_METRIC_KEYS,
    chart_points,
    plot_accuracy_vs_tokens,
    render_report,
    summarize,
)
from fathom_lab.eval_runner import (
    CHOICE_ROW_POLICIES,
    DEFAULT_CONCURRENCY,
    DEFAULT_DOC_TOKENS,
    DEFAULT_N,
    DEFAULT_TIMEOUT_S,
    MAX_ERROR_CHARS,
    SPLIT,
    TRANSCRIPT_KEY,
    USER_ROW_POLICIES,
    Contender,
    endpoint_contender,
    evaluate,
    openai_chat,
    policy_chat,
    registered_tasks,
    reply_from_completion,
    run_one,
    sample_tasks,
    scripted_contenders,
)
from fathom_lab.ladder.overlap_reader import reading_any_text
from fathom_lab.user_rows import (
    add_data_format_argument,
    load_user_rows,
    refuse_format_without_data,
    refuse_generated_options,
)

__all__ = [
    "CHART_NAME",
    "DEFAULT_CONCURRENCY",
    "DEFAULT_DOC_TOKENS",
    "DEFAULT_N",
    "DEFAULT_OUT",
    "DEFAULT_TIMEOUT_S",
    "MAX_ERROR_CHARS",
    "METRIC_KEYS",
    "REWARD_KEYS",
    "SPLIT",
    "USER_ROW_POLICIES",
    "Contender",
    "build_parser",
    "endpoint_contender",
    "evaluate",
    "failure_line",
    "main",
    "openai_chat",
    "plot_accuracy_vs_tokens",
    "policy_chat",
    "registered_tasks",
    "render_report",
    "reply_from_completion",
    "run_evaluation",
    "run_one",
    "sample_tasks",
    "scripted_contenders",
    "summarize",
]

DEFAULT_OUT = Path("outputs/eval")
TRANSCRIPTS_NAME = "transcripts.jsonl"


# --------------------------------------------------------------------------------- runs


def run_evaluation(
    contenders: Sequence[Contender],
    rows: Sequence[TaskRecord],
    out_dir: Path,
    *,
    config: dict[str, Any],
    caps: RolloutCaps | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
    metric_keys: Sequence[str] = METRIC_KEYS,
    save_transcripts: bool = True,
) -> dict[str, Any]:
    """Evaluate, summarise and write every output; returns the results document.

    With `save_transcripts`, transcripts.jsonl holds one line per rollout (the keys that name
    it in rollouts.jsonl, its scores, and `TRANSCRIPT_KEY`); without, an old one is removed.

    `config` is recorded as-is in results.json (it needs at least `command`, `split`, `n`,
    `doc_tokens`, `seed` and `resamples` for the report).
    """
    names = [c.name for c in contenders]
    if len(set(names)) != len(names):
        raise ValueError("contender names must be unique")
    started, machine_at_start = time.perf_counter(), machine()
    # On user rows the reference reads text it has no grammar for with the overlap reader.
    any_text = reading_any_text() if any(r.source == "user" for r in rows) else nullcontext()
    with registered_tasks(rows), any_text:
        rollouts = asyncio.run(
            evaluate(
                contenders,
                rows,
                caps=caps,
                concurrency=concurrency,
                timeout_s=timeout_s,
                progress=progress,
            )
        )
    wall_s = time.perf_counter() - started
    transcripts = [r.pop(TRANSCRIPT_KEY) for r in rollouts]
    results: dict[str, Any] = {
        "config": config,
        "environment": {
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "machine": machine_at_start,
            "commit": source_commit(),
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            "cpus": os.cpu_count(),
            "wall_s": round(wall_s, 1),
        },
        "tasks": [_task_entry(i, r) for i, r in enumerate(rows)],
        "policies": summarize(
            rollouts, names, resamples=resamples, seed=seed, metric_keys=metric_keys
        ),
        "errors": [
            {k: r[k] for k in ("policy", "task", "family", "error")} for r in rollouts if r["error"]
        ],
    }
    # A chart is drawn only when some policy completed rollouts; an old one is never left behind
    # to be mistaken for this run's.
    results["chart"] = CHART_NAME if chart_points(results) else None
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "rollouts.jsonl").open("w") as f:
        for r in rollouts:
            f.write(json.dumps(r) + "\n")
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / "report.md").write_text(render_report(results))
    if results["chart"]:
        plot_accuracy_vs_tokens(results, out_dir / CHART_NAME)
    else:
        (out_dir / CHART_NAME).unlink(missing_ok=True)
    title = ", ".join(names) if len(names) <= 3 else f"{len(names)} policies"
    _write_conversations(
        out_dir,
        rollouts,
        transcripts,
        save_transcripts=save_transcripts,
        title=f"fathom-rlm evaluation: {title}",
        about=f"{len(rollouts)} rollouts · {config.get('command', '')}",
    )
    return results


TRANSCRIPT_NAMING = ("policy", "task", "ended_by", "error", "scores")
"""The keys of a rollout copied onto its transcript line: which one it is and what it scored."""


def _write_conversations(
    out_dir: Path,
    rollouts: Sequence[dict[str, Any]],
    transcripts: Sequence[dict[str, Any]],
    *,
    save_transcripts: bool,
    title: str,
    about: str,
) -> None:
    """transcripts.jsonl (or no old one left behind) and the viewer, from the same lines."""
    lines = [
        json.dumps({**{k: r[k] for k in TRANSCRIPT_NAMING}, **transcript}, default=repr)
        for r, transcript in zip(rollouts, transcripts, strict=True)
    ]
    if save_transcripts:
        (out_dir / TRANSCRIPTS_NAME).write_text("".join(line + "\n" for line in lines))
    else:
        (out_dir / TRANSCRIPTS_NAME).unlink(missing_ok=True)
    # The viewer folds long texts and never holds the document, so it is written either way;
    # it comes last, and whatever a model wrote, a viewer that cannot be made costs no output.
    try:
        rollout_views = [fathom_rollout(json.loads(line)) for line in lines]
        viewer.write(out_dir / viewer.VIEWER_NAME, rollout_views, title=title, about=about)
    except Exception as exc:
        # No old page is left behind to be taken for this run's.
        (out_dir / viewer.VIEWER_NAME).unlink(missing_ok=True)
        print(f"warning: {viewer.VIEWER_NAME} not written ({exc!r:.300})", file=sys.stderr)


def _task_entry(index: int, row: TaskRecord) -> dict[str, Any]:
    entry = {"task": index, "seed": row.seed, "family": row.family, "question": row.question}
    if row.source == "user":
        entry |= {"id": row.row_id, "answer_kind": row.answer_kind}
    return entry


def failure_line(results: dict[str, Any], max_failed_share: float) -> str | None:
    """One line saying why the run failed, or None when the failed share is within the limit."""
    policies = results["policies"]
    total = sum(p["rollouts"] for p in policies.values())
    failed = sum(p["errors"] for p in policies.values())
    if total == 0:
        return "error: no rollout ran"
    if failed / total <= max_failed_share:
        return None
    first = results["errors"][0]
    reason = " ".join(str(first["error"]).split())[:300]
    every = [name for name, p in policies.items() if p["rollouts"] and p["errors"] == p["rollouts"]]
    which = f"; every rollout of {', '.join(every)} failed" if every else ""
    return (
        f"error: {failed} of {total} rollouts failed (allowed share {max_failed_share:g}){which};"
        f" first ({first['policy']}, task {first['task']}): {reason}"
    )


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m fathom_lab.evaluate",
        description="Evaluate fathom-rlm policies (scripted, or a model behind an OpenAI-"
        "compatible endpoint) on a fixed sample of a split (eval by default); writes a Markdown "
        "report, results.json, rollouts.jsonl, transcripts.jsonl, viewer.html (every rollout, "
        "to open in a browser) and an accuracy-versus-tokens chart.",
    )
    _add_task_arguments(parser)
    parser.add_argument(
        "--policies",
        type=cli.names(fathom.POLICIES, "scripted policy names"),
        default=None,
        help="comma-separated scripted policy names (default: every fathom policy; "
        "none when --model is given)",
    )
    parser.add_argument("--concurrency", type=cli.integer(1), default=DEFAULT_CONCURRENCY)
    parser.add_argument(
        "--seed", type=cli.integer(), default=0, help="task sample and bootstrap seed"
    )
    parser.add_argument("--resamples", type=cli.integer(1000), default=DEFAULT_RESAMPLES)
    parser.add_argument(
        "--timeout", type=cli.number(0.1), default=DEFAULT_TIMEOUT_S, help="seconds per rollout"
    )
    parser.add_argument(
        "--max-failed-share",
        type=cli.number(0.0, 1.0),
        default=0.0,
        help="share of rollouts (0 to 1) that may fail (an error, not a low score) before the "
        "command exits non-zero (default %(default)s: any failure does)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help=f"output directory (default {DEFAULT_OUT}; with --data, outputs/eval-<file name>, so"
        " a run on your rows never overwrites the default run's report)",
    )
    no_transcripts = f"do not write {TRANSCRIPTS_NAME} (every conversation; large on long runs)"
    parser.add_argument(
        "--no-transcripts", dest="transcripts", action="store_false", help=no_transcripts
    )
    _add_model_arguments(parser)
    return parser


def _add_task_arguments(parser: cli.ArgumentParser) -> None:
    """Where the tasks come from: a synthetic split, or the user's rows with --data."""
    parser.add_argument(
        "--n",
        type=cli.integer(1),
        default=None,
        help=f"tasks (default {DEFAULT_N}; with --data, the first N rows, default all)",
    )
    parser.add_argument(
        "--split",
        choices=tuple(SPLIT_SIZES),
        default=None,
        help=f"split the tasks are sampled from (default {SPLIT}; not with --data)",
    )
    parser.add_argument(
        "--doc-tokens",
        type=cli.integer(MIN_DOC_TOKENS),
        default=None,
        help=f"document length in tokens (default {DEFAULT_DOC_TOKENS:,}; not with --data)",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="a JSONL file of your own rows (document, question, answers; see the fathom-rlm "
        "README, 'Your own documents') to evaluate on instead of a synthetic split",
    )
    add_data_format_argument(parser)


def _add_model_arguments(parser: cli.ArgumentParser) -> None:
    """A model behind an OpenAI-compatible endpoint, instead of scripted policies."""
    parser.add_argument("--model", help="model name served at --base-url")
    parser.add_argument(
        "--base-url", type=cli.url, help="OpenAI-compatible base URL, e.g. http://host:8000/v1"
    )
    parser.add_argument(
        "--api-key-var",
        default="OPENAI_API_KEY",
        help="environment variable holding the API key (default %(default)s; a placeholder "
        "key is sent when it is unset, as local servers expect)",
    )
    parser.add_argument("--temperature", type=cli.number(0.0), default=None)
    parser.add_argument("--max-tokens", type=cli.integer(1), default=None, help="per model call")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The arguments, each alone and taken together; a usage error (exit 2) otherwise."""
    parser = build_parser()
    args = parser.parse_args(argv)
    if (args.model is None) != (args.base_url is None):
        parser.error("--model and --base-url go together")
    args.rows = None
    refuse_format_without_data(parser, args)
    if args.data is not None:
        _load_data(parser, args)
    else:
        args.split = args.split or SPLIT
        args.doc_tokens = args.doc_tokens or DEFAULT_DOC_TOKENS
        args.n = args.n or DEFAULT_N
        if args.n > SPLIT_SIZES[args.split]:
            parser.reject(
                "--n", f"at most {SPLIT_SIZES[args.split]} (the {args.split} split)", args.n
            )
    if args.out is None:
        args.out = DEFAULT_OUT if args.data is None else Path(f"outputs/eval-{args.data.stem}")
    if args.out.exists() and not args.out.is_dir():
        parser.reject("--out", "a directory (it is created when missing)", str(args.out))
    return args


def _load_data(parser: cli.ArgumentParser, args: argparse.Namespace) -> None:
    """Read the user rows of --data (the first --n of them, every one checked first); a bad
    file or row is a usage error naming the line and the field."""
    refuse_generated_options(parser, args)
    if args.policies is not None:
        other = [p for p in args.policies if p not in USER_ROW_POLICIES]
        if other:
            parser.reject(
                "--policies",
                f"with --data, policies that run on any text ({', '.join(USER_ROW_POLICIES)})",
                ",".join(other),
            )
    args.data_format = args.data_format or "native"
    rows = load_user_rows(parser, args.data, args.data_format, limit=args.n)
    args.n = len(rows)
    args.rows = rows


def _contenders(args: argparse.Namespace) -> list[Contender]:
    """The scripted policies named (all of them without an endpoint; with --data, those that
    run on any text) and the endpoint, if any."""
    names = args.policies
    if names is None:
        if args.data is not None:
            every = USER_ROW_POLICIES
        else:
            every = tuple(p for p in fathom.POLICIES if p not in CHOICE_ROW_POLICIES)
        names = [] if args.model else list(every)
    contenders = scripted_contenders(names)
    if args.model:
        contenders.append(
            endpoint_contender(
                args.model,
                args.base_url,
                api_key=os.environ.get(args.api_key_var) or "EMPTY",
                # A scripted policy of the same name stays distinguishable in the report.
                name=args.model if args.model not in names else f"{args.model} (endpoint)",
                temperature=args.temperature,
                max_tokens=args.max_tokens,
                timeout_s=args.timeout,
            )
        )
    return contenders


def _run_config(
    args: argparse.Namespace, argv: Sequence[str] | None, contenders: list[Contender]
) -> dict[str, Any]:
    """What results.json records about the run, the command that repeats it first."""
    command = "uv run python -m fathom_lab.evaluate" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:])
    )
    run = {
        "seed": args.seed,
        "resamples": args.resamples,
        "concurrency": args.concurrency,
        "timeout_s": args.timeout,
        "contenders": {c.name: c.kind for c in contenders},
        "model": args.model,
        "base_url": args.base_url,
    }
    if args.data is None:
        return {
            "command": command,
            "split": args.split,
            "n": args.n,
            "doc_tokens": args.doc_tokens,
            **run,
        }
    kinds: dict[str, int] = {}
    for row in args.rows:
        kinds[row.answer_kind] = kinds.get(row.answer_kind, 0) + 1
    source = {"data": str(args.data), "format": args.data_format, "answer_kinds": kinds}
    # A blind letter earns 1/k on a row of k choices: the floor a reader must beat. On a row
    # with evidence the evidence veto pays nothing to a letter whose evidence was never read.
    choice_rows = [r for r in args.rows if r.answer_kind == "choice"]
    if choice_rows:
        blind = [len(choice_letters(r.question)) for r in choice_rows if not r.spans]
        source["choice_floor"] = {
            "rows": len(choice_rows),
            "with_evidence": len(choice_rows) - len(blind),
            "mean": sum(1 / k for k in blind if k) / len(choice_rows),
        }
    where = {"split": None, "n": args.n, "doc_tokens": None}
    return {"command": command, "source": "user rows", **source, **where, **run}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    contenders = _contenders(args)
    config = _run_config(args, argv, contenders)
    if args.rows is not None:
        rows = args.rows
    else:
        rows = sample_tasks(args.n, doc_tokens=args.doc_tokens, seed=args.seed, split=args.split)
    print(f"evaluating {len(contenders)} policies x {len(rows)} tasks", file=sys.stderr)
    from fathom_rlm.sandbox import shutdown_fork_servers, warm_up

    warm_up()
    try:
        results = run_evaluation(
            contenders,
            rows,
            args.out,
            config=config,
            concurrency=args.concurrency,
            timeout_s=args.timeout,
            resamples=args.resamples,
            seed=args.seed,
            progress=lambda msg: print(msg, file=sys.stderr, flush=True),
            metric_keys=USER_METRIC_KEYS if args.rows is not None else METRIC_KEYS,
            save_transcripts=args.transcripts,
        )
    finally:
        shutdown_fork_servers()
    print(render_report(results), end="")
    chart = f", {CHART_NAME}" if results["chart"] else " (no chart: nothing completed)"
    transcripts = f", {TRANSCRIPTS_NAME}" if args.transcripts else ""
    page = f", {viewer.VIEWER_NAME}" if (args.out / viewer.VIEWER_NAME).exists() else ""
    print(
        f"\nwrote {args.out}/report.md, results.json, rollouts.jsonl{transcripts}{page}{chart} "
        f"in {results['environment']['wall_s']:.0f} s",
        file=sys.stderr,
    )
    failure = failure_line(results, args.max_failed_share)
    if failure is not None:
        print(failure, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
