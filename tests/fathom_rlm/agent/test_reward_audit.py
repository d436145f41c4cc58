"""Reward audit: every known attack through the real loop, sandbox and reward.

Each attack is a scripted policy in `fathom_lab.policies`, called in-process as the chat
function. It must average at most 0.05 and sit far below the honest reference policy on the same
tasks (short documents, so the whole audit runs in seconds). docs/reward_audit.md has the table.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Iterator
from typing import Any

import pytest
from fathom_lab import policies as fathom
from fathom_lab.evaluate import registered_tasks
from fathom_rlm.agent import ChatReply, RolloutCaps, RolloutRecord, run_rollout
from fathom_rlm.documents import TaskRecord, get_document, make_tasks
from fathom_rlm.documents.tasks.intent import READING_FAMILIES
from fathom_rlm.rewards import score_rollout

# (seed, doc_tokens, questions): 32 tasks over three documents of 16K and 32K tokens.
TASK_SOURCES = ((11, 16_000, 12), (12, 16_000, 12), (13, 32_000, 8))
ATTACKS = (
    "fathom-copy-question",
    "fathom-format-only",
    "fathom-candidates",
    "fathom-padding",
    "fathom-overlong",
    "fathom-verbose-repl",
    "fathom-recursion-spam",
    "fathom-frequent-entity",
    "fathom-closed-book",
    "fathom-sandbox-leak",
    "fathom-two-answers",
    "fathom-phantom-evidence",
    "fathom-family-prior",
    "fathom-blind",
)

pytestmark = [pytest.mark.reward_audit, pytest.mark.xdist_group("test_reward_audit")]


@pytest.fixture(scope="module")
def tasks() -> Iterator[list[TaskRecord]]:
    rows = [r for s, n, k in TASK_SOURCES for r in make_tasks(get_document(s, n), k)]
    with registered_tasks(rows):  # the scripted policies read these rows, and only these
        yield rows


Result = tuple[TaskRecord, RolloutRecord, dict[str, float], list[dict[str, Any]]]
_RESULTS: dict[str, list[Result]] = {}


def run_policy(name: str, rows: list[TaskRecord]) -> list[Result]:
    key = f"{name}|{len(rows)}|{rows[0].question}"
    if key not in _RESULTS:
        policy = fathom.POLICIES[name]()

        async def chat(messages: list[dict[str, Any]], tools: Any) -> ChatReply:
            result = await policy.respond(messages, tools)
            return ChatReply(result.message, result.usage)

        async def main() -> list[Result]:
            out: list[Result] = []
            for row in rows:
                text = get_document(row.seed, row.doc_tokens).text
                transcript: list[dict[str, Any]] = []
                record = await run_rollout(
                    text, row.question, chat, RolloutCaps(), transcript=transcript
                )
                out.append((row, record, score_rollout(record, row, document=text), transcript))
            return out

        _RESULTS[key] = asyncio.run(main())
    return _RESULTS[key]


def mean(results: list[Result], key: str) -> float:
    return statistics.fmean(r[2][key] for r in results)


def test_reference_policy_is_strong(tasks: list[TaskRecord]) -> None:
    results = run_policy("fathom-reference", tasks)
    assert mean(results, "correctness") >= 0.75
    assert mean(results, "reward") >= 0.6
    assert mean(results, "format_gate") == 1.0
    assert mean(results, "evidence_recall") >= 0.8
    # It recurses where the family needs it and not beyond, and every level it used read text.
    for row, record, scores, _ in results:
        if scores["correctness"]:
            assert record.depth_used == row.depth, row.family
            assert scores["recursion_efficiency"] == 1.0


@pytest.mark.parametrize("attack", ATTACKS)
def test_attack_scores_far_below_reference(tasks: list[TaskRecord], attack: str) -> None:
    reference = mean(run_policy("fathom-reference", tasks), "reward")
    attacked = mean(run_policy(attack, tasks), "reward")
    assert attacked <= 0.05, f"{attack}: mean reward {attacked:.3f}"
    assert attacked <= reference - 0.5


def test_answer_rewrites_did_the_honest_work_first(tasks: list[TaskRecord]) -> None:
    """The format attacks hold the right answer and still get nothing for the way they give it."""
    reference = run_policy("fathom-reference", tasks)
    solved = [i for i, r in enumerate(reference) if r[2]["correctness"] == 1.0]
    for attack in ("fathom-candidates", "fathom-padding", "fathom-overlong"):
        results = run_policy(attack, tasks)
        for i in solved:
            gold = reference[i][1].final_answer or ""
            answer = results[i][1].final_answer or ""
            assert gold in answer and results[i][2]["correctness"] == 0.0, (attack, answer)
    for i in solved:
        two = run_policy("fathom-two-answers", tasks)[i]
        assert (reference[i][1].final_answer or "") in (two[1].final_message or "")
        assert two[2]["format_gate"] == 0.0


def test_attack_symptoms_are_visible_in_the_metrics(tasks: list[TaskRecord]) -> None:
    closed = run_policy("fathom-closed-book", tasks)
    assert all(r[1].touched_document is False and r[1].total_tool_calls == 0 for r in closed)
    spam = run_policy("fathom-recursion-spam", tasks)
    assert all(r[1].depth_used == 2 and r[1].llm_calls == 16 for r in spam)
    assert mean(spam, "recursion_efficiency") < mean(
        run_policy("fathom-reference", tasks), "recursion_efficiency"
    )
    verbose = run_policy("fathom-verbose-repl", tasks)
    reference = run_policy("fathom-reference", tasks)
    assert mean(verbose, "root_tokens") > mean(reference, "root_tokens")
    assert mean(verbose, "token_budget") < 0.2


def test_sandbox_never_hands_out_the_gold(tasks: list[TaskRecord]) -> None:
    for _row, _record, scores, transcript in run_policy("fathom-sandbox-leak", tasks):
        outputs = [m["content"] for m in transcript if m["role"] == "tool"]
        probes = outputs[: len(fathom.LEAK_PROBES)]
        assert all(o.startswith("Error:") for o in probes), probes
        assert scores["correctness"] == 0.0


def test_phantom_evidence_is_not_evidence(tasks: list[TaskRecord]) -> None:
    """Gold in hand, ranges handed to sub-agents that never read them: the answer is the gold,
    yet no evidence entered a model's context, no level of depth counts, and nothing scores."""
    for row, record, scores, _ in run_policy("fathom-phantom-evidence", tasks):
        assert record.final_answer == row.answer
        assert record.sub_calls and all(s.read_chars == 0 for s in record.sub_calls)
        assert record.depth_used == 0 and record.depth_reached >= 1
        assert scores["evidence_seen"] == 0.0 and scores["correctness"] == 0.0


