"""Offline evaluation of fathom-rlm policies: reward, components and metrics with 95% intervals.

    uv run python -m envtools.evaluate                      # every scripted fathom policy
    uv run python -m envtools.evaluate --policies fathom-reference,fathom-closed-book --n 12
    uv run python -m envtools.evaluate --model NAME --base-url http://host:port/v1

Each policy answers a fixed, seeded sample of the `eval` split through the real agent loop,
sandbox and reward, in this process: a scripted policy is called directly as the chat function; a
model is reached with the `openai` async client. A rollout that fails (the policy raises, the
endpoint errors, the rollout times out) is recorded with its error and scores 0 on every reward
component; the run goes on. Tool mistakes inside a rollout are not failures: the loop answers them
with an error message and they are counted in `tool_errors`.

Outputs under `--out`: report.md (also printed to stdout), results.json, rollouts.jsonl (one small
summary per rollout, never the document) and accuracy_vs_tokens.png.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import platform
import random
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fathom_rlm.agent import ChatFn, ChatReply, RolloutCaps, run_rollout
from fathom_rlm.documents import FAMILIES, build_split, get_document
from fathom_rlm.rewards import COMPONENT_NAMES, REWARD_NAME, RewardConfig, score_rollout

from envtools.policies import fathom
from envtools.policies.base import Policy
from envtools.stats import DEFAULT_RESAMPLES, Estimate, mean_ci

SPLIT = "eval"
DEFAULT_N = 36
DEFAULT_DOC_TOKENS = 16_000
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT_S = 300.0
DEFAULT_OUT = Path("outputs/eval")
CHART_NAME = "accuracy_vs_tokens.png"
REWARD_KEYS: tuple[str, ...] = (REWARD_NAME, *COMPONENT_NAMES)
METRIC_KEYS: tuple[str, ...] = ("total_tokens", "tool_calls", "evidence_recall", "depth_used")
MAX_ERROR_CHARS = 500


@dataclass
class Contender:
    """One thing under evaluation: the name it is reported under and its chat function."""

    name: str
    chat: ChatFn
    kind: str = "scripted"
    """"scripted" (a policy called in-process) or "model" (an OpenAI-compatible endpoint)."""
    aclose: Callable[[], Awaitable[None]] | None = None
    """Releases the contender's resources (an HTTP client) on the loop that used them."""


# ------------------------------------------------------------------------------ tasks


def sample_tasks(
    n: int = DEFAULT_N,
    *,
    doc_tokens: int = DEFAULT_DOC_TOKENS,
    seed: int = 0,
    split: str = SPLIT,
) -> list[dict[str, Any]]:
    """`n` rows of the eval split, stratified by family in proportion to the split's own mix.

    The whole split (200 questions over 20 documents) is built at `doc_tokens`, so the sample
    spans many documents rather than the first few; each family gets its proportional share
    (largest remainder), drawn with `seed`. Rows keep the split's order.
    """
    rows = build_split(split, doc_tokens=doc_tokens)  # type: ignore[arg-type]
    if not 1 <= n <= len(rows):
        raise ValueError(f"n must be between 1 and {len(rows)} (the size of the {split} split)")
    by_family: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_family.setdefault(row["family"], []).append(i)
    shares = {f: n * len(idx) / len(rows) for f, idx in by_family.items()}
    quota = {f: math.floor(s) for f, s in shares.items()}
    leftover = n - sum(quota.values())
    for f in sorted(shares, key=lambda f: (quota[f] - shares[f], f))[:leftover]:
        quota[f] += 1
    rng = random.Random(seed)
    chosen = [i for f in sorted(by_family) for i in rng.sample(by_family[f], quota[f])]
    return [rows[i] for i in sorted(chosen)]


