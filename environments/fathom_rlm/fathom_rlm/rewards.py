"""Reward and metrics of one fathom rollout: pure functions with stable names.

    reward = format_gate × correctness × (0.75 + 0.20 × token_budget + 0.05 × recursion_efficiency)

(the three weights are `RewardConfig` fields). The cost terms only count once the answer is
right. Ungated, "answer at once without tools" would collect the whole cost bonus for free and
beat honest attempts while accuracy is low. The formula, the oracle costs and the correctness
rules are explained in docs/rewards.md.

On a user row (`fathom_rlm.userdata`) a term the row cannot support (recursion without a stated
depth) is not applicable: it is reported as such (`<name>_applicable` = 0, the term 0) and its
weight is left out, the remaining weights renormalised to the same total.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from fathom_rlm.agent.answer import answer_blocks, single_answer
from fathom_rlm.agent.errors import ERROR_KINDS
from fathom_rlm.agent.record import RolloutRecord
from fathom_rlm.evidence import evidence_recall, evidence_seen, reading_depth
from fathom_rlm.tokens import CHARS_PER_TOKEN

if TYPE_CHECKING:
    from fathom_rlm.agent.caps import RolloutCaps
    from fathom_rlm.documents.tasks.record import TaskRecord

REWARD_NAME = "reward"
COMPONENT_NAMES = ("format_gate", "correctness", "token_budget", "recursion_efficiency")
ERROR_METRIC_PREFIX = "errors_"
BEHAVIOUR_NAMES = (
    "repl_seconds",
    "sub_call_seconds",
    "llm_batches",
    "largest_batch",
    *(ERROR_METRIC_PREFIX + kind for kind in ERROR_KINDS),
)
"""How the rollout went about it, never weighted: seconds of REPL code and of sub-calls, the
number of sub-call batches and the largest, and refused calls and failed cells by kind."""
TIMING_NAMES = ("repl_seconds", "sub_call_seconds")
"""The metrics a replay of the same replies does not reproduce."""
METRIC_NAMES = (
    "gated_token_budget",
    "gated_recursion_efficiency",
    "evidence_recall",
    "root_tokens",
    "sub_tokens",
    "total_tokens",
    "budget_tokens",
    "oracle_tokens",
    "tool_calls",
    "repl_calls",
    "llm_calls",
    "tool_errors",
    "depth_used",
    "depth_reached",
    "required_depth",
    "turns",
    "touched_document",
    "evidence_seen",
    "answer_chars",
    "evidence_applicable",
    "recursion_efficiency_applicable",
    "list_partial_credit",
    "list_partial_credit_applicable",
    "number_partial_credit",
    "number_partial_credit_applicable",
    *BEHAVIOUR_NAMES,
)
SCORE_NAMES = (REWARD_NAME, *COMPONENT_NAMES, *METRIC_NAMES)
"""Every key `score_rollout` returns, in a fixed order: the same keys for every row, so a mixed
batch averages key by key. A value that does not apply to a row is 0 with its `*_applicable`
flag 0, so the mean over the rows where it applies is sum(value) / sum(flag)."""


# Oracle plan cost per family beyond the reading every plan must do (see `oracle_tokens`):
# the median measured cost of the depth-matched reference policy over its correct rollouts on
# the first 150 `train` rows at 200K tokens, minus its unavoidable reading. Re-derive with
# `uv run python -m fathom_lab.ladder.calibrate --n 150 --doc-tokens 200000`.
ORACLE_FIXED_TOKENS: dict[str, int] = {
    "exact_id": 2_300,
    "single_hop": 8_300,
    "multi_hop": 28_000,
    "temporal": 16_600,
    "comparison": 25_100,
    "aggregation": 26_800,
}


@dataclass(frozen=True)
class RewardConfig:
    max_answer_chars: int = 64
    """Answers longer than this (stripped) score 0: no room for lists of candidates."""
    base_weight: float = 0.75
    """Reward of a correct, well-formed answer before the cost terms."""
    budget_weight: float = 0.20
    """Weight of `token_budget` (gated on correctness)."""
    recursion_weight: float = 0.05
    """Weight of `recursion_efficiency` (gated on correctness)."""
    budget_k: float = 3.0
    """Token budget is k × the oracle cost: at the oracle's cost the term is 1 − 1/k."""
    chars_per_token: float = float(CHARS_PER_TOKEN)
    """The one characters-per-token ratio the oracle's reading cost uses (the generator's and
    the rollout's fallback estimate use the same 4)."""
    oracle_fixed_tokens: Mapping[str, int] = field(
        default_factory=lambda: dict(ORACLE_FIXED_TOKENS)
    )
    """Oracle cost per family beyond the unavoidable reading (measured, see above)."""
    default_fixed_tokens: int = 10_000
    """Oracle fixed cost of a family missing from `oracle_fixed_tokens`."""
    max_slice_chars: int = 12_000
    """The rollout's slice cap (kept equal to the caps by `from_caps`)."""
    require_evidence: bool = True
    """Correctness also needs some supporting evidence to have entered a model's context
    (on rows that name their evidence)."""
    user_fixed_tokens: int = 10_000
    """User rows: the oracle's cost beyond reading (a search-then-read plan's overhead)."""
    user_reading_share: float = 0.5
    """User rows: the share of the document's tokens the oracle reads (see `oracle_tokens`)."""

    @classmethod
    def from_caps(cls, caps: RolloutCaps | None, **overrides: Any) -> RewardConfig:
        """The config whose limits that are also rollout caps (`max_answer_chars`,
        `max_slice_chars`) are taken from `caps`, so the scorer and the prompt agree. None
        means the default caps; `overrides` set any other field."""
        if caps is None:
            from fathom_rlm.agent.caps import RolloutCaps

            caps = RolloutCaps()
        return cls(
            **{"max_answer_chars": caps.max_answer_chars, "max_slice_chars": caps.max_slice_chars}
            | overrides
        )


