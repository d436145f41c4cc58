"""fathom-rlm's saved verifiers runs, read back and checked against the core.

Shared by the adapter tests (tests/fathom_rlm/adapters) and the README runs
(tests/test_readme_commands.py): every score a CLI saved must equal what the core computes for
the same rollout run on its own (the scripted policy called in-process, no framework).
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from fathom_rlm.documents import TaskRecord

DOC_TOKENS = 16_000  # small documents keep the end-to-end runs quick
REFERENCE = "fathom-reference"


def replay_scores(row: TaskRecord, policy: str, **arguments: Any) -> dict[str, float]:
    """The same rollout run by the core alone (its own loop, the policy called in-process, asked
    the question as the model sees it), scored by the core: what every adapter must report."""
    from contextlib import nullcontext

    from fathom_lab.ladder.overlap_reader import reading_any_text
    from fathom_rlm.adapters.arguments import FathomArguments
    from fathom_rlm.adapters.scoring import load_document, score
    from fathom_rlm.agent import run_rollout
    from fathom_rlm.sandbox import shutdown_fork_servers
    from fathom_rlm.userdata import task_question

    from envtools.policies.registry import get_policy

    args = FathomArguments(doc_tokens=DOC_TOKENS, **arguments)
    scripted = get_policy(policy)

    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> Any:
        return await scripted.respond(messages, tools)

    rollout = run_rollout(load_document(row), task_question(row), chat, args.caps())
    try:
        with reading_any_text() if row.source == "user" else nullcontext():
            record = asyncio.run(rollout)
    finally:
        shutdown_fork_servers()
    return score(record, row, args)


def check_scores(
    results: list[tuple[dict[str, Any], dict[str, float]]],
    rows: list[TaskRecord],
    policy: str,
    rollouts: int,
) -> None:
    """Every row was run `rollouts` times and every score equals the core's own run of it. The
    saved rows are the framework's JSON: each must read back as the record it was made from."""
    from fathom_rlm.documents import TaskRecord
    from fathom_rlm.rewards import REWARD_NAME, SCORE_NAMES, TIMING_NAMES

    tasks = [(TaskRecord.from_json(row), scores) for row, scores in results]
    assert len(tasks) == len(rows) * rollouts
    assert {task for task, _ in tasks} == set(rows)
    expected: dict[str, dict[str, float]] = {}
    for task, scores in tasks:
        assert set(SCORE_NAMES) <= set(scores), f"missing: {set(SCORE_NAMES) - set(scores)}"
        if task.question not in expected:
            expected[task.question] = replay_scores(task, policy)
        for name in set(SCORE_NAMES) - set(TIMING_NAMES):  # a replay does not re-time a run
            assert scores[name] == pytest.approx(expected[task.question][name]), (
                name,
                task.question,
            )
    # The honest reference policy must actually be rewarded, or the comparison proves little.
    assert any(scores[REWARD_NAME] > 0.5 for _, scores in results), "nothing was rewarded"


def v1_traces(out_dir: Path) -> list[tuple[dict[str, Any], dict[str, float]]]:
    """(trace, scores) of every episode of the one v1 run under `out_dir`; every episode ok."""
    files = list(out_dir.rglob("traces.jsonl"))
    assert len(files) == 1, files
    traces = []
    for line in files[0].read_text().splitlines():
        episode = json.loads(line)
        assert episode["ok"], episode["errors"]
        (trace,) = episode["traces"]
        scores = {name: reward["score"] for name, reward in trace["rewards"].items()}
        scores.update(trace["metrics"])
        traces.append((trace, scores))
    return traces


def legacy_results(out_dir: Path) -> list[tuple[dict[str, Any], dict[str, float]]]:
    """(row, scores) of every rollout of the one legacy run (`vf-eval -s`) under `out_dir`."""
    from fathom_rlm.rewards import REWARD_NAME

    files = list(out_dir.rglob("results.jsonl"))
    assert len(files) == 1, files
    results = []
    for line in files[0].read_text().splitlines():
        record = json.loads(line)
        info = record["info"]
        row = json.loads(info) if isinstance(info, str) else info
        scores = {**record.get("metrics", {}), REWARD_NAME: record["reward"]}
        results.append((row, scores))
    return results


def v1_results(out_dir: Path) -> list[tuple[dict[str, Any], dict[str, float]]]:
    """(row, scores) of every episode of the one v1 run under `out_dir`, with what every v1
    trace must show: one weighted reward, sub-calls traced, small task data."""
    from fathom_rlm.rewards import REWARD_NAME

    results = []
    for trace, scores in v1_traces(out_dir):
        assert trace["rewards"][REWARD_NAME]["weight"] == 1.0
        # Sub-calls went through the interception too: more calls than root turns.
        assert len(trace["calls"]) >= scores["turns"]
        assert len(trace["calls"]) == scores["turns"] + trace["info"]["fathom"]["sub_turns"]
        data = trace["task"]["data"]
        assert set(data["row"]) >= {"question", "seed", "doc_tokens"}
        assert len(json.dumps(data)) < 10_000, "task data must stay small (no document)"
        results.append((data["row"], scores))
    return results


def eval_rows(count: int) -> list[TaskRecord]:
    """The first `count` rows of the `eval` split at the test length (what `-n count` serves)."""
    from fathom_rlm.documents import build_split

    return build_split("eval", count, doc_tokens=DOC_TOKENS)


def check_readme_run(api: str, count: int, rollouts: int) -> Any:
    """A check of a README run of the reference (`api`: "legacy" or "v1") on the first `count`
    eval rows, `rollouts` each: its saved scores are the core's."""

    def check(copy: Path) -> None:
        # Legacy vf-eval saves under the environment's own folder, v1 under ./outputs.
        read = legacy_results if api == "legacy" else v1_results
        check_scores(read(copy), eval_rows(count), REFERENCE, rollouts)

    return check
