"""One rollout end to end: system prompt, question, root turns of tool calls, final answer.

This is the whole agent for a harness program (verifiers v1) or a local evaluation; the legacy
verifiers adapter drives root turns itself and uses `RolloutTools` directly, with the same record.
"""

from __future__ import annotations

import asyncio

from fathom_rlm.agent import prompts
from fathom_rlm.agent.caps import RolloutCaps
from fathom_rlm.agent.chat import ChatFn, Message
from fathom_rlm.agent.record import RolloutRecord
from fathom_rlm.agent.tools import RolloutTools
from fathom_rlm.agent.turns import run_turns

TIME_BUDGET = "time_budget"
"""`RolloutRecord.ended_by` of a rollout that ran past `RolloutCaps.time_budget_s`."""


def initial_messages(document_chars: int, question: str, caps: RolloutCaps) -> list[Message]:
    """The root's first request: the system prompt (sizes only, never content) and the question."""
    return [
        {"role": "system", "content": prompts.root_system_prompt(document_chars, caps)},
        prompts.question_message(question),
    ]


async def run_rollout(
    document: str,
    question: str,
    chat: ChatFn,
    caps: RolloutCaps | None = None,
    *,
    sub_chat: ChatFn | None = None,
    record: RolloutRecord | None = None,
    transcript: list[Message] | None = None,
    sub_transcripts: list[dict] | None = None,
) -> RolloutRecord:
    """Run one rollout and return its record; every sandbox it opened is closed on any exit.

    `chat` serves the root turns, `sub_chat` (default: `chat`) every sub-call at any depth, so a
    caller can give sub-calls their own sampling. Pass a `record` to keep what was counted even
    when the rollout is interrupted (the record fills in as it runs), and a list as `transcript`
    to receive the root messages (system, question, assistant and tool turns), and one as
    `sub_transcripts` to receive every sub-call with its conversation (`RolloutTools`).
    """
    caps = caps or RolloutCaps()
    messages = transcript if transcript is not None else []
    messages[:] = initial_messages(len(document), question, caps)
    async with RolloutTools(
        document, sub_chat or chat, caps, record=record, sub_transcripts=sub_transcripts
    ) as tools:

        async def execute(call, index: int) -> str:  # type: ignore[no-untyped-def]
            return await tools.call(call.name, call.arguments, index_in_turn=index)

        budget = asyncio.timeout(caps.time_budget_s)
        try:
            async with budget:
                result = await run_turns(
                    chat, messages, tools.schemas, caps.max_turns, execute, tools.account_root_reply
                )
        except TimeoutError:
            if not budget.expired():
                raise  # a timeout of something inside (a client), not the rollout's budget
            # Whatever was running (a model call, a cell, a sub-call) was cancelled; the record
            # keeps what the rollout did, and it has no answer.
            return tools.finish(None, TIME_BUDGET)
        return tools.finish(result.final_message, result.ended_by)