# ------------------------------------------------------------------------------ components


def format_gate(final_message: str | None) -> float:
    """1 iff the final message (after any `</think>`) has exactly one `<answer>…</answer>` block."""
    return 1.0 if single_answer(final_message) is not None else 0.0


def _normalize(text: str) -> str:
    from fathom_rlm.documents import normalize_answer

    return normalize_answer(text)


def _contains_words(haystack: str, needle: str) -> bool:
    """Whole-word containment on normalised text ("ran" is not inside "orange")."""
    return bool(needle) and f" {needle} " in f" {haystack} "


def is_question_copy(answer: str, question: str) -> bool:
    """The normalised answer is a word-aligned part of the normalised question, or contains it."""
    a, q = _normalize(answer), _normalize(question)
    return bool(a) and bool(q) and (_contains_words(q, a) or _contains_words(a, q))


VETOES = ("no_answer", "untouched_document", "no_evidence_seen", "over_length", "copies_question")
"""Why an answer earns no correctness whatever it says, in the order they are checked."""


def _vetoes(
    answer: str | None,
    *,
    touched_document: bool,
    evidence_seen: bool,
    max_chars: int,
    copies_question: bool,
) -> list[str]:
    stripped = (answer or "").strip()
    fired = {
        "no_answer": not stripped,
        "untouched_document": not touched_document,
        "no_evidence_seen": not evidence_seen,
        "over_length": len(stripped) > max_chars,
        "copies_question": bool(stripped) and copies_question,
    }
    return [name for name in VETOES if fired[name]]


def _copies_synthetic_question(answer: str | None, gold: str, question: str) -> bool:
    """The copy veto of a synthetic row: it spares only the canonical gold itself, which the
    generator guarantees is not in the question."""
    stripped = (answer or "").strip()
    return (
        bool(question)
        and _normalize(stripped) != _normalize(gold)
        and is_question_copy(stripped, question)
    )


def _holds_user_question(answer: str | None, question: str) -> bool:
    """The copy veto of a user row: the answer holds the whole question (a user question may
    contain its own answer, such as a choice, so a part of it is graded)."""
    a = _normalize((answer or "").strip())
    return bool(a) and _contains_words(a, _normalize(question))


def correctness(
    answer: str | None,
    gold: str,
    aliases: Iterable[str] = (),
    *,
    question: str = "",
    touched_document: bool = True,
    evidence_seen: bool = True,
    max_answer_chars: int = 64,
) -> float:
    """1 iff the normalised answer equals the normalised gold or an alias, unless a veto fires.

    0 when the document was never touched, when no supporting evidence was ever shown (the
    caller decides, see `evidence_seen`), when the stripped answer is longer than
    `max_answer_chars`, or when it copies the question (`is_question_copy`); `VETOES` names
    them. The copy veto spares only the canonical gold itself, which the generator guarantees
    is not in the question.
    """
    vetoes = _vetoes(
        answer,
        touched_document=touched_document,
        evidence_seen=evidence_seen,
        max_chars=max_answer_chars,
        copies_question=_copies_synthetic_question(answer, gold, question),
    )
    if answer is None or vetoes:
        return 0.0
    a = _normalize(answer.strip())
    accepted = {_normalize(gold), *(_normalize(x) for x in aliases)}
    accepted.discard("")
    return 1.0 if a and a in accepted else 0.0


def token_budget(tokens: float, oracle: float, k: float = 3.0) -> float:
    """clip(1 − T / (k × T*), 0, 1)."""
    if oracle <= 0 or k <= 0:
        return 0.0
    return min(1.0, max(0.0, 1.0 - tokens / (k * oracle)))


