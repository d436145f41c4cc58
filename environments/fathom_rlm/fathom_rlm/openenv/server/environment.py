"""fathom-rlm's OpenEnv environment: one OpenEnv session is one rollout.

`reset` picks a task row and returns the root's first messages (system prompt and question) and
the tool schemas; each `step` is one tool call of the model (`repl`, `llm`) or its final reply
(`answer`), translated to the core's `RolloutTools`; the observation carries the tool's output,
and at the end the reward, its components and the metrics under the core's names. `llm`
sub-calls (from the action or from code in the REPL) go to the OpenAI-compatible endpoint given
at start-up (the policy's own server in training).

Each session owns its sandbox, caps and sub-call budget (its own `RolloutTools`); a session
that disconnects is closed by openenv-core, which closes its sandbox. The sandbox fork server
and scratch root belong to the server process (`fathom_rlm.serving`) and close with it.

Each session's sub-calls reserve, before they are sent, their prompt (characters / 4, tool schemas
included) and their `max_tokens` against its own endpoint-token budget and its client's quotas
(`openenv_guard`), and are settled at the prompt and completion tokens the endpoint reports
(characters / 4 when it reports none; a failed call keeps its reservation); a refused sub-call is
an `Error:` output the model sees, and the episode goes on. The endpoint's API key is sent only
for sessions that presented a valid token.

Token accounting: send the usage your endpoint reported for the model call that produced the
action (`usage`, on the first call of a reply: `call_index == 0`) and root tokens are counted
exactly as in the in-process loop; without it they are estimated (characters / 4) from what the
environment saw. A reply the endpoint cut at its token cap (`finish_reason` "length") is sent as
an `answer` with that `finish_reason`, whatever it holds: the episode ends as "truncated" with no
answer, as the in-process loop ends it (a cut tool call may be cut mid-JSON).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from fathom_rlm._vendor.openenv_guard import (
    ClientQuotas,
    LoopEnvironment,
    QuotaExceeded,
    SessionBudget,
    current_client,
    row_index,
)
from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.endpoint import Endpoint, endpoint_chat
from fathom_rlm.adapters.scoring import build_rows, document_text, score
from fathom_rlm.agent import ChatFn, ChatReply, Message, RolloutTools
from fathom_rlm.agent.chat import message_chars
from fathom_rlm.agent.loop import initial_messages
from fathom_rlm.agent.schemas import ToolError
from fathom_rlm.agent.turns import CUT_FINISH_REASON, TRUNCATED
from fathom_rlm.documents.tasks.record import TaskRecord
from fathom_rlm.openenv.models import FathomAction, FathomObservation, FathomState
from fathom_rlm.rewards import COMPONENT_NAMES, METRIC_NAMES, REWARD_NAME
from fathom_rlm.serving import open_serving_scope
from fathom_rlm.userdata.grading import task_question


@dataclass(frozen=True)
class ServerOptions:
    """Start-up settings shared by every session of one server."""

    endpoint: Endpoint
    """The OpenAI-compatible endpoint `llm` sub-calls go to (in training, the policy's own)."""
    arguments: FathomArguments = field(default_factory=FathomArguments)


_ROWS: dict[str, list[TaskRecord]] = {}


def _rows(arguments: FathomArguments) -> list[TaskRecord]:
    """The split's rows, built once per process and arguments."""
    key = repr(arguments)
    if key not in _ROWS:
        _ROWS[key] = build_rows(arguments)
    return _ROWS[key]


class FathomEnvironment(LoopEnvironment[FathomAction, FathomObservation, FathomState]):
    """One rollout per session; see the module docstring."""

    env_name = "fathom-rlm"

    def __init__(self, options: ServerOptions, quotas: ClientQuotas | None = None) -> None:
        super().__init__()
        self.options = options
        self.quotas = quotas
        self._budget: SessionBudget | None = None
        self._state = FathomState()
        self._tools: RolloutTools | None = None
        self._client: httpx.AsyncClient | None = None
        self._row: TaskRecord | None = None
        self._transcript: list[Message] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    # --- OpenEnv API ----------------------------------------------------------------------

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_index: int | None = None,
        **kwargs: Any,
    ) -> FathomObservation:
        """Start a rollout on row `task_index` of the split (else `seed` modulo its size, else a
        random row); a previous rollout of this session is closed first."""
        await self._close_rollout()
        rows = await asyncio.to_thread(_rows, self.options.arguments)
        index = row_index(len(rows), task_index, seed)
        row = rows[index]
        document = await document_text(row)
        open_serving_scope()
        caps = self.options.arguments.caps()
        self._loop = asyncio.get_running_loop()
        client = current_client()
        if self._budget is None and self.quotas is not None and client is not None:
            self._budget = SessionBudget(self.quotas, client)  # the session's, across resets
        endpoint = self.options.endpoint
        # The endpoint's API key is sent only for a client that presented a valid token.
        self._client = endpoint.http_client(send_key=client is not None and client.authenticated)
        max_tokens = self.options.arguments.sub_max_completion_tokens
        sub_chat = endpoint_chat(self._client, endpoint.model, max_tokens)
        self._tools = RolloutTools(
            document, _within_budget(sub_chat, self._budget, max_tokens), caps
        )
        self._row = row
        question = task_question(row)
        self._transcript = initial_messages(len(document), question, caps)
        self._state = FathomState(
            episode_id=episode_id or uuid.uuid4().hex, task_index=index, question=question
        )
        return FathomObservation(messages=list(self._transcript), tools=self._tools.schemas)

    async def step_async(
        self, action: FathomAction, timeout_s: float | None = None, **kwargs: Any
    ) -> FathomObservation:
        tools = self._tools
        if self._state.done:
            raise RuntimeError("the episode is over: call reset() to start another")
        if tools is None:
            raise RuntimeError("no episode: call reset() before step()")
        self._state.step_count += 1
        if action.call_index == 0:  # the first call of a new model reply
            if tools.record.turns >= tools.caps.max_turns:
                return await self._finish(None, "max_turns")
            tools.account_root_reply(
                list(self._transcript), tools.schemas, ChatReply(_as_message(action), action.usage)
            )
            self._state.turns = tools.record.turns
        self._transcript.append(_as_message(action))
        if action.tool == "answer":
            if action.finish_reason == CUT_FINISH_REASON:  # as the in-process loop ends it
                return await self._finish(None, TRUNCATED)
            if action.message is None:
                return _refused("answer needs `message`: the model's final reply.")
            return await self._finish(action.message, "answer")
        if action.arguments is not None and _fields(action):
            return _refused("send a call's arguments as `arguments` or as its fields, not both.")
        # An unknown tool goes to the core too, which answers and counts it as the loop does.
        name = action.tool or None
        output = await tools.call(name, _arguments(action), index_in_turn=action.call_index)
        self._transcript.append({"role": "tool", "tool_call_id": "", "content": output})
        self._state.sub_calls = len(tools.record.sub_calls)
        error = output if output.startswith("Error:") else None
        return FathomObservation(output=output, error=error)

    @property
    def state(self) -> FathomState:
        return self._state

    def close(self) -> None:
        """Close the session's rollout (sandbox, HTTP client). openenv-core calls this from a
        worker thread when a session ends or disconnects, and on the event loop for stateless
        HTTP requests; the rollout's resources live on the loop, so it runs there."""
        loop = self._loop
        if loop is None or loop.is_closed() or (self._tools is None and self._client is None):
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            task = loop.create_task(self._close_rollout())
            _BACKGROUND.add(task)
            task.add_done_callback(_BACKGROUND.discard)
        else:
            asyncio.run_coroutine_threadsafe(self._close_rollout(), loop).result(timeout=60)

    # --- internals ------------------------------------------------------------------------

    async def _finish(self, message: str | None, ended_by: str) -> FathomObservation:
        tools, row = self._tools, self._row
        assert tools is not None and row is not None
        record = tools.finish(message, ended_by)
        await self._close_rollout()
        scores = await asyncio.to_thread(score, record, row, self.options.arguments)
        self._state.done = True
        self._state.sub_calls = len(record.sub_calls)
        return FathomObservation(
            done=True,
            reward=scores[REWARD_NAME],
            rewards={name: scores[name] for name in COMPONENT_NAMES},
            metrics={name: scores[name] for name in METRIC_NAMES},
            ended_by=ended_by,
        )

    async def _close_rollout(self) -> None:
        tools, client = self._tools, self._client
        self._tools, self._client = None, None
        if tools is not None:
            await tools.close()
        if client is not None:
            await client.aclose()


