"""fathom-rlm on the legacy verifiers API (0.2.0 and 0.3.1): `load_environment(**kwargs)`.

The environment drives the root turns (a `MultiTurnEnv`); each rollout owns one core
`RolloutTools` (sandbox, sub-calls, record), created in `setup_state` and closed by a cleanup
handler, which runs on every exit path. Sub-calls go through the legacy model-response call
on the rollout's own client and model, so their usage lands in `state["usage"]` too. The rubric
is the core's `score_rollout`: `reward` with weight 1, every component and metric with weight 0.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import verifiers as vf
from verifiers.types import Tool, ToolMessage
from verifiers.utils.message_utils import normalize_messages

from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.scoring import (
    REWARD_NAME,
    SCORE_NAMES,
    build_rows,
    document_text,
    score,
)
from fathom_rlm.agent import (
    ChatFn,
    ChatReply,
    Message,
    RolloutRecord,
    RolloutTools,
    ToolSchema,
    tool_schemas,
)
from fathom_rlm.agent.loop import TIME_BUDGET, initial_messages
from fathom_rlm.agent.turns import CUT_FINISH_REASON, TRUNCATED
from fathom_rlm.documents.tasks.record import TaskRecord
from fathom_rlm.userdata.grading import task_question

TOOLS_KEY = "fathom_tools"
RECORD_KEY = "fathom_record"
SCORES_KEY = "fathom_scores"
ROW_KEY = "fathom_row"


def load_environment(**kwargs: Any) -> vf.Environment:
    """The legacy entry point; `kwargs` are the environment's arguments (`FathomArguments`)."""
    return FathomLegacyEnv(FathomArguments.from_kwargs(kwargs))


def _dataset_builder(args: FathomArguments) -> Any:
    def build() -> Any:
        from datasets import Dataset

        tasks = build_rows(args)
        return Dataset.from_list(
            [
                {
                    "prompt": [{"role": "user", "content": task_question(task)}],
                    "answer": task.answer,
                    # A JSON string: Arrow cannot hold rows whose nested fields vary in type.
                    "info": json.dumps(task.to_json()),
                    "task": "fathom-rlm",
                }
                for task in tasks
            ]
        )

    return build


def _task_of(state: vf.State) -> TaskRecord:
    """The rollout's task, from the dataset row's `info` column (a JSON string, or the object
    a caller passed in its place)."""
    info = state["info"]
    return TaskRecord.from_json(json.loads(info) if isinstance(info, str) else info)


def _tool_defs(schemas: list[ToolSchema] | None) -> list[Tool]:
    """OpenAI-style schemas to legacy `vf.Tool`s; [] means "no tools" to the legacy call."""
    return [
        Tool(
            name=s["function"]["name"],
            description=s["function"].get("description", ""),
            parameters=s["function"].get("parameters", {}),
        )
        for s in schemas or ()
    ]


def _reply(response: Any) -> ChatReply:
    """A legacy `vf.Response` as the core's `ChatReply` (OpenAI-style dicts)."""
    message = response.message
    content = message.content if isinstance(message.content, str) else None
    out: Message = {"role": "assistant", "content": content}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    usage = response.usage
    counted = (
        {"prompt_tokens": usage.prompt_tokens, "completion_tokens": usage.completion_tokens}
        if usage is not None
        else None
    )
    return ChatReply(out, counted, CUT_FINISH_REASON if _was_cut(response) else None)


def _was_cut(response: Any) -> bool:
    """Whether a legacy `vf.Response` stopped at the completion-token cap (its message's
    `is_truncated`, or a "length" finish reason)."""
    message = getattr(response, "message", None)
    return bool(getattr(message, "is_truncated", False)) or (
        getattr(message, "finish_reason", None) == CUT_FINISH_REASON
    )


def _last_reply_cut(state: vf.State) -> bool:
    """Whether the last root reply was cut at the completion-token cap (verifiers marks the
    step `is_truncated`)."""
    trajectory = state.get("trajectory") or []
    if not trajectory:
        return False
    step = trajectory[-1]
    return bool(step.get("is_truncated")) or _was_cut(step.get("response"))


def _as_dicts(messages: Any) -> list[Message]:
    """Legacy messages as the OpenAI-style dicts the core counts characters of."""
    out: list[Message] = []
    for m in messages:
        message = m.model_dump(exclude_none=True) if hasattr(m, "model_dump") else dict(m)
        calls = message.get("tool_calls")
        if calls:
            message["tool_calls"] = [
                c if "function" in c else _openai_call(c)
                for c in (json.loads(c) if isinstance(c, str) else c for c in calls)
            ]
        out.append(message)
    return out


def _openai_call(call: dict[str, Any]) -> dict[str, Any]:
    function = {"name": call.get("name"), "arguments": call.get("arguments")}
    return {"id": call.get("id"), "type": "function", "function": function}


def _final_message(state: vf.State) -> str | None:
    """The last root reply's text if it ended the rollout (no tool calls), else None."""
    trajectory = state.get("trajectory") or []
    if not trajectory:
        return None
    completion = trajectory[-1]["completion"]
    last = completion[-1] if completion else None
    if last is None or getattr(last, "role", None) != "assistant" or last.tool_calls:
        return None
    return last.content if isinstance(last.content, str) else ""