def recursion_efficiency(depth_used: int, required_depth: int) -> float:
    """Depth used over depth required, capped at 1, falling by 1/2 per level beyond it.

    `depth_used` counts only levels whose sub-call read a supporting sentence (`reading_depth`),
    so fanning out to sub-agents that never read, or that read a few characters of anything,
    earns nothing. A depth-0 task is fully met at 0.
    """
    used, required = max(0, depth_used), max(0, required_depth)
    if used <= required:
        return 1.0 if required == 0 else used / required
    return max(0.0, 1.0 - (used - required) / 2)


def combined_reward(
    fmt: float,
    correct: float,
    budget: float,
    efficiency: float,
    config: RewardConfig | None = None,
    *,
    recursion_applicable: bool = True,
) -> float:
    """format × correctness × (base + budget term + recursion term). Without the recursion
    term (not applicable) the base and budget weights are scaled up to the same total."""
    cfg = config or RewardConfig()
    if not recursion_applicable:
        total = cfg.base_weight + cfg.budget_weight + cfg.recursion_weight
        rest = cfg.base_weight + cfg.budget_weight
        scale = total / rest if rest > 0 else 0.0
        return fmt * correct * scale * (cfg.base_weight + cfg.budget_weight * budget)
    return (
        fmt
        * correct
        * (cfg.base_weight + cfg.budget_weight * budget + cfg.recursion_weight * efficiency)
    )


# -------------------------------------------------------------------------- oracle costs


def _aggregation_region_chars(task: TaskRecord) -> int:
    """Characters of the task's `region` (the counted chapter range, as the generator built it),
    or the extent of the supporting spans for a task without one."""
    if task.region:
        start, end = task.region
        return end - start
    if not task.spans:
        return 0
    return max(e for _, e in task.spans) - min(s for s, _ in task.spans)


def oracle_tokens(task: TaskRecord, config: RewardConfig | None = None) -> int:
    """T*: the tokens a good plan spends on this task, counted like `budget_tokens` (every
    model token). Definition and measurement in docs/rewards.md.

    T* = fixed(family) + reading, where reading is the text no plan can skip: the task's counted
    `region` (every sentence of it must be judged), nothing otherwise (the fixed part already
    holds the few windows a search-then-read plan reads). fixed(family) is the
    measured median cost of the depth-matched reference on `train` minus its reading.

    A user row has no family plan to measure, and its question may need one passage or the
    whole text: T* = `user_fixed_tokens` + `user_reading_share` × the document's tokens. With
    k = 3 the term reaches 0 at 1.5 readings of the whole document plus 3× the overhead, so a
    plan that reads everything once still earns about 1/3, and one that searches and reads a
    few passages earns close to 1.
    """
    cfg = config or RewardConfig()
    if task.source == "user":
        return cfg.user_fixed_tokens + math.ceil(cfg.user_reading_share * task.doc_tokens)
    family = task.family
    fixed = int(cfg.oracle_fixed_tokens.get(family, cfg.default_fixed_tokens))
    reading = 0
    if task.region or family == "aggregation":
        region = _aggregation_region_chars(task)
        reading = math.ceil(region / cfg.chars_per_token)
    return fixed + reading


# ------------------------------------------------------------------------------- scoring


def user_correctness(
    answer: str | None,
    task: TaskRecord,
    *,
    touched_document: bool = True,
    evidence_seen: bool = True,
    max_answer_chars: int = 64,
) -> tuple[float, float]:
    """(correctness, partial credit) of a user row's answer: the row's kind grades it
    (`fathom_rlm.userdata.grading`), under the synthetic vetoes: an untouched document, no
    evidence seen (rows with evidence), an answer over the row's cap (`answer_char_cap`), and
    an answer that holds the whole question. A user question may contain its own answer (the
    choices of a multiple-choice row), so an answer that is a part of the question is graded."""
    from fathom_rlm.userdata.grading import grade_answer

    vetoes = correctness_vetoes(
        answer,
        task,
        touched_document=touched_document,
        evidence_seen=evidence_seen,
        max_answer_chars=max_answer_chars,
    )
    if answer is None or vetoes:
        return 0.0, 0.0
    grade = grade_answer(answer.strip(), task)
    return float(grade.correct), float(grade.partial or 0.0)


def correctness_vetoes(
    answer: str | None,
    task: TaskRecord,
    *,
    touched_document: bool,
    evidence_seen: bool,
    max_answer_chars: int = 64,
) -> list[str]:
    """The vetoes (`VETOES`) that fire for this answer on this row: each one alone makes
    `graded_answer` pay no correctness, whatever the answer says. `evidence_seen` is the
    reward's (True on a user row that names no evidence); a user row's length cap is
    `answer_char_cap` of `max_answer_chars`."""
    if task.source == "user":
        from fathom_rlm.userdata.grading import answer_char_cap

        max_chars = answer_char_cap(task, max_answer_chars)
        copies = _holds_user_question(answer, task.question)
    else:
        max_chars = max_answer_chars
        copies = _copies_synthetic_question(answer, task.answer, task.question)
    return _vetoes(
        answer,
        touched_document=touched_document,
        evidence_seen=evidence_seen,
        max_chars=max_chars,
        copies_question=copies,
    )


