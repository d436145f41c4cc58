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
from fathom_rlm.userdata import USER_FAMILY

from envtools.stats import DEFAULT_RESAMPLES, Estimate, mean_ci
from fathom_lab import policies as fathom

CHART_NAME = "accuracy_vs_tokens.png"
REWARD_KEYS: tuple[str, ...] = (REWARD_NAME, *COMPONENT_NAMES)
GATED_KEYS: tuple[str, ...] = ("gated_token_budget", "gated_recursion_efficiency")
REPORT_REWARD_KEYS: tuple[str, ...] = (REWARD_NAME, "format_gate", "correctness", *GATED_KEYS)
"""The report's reward columns: the cost terms as the reward pays them (times format gate and
correctness). Raw, they are near 1 for a rollout that spent nothing because it never read the
document, which would look like success; the raw terms are shown apart, only over rollouts that
touched the document (`UNGATED_KEYS`), and stay in results.json."""
UNGATED_KEYS: tuple[str, ...] = ("token_budget", "recursion_efficiency")
METRIC_KEYS: tuple[str, ...] = ("total_tokens", "tool_calls", "evidence_recall", "depth_used")
USER_METRIC_KEYS: tuple[str, ...] = (*METRIC_KEYS, "list_partial_credit", "number_partial_credit")
"""The metrics of a run on user rows: the partial credit of list rows and of number rows that
give one (OOLONG's) too."""
APPLICABLE: dict[str, str] = {
    "recursion_efficiency": "recursion_efficiency_applicable",
    "gated_recursion_efficiency": "recursion_efficiency_applicable",
    "evidence_recall": "evidence_applicable",
    "list_partial_credit": "list_partial_credit_applicable",
    "number_partial_credit": "number_partial_credit_applicable",
}
"""A score that does not apply to every row, and its flag: it is averaged over the rows where
it applies (a user row without a depth or evidence says nothing about them)."""
REPORT_FAMILIES: tuple[str, ...] = (*FAMILIES, USER_FAMILY)


# ----------------------------------------------------------------------------- summaries


def summarize(
    results: Sequence[dict[str, Any]],
    policy_names: Sequence[str],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    metric_keys: Sequence[str] = METRIC_KEYS,
) -> dict[str, Any]:
    """Per policy: reward and components over all rollouts (a failed rollout scores 0), metrics
    over completed rollouts, correctness by family, and error counts; a score of `APPLICABLE`
    only over the rollouts where it applies. Intervals are 95% percentile-bootstrap intervals
    over tasks."""

    def ci(values: Sequence[float]) -> dict[str, Any]:
        return mean_ci(values, resamples=resamples, seed=seed).to_dict()

    policies: dict[str, Any] = {}
    for name in policy_names:
        rows = [r for r in results if r["policy"] == name]
        done = [r for r in rows if r["error"] is None]
        families: dict[str, Any] = {}
        tokens: dict[str, Any] = {}
        for family in REPORT_FAMILIES:
            values = [_score(r, "correctness") for r in rows if r["family"] == family]
            if values:
                families[family] = ci(values)
            spent = [r["scores"]["total_tokens"] for r in done if r["family"] == family]
            if spent:
                tokens[family] = ci(spent)
        policies[name] = {
            "rollouts": len(rows),
            "errors": len(rows) - len(done),
            "rewards": {
                k: ci([_score(r, k) for r in rows if _applies(r, k)])
                for k in (*REWARD_KEYS, *GATED_KEYS)
            },
            "ungated": _ungated(done, ci),
            "metrics": {
                k: ci([r["scores"][k] for r in done if _applies(r, k)]) for k in metric_keys
            },
            "tool_errors": sum(int(r["scores"]["tool_errors"]) for r in done),
            "ended_by": dict(Counter(r["ended_by"] or "error" for r in rows)),
            "by_family": families,
            "tokens_by_family": tokens,
        }
    return policies