class FathomLegacyEnv(vf.MultiTurnEnv):
    """Root turns by verifiers, tools and sub-calls by the core, one `RolloutTools` per rollout."""

    def __init__(self, args: FathomArguments, **kwargs: Any) -> None:
        self.args = args
        self.caps = args.caps()
        builder = _dataset_builder(args)
        super().__init__(
            dataset=builder,
            eval_dataset=builder,
            rubric=FathomRubric(args),
            # The advertised tools are the core's root schemas; the core answers every call.
            tool_defs=_tool_defs(tool_schemas(0, self.caps)),
            max_turns=self.caps.max_turns,
            # verifiers cancels the whole rollout (model calls, tools, sub-calls) past this and
            # marks it "timeout_reached"; the cleanup handler still records and closes it.
            timeout_seconds=self.caps.time_budget_s,
            env_args=args.as_dict(),
            **kwargs,
        )

    async def setup_state(self, state: vf.State) -> vf.State:
        task = _task_of(state)
        state[ROW_KEY] = task
        document = await document_text(task)
        tools = RolloutTools(document, self._sub_call_chat(state), self.caps)
        state[TOOLS_KEY] = tools
        # The system prompt states the document's size, which is known only now.
        state["prompt"] = normalize_messages(
            initial_messages(len(document), task_question(task), self.caps)
        )
        return state

    def _sub_call_chat(self, state: vf.State) -> ChatFn:
        """Sub-calls on the rollout's client and model, with explicit sampling (never inherit
        the root's tools, and cap their length when asked)."""
        sampling = dict(state.get("sampling_args") or {})
        if self.args.sub_max_completion_tokens is not None:
            sampling.pop("max_completion_tokens", None)
            sampling["max_tokens"] = self.args.sub_max_completion_tokens

        async def chat(messages: list[Message], tools: list[ToolSchema] | None) -> ChatReply:
            response = await self.get_model_response(
                state,
                normalize_messages(messages),
                tool_defs=_tool_defs(tools),
                sampling_args=sampling,
            )
            return _reply(response)

        return chat

    async def add_model_response(
        self, state: vf.State, prompt_messages: Any, response: Any
    ) -> None:
        await super().add_model_response(state, prompt_messages, response)
        tools: RolloutTools | None = state.get(TOOLS_KEY)
        if tools is not None:
            tools.account_root_reply(_as_dicts(prompt_messages), tools.schemas, _reply(response))

    async def env_response(self, messages: Any, state: vf.State, **kwargs: Any) -> Any:
        tools: RolloutTools = state[TOOLS_KEY]
        out = []
        for index, call in enumerate(messages[-1].tool_calls or ()):
            text = await tools.call(call.name, call.arguments, index_in_turn=index)
            out.append(ToolMessage(role="tool", tool_call_id=call.id, content=text))
        return out

    @vf.stop
    async def answered(self, state: vf.State) -> bool:
        return _final_message(state) is not None

    @vf.stop(priority=1)  # before `answered`, so a cut reply without calls is named truncated
    async def truncated(self, state: vf.State) -> bool:
        """A reply cut at the completion-token cap ends the rollout, its tool calls unrun, as
        the core's loop does (`TRUNCATED`)."""
        return _last_reply_cut(state)

    @vf.cleanup
    async def close_tools(self, state: vf.State) -> None:
        tools: RolloutTools | None = state.get(TOOLS_KEY)
        if tools is None:  # setup failed before the tools existed
            state[RECORD_KEY] = None
            return
        state[TOOLS_KEY] = None
        try:
            if _last_reply_cut(state):
                state[RECORD_KEY] = tools.finish(None, TRUNCATED)
            else:
                final = _final_message(state)
                stop = state.get("stop_condition")
                ended_by = "answer" if final is not None else ended_by_from_stop(stop)
                state[RECORD_KEY] = tools.finish(final, ended_by)
        finally:
            await tools.close()


def ended_by_from_stop(stop_condition: str | None) -> str:
    if stop_condition == "timeout_reached":
        return TIME_BUDGET
    return "max_turns" if stop_condition in (None, "max_turns_reached") else str(stop_condition)


class FathomRubric(vf.Rubric):
    """`reward` (weight 1) plus every component and metric under its stable name (weight 0).

    All values come from one `score_rollout` call per rollout, whose future is kept on the
    rollout's state.
    """

    def __init__(self, args: FathomArguments, **kwargs: Any) -> None:
        self.args = args
        super().__init__(funcs=[self._signal(REWARD_NAME)], weights=[1.0], **kwargs)
        for name in SCORE_NAMES:
            if name != REWARD_NAME:
                self.add_metric(self._signal(name))

    def _signal(self, name: str) -> Any:
        async def signal(state: vf.State) -> float:
            return (await self.scores(state))[name]

        signal.__name__ = name
        return signal

    async def scores(self, state: vf.State) -> dict[str, float]:
        """Scored once per rollout: the first of its signals to ask starts the scoring, the
        others await it. In a worker thread: evidence recall may regenerate a ~1 MB document
        (~50-100 ms), which must not stall the other rollouts on the loop."""
        pending: asyncio.Future[dict[str, float]] | None = state.get(SCORES_KEY)
        if pending is None:
            record: RolloutRecord | None = state.get(RECORD_KEY)
            task = state.get(ROW_KEY) or _task_of(state)
            pending = asyncio.ensure_future(asyncio.to_thread(score, record, task, self.args))
            state[SCORES_KEY] = pending
        # Shielded: one signal being cancelled does not cancel the others' scoring.
        return await asyncio.shield(pending)