def graded_answer(
    answer: str | None,
    task: TaskRecord,
    touched_document: bool,
    evidence_seen: bool,
    config: RewardConfig,
) -> tuple[float, float]:
    """(correctness, partial credit: a list's item F1 or a number's `number_credit_base **
    |error|`): a user row graded by its answer kind, a synthetic row by its gold and aliases
    (no partial credit)."""
    if task.source == "user":
        return user_correctness(
            answer,
            task,
            touched_document=touched_document,
            evidence_seen=evidence_seen,
            max_answer_chars=config.max_answer_chars,
        )
    correct = correctness(
        answer,
        task.answer,
        task.aliases,
        question=task.question,
        touched_document=touched_document,
        evidence_seen=evidence_seen,
        max_answer_chars=config.max_answer_chars,
    )
    return correct, 0.0


def score_rollout(
    record: RolloutRecord,
    task: TaskRecord,
    config: RewardConfig | None = None,
    *,
    document: str | None = None,
) -> dict[str, float]:
    """Every reward component and metric for one rollout, under the names in `SCORE_NAMES`.

    `document` is the task's document text; if omitted it is regenerated from the task's seed
    (cached) or taken from the document store (a user row); only the evidence terms need it.
    """
    cfg = config or RewardConfig()
    spans = task.spans
    if spans and document is None:
        from fathom_rlm.documents.store import task_document

        document = task_document(task)
    fmt = format_gate(record.final_message)
    answer = single_answer(record.final_message)
    # A synthetic row always has its evidence and depth; a user row may state neither.
    evidence_applies = bool(spans) or task.source != "user"
    recursion_applies = task.depth is not None
    seen = evidence_seen(record, spans, document or "") if cfg.require_evidence else True
    correct, partial = graded_answer(
        answer, task, record.touched_document, seen or not evidence_applies, cfg
    )
    oracle = oracle_tokens(task, cfg)
    budget = token_budget(record.budget_tokens, oracle, cfg.budget_k)
    required = task.depth if task.depth is not None else 0
    efficiency = (
        recursion_efficiency(reading_depth(record, spans, document or ""), required)
        if recursion_applies
        else 0.0
    )
    gate = fmt * correct
    number_credit = task.answer_kind == "number" and task.number_credit_base is not None
    shown_answer = answer if answer is not None else " ".join(answer_blocks(record.final_message))
    scores = {
        REWARD_NAME: combined_reward(
            fmt, correct, budget, efficiency, cfg, recursion_applicable=recursion_applies
        ),
        "format_gate": fmt,
        "correctness": correct,
        "token_budget": budget,
        "recursion_efficiency": efficiency,
        "gated_token_budget": gate * budget,
        "gated_recursion_efficiency": gate * efficiency,
        "evidence_recall": evidence_recall(record, spans, document or "")
        if evidence_applies
        else 0.0,
        "root_tokens": record.root_tokens,
        "sub_tokens": record.sub_tokens,
        "total_tokens": record.total_tokens,
        "budget_tokens": record.budget_tokens,
        "oracle_tokens": oracle,
        "tool_calls": record.total_tool_calls,
        "repl_calls": record.repl_calls,
        "llm_calls": record.llm_calls,
        "tool_errors": record.tool_errors,
        "depth_used": record.depth_used,
        "depth_reached": record.depth_reached,
        "required_depth": required,
        "turns": record.turns,
        "touched_document": record.touched_document,
        "evidence_seen": seen if evidence_applies else False,
        "answer_chars": len(shown_answer.strip()),
        "evidence_applicable": evidence_applies,
        "recursion_efficiency_applicable": recursion_applies,
        "list_partial_credit": fmt * partial if task.answer_kind == "list" else 0.0,
        "list_partial_credit_applicable": task.answer_kind == "list",
        "number_partial_credit": fmt * partial if number_credit else 0.0,
        "number_partial_credit_applicable": number_credit,
        "repl_seconds": record.repl_seconds,
        "sub_call_seconds": record.sub_call_seconds,
        "llm_batches": len(record.llm_batches),
        "largest_batch": max(record.llm_batches, default=0),
        **{ERROR_METRIC_PREFIX + k: record.errors_by_kind.get(k, 0) for k in ERROR_KINDS},
    }
    return {name: float(scores[name]) for name in SCORE_NAMES}