@contextlib.contextmanager
def registered_tasks(rows: Iterable[dict[str, Any]]) -> Iterator[None]:
    """Make the scripted readers find these rows, and never regenerate full splits meanwhile."""
    index = fathom.TASKS
    saved = (index.autoload_splits, dict(index.rows))
    index.autoload_splits = ()
    index.register(rows)
    try:
        yield
    finally:
        index.autoload_splits, index.rows = saved


# ------------------------------------------------------------------------ chat functions


def policy_chat(policy: Policy) -> ChatFn:
    """A scripted policy as the loop's chat function (no server in between)."""

    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> ChatReply:
        result = await policy.respond(messages, tools)
        return ChatReply(result.message, result.usage)

    return chat


def scripted_contenders(names: Sequence[str]) -> list[Contender]:
    """One contender per scripted fathom policy name; unknown names raise ValueError."""
    unknown = [n for n in names if n not in fathom.POLICIES]
    if unknown:
        known = ", ".join(fathom.POLICIES)
        raise ValueError(f"unknown policies {', '.join(unknown)}; known: {known}")
    return [Contender(name, policy_chat(fathom.POLICIES[name]())) for name in names]


def reply_from_completion(response: Any) -> ChatReply:
    """An OpenAI `ChatCompletion` as a `ChatReply`: first choice, function tool calls, usage."""
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise ValueError("the completion has no choices")
    msg = choices[0].message
    message: dict[str, Any] = {"role": "assistant", "content": msg.content}
    calls = []
    for call in msg.tool_calls or ():
        fn = getattr(call, "function", None)
        # A non-function tool call keeps its type as the name, so the loop answers "unknown tool".
        name = fn.name if fn is not None else str(getattr(call, "type", "unknown"))
        arguments = fn.arguments if fn is not None else "{}"
        calls.append(
            {"id": call.id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    if calls:
        message["tool_calls"] = calls
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    reported = None
    if isinstance(prompt, int) and isinstance(completion, int):
        reported = {"prompt_tokens": prompt, "completion_tokens": completion}
    return ChatReply(message, reported)


def openai_chat(
    client: Any,
    model: str,
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> ChatFn:
    """A model behind an OpenAI-compatible endpoint (an `openai.AsyncOpenAI` client) as a chat
    function; the loop and its sub-calls all go through it."""

    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> ChatReply:
        kwargs: dict[str, Any] = {"model": model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        if temperature is not None:
            kwargs["temperature"] = temperature
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        response = await client.chat.completions.create(**kwargs)
        return reply_from_completion(response)

    return chat


def endpoint_contender(
    model: str,
    base_url: str,
    *,
    api_key: str = "EMPTY",
    name: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Contender:
    """A model behind an OpenAI-compatible endpoint. The client is made on first use, inside the
    running loop, and closed by `evaluate` on that same loop."""
    clients: list[Any] = []
    chats: list[ChatFn] = []

    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> ChatReply:
        if not chats:
            import openai

            client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s)
            clients.append(client)
            chats.append(openai_chat(client, model, temperature=temperature, max_tokens=max_tokens))
        return await chats[0](messages, tools)

    async def aclose() -> None:
        chats.clear()
        while clients:
            await clients.pop().close()

    return Contender(name or model, chat, kind="model", aclose=aclose)


# ------------------------------------------------------------------------------ rollouts


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + " [cut]"


async def run_one(
    contender: Contender,
    task_index: int,
    row: dict[str, Any],
    *,
    caps: RolloutCaps | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """One rollout and its scores as a small JSON-safe dict; a failure is recorded, not raised."""
    out: dict[str, Any] = {
        "policy": contender.name,
        "task": task_index,
        "seed": row["seed"],
        "doc_tokens": row["doc_tokens"],
        "family": row["family"],
        "depth": row["depth"],
        "question": row["question"],
        "gold": row["answer"],
        "answer": None,
        "ended_by": None,
        "error": None,
        "scores": None,
        "summary": None,
        "wall_s": 0.0,
    }
    transcript: list[dict[str, Any]] = []
    start = time.perf_counter()
    try:
        document = get_document(int(row["seed"]), int(row["doc_tokens"])).text
        record = await asyncio.wait_for(
            run_rollout(document, row["question"], contender.chat, caps, transcript=transcript),
            timeout_s,
        )
        scores = score_rollout(record, row, RewardConfig.from_caps(caps), document=document)
    except Exception as exc:  # any policy, endpoint or tool failure stays with this rollout
        out["error"] = _error_text(exc)
        out["root_turns_before_error"] = sum(m.get("role") == "assistant" for m in transcript)
    else:
        out["answer"] = record.final_answer
        out["ended_by"] = record.ended_by
        out["scores"] = {k: float(v) for k, v in scores.items()}
        out["summary"] = record.summary()
    out["wall_s"] = round(time.perf_counter() - start, 3)
    return out


async def evaluate(
    contenders: Sequence[Contender],
    rows: Sequence[dict[str, Any]],
    *,
    caps: RolloutCaps | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Every contender on every row, at most `concurrency` rollouts at a time, in a fixed order."""
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    gate = asyncio.Semaphore(concurrency)
    remaining = Counter({c.name: len(rows) for c in contenders})

    async def job(contender: Contender, index: int, row: dict[str, Any]) -> dict[str, Any]:
        async with gate:
            result = await run_one(contender, index, row, caps=caps, timeout_s=timeout_s)
        remaining[contender.name] -= 1
        if progress is not None and remaining[contender.name] == 0:
            progress(f"done: {contender.name}")
        return result

    jobs = [job(c, i, row) for c in contenders for i, row in enumerate(rows)]
    try:
        return list(await asyncio.gather(*jobs))
    finally:
        for contender in contenders:
            if contender.aclose is not None:
                with contextlib.suppress(Exception):
                    await contender.aclose()


# ----------------------------------------------------------------------------- summaries


def summarize(
    results: Sequence[dict[str, Any]],
    policy_names: Sequence[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> dict[str, Any]:
    """Per policy: reward and components over all rollouts (a failed rollout scores 0), metrics
    over completed rollouts, correctness by family, and error counts. Intervals are 95%
    percentile-bootstrap intervals over tasks."""

    def ci(values: Sequence[float]) -> dict[str, Any]:
        return mean_ci(values, resamples=resamples, seed=seed).to_dict()

    policies: dict[str, Any] = {}
    for name in policy_names:
        rows = [r for r in results if r["policy"] == name]
        done = [r for r in rows if r["error"] is None]
        families: dict[str, Any] = {}
        tokens: dict[str, Any] = {}
        for family in FAMILIES:
            values = [_score(r, "correctness") for r in rows if r["family"] == family]
            if values:
                families[family] = ci(values)
            spent = [r["scores"]["total_tokens"] for r in done if r["family"] == family]
            if spent:
                tokens[family] = ci(spent)
        policies[name] = {
            "rollouts": len(rows),
            "errors": len(rows) - len(done),
            "rewards": {k: ci([_score(r, k) for r in rows]) for k in REWARD_KEYS},
            "metrics": {k: ci([r["scores"][k] for r in done]) for k in METRIC_KEYS},
            "tool_errors": sum(int(r["scores"]["tool_errors"]) for r in done),
            "ended_by": dict(Counter(r["ended_by"] or "error" for r in rows)),
            "by_family": families,
            "tokens_by_family": tokens,
        }
    return policies


def _score(result: dict[str, Any], key: str) -> float:
    return 0.0 if result["scores"] is None else float(result["scores"][key])


def _estimate(data: dict[str, Any]) -> Estimate:
    return Estimate(data["mean"], data["low"], data["high"], data["n"])


def _fmt_count(e: Estimate, digits: int = 0) -> str:
    if e.n == 0:
        return "n/a"
    return f"{e.mean:,.{digits}f} [{e.low:,.{digits}f}, {e.high:,.{digits}f}]"


def render_report(results: dict[str, Any]) -> str:
    """The Markdown report of a `results.json` document."""
    cfg = results["config"]
    policies = results["policies"]
    family_counts = Counter(t["family"] for t in results["tasks"])
    lines = [
        "# fathom-rlm evaluation",
        "",
        f"Command: `{cfg['command']}`",
        "",
        f"{cfg['n']} tasks of the `{cfg['split']}` split (stratified by family, seed "
        f"{cfg['seed']}) on {cfg['doc_tokens']:,}-token documents; "
        + ", ".join(f"{f} {family_counts[f]}" for f in FAMILIES if family_counts[f])
        + ". Each cell is the mean with its 95% percentile-bootstrap interval over tasks "
        f"({cfg['resamples']:,} resamples, seed {cfg['seed']}).",
        "",
        "## Reward and components",
        "",
        "A failed rollout (see Errors) scores 0 on every component.",
        "",
        "| policy | rollouts | errors | " + " | ".join(REWARD_KEYS) + " |",
        "|---|---|---|" + "---|" * len(REWARD_KEYS),
    ]
    for name, p in policies.items():
        cells = [_estimate(p["rewards"][k]).format(3) for k in REWARD_KEYS]
        lines.append(f"| {name} | {p['rollouts']} | {p['errors']} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Metrics",
        "",
        "Over completed rollouts. Tokens are every model call of the rollout (root and sub-calls,"
        " prompt and completion; characters / 4 where no usage is reported). Tool calls count"
        " every call at any depth, bad ones included; tool errors are the calls answered with an"
        " error.",
        "",
        "| policy | total tokens | tool calls | evidence recall | depth used | tool errors "
        "| ended by |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, p in policies.items():
        m = p["metrics"]
        ended = ", ".join(f"{k} {v}" for k, v in sorted(p["ended_by"].items()))
        lines.append(
            f"| {name} | {_fmt_count(_estimate(m['total_tokens']))} | "
            f"{_fmt_count(_estimate(m['tool_calls']), 1)} | "
            f"{_estimate(m['evidence_recall']).format(2)} | "
            f"{_estimate(m['depth_used']).format(2) if 'depth_used' in m else 'n/a'} | "
            f"{p['tool_errors']} | {ended} |"
        )
    families = [f for f in FAMILIES if family_counts[f]]
    lines += [
        "",
        "## Correctness by family",
        "",
        "Mean correctness (tasks per family in the header); intervals are in results.json.",
        "",
        "| policy | " + " | ".join(f"{f} ({family_counts[f]})" for f in families) + " |",
        "|---|" + "---|" * len(families),
    ]
    for name, p in policies.items():
        cells = [
            f"{p['by_family'][f]['mean']:.2f}" if f in p["by_family"] else "n/a" for f in families
        ]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Tokens by family",
        "",
        "Mean total tokens per completed rollout (every model call, root and sub-calls).",
        "",
        "| policy | " + " | ".join(families) + " |",
        "|---|" + "---|" * len(families),
    ]
    for name, p in policies.items():
        spent = p.get("tokens_by_family", {})
        cells = [f"{spent[f]['mean']:,.0f}" if f in spent else "n/a" for f in families]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    lines += ["", "## Errors", ""]
    errors = results.get("errors", [])
    if not errors:
        lines.append("No rollout failed.")
    else:
        lines += ["| policy | task | family | error |", "|---|---|---|---|"]
        for e in errors:
            text = e["error"].replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {e['policy']} | {e['task']} | {e['family']} | {text} |")
    lines += ["", f"Chart: `{CHART_NAME}` (accuracy against mean total tokens per rollout)."]
    return "\n".join(lines) + "\n"


def plot_accuracy_vs_tokens(results: dict[str, Any], path: Path) -> Path:
    """Mean correctness against mean total tokens per policy, both with their intervals."""
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    cfg = results["config"]
    points = []
    for name, p in results["policies"].items():
        acc, tok = _estimate(p["rewards"]["correctness"]), _estimate(p["metrics"]["total_tokens"])
        if tok.n and tok.mean > 0:
            points.append((name, acc, tok))
    fig, ax = plt.subplots(figsize=(10, 5.6), layout="constrained")
    markers = "osD^v<>pPXh*"
    colors = plt.get_cmap("tab20").colors
    for i, (name, acc, tok) in enumerate(points):
        ax.errorbar(
            tok.mean,
            acc.mean,
            xerr=[[tok.mean - tok.low], [tok.high - tok.mean]],
            yerr=[[acc.mean - acc.low], [acc.high - acc.mean]],
            fmt=markers[i % len(markers)],
            color=colors[(2 * i) % len(colors) if i < 10 else (2 * i + 1) % len(colors)],
            markersize=8,
            capsize=3,
            linewidth=1,
            label=f"{name}  (acc {acc.mean:.2f}, {tok.mean:,.0f} tok)",
        )
    # Policies that land on the same spot (the answer rewrites do the reference's work) would
    # hide each other's markers; one stacked label per cluster names them all.
    for members, (x, y) in _clusters([(n, t.mean, a.mean) for n, a, t in points]):
        text = "\n".join(m.removeprefix("fathom-") for m in members)
        high = y > 0.5  # beside the marker, clear of its error bars; low points: above them
        ax.annotate(
            text,
            (x, y),
            xytext=(8, 4) if high else (0, 12),
            textcoords="offset points",
            ha="left" if high else "center",
            va="bottom",
            fontsize=7,
            color="0.25",
        )
    ax.set_xscale("log")
    if points:
        lows = [min(t.low, t.mean) for _, _, t in points if t.low > 0] or [1.0]
        highs = [max(t.high, t.mean) for _, _, t in points]
        ax.set_xlim(min(lows) / 1.8, max(highs) * 1.8)
    ax.set_ylim(-0.05, 1.15)
    ax.set_xlabel("mean total tokens per rollout (log scale; root + sub-calls)")
    ax.set_ylabel("accuracy (mean correctness)")
    ax.set_title(
        f"fathom-rlm {cfg['split']}: accuracy vs tokens, {cfg['n']} tasks, "
        f"{cfg['doc_tokens']:,}-token documents (95% bootstrap intervals)",
        fontsize=10,
    )
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(loc="center left", bbox_to_anchor=(1.01, 0.5), fontsize=8, frameon=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=150)
    plt.close(fig)
    return path


def _clusters(
    points: Sequence[tuple[str, float, float]],
) -> list[tuple[list[str], tuple[float, float]]]:
    """Group (name, tokens, accuracy) points lying within a few percent of each other on the
    chart (log tokens, linear accuracy); each group with its first member's position."""
    groups: list[tuple[list[str], tuple[float, float]]] = []
    for name, x, y in sorted(points, key=lambda p: (p[2], p[1])):
        for members, (gx, gy) in groups:
            if abs(math.log10(x) - math.log10(gx)) < 0.08 and abs(y - gy) < 0.04:
                members.append(name)
                break
        else:
            groups.append(([name], (x, y)))
    return groups


# --------------------------------------------------------------------------------- runs


def run_evaluation(
    contenders: Sequence[Contender],
    rows: Sequence[dict[str, Any]],
    out_dir: Path,
    *,
    config: dict[str, Any],
    caps: RolloutCaps | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Evaluate, summarise and write every output; returns the results document.

    `config` is recorded as-is in results.json (it needs at least `command`, `split`, `n`,
    `doc_tokens`, `seed` and `resamples` for the report).
    """
    names = [c.name for c in contenders]
    if len(set(names)) != len(names):
        raise ValueError("contender names must be unique")
    started = time.perf_counter()
    with registered_tasks(rows):
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
    results: dict[str, Any] = {
        "config": config,
        "environment": {
            "date": datetime.now(UTC).strftime("%Y-%m-%d"),
            "python": platform.python_version(),
            "platform": platform.platform(terse=True),
            "cpus": os.cpu_count(),
            "wall_s": round(wall_s, 1),
        },
        "tasks": [
            {"task": i, "seed": r["seed"], "family": r["family"], "question": r["question"]}
            for i, r in enumerate(rows)
        ],
        "policies": summarize(rollouts, names, resamples=resamples, seed=seed),
        "errors": [
            {k: r[k] for k in ("policy", "task", "family", "error")} for r in rollouts if r["error"]
        ],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    with (out_dir / "rollouts.jsonl").open("w") as f:
        for r in rollouts:
            f.write(json.dumps(r) + "\n")
    (out_dir / "results.json").write_text(json.dumps(results, indent=2) + "\n")
    (out_dir / "report.md").write_text(render_report(results))
    plot_accuracy_vs_tokens(results, out_dir / CHART_NAME)
    return results


def _parse_names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m envtools.evaluate",
        description="Evaluate fathom-rlm policies (scripted, or a model behind an OpenAI-"
        "compatible endpoint) on a fixed sample of the eval split; writes a Markdown report, "
        "results.json, rollouts.jsonl and an accuracy-versus-tokens chart.",
    )
    parser.add_argument("--n", type=int, default=DEFAULT_N, help="tasks (default %(default)s)")
    parser.add_argument(
        "--split",
        choices=("train", "eval", "heldout"),
        default=SPLIT,
        help="split the tasks are sampled from (default %(default)s)",
    )
    parser.add_argument(
        "--doc-tokens", type=int, default=DEFAULT_DOC_TOKENS, help="document length in tokens"
    )
    parser.add_argument(
        "--policies",
        type=_parse_names,
        default=None,
        help="comma-separated scripted policy names (default: every fathom policy; "
        "none when --model is given)",
    )
    parser.add_argument("--concurrency", type=int, default=DEFAULT_CONCURRENCY)
    parser.add_argument("--seed", type=int, default=0, help="task sample and bootstrap seed")
    parser.add_argument("--resamples", type=int, default=DEFAULT_RESAMPLES)
    parser.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="seconds per rollout"
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--model", help="model name served at --base-url")
    parser.add_argument("--base-url", help="OpenAI-compatible base URL, e.g. http://host:8000/v1")
    parser.add_argument(
        "--api-key-var",
        default="OPENAI_API_KEY",
        help="environment variable holding the API key (default %(default)s; a placeholder "
        "key is sent when it is unset, as local servers expect)",
    )
    parser.add_argument("--temperature", type=float, default=None)
    parser.add_argument("--max-tokens", type=int, default=None, help="per model call")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if (args.model is None) != (args.base_url is None):
        print("error: --model and --base-url go together", file=sys.stderr)
        return 2
    if args.resamples < 1000:
        print("error: --resamples must be at least 1000", file=sys.stderr)
        return 2
    names = args.policies
    if names is None:
        names = [] if args.model else list(fathom.POLICIES)
    try:
        contenders = scripted_contenders(names)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
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
    if not contenders:
        print("error: nothing to evaluate", file=sys.stderr)
        return 2
    command = "uv run python -m envtools.evaluate" + "".join(
        f" {a}" for a in (argv if argv is not None else sys.argv[1:])
    )
    config = {
        "command": command,
        "split": args.split,
        "n": args.n,
        "doc_tokens": args.doc_tokens,
        "seed": args.seed,
        "resamples": args.resamples,
        "concurrency": args.concurrency,
        "timeout_s": args.timeout,
        "contenders": {c.name: c.kind for c in contenders},
        "model": args.model,
        "base_url": args.base_url,
    }
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
        )
    finally:
        shutdown_fork_servers()
    print(render_report(results), end="")
    print(
        f"\nwrote {args.out}/report.md, results.json, rollouts.jsonl, {CHART_NAME} "
        f"in {results['environment']['wall_s']:.0f} s",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