def _ungated(done: Sequence[dict[str, Any]], ci: Any) -> dict[str, Any]:
    """The share of completed rollouts that touched the document, and the raw cost terms over
    those only (a rollout that never read the document spends nothing: its raw budget is ~1)."""
    touched = [r for r in done if r["scores"].get("touched_document", 0.0) > 0]
    out = {"touched_document": ci([float(r["scores"].get("touched_document", 0.0)) for r in done])}
    for key in UNGATED_KEYS:
        out[key] = ci([r["scores"][key] for r in touched if _applies(r, key)])
    return out


def _applies(result: dict[str, Any], key: str) -> bool:
    """Whether the score `key` applies to this rollout's row. A failed rollout has no scores:
    its row's depth says whether the recursion term applies; it counts for the others."""
    flag = APPLICABLE.get(key)
    if flag is None:
        return True
    if result["scores"] is not None:
        return bool(result["scores"].get(flag, 1.0))
    return key != "recursion_efficiency" or result.get("depth") is not None


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


def _command(cfg: dict[str, Any]) -> list[str]:
    """The command, and when and where it ran (a report is a dated results page)."""
    lines = [f"Command: `{cfg['command']}`", ""]
    if (where := cfg.get("environment")) and "machine" in where:
        at = f" at commit {where['commit']}" if where.get("commit") else ""
        when = f"Measured on {where['date']}{at} ({where['machine']}), in {where['wall_s']:.0f} s."
        lines += [when, ""]
    return lines


def _header(cfg: dict[str, Any], family_counts: Counter[str]) -> list[str]:
    if cfg.get("data"):
        return _user_header(cfg)
    return [
        "# fathom-rlm evaluation",
        "",
        *_command(cfg),
        f"{cfg['n']} tasks of the `{cfg['split']}` split (stratified by family, seed "
        f"{cfg['seed']}) on {cfg['doc_tokens']:,}-token documents; "
        + ", ".join(f"{f} {family_counts[f]}" for f in FAMILIES if family_counts[f])
        + ". Each cell is the mean with its 95% percentile-bootstrap interval over tasks "
        f"({cfg['resamples']:,} resamples, seed {cfg['seed']}).",
    ]


def _user_header(cfg: dict[str, Any]) -> list[str]:
    kinds = cfg.get("answer_kinds", {})
    return [
        "# fathom-rlm evaluation",
        "",
        *_command(cfg),
        f"{cfg['n']} user rows from `{cfg['data']}` (format `{cfg.get('format', 'native')}`); "
        + "answer kinds: "
        + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))
        + ". Each cell is the mean with its 95% percentile-bootstrap interval over tasks "
        f"({cfg['resamples']:,} resamples, seed {cfg['seed']}). A score that does not apply to a "
        "row (recursion_efficiency without a stated depth, evidence recall without evidence, "
        "list partial credit on other kinds) is averaged over the rows where it applies, and "
        "the reward leaves its weight out (environments/fathom_rlm/docs/rewards.md).",
        *_choice_floor(cfg),
    ]


def _choice_floor(cfg: dict[str, Any]) -> list[str]:
    floor = cfg.get("choice_floor")
    if not floor:
        return []
    veto = (
        f"; {floor.get('with_evidence')} of them have evidence, where the evidence veto pays a "
        "letter nothing unless its passage was read"
    )
    return [
        "",
        f"Choice rows ({floor['rows']}): a letter picked without reading earns 1/k on a row of k "
        f"choices{veto if floor.get('with_evidence') else ''}: {floor['mean']:.3f} on average "
        "here. That is the floor (`fathom-blind-choice`, which touches the document once and "
        "reads nothing), and a reader is worth what it earns above it.",
    ]


OTHER_ROLES = {
    "model": "a model reached at an OpenAI-compatible endpoint: the policy under test",
    "other": "not a registered fathom policy",
}
ROLE_COLORS = {
    "honest": "#1a9641",
    "rung": "#2c7bb6",
    "baseline": "#e66101",
    "attack": "#ca0020",
    "model": "#7b3294",
    "other": "#636363",
}


def legend(results: dict[str, Any]) -> list[tuple[int, str, str, str]]:
    """(number, policy, role, what it shows) for every policy in report order; the numbers label
    the chart. Roles and descriptions come from the fathom policy cards; a model behind an
    endpoint is `model` even when it shares a scripted policy's name."""
    kinds = results["config"].get("contenders", {})
    rows = []
    for number, name in enumerate(results["policies"], 1):
        card = fathom.card_of(name) if kinds.get(name, "scripted") == "scripted" else None
        if card is not None:
            rows.append((number, name, card.role, card.shows))
        else:
            role = "model" if kinds.get(name) == "model" else "other"
            rows.append((number, name, role, OTHER_ROLES[role]))
    return rows


