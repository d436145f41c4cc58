"""fathom-rlm on TRL's `GRPOTrainer`: a multi-turn environment through `environment_factory`.

TRL (1.x) drives the root turns itself: it renders the public async methods of an environment
instance (`repl`, `llm`) as tools from their signatures and docstrings, parses the model's tool
calls, awaits the methods on its event-loop thread and appends their results as tool messages.
One instance serves one rollout at a time; TRL calls `reset(**dataset_row)` before each rollout.
The dataset's prompts are the core's own first messages (system prompt with the document's size
and the caps, then the question), so a model sees the same request under every adapter. Each
instance owns one core
`RolloutTools` (sandbox, sub-calls, `RolloutRecord`), and the reward functions score the
finished rollout with the core's `score_rollout`, one function per named score.

What differs from the verifiers adapters (docs/training.md, "GDPO and TRL"):

- Sub-calls (`llm`, and `llm()` inside REPL code) go to a fixed model behind an
  OpenAI-compatible endpoint (`sub_base_url`, `sub_model`): TRL generates only the root turns of
  the policy it trains and serves no chat endpoint for the policy itself.
- TRL runs every tool call of one reply without telling the environment where a reply ends, so
  the per-reply tool-call cap (`max_tool_calls_per_turn`) is not applied; `max_turns` becomes
  TRL's `max_tool_calling_iterations`.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from collections.abc import Mapping, Sequence
from dataclasses import fields
from typing import Any

from fathom_rlm._vendor.env_adapters import RewardBatch, TRLEnvironment, named_rewards
from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.adapters.endpoint import Endpoint, per_call_chat
from fathom_rlm.adapters.scoring import build_rows, load_document, reward_config
from fathom_rlm.agent import ChatFn, ChatReply, Message, RolloutTools
from fathom_rlm.agent.loop import initial_messages
from fathom_rlm.documents.tasks.record import TaskRecord
from fathom_rlm.rewards import BEHAVIOUR_NAMES, REWARD_NAME, score_rollout
from fathom_rlm.userdata.grading import task_question

REWARD_KEYS: tuple[str, ...] = (
    REWARD_NAME,
    "format_gate",
    "correctness",
    "token_budget",
    "recursion_efficiency",
    "gated_token_budget",
    "gated_recursion_efficiency",
)
"""Scores a launcher may train on: the combined `reward`, its components and the gated costs
(the cost terms count only once the answer is right, like gsm8k's gated length reward). The
behaviour metrics (`rewards.BEHAVIOUR_NAMES`) are reward functions too, of weight 0: a launcher
file that lists them with weight 0 has TRL log them beside the rewards."""
LOGGED_KEYS = (*REWARD_KEYS, *BEHAVIOUR_NAMES)

SUB_CALL_PREFIX = "sub_"
"""The TRL arguments naming the sub-call endpoint are `Endpoint`'s fields with this prefix."""
_SUB_CALL_FIELDS = tuple(SUB_CALL_PREFIX + f.name for f in fields(Endpoint))
_CLOSE_TIMEOUT_S = 30.0


def load_trl_environment(*, sub_chat: ChatFn | None = None, **kwargs: Any) -> TRLEnvironment:
    """The environment for TRL. `kwargs` are `FathomArguments` fields plus the sub-call endpoint,
    `Endpoint`'s fields prefixed `sub_`: `sub_base_url` and `sub_model` (required unless
    `sub_chat` is given), `sub_api_key_var` (the environment variable holding its key, default
    `OPENAI_API_KEY`), `sub_timeout_s` (default 120) and `sub_connect_timeout_s` (default: the
    same as `sub_timeout_s`)."""
    endpoint = {key: kwargs.pop(key) for key in _SUB_CALL_FIELDS if key in kwargs}
    args = FathomArguments.from_kwargs(kwargs)
    if sub_chat is None:
        sub_chat = per_call_chat(sub_call_endpoint(endpoint), args.sub_max_completion_tokens)
    elif endpoint:
        raise TypeError(f"give either sub_chat or {sorted(endpoint)}, not both")
    instances: weakref.WeakSet[FathomTRLEnv] = weakref.WeakSet()

    def factory() -> FathomTRLEnv:
        instance = FathomTRLEnv(args, sub_chat)
        instances.add(instance)
        return instance

    def close() -> None:
        for instance in list(instances):
            instance._release()

    return TRLEnvironment(
        train_dataset=train_dataset(args),
        reward_funcs=named_rewards(LOGGED_KEYS, _rollout_scores, "each finished rollout"),
        reward_weights={key: 1.0 if key == REWARD_NAME else 0.0 for key in LOGGED_KEYS},
        environment_factory=factory,
        # Root model calls = tool rounds + the answering call.
        trainer_defaults={"max_tool_calling_iterations": args.max_turns - 1},
        close=close,
    )


def check_arguments(**kwargs: Any) -> None:
    """Raise TypeError/ValueError for arguments `load_trl_environment` would refuse, without
    building documents or contacting the sub-call endpoint."""
    endpoint = {key: kwargs.pop(key) for key in _SUB_CALL_FIELDS if key in kwargs}
    FathomArguments.from_kwargs(kwargs)
    sub_call_endpoint(endpoint)


def train_dataset(args: FathomArguments) -> Any:
    """The split's rows with the core's first messages as the prompt; the row as JSON for `reset`.

    The system prompt states the document's size: building the split generated every document
    already, and the core's cache makes reading their lengths here cheap.
    """
    from datasets import Dataset

    caps = args.caps()
    lengths: dict[object, int] = {}
    records = []
    for task in build_rows(args):
        # A user row's document is its own (every user row has seed 0): keyed by its hash.
        key = task.document_id or (task.seed, task.doc_tokens)
        if key not in lengths:
            lengths[key] = len(load_document(task))
        records.append(
            {
                "prompt": initial_messages(lengths[key], task_question(task), caps),
                # A JSON string: Arrow cannot hold rows whose nested fields vary in type.
                "info": json.dumps(task.to_json()),
                "answer": task.answer,
            }
        )
    return Dataset.from_list(records)


class FathomTRLEnv:
    """One rollout's tools for TRL.

    TRL offers the model every public method except `reset` (and `get_reward`, which this class
    leaves out so the rewards stay separately named): only `repl` and `llm` may be public.
    """

    def __init__(self, args: FathomArguments, sub_chat: ChatFn) -> None:
        self._args = args
        self._caps = args.caps()
        self._sub_chat = sub_chat
        self._tools: RolloutTools | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._row: TaskRecord | None = None
        self._scores: dict[str, float] | None = None

    def reset(self, **columns: Any) -> None:
        """Start a rollout on a dataset row (its prompt already holds the instructions)."""
        self._release()
        info = columns.get("info")
        if not isinstance(info, str):
            raise ValueError("a fathom-rlm row needs its `info` column (the task row as JSON)")
        self._row = TaskRecord.from_json(json.loads(info))
        self._tools = RolloutTools(load_document(self._row), self._sub_chat, self._caps)

    async def repl(self, code: str) -> str:
        """Run Python code in a persistent sandbox where `doc` is the document text.

        Args:
            code: Python code to run. Variables persist between calls; print() what you want to see.

        Returns:
            What the code printed, then any error.
        """
        return await self._call("repl", {"code": code})

    async def llm(self, prompt: str, slice: str) -> str:  # `slice`: the core schema's name
        """Ask a focused sub-question about a slice of the document; returns the answer.

        Args:
            prompt: The sub-question.
            slice: A range "start:end" of doc, or the name of a REPL variable holding a str.

        Returns:
            The sub-call's answer.
        """
        return await self._call("llm", {"prompt": prompt, "slice": slice})

    def _score(
        self, prompt: Any, completion: Any, completion_tokens: int | None
    ) -> dict[str, float]:
        """The core's scores of the finished rollout (computed once, on the first request)."""
        if self._scores is None:
            if self._tools is None or self._row is None:
                raise RuntimeError("score() before reset(): TRL resets every rollout first")
            final, _ = final_message(completion)
            self._account_root_turns(prompt, completion)
            record = self._tools.record
            if completion_tokens is not None:  # TRL's own count beats characters / 4
                record.root_completion_tokens = completion_tokens
            record = self._tools.finish(final, "answer" if final is not None else "max_turns")
            self._scores = score_rollout(record, self._row, reward_config(self._args))
            self._release(keep_scores=True)
        return self._scores

    def _account_root_turns(self, prompt: Any, completion: Any) -> None:
        """Charge each root reply as the in-process loop does: its request (the prompt and the
        conversation so far) and its reply. TRL calls no endpoint of ours, so this is where the
        root's tool outputs count as read: a reply after them is the model reading them."""
        assert self._tools is not None
        history: list[Message] = [dict(m) for m in _messages(prompt, "user")]
        for message in _messages(completion):
            if message.get("role") == "assistant":
                reply = ChatReply(dict(message))
                self._tools.account_root_reply(list(history), self._tools.schemas, reply)
            history.append(dict(message))

    def _release(self, *, keep_scores: bool = False) -> None:
        """Close this rollout's sandbox workers (on the loop that started them)."""
        tools, loop, self._tools, self._loop = self._tools, self._loop, None, None
        if not keep_scores:
            self._scores = None
        if tools is None:
            return
        if loop is not None and loop.is_running() and not _on_loop_thread(loop):
            asyncio.run_coroutine_threadsafe(tools.close(), loop).result(_CLOSE_TIMEOUT_S)
        elif loop is None or loop.is_closed():
            asyncio.run(tools.close())  # never used on a loop: nothing started, nothing blocks
        else:
            loop.create_task(tools.close())

    async def _call(self, name: str, arguments: dict[str, Any]) -> str:
        if self._tools is None:
            return "Error: the rollout is over."
        self._loop = asyncio.get_running_loop()
        return await self._tools.call(name, arguments)


def _messages(conversation: Any, text_role: str = "assistant") -> list[Mapping[str, Any]]:
    """The message dicts of a TRL prompt or completion (a plain string is one message of
    `text_role`, with no tool outputs)."""
    if isinstance(conversation, str):
        return [{"role": text_role, "content": conversation}]
    return [m for m in conversation or () if isinstance(m, Mapping)]


def final_message(completion: Any) -> tuple[str | None, int]:
    """(the closing reply's text or None, the number of root replies) of a TRL completion.

    A completion that ends on a tool message or a reply with tool calls ran out of turns.
    """
    if isinstance(completion, str):
        return completion, 1
    messages = [m for m in completion or () if isinstance(m, Mapping)]
    replies = sum(1 for m in messages if m.get("role") == "assistant")
    last = messages[-1] if messages else None
    if last is None or last.get("role") != "assistant" or last.get("tool_calls"):
        return None, replies
    content = last.get("content")
    return (content if isinstance(content, str) else ""), replies


def _rollout_scores(batch: RewardBatch) -> list[dict[str, float]]:
    """Each finished rollout's scores, from the instance that ran it (TRL's `environments`)."""
    environments: Sequence[FathomTRLEnv] = batch.columns["environments"]
    rollouts = zip(environments, batch.prompts, batch.completions, strict=True)
    return [
        env._score(prompt, completion, batch.tokens(index))
        for index, (env, prompt, completion) in enumerate(rollouts)
    ]


def _on_loop_thread(loop: asyncio.AbstractEventLoop) -> bool:
    try:
        return asyncio.get_running_loop() is loop
    except RuntimeError:
        return False


# ------------------------------------------------------------------- sub-calls over HTTP

_SUB_CALL_DEFAULTS: dict[str, Any] = {
    "api_key_var": "OPENAI_API_KEY",
    "timeout_s": 120.0,
    "connect_timeout_s": None,  # one timeout for connecting and answering
}


def sub_call_endpoint(options: Mapping[str, Any]) -> Endpoint:
    """The sub-call endpoint from `sub_*` arguments (TRL serves no chat endpoint for the policy).

    An HTTP or protocol error of a sub-call raises: TRL shows it to the model as a tool error and
    counts it as a tool failure."""
    base_url, model = options.get("sub_base_url"), options.get("sub_model")
    if not isinstance(base_url, str) or not isinstance(model, str) or not base_url or not model:
        raise ValueError(
            "fathom-rlm under TRL needs sub_base_url and sub_model: the OpenAI-compatible "
            "endpoint that answers llm() sub-calls (TRL serves no chat endpoint for the policy)"
        )
    return Endpoint.from_options(options, SUB_CALL_PREFIX, **_SUB_CALL_DEFAULTS)
