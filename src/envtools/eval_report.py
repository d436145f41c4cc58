"""The evaluation's summaries: per-policy reward, components and metrics with 95% bootstrap
intervals, the Markdown report and the accuracy-versus-tokens chart."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fathom_rlm.documents import FAMILIES
from fathom_rlm.rewards import COMPONENT_NAMES, REWARD_NAME
from fathom_rlm.tokens import CHARS_PER_TOKEN

from envtools.stats import DEFAULT_RESAMPLES, Estimate, mean_ci

CHART_NAME = "accuracy_vs_tokens.png"
REWARD_KEYS: tuple[str, ...] = (REWARD_NAME, *COMPONENT_NAMES)
METRIC_KEYS: tuple[str, ...] = ("total_tokens", "tool_calls", "evidence_recall", "depth_used")


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


def _table(title: str, intro: str, columns: list[str], rows: list[list[str]]) -> list[str]:
    """A report section: heading, one paragraph, then a table with one row per policy."""
    lines = ["", f"## {title}", "", intro, "", "| " + " | ".join(columns) + " |"]
    lines.append("|" + "---|" * len(columns))
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _header(cfg: dict[str, Any], family_counts: Counter[str]) -> list[str]:
    return [
        "# fathom-rlm evaluation",
        "",
        f"Command: `{cfg['command']}`",
        "",
        f"{cfg['n']} tasks of the `{cfg['split']}` split (stratified by family, seed "
        f"{cfg['seed']}) on {cfg['doc_tokens']:,}-token documents; "
        + ", ".join(f"{f} {family_counts[f]}" for f in FAMILIES if family_counts[f])
        + ". Each cell is the mean with its 95% percentile-bootstrap interval over tasks "
        f"({cfg['resamples']:,} resamples, seed {cfg['seed']}).",
    ]


def _rewards_table(policies: dict[str, Any]) -> list[str]:
    rows = [
        [name, str(p["rollouts"]), str(p["errors"])]
        + [_estimate(p["rewards"][k]).format(3) for k in REWARD_KEYS]
        for name, p in policies.items()
    ]
    return _table(
        "Reward and components",
        "A failed rollout (see Errors) scores 0 on every component.",
        ["policy", "rollouts", "errors", *REWARD_KEYS],
        rows,
    )


def _metrics_row(name: str, p: dict[str, Any]) -> list[str]:
    m = p["metrics"]
    return [
        name,
        _fmt_count(_estimate(m["total_tokens"])),
        _fmt_count(_estimate(m["tool_calls"]), 1),
        _estimate(m["evidence_recall"]).format(2),
        _estimate(m["depth_used"]).format(2) if "depth_used" in m else "n/a",
        str(p["tool_errors"]),
        ", ".join(f"{k} {v}" for k, v in sorted(p["ended_by"].items())),
    ]


def _metrics_table(policies: dict[str, Any]) -> list[str]:
    return _table(
        "Metrics",
        "Over completed rollouts. Tokens are every model call of the rollout (root and sub-calls,"
        f" prompt and completion; characters / {CHARS_PER_TOKEN} where no usage is reported)."
        " Tool calls count every call at any depth, bad ones included; tool errors are the calls"
        " answered with an error.",
        [
            "policy",
            "total tokens",
            "tool calls",
            "evidence recall",
            "depth used",
            "tool errors",
            "ended by",
        ],
        [_metrics_row(name, p) for name, p in policies.items()],
    )


def _family_tables(policies: dict[str, Any], family_counts: Counter[str]) -> list[str]:
    families = [f for f in FAMILIES if family_counts[f]]
    correct = [
        [name]
        + [f"{p['by_family'][f]['mean']:.2f}" if f in p["by_family"] else "n/a" for f in families]
        for name, p in policies.items()
    ]
    spent = [
        [name]
        + [
            f"{p['tokens_by_family'][f]['mean']:,.0f}"
            if f in p.get("tokens_by_family", {})
            else "n/a"
            for f in families
        ]
        for name, p in policies.items()
    ]
    return _table(
        "Correctness by family",
        "Mean correctness (tasks per family in the header); intervals are in results.json.",
        ["policy"] + [f"{f} ({family_counts[f]})" for f in families],
        correct,
    ) + _table(
        "Tokens by family",
        "Mean total tokens per completed rollout (every model call, root and sub-calls).",
        ["policy", *families],
        spent,
    )


def _errors_section(results: dict[str, Any]) -> list[str]:
    lines = ["", "## Errors", ""]
    errors = results.get("errors", [])
    if not errors:
        lines.append("No rollout failed.")
    else:
        lines += ["| policy | task | family | error |", "|---|---|---|---|"]
        for e in errors:
            text = e["error"].replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {e['policy']} | {e['task']} | {e['family']} | {text} |")
    if results.get("chart", CHART_NAME):
        lines += ["", f"Chart: `{CHART_NAME}` (accuracy against mean total tokens per rollout)."]
    else:
        lines += ["", "No chart: no policy completed a rollout with a token count."]
    return lines


def render_report(results: dict[str, Any]) -> str:
    """The Markdown report of a `results.json` document."""
    policies = results["policies"]
    family_counts = Counter(t["family"] for t in results["tasks"])
    lines = _header(results["config"], family_counts)
    lines += _rewards_table(policies)
    lines += _metrics_table(policies)
    lines += _family_tables(policies, family_counts)
    lines += _errors_section(results)
    return "\n".join(lines) + "\n"


def chart_points(results: dict[str, Any]) -> list[tuple[str, Estimate, Estimate]]:
    """(policy, accuracy, total tokens) for every policy with completed rollouts that used
    tokens; an empty list means there is nothing to draw."""
    points = []
    for name, p in results["policies"].items():
        acc, tok = _estimate(p["rewards"]["correctness"]), _estimate(p["metrics"]["total_tokens"])
        if tok.n and tok.mean > 0:
            points.append((name, acc, tok))
    return points


def plot_accuracy_vs_tokens(results: dict[str, Any], path: Path) -> Path | None:
    """Mean correctness against mean total tokens per policy, both with their intervals; draws
    nothing (and returns None) when no policy has a point to show."""
    points = chart_points(results)
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    cfg = results["config"]
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
