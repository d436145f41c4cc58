"""The behaviour metrics: seconds of REPL code and of sub-calls, batch sizes, and refused calls
and failed cells by kind, from a real rollout through the sandbox, under the names every
adapter logs (`SCORE_NAMES`, weight 0)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fathom_rlm.adapters.scoring import SCORE_NAMES
from fathom_rlm.agent import ChatReply, RolloutCaps, run_rollout
from fathom_rlm.agent.errors import ERROR_KINDS
from fathom_rlm.documents import TaskRecord
from fathom_rlm.rewards import BEHAVIOUR_NAMES, REWARD_NAME, score_rollout

DOCUMENT = "Orin Vale lived in Denhan and kept the Vess Lantern. " * 400
SUB_LATENCY = 0.05


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    function = {"name": name, "arguments": json.dumps(arguments)}
    return {"id": "c", "type": "function", "function": function}


ROOT = [
    # a batch of three from code, one over the slice cap (refused alone)
    "print(to_json(llm_batch([('Where?', doc[:80]), ('Where?', doc[80:160]), ('Who?', doc)])))",
    "x = 1 / 0",  # a cell whose code raises
    "while True:\n    pass",  # a cell that runs out of time
]


class Chat:
    def __init__(self) -> None:
        self.turn = 0

    async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        if not messages[0]["content"].startswith("You answer a question about a long"):
            await asyncio.sleep(SUB_LATENCY)
            return ChatReply({"role": "assistant", "content": "<answer>Denhan</answer>"})
        self.turn += 1
        calls = {
            1: [call("repl", {"code": ROOT[0]})],
            2: [call("llm", {"prompt": "Where?", "slice": ["0:80", "80:160"]})],
            3: [call("repl", {"code": ROOT[1]}), call("grep", {"pattern": "x"})],
            4: [call("repl", {"code": ROOT[2]})],
            5: [call("llm", {"prompt": "q", "slice": "0:9", "type": "object"})],
        }.get(self.turn)
        if calls is None:
            return ChatReply({"role": "assistant", "content": "<answer>Denhan</answer>"})
        return ChatReply({"role": "assistant", "content": None, "tool_calls": calls})


def test_a_rollout_logs_its_times_batches_and_errors_by_kind() -> None:
    from fathom_rlm.sandbox import SandboxConfig

    caps = RolloutCaps(
        max_slice_chars=1_000, max_depth=1, sandbox=SandboxConfig(call_timeout_s=0.5)
    )
    record = asyncio.run(run_rollout(DOCUMENT, "Where did Orin Vale live?", Chat(), caps))
    row = TaskRecord.from_json(
        {
            "question": "Where did Orin Vale live?",
            "answer": "Denhan",
            "aliases": [],
            "seed": 0,
            "family": "exact_id",
            "depth": 1,
            "spans": [[0, 52]],
            "doc_tokens": len(DOCUMENT) // 4,
            "region": None,
        }
    )
    scores = score_rollout(record, row, document=DOCUMENT)

    assert record.llm_batches == [3, 2]
    assert scores["llm_batches"] == 2 and scores["largest_batch"] == 3
    assert record.llm_calls == 4  # 2 of the code's batch, 2 of the tool's list
    assert scores["sub_call_seconds"] >= 4 * SUB_LATENCY
    assert 0 < scores["repl_seconds"] < 5
    for kind in ("code_raised", "code_timed_out", "unknown_tool", "schema_as_arguments"):
        assert scores["errors_" + kind] == 1, kind
    assert scores["errors_bad_slice"] == 1  # the code's entry over the slice cap, refused alone
    # Every refusal is counted once by kind; the two failed cells are no refusals.
    refused = sum(scores["errors_" + kind] for kind in ERROR_KINDS) - 2
    assert refused == scores["tool_errors"] == record.tool_errors


def test_every_behaviour_metric_is_a_score_name_never_weighted() -> None:
    assert set(BEHAVIOUR_NAMES) <= set(SCORE_NAMES)
    assert {"repl_seconds", "sub_call_seconds", "llm_batches", "largest_batch"} <= set(
        BEHAVIOUR_NAMES
    )
    assert {"errors_" + kind for kind in ERROR_KINDS} <= set(BEHAVIOUR_NAMES)
    assert REWARD_NAME not in BEHAVIOUR_NAMES


def test_the_verifiers_rubric_logs_them_at_weight_zero() -> None:
    from fathom_rlm.adapters.arguments import FathomArguments
    from fathom_rlm.adapters.legacy import FathomRubric

    rubric = FathomRubric(FathomArguments())
    weights = dict(zip(rubric._get_reward_func_names(), rubric._get_reward_weights(), strict=True))
    assert all(weights[name] == 0.0 for name in BEHAVIOUR_NAMES)