def _legend_table(results: dict[str, Any]) -> list[str]:
    rows = legend(results)
    present = {role for _, _, role, _ in rows}
    on_user_rows = bool(results["config"].get("data"))
    roles = {**(fathom.ROLES_ON_USER_ROWS if on_user_rows else fathom.ROLES), **OTHER_ROLES}
    intro = "Each policy's role; the numbers label the chart. " + "; ".join(
        f"**{role}**: {text}" for role, text in roles.items() if role in present
    )
    return _table(
        "Policies",
        intro + ".",
        ["#", "policy", "role", "what it does"],
        [[str(n), name, role, shows] for n, name, role, shows in rows],
    )


def _rewards_table(policies: dict[str, Any]) -> list[str]:
    rows = [
        [name, str(p["rollouts"]), str(p["errors"])]
        + [_estimate(p["rewards"][k]).format(3) for k in REPORT_REWARD_KEYS]
        for name, p in policies.items()
    ]
    return _table(
        "Reward and components",
        "A failed rollout (see Errors) scores 0 on every component. The cost terms are shown as "
        "the reward pays them, gated: times format_gate and correctness "
        "(environments/fathom_rlm/docs/rewards.md); the raw terms are in the next table.",
        ["policy", "rollouts", "errors", *REPORT_REWARD_KEYS],
        rows,
    )


def _ungated_table(policies: dict[str, Any]) -> list[str]:
    rows = []
    for name, p in policies.items():
        ungated = p.get("ungated")
        if ungated is None:  # results.json written before the raw terms were kept apart
            continue
        rows.append(
            [name, _estimate(p["rewards"]["format_gate"]).format(3)]
            + [_estimate(ungated["touched_document"]).format(3)]
            + [_with_n(_estimate(ungated[k])) for k in UNGATED_KEYS]
        )
    return _table(
        "Cost terms before the gate",
        "The raw terms, beside the format-gate pass rate and the share of completed rollouts "
        "that touched the document, and over those rollouts only (n in brackets): a rollout "
        "that never read the document spends almost nothing, so its raw budget is near 1 and "
        "its recursion term 1 on a depth-0 row; counted, they would read as success. Neither "
        "pays anything unless the answer is correct.",
        ["policy", "format_gate", "touched document", *(f"{k} (raw)" for k in UNGATED_KEYS)],
        rows,
    )


def _with_n(e: Estimate) -> str:
    return "n/a (n 0)" if e.n == 0 else f"{e.format(3)} (n {e.n})"


PARTIAL_CREDITS = {"list_partial_credit": "list", "number_partial_credit": "number"}
"""The partial-credit metrics of user rows and the names of their columns."""


def _partial_columns(policies: dict[str, Any]) -> list[str]:
    """The partial-credit columns of a run: lists' on any run on user rows, numbers' when some
    row gives number credit (an OOLONG numeric row)."""
    metrics = [p["metrics"] for p in policies.values()]
    shown = ["list_partial_credit"] if any("list_partial_credit" in m for m in metrics) else []
    if any(m.get("number_partial_credit", {}).get("n") for m in metrics):
        shown.append("number_partial_credit")
    return shown


def _metrics_row(name: str, p: dict[str, Any], partial: Sequence[str] = ()) -> list[str]:
    m = p["metrics"]
    extra = [_estimate(m[key]).format(2) if key in m else "n/a" for key in partial]
    return [
        name,
        _fmt_count(_estimate(m["total_tokens"])),
        _fmt_count(_estimate(m["tool_calls"]), 1),
        _estimate(m["evidence_recall"]).format(2),
        _estimate(m["depth_used"]).format(2) if "depth_used" in m else "n/a",
        str(p["tool_errors"]),
        ", ".join(f"{k} {v}" for k, v in sorted(p["ended_by"].items())),
        *extra,
    ]


