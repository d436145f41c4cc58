"""The whole-rollout wall-clock budget: a rollout past it ends, keeps its record, leaks nothing."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from fathom_rlm.agent import ChatReply, RolloutCaps, RolloutRecord, prompts, run_rollout
from fathom_rlm.documents import TaskRecord
from fathom_rlm.rewards import score_rollout
from fathom_rlm.sandbox import SandboxConfig, SandboxSession

DOCUMENT = "Orin Vale lived in Denhan. " + "Filler about the weather. " * 400
QUESTION = "Where did Orin Vale live?"
TASK = TaskRecord(
    question=QUESTION,
    answer="Denhan",
    aliases=(),
    seed=0,
    family="exact_id",
    depth=0,
    spans=(),
    doc_tokens=16_000,
    region=None,
)
HANG = 3_600.0  # a model call or cell that would outlive any test


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"id": "c", "type": "function", "function": function}


def tools_msg(*calls: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": None, "tool_calls": list(calls)}


class Hangs:
    """Root replies from a queue, then never answers; sub-calls never answer either."""

    def __init__(self, *root: dict[str, Any], sub_hangs: bool = True) -> None:
        self.root = list(root)
        self.sub_hangs = sub_hangs
        self.calls = 0

    async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        self.calls += 1
        is_root = messages[0]["content"].startswith(prompts.ROOT_ROLE)
        if is_root and self.root:
            return ChatReply(self.root.pop(0))
        if is_root or self.sub_hangs:
            await asyncio.sleep(HANG)
        return ChatReply({"role": "assistant", "content": "<answer>Denhan</answer>"})


def run(chat: Any, caps: RolloutCaps) -> RolloutRecord:
    return asyncio.run(asyncio.wait_for(run_rollout(DOCUMENT, QUESTION, chat, caps), 120))


def gone(pid: int | None) -> bool:
    if pid is None:
        return True
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_hanging_model_call_ends_at_the_budget_and_is_scored() -> None:
    first = tools_msg(call("repl", {"code": "print(doc[:26])"}))
    record = run(Hangs(first), RolloutCaps(time_budget_s=0.5))
    assert record.ended_by == "time_budget"
    assert record.final_answer is None
    assert record.turns == 1 and record.repl_calls == 1  # what it did is kept
    assert record.touched_document
    scores = score_rollout(record, TASK)
    assert scores["reward"] == 0.0 and scores["correctness"] == 0.0
    assert record.summary()["ended_by"] == "time_budget"


def test_a_hanging_sub_call_counts_against_the_root_budget() -> None:
    first = tools_msg(call("llm", {"prompt": "Where?", "slice": "0:200"}))
    record = run(Hangs(first), RolloutCaps(time_budget_s=0.5))
    assert record.ended_by == "time_budget"
    assert record.llm_calls == 1 and not record.sub_calls[0].answered


def test_a_long_cell_is_cancelled_and_its_worker_is_gone(
    started_sessions: list[SandboxSession], tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # The cell's own timeout is far beyond the rollout's budget: the budget must cut it.
    sandbox = SandboxConfig(call_timeout_s=60.0, cpu_seconds=120)
    spin = tools_msg(call("repl", {"code": "x = 1\nwhile True:\n    x += 1"}))
    record = run(Hangs(spin), RolloutCaps(time_budget_s=1.5, sandbox=sandbox))
    assert record.ended_by == "time_budget"
    assert len(started_sessions) == 1
    pid = started_sessions[0].pid or started_sessions[0].worker_info.get("pid")
    deadline = time.monotonic() + 30  # SIGKILL is sent at once; reaping may lag on a busy machine
    while not gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(pid)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("fathom-sandbox-")] == []


def test_no_budget_means_no_limit_and_a_fast_answer_ends_normally() -> None:
    answer = {"role": "assistant", "content": "<answer>Denhan</answer>"}
    record = run(Hangs(answer), RolloutCaps(time_budget_s=None))
    assert record.ended_by == "answer" and record.final_answer == "Denhan"


def test_a_timeout_raised_by_the_model_client_is_not_mistaken_for_the_budget() -> None:
    async def chat(messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        raise TimeoutError("the HTTP client gave up")

    with pytest.raises(TimeoutError, match="HTTP client"):
        run(chat, RolloutCaps(time_budget_s=60))


@pytest.mark.parametrize("bad", [0, -1.0, True, "10"])
def test_budget_must_be_positive_or_none(bad: Any) -> None:
    with pytest.raises(ValueError, match="time_budget_s"):
        RolloutCaps(time_budget_s=bad)


def test_the_default_budget_is_finite() -> None:
    budget = RolloutCaps().time_budget_s
    assert budget is not None and budget > 0
