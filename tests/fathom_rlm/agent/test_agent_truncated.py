"""A reply cut at the completion-token cap ends the rollout as "truncated", scored with no answer.

The real loop, sandbox and reward; the replies carry the `finish_reason` a server sends.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from fathom_rlm.agent import ChatReply, RolloutCaps, run_rollout
from fathom_rlm.agent.chat import chat_reply
from fathom_rlm.agent.turns import TRUNCATED
from fathom_rlm.documents import build_split
from fathom_rlm.documents.store import task_document
from fathom_rlm.rewards import RewardConfig, score_rollout

DOCUMENT = "Orin Vale lived in Denhan. " + "Filler about the weather. " * 400


def repl(code: str, arguments: str | None = None) -> dict[str, Any]:
    args = arguments if arguments is not None else json.dumps({"code": code})
    call = {"id": "c1", "type": "function", "function": {"name": "repl", "arguments": args}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


class Script:
    """Replies from a queue, each with its finish reason."""

    def __init__(self, *replies: tuple[dict[str, Any], str | None]) -> None:
        self.replies = list(replies)
        self.calls = 0

    async def __call__(self, messages: list[dict[str, Any]], tools: Any) -> ChatReply:
        self.calls += 1
        message, finish = self.replies.pop(0)
        return ChatReply(message, None, finish)


def run(script: Script, document: str = DOCUMENT) -> Any:
    transcript: list[dict[str, Any]] = []
    record = asyncio.run(
        run_rollout(
            document, "Where did Orin Vale live?", script, RolloutCaps(), transcript=transcript
        )
    )
    return record, transcript


def test_a_cut_reply_holding_an_answer_is_no_answer() -> None:
    script = Script(
        (repl("print(doc[:60])"), "tool_calls"),
        ({"role": "assistant", "content": "<answer>Denhan</answer> because the text"}, "length"),
    )
    record, transcript = run(script)
    assert record.ended_by == TRUNCATED
    assert record.final_message is None and record.final_answer is None
    assert record.turns == 2 and record.touched_document
    # The cut text stays in the transcript, so a reader sees what the model wrote.
    assert transcript[-1]["content"].startswith("<answer>Denhan</answer>")


def test_a_tool_call_cut_mid_json_is_not_run() -> None:
    script = Script((repl("", arguments='{"code": "print(doc[:'), "length"))
    record, transcript = run(script)
    assert record.ended_by == TRUNCATED and script.calls == 1
    assert record.tool_calls == {} and not record.touched_document
    assert [m["role"] for m in transcript] == ["system", "user", "assistant"]


def test_a_complete_tool_call_in_a_cut_reply_is_not_run_either() -> None:
    """The reply stopped mid-turn: the loop does not guess which of its calls were finished."""
    script = Script((repl("print(doc[:60])"), "length"))
    record, _ = run(script)
    assert record.ended_by == TRUNCATED and record.repl_calls == 0


def test_a_truncated_rollout_scores_zero_even_with_the_gold_in_the_cut_text() -> None:
    row = build_split("eval", 1, doc_tokens=4_000)[0]
    document = task_document(row)
    script = Script(
        (repl("print(doc[:200])"), "tool_calls"),
        ({"role": "assistant", "content": f"<answer>{row.answer}</answer>"}, "length"),
    )
    transcript: list[dict[str, Any]] = []
    record = asyncio.run(
        run_rollout(document, row.question, script, RolloutCaps(), transcript=transcript)
    )
    scores = score_rollout(record, row, RewardConfig(), document=document)
    assert record.ended_by == TRUNCATED
    assert scores["format_gate"] == 0.0 and scores["reward"] == 0.0
    assert scores["gated_token_budget"] == 0.0


def test_stop_and_tool_calls_finish_reasons_end_as_before() -> None:
    script = Script(
        (repl("print(doc[:60])"), "tool_calls"),
        ({"role": "assistant", "content": "<answer>Denhan</answer>"}, "stop"),
    )
    record, _ = run(script)
    assert record.ended_by == "answer" and record.final_answer == "Denhan"


def test_chat_reply_reads_the_finish_reason() -> None:
    payload = {
        "choices": [{"message": {"role": "assistant", "content": "x"}, "finish_reason": "length"}]
    }
    assert chat_reply(payload).finish_reason == "length"
    del payload["choices"][0]["finish_reason"]
    assert chat_reply(payload).finish_reason is None