def _metrics_table(policies: dict[str, Any]) -> list[str]:
    partial = _partial_columns(policies)
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
            *(f"{PARTIAL_CREDITS[key]} partial credit" for key in partial),
        ],
        [_metrics_row(name, p, partial) for name, p in policies.items()],
    )


def _family_tables(policies: dict[str, Any], family_counts: Counter[str]) -> list[str]:
    families = [f for f in REPORT_FAMILIES if family_counts[f]]
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
    lines = _header({**results["config"], "environment": results.get("environment")}, family_counts)
    lines += _legend_table(results)
    lines += _rewards_table(policies)
    lines += _ungated_table(policies)
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
    """Mean correctness against mean total tokens per policy, both with their intervals, saved
    as a PNG; draws nothing (and returns None) when no policy has a point to show."""
    fig = accuracy_vs_tokens_figure(results)
    if fig is None:
        return None
    import matplotlib.pyplot as plt

    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=CHART_DPI)
    plt.close(fig)
    return path


CHART_DPI = 150


def accuracy_vs_tokens_figure(results: dict[str, Any]) -> Any:
    """The chart as a matplotlib figure, or None when no policy has a point to show.

    Colour is the policy's role, the marker tells policies of one role apart, and each point is
    labelled with its number in the legend (the report's Policies table uses the same numbers);
    points on one spot share one label, and no label covers another label or a marker."""
    points = chart_points(results)
    if not points:
        return None
    import matplotlib

    matplotlib.use("Agg")  # files only; never needs a display
    import matplotlib.pyplot as plt

    numbered = {name: (number, role) for number, name, role, _ in legend(results)}
    fig, ax = plt.subplots(figsize=(12, 6.6), dpi=CHART_DPI, layout="constrained")
    handles = _draw_points(ax, points, numbered)
    _decorate(ax, points, results["config"])
    fig.legend(
        handles=handles,
        loc="outside right center",
        fontsize=7.5,
        frameon=False,
        handletextpad=0.4,
    )
    # Fix the layout first: the labels are placed in screen space, around what is drawn.
    fig.canvas.draw()
    fig.set_layout_engine("none")
    _label_points(ax, [(numbered[n][0], t.mean, a.mean) for n, a, t in points])
    return fig


_MARKERS = "osD^v<>pPXh*"


def _draw_points(
    ax: Any, points: list[tuple[str, Estimate, Estimate]], numbered: dict[str, tuple[int, str]]
) -> list[Any]:
    """One marker with error bars per policy; the legend's handles, grouped by role with the
    role's name above each group."""
    from matplotlib.lines import Line2D

    by_role: dict[str, list[Any]] = {}
    for name, acc, tok in points:
        number, role = numbered[name]
        group = by_role.setdefault(role, [])
        marker, color = _MARKERS[len(group) % len(_MARKERS)], ROLE_COLORS[role]
        # Past the last shape a role's markers come round again hollow.
        face = "white" if len(group) // len(_MARKERS) % 2 else color
        ax.errorbar(
            tok.mean,
            acc.mean,
            xerr=[[tok.mean - tok.low], [tok.high - tok.mean]],
            yerr=[[acc.mean - acc.low], [acc.high - acc.mean]],
            fmt=marker,
            color=color,
            markersize=7,
            markerfacecolor=face,
            markeredgecolor="white" if face == color else color,
            markeredgewidth=0.6 if face == color else 1.2,
            capsize=3,
            linewidth=1,
            alpha=0.9,
            zorder=3 if role == "honest" else 2,  # the bar every other point is read against
        )
        label = f"{number:>2}  {name}  (acc {acc.mean:.2f}, {tok.mean:,.0f} tok)"
        handle = Line2D([], [], marker=marker, color=color, markerfacecolor=face, label=label)
        handle.set_linestyle("none")
        group.append(handle)
    handles: list[Any] = []
    for role in ROLE_COLORS:
        if role in by_role:
            handles.append(Line2D([], [], linestyle="none", label=role.upper()))
            handles += by_role[role]
    return handles


