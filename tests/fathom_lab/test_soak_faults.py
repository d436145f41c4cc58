"""Bounded soak and fault runs over loopback: many rollouts at once through the real loop and
sandbox against the scripted policy server, with injected server faults, rollouts cancelled
midway, and sandbox workers and the fork server killed from outside. Every rollout ends with a
score or a recorded error, rollouts that met no fault score as in a clean run, nothing leaks.

Only this test's own processes, descriptors and directories are checked; no timing is asserted.
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path
from typing import Any

import openai
import pytest
from fathom_lab.policies import FathomReference
from fathom_lab.soak import Chaos, SoakReport, soak
from fathom_rlm.agent import RolloutCaps
from fathom_rlm.documents import TaskRecord, build_split

from envtools.faults import FaultInjector, FaultPlan
from envtools.policy_server import policy_server_in_thread

pytestmark = pytest.mark.xdist_group("test_soak_faults")

DOC_TOKENS = 16_000
OVERALL_S = 900  # a hang fails the test instead of the suite


@pytest.fixture(scope="module")
def rows() -> list[TaskRecord]:
    return build_split("eval", 8, doc_tokens=DOC_TOKENS)  # eight questions, one document


@pytest.fixture
def own_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Sandbox directories of this test go here, so leftovers are this test's alone."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def reference(rows: list[TaskRecord]) -> dict[str, Any]:
    # The honest reference reads only the question and the document: it needs no task rows.
    return {"fathom-reference": FathomReference}


def run_soak(url: str, rows: list[TaskRecord], **kwargs: Any) -> SoakReport:
    return asyncio.run(asyncio.wait_for(soak(url, rows, **kwargs), OVERALL_S))


@pytest.mark.slow
def test_soak_of_96_rollouts_at_32_ends_clean(rows: list[TaskRecord], own_tmp: Path) -> None:
    with policy_server_in_thread(policies=reference(rows)) as url:
        report = run_soak(url, rows, n=96, concurrency=32)
    summary = report.summary()
    assert summary["errors"] == 0, summary["errors_by_kind"]
    assert summary["ended_by"] == {"answer": 96}
    assert report.leftovers.clean, report.leftovers
    assert summary["peak_processes"] > 2  # sandbox workers really ran, in parallel
    assert summary["mean_reward"] > 0.5
    assert not list(own_tmp.glob("fathom-sandbox-*"))


def test_faults_and_chaos_end_every_rollout_and_leak_nothing(
    rows: list[TaskRecord], own_tmp: Path
) -> None:
    # The clean reward of each question, to compare the rollouts that met no fault against.
    with policy_server_in_thread(policies=reference(rows)) as url:
        clean = run_soak(url, rows, n=len(rows), concurrency=8)
    clean_reward = {r["index"]: r["reward"] for r in clean.rollouts}
    assert clean.summary()["errors"] == 0

    plan = FaultPlan(drop=0.03, slow=0.03, error=0.03, malformed=0.05, empty=0.02, slow_s=0.5)
    injector = FaultInjector(plan)
    chaos = Chaos(cancel_every=8, kill_workers=4, kill_fork_servers=1)
    with policy_server_in_thread(policies=reference(rows), faults=injector) as url:
        report = run_soak(url, rows, n=64, concurrency=16, chaos=chaos)

    assert len(report.rollouts) == 64  # every rollout came back: none hung
    injected = injector.counts
    assert injected["requests"] > 64 and sum(injected[k] for k in plan_faults(plan)) > 0
    errors = [r for r in report.rollouts if r["error"]]
    kinds = {r["error"].split(":")[0] for r in errors}
    # A reset connection surfaces as one of httpx's transport errors, a 500 as HTTPStatusError.
    expected = {"cancelled", "HTTPStatusError", "RemoteProtocolError", "ReadError", "ConnectError"}
    assert kinds <= expected, kinds
    cancelled = [r for r in errors if r["error"] == "cancelled"]
    assert len(cancelled) <= 8  # at most every eighth rollout, fewer if one ended first
    # A model-call error needs an injected drop or 500: nothing else failed a rollout.
    assert len(errors) - len(cancelled) <= injected["drop"] + injected["error"]
    for r in report.rollouts:
        assert r["error"] is not None or "reward" in r  # a score or a recorded error
    untouched = [
        r
        for r in report.rollouts
        if not r["error"] and not r["faults_seen"] and r["tool_errors"] == 0
    ]
    assert untouched, "some rollouts must have met no fault"
    for r in untouched:
        assert r["reward"] == clean_reward[r["index"] % len(rows)], r
    assert report.chaos == {"fork_server": 1, "worker": 4}  # every planned kill happened
    assert report.leftovers.clean, report.leftovers
    assert not list(own_tmp.glob("fathom-sandbox-*"))


def plan_faults(plan: FaultPlan) -> list[str]:
    return [name for name in ("drop", "slow", "error", "malformed", "empty") if getattr(plan, name)]


def test_a_rollout_past_its_time_budget_under_a_slow_server(
    rows: list[TaskRecord], own_tmp: Path
) -> None:
    # Replies come five budgets late. Not later: the server runs in this process, and its side
    # of each connection stays open until its reply is due, so the leak check waits for it.
    slow = FaultPlan(slow=1.0, slow_s=5.0)
    with policy_server_in_thread(policies=reference(rows), faults=slow) as url:
        report = run_soak(url, rows[:4], n=4, concurrency=4, caps=RolloutCaps(time_budget_s=1.0))
    assert [r["ended_by"] for r in report.rollouts] == ["time_budget"] * 4
    assert all(r["error"] is None and r["reward"] == 0.0 for r in report.rollouts)
    assert report.leftovers.clean, report.leftovers


# ----------------------------------------------------------------- the fault injector


@pytest.mark.parametrize(
    ("fault", "check"),
    [
        ("drop", "connection"),
        ("error", "500"),
        ("malformed", "tool"),
        ("empty", "empty"),
        ("slow", "answer"),
    ],
)
def test_each_fault_over_real_http(fault: str, check: str, rows: list[TaskRecord]) -> None:
    plan = FaultPlan(**{fault: 1.0, "slow_s": 0.2})
    messages = [{"role": "user", "content": "hello"}]
    with policy_server_in_thread(faults=plan) as url:
        client = openai.OpenAI(base_url=url, api_key="x", max_retries=0, timeout=30)
        if check == "connection":
            with pytest.raises(openai.APIConnectionError):
                client.chat.completions.create(model="fathom-closed-book", messages=messages)
            return
        if check == "500":
            with pytest.raises(openai.InternalServerError, match="injected fault"):
                client.chat.completions.create(model="fathom-closed-book", messages=messages)
            return
        message = (
            client.chat.completions.create(model="fathom-closed-book", messages=messages)
            .choices[0]
            .message
        )
        # The model list is never faulted: only chat completions are.
        assert [m.id for m in client.models.list().data]
    if check == "tool":
        [call] = message.tool_calls
        assert call.id.startswith("fault_")
    elif check == "empty":
        assert not message.content and not message.tool_calls
    else:
        assert "<answer>" in (message.content or "")


def test_fault_plan_parsing_and_validation() -> None:
    plan = FaultPlan.parse("drop=0.1, slow=0.2,slow_s=1.5,seed=7")
    assert (plan.drop, plan.slow, plan.slow_s, plan.seed) == (0.1, 0.2, 1.5, 7)
    for bad in ("drop", "nope=1", "drop=0.7,error=0.7", "slow_s=-1"):
        with pytest.raises(ValueError):
            FaultPlan.parse(bad)
    injector = FaultInjector(FaultPlan(error=0.5, seed=3))
    draws = [injector.draw() for _ in range(400)]
    assert set(draws) == {None, "error"} and 150 < draws.count("error") < 250
    again = FaultInjector(FaultPlan(error=0.5, seed=3))
    assert [again.draw() for _ in range(400)] == draws  # seeded: the same run twice
