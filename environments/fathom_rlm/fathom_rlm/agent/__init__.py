"""The agent loop: tools (`repl`, `llm`), sub-calls, prompts and the per-rollout record.

Framework-free: adapters hand in a `ChatFn` and get a `RolloutRecord` back.
"""

from fathom_rlm.agent.answer import answer_blocks, single_answer, sub_call_answer
from fathom_rlm.agent.caps import RolloutCaps
from fathom_rlm.agent.chat import ChatFn, ChatReply, Message, ToolSchema
from fathom_rlm.agent.loop import initial_messages, run_rollout
from fathom_rlm.agent.record import RolloutRecord, SubCallRecord
from fathom_rlm.agent.tools import RolloutTools, ToolError, tool_schemas

__all__ = [
    "ChatFn",
    "ChatReply",
    "Message",
    "RolloutCaps",
    "RolloutRecord",
    "RolloutTools",
    "SubCallRecord",
    "ToolError",
    "ToolSchema",
    "answer_blocks",
    "initial_messages",
    "run_rollout",
    "single_answer",
    "sub_call_answer",
    "tool_schemas",
]