def _decorate(ax: Any, points: list[tuple[str, Estimate, Estimate]], cfg: dict[str, Any]) -> None:
    ax.set_xscale("log")
    lows = [min(t.low, t.mean) for _, _, t in points if t.low > 0] or [1.0]
    highs = [max(t.high, t.mean) for _, _, t in points]
    ax.set_xlim(min(lows) / 1.8, max(highs) * 1.8)
    ax.set_ylim(-0.08, 1.15)
    ax.set_xlabel("mean total tokens per rollout (log scale; root + sub-calls)")
    ax.set_ylabel("accuracy (mean correctness)")
    source = (
        f"user rows ({Path(cfg['data']).name})"
        if cfg.get("data")
        else f"{cfg['split']}: accuracy vs tokens, {cfg['n']} tasks, "
        f"{cfg['doc_tokens']:,}-token documents"
    )
    if cfg.get("data"):
        source += f": accuracy vs tokens, {cfg['n']} tasks"
    ax.set_title(f"fathom-rlm {source} (95% bootstrap intervals)", fontsize=10)
    ax.grid(True, which="both", alpha=0.3)


# Where a label may go, in points from its marker, nearest first: above, beside, below, then
# farther out (a thin line then leads back to the marker).
_SPOTS = (
    (0, 7, "center", "bottom"),
    (7, 0, "left", "center"),
    (-7, 0, "right", "center"),
    (0, -7, "center", "top"),
    (0, 19, "center", "bottom"),
    (8, 11, "left", "bottom"),
    (-8, 11, "right", "bottom"),
    (0, -19, "center", "top"),
    (8, -11, "left", "top"),
    (-8, -11, "right", "top"),
    (0, 31, "center", "bottom"),
    (0, -31, "center", "top"),
    (22, 0, "left", "center"),
    (-22, 0, "right", "center"),
)


def _label_points(ax: Any, points: Sequence[tuple[int, float, float]]) -> list[Any]:
    """Label each cluster of (number, tokens, accuracy) points with its numbers, at the first
    spot of _SPOTS where the label stays inside the axes and covers no marker or label placed
    before it (the first spot when none is free). Returns the labels."""
    renderer = ax.figure.canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    pad = 4.0  # pixels kept clear around every marker and label
    taken = []
    for _, x, y in points:
        cx, cy = ax.transData.transform((x, y))
        taken.append((cx - pad - 5, cy - pad - 5, cx + pad + 5, cy + pad + 5))
    labels = []
    for members, (x, y) in _clusters([(str(n), x, y) for n, x, y in points]):
        text = number_ranges(sorted(int(m) for m in members))
        for dx, dy, ha, va in _SPOTS:
            label = _annotate(ax, text, (x, y), (dx, dy), ha, va)
            box = label.get_window_extent(renderer)
            rect = (box.x0 - pad, box.y0 - pad, box.x1 + pad, box.y1 + pad)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0
            if inside and box.y1 <= frame.y1 and not any(_overlap(rect, t) for t in taken):
                break
            label.remove()
        else:
            dx, dy, ha, va = _SPOTS[0]
            label = _annotate(ax, text, (x, y), (dx, dy), ha, va)
            box = label.get_window_extent(renderer)
            rect = (box.x0, box.y0, box.x1, box.y1)
        taken.append(rect)
        labels.append(label)
    return labels


def _annotate(
    ax: Any, text: str, xy: tuple[float, float], offset: tuple[float, float], ha: str, va: str
) -> Any:
    far = max(abs(offset[0]), abs(offset[1])) > 10
    return ax.annotate(
        text,
        xy,
        xytext=offset,
        textcoords="offset points",
        ha=ha,
        va=va,
        fontsize=7.5,
        fontweight="bold",
        color="0.15",
        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8},
        arrowprops={"arrowstyle": "-", "color": "0.5", "lw": 0.6} if far else None,
    )


def _overlap(a: tuple[float, ...], b: tuple[float, ...]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def number_ranges(numbers: list[int]) -> str:
    """[1, 2, 3, 5] -> "1-3, 5": consecutive numbers as a range."""
    runs: list[list[int]] = []
    for n in numbers:
        if runs and n == runs[-1][-1] + 1:
            runs[-1].append(n)
        else:
            runs.append([n])
    return ", ".join(f"{r[0]}" if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


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