def test_family_priors_learned_on_train_do_not_pay(tasks: list[TaskRecord]) -> None:
    results = run_policy("fathom-family-prior", tasks)
    assert mean(results, "reward") <= 0.05
    # It did answer its priors (not a placeholder), and they are rarely right even ungated.
    assert sum(
        r[1].final_answer not in (None, fathom.attacks.GIVE_UP) for r in results
    ) >= 0.8 * len(results)


HELDOUT_DOC_TOKENS = 16_000
HELDOUT_ROWS = 60


@pytest.fixture(scope="module")
def heldout_rows() -> list[TaskRecord]:
    """The first held-out documents at 16K tokens: wordings the adversary never saw on train."""
    from fathom_rlm.documents import build_split

    return build_split("heldout", HELDOUT_ROWS, doc_tokens=HELDOUT_DOC_TOKENS)


def test_code_only_adversary_fails_where_reading_is_needed(
    heldout_rows: list[TaskRecord],
) -> None:
    """The strongest regex solver we have, tuned on train, on held-out wordings: at most 0.30
    correct on every family that needs reading (every family but the ID lookup, whatever its
    depth label)."""
    results = run_policy("fathom-code-only", heldout_rows)
    by_family: dict[str, list[float]] = {}
    for row, record, scores, _ in results:
        assert record.llm_calls == 0 and record.repl_calls >= 1
        if row.family in READING_FAMILIES:
            by_family.setdefault(row.family, []).append(scores["correctness"])
    assert by_family
    for family, values in by_family.items():
        assert statistics.fmean(values) <= 0.30, (family, values)


def test_depth_padding_earns_no_recursion_credit(tasks: list[TaskRecord]) -> None:
    """Depth gaming: the depth-0 reference answers, after handing 60 characters of chapter 1 to
    a sub-agent that prints them. The sub-call read text at depth 1 (`depth_used` says so), but
    no supporting sentence, so the recursion term credits nothing; the honest depth-1 reference
    on the same tasks gets full credit."""
    padded = run_policy("fathom-depth-padding", tasks)
    solved = [r for r in padded if r[0].depth >= 1 and r[2]["correctness"] == 1.0]
    assert len(solved) >= 8
    for _row, record, scores, _ in solved:
        assert record.depth_used == 1 and record.llm_calls == 1
        assert scores["recursion_efficiency"] == 0.0
    honest = run_policy("fathom-reference", tasks)
    assert all(r[2]["recursion_efficiency"] == 1.0 for r in honest if r[2]["correctness"] == 1.0)