_BACKGROUND: set[asyncio.Task[None]] = set()


def _within_budget(chat: ChatFn, budget: SessionBudget | None, max_tokens: int | None) -> ChatFn:
    """`chat` charged to the session's budget: its prompt (characters / 4, tool schemas
    included) and `max_tokens` reserved before it is sent (over budget it is not sent), then
    settled at the prompt and completion tokens the endpoint reports (characters / 4 for what it
    does not report). A call that fails keeps its reservation: the endpoint may have generated."""
    if budget is None:
        return chat

    async def charged_chat(messages: list[Message], tools: Any) -> ChatReply:
        prompt = (sum(message_chars(m) for m in messages) + _schema_chars(tools)) // 4
        try:
            held = budget.reserve(prompt + (max_tokens or 0))
        except QuotaExceeded as exc:
            raise ToolError(f"{exc}; no sub-call was sent.") from None
        reply = await chat(messages, tools)
        usage = reply.usage or {}
        completion = message_chars(reply.message) // 4
        budget.settle(
            held,
            _reported(usage, "prompt_tokens", prompt)
            + _reported(usage, "completion_tokens", completion),
        )
        return reply

    return charged_chat


def _schema_chars(tools: Any) -> int:
    return len(json.dumps(tools)) if tools else 0


def _reported(usage: dict[str, Any], name: str, estimate: int) -> int:
    """The endpoint's count `name`, else the estimate."""
    value = usage.get(name)
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return estimate


def _fields(action: FathomAction) -> dict[str, Any]:
    """The call's arguments sent as fields; unset fields are left out, so the core names what
    is missing, and fields of another tool are refused as unexpected."""
    fields = {"code": action.code, "prompt": action.prompt, "slice": action.slice}
    if action.message is not None:
        fields["message"] = action.message
    return {name: value for name, value in fields.items() if value is not None}


def _arguments(action: FathomAction) -> dict[str, Any] | str:
    """The tool call's arguments as the core parses them: the model's own text when sent as
    `arguments` (so a malformed call gets the loop's own error), else the fields."""
    return action.arguments if action.arguments is not None else _fields(action)


def _as_message(action: FathomAction) -> Message:
    """The assistant turn this action stands for, as the environment can reconstruct it."""
    if action.tool == "answer":
        return {"role": "assistant", "content": action.message or ""}
    arguments = _arguments(action)
    call = {"type": "function", "function": {"name": action.tool, "arguments": arguments}}
    return {"role": "assistant", "content": "", "tool_calls": [call]}


def _refused(reason: str) -> FathomObservation:
    return FathomObservation(output=f"Error: {reason}", error=f"Error: {reason}")


__all__ = ["FathomEnvironment", "ServerOptions"]
