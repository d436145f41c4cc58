"""Export successful fathom-rlm trajectories as chat JSONL for supervised warm-starting.

    uv run python -m fathom_lab.sft_export --policy fathom-reference --split train --n 32 \\
        --doc-tokens 16000 --min-reward 0.5 --format trl --out outputs/sft/fathom-train.jsonl

Each task runs once through the real agent loop (`fathom_rlm.agent.run_rollout`: sandboxed
`repl`, recursive `llm` sub-calls) with a scripted policy called in-process, and is scored by
the environment's reward (`fathom_rlm.rewards.score_rollout`). A rollout whose reward is at least
`--min-reward` yields one conversation for its root and one for every sub-call (a sub-call is its
own conversation: its system prompt, its question and slice, its turns), so a model learns both
roles. Rollouts below the threshold, or that fail, are counted and left out, and so are rollouts
with an ungrounded conversation: one whose closing answer names something (a name, a quote) that
appears in none of the messages that model was shown. The scripted reader answers from the world
state once it has read the evidence, so it may give a full name where its slice only says
"Mistress Hotou"; training on that would teach a model to invent what it cannot see.

Two row formats, both one JSON object per line with `messages` (OpenAI chat messages, assistant
turns carrying `tool_calls`, tool turns carrying `tool_call_id` and `name`) and `tools` (the tool
schemas the model was offered, as a JSON string; `[]` for a plain sub-call):

* `prime-rl`: tool-call `arguments` are JSON strings, which prime-rl's SFT data loader decodes
  itself; strings also keep Arrow from merging the argument objects of different tools.
* `trl`: tool-call `arguments` are objects, the shape TRL's dataset docs and chat templates use.
  Build the dataset with `Dataset.from_list(rows, on_mixed_types="use_json")` (datasets >= 4.7)
  so the argument objects of different tools are not merged into one struct.

With `--data PATH` (and `--data-format`, the row schema, as in `fathom_lab.evaluate`) the
tasks are the first `--n` of the user's own rows (`fathom_rlm.userdata`) instead of a split; the
reference reads them with the word-overlap reader, as `fathom_lab.evaluate --data` does.

`metadata` (a JSON string: task, family, role, depth, reward; a user row's id) rides along;
both trainers ignore columns they do not read.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import re
import sys
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from fathom_rlm.adapters.arguments import MIN_DOC_TOKENS
from fathom_rlm.agent import ChatFn, ChatReply, Message, RolloutCaps, ToolSchema, run_rollout
from fathom_rlm.agent.turns import normalize_assistant
from fathom_rlm.documents import (
    SPLIT_SIZES,
    TaskRecord,
    build_split,
    normalize_answer,
    task_document,
)
from fathom_rlm.rewards import REWARD_NAME, RewardConfig, score_rollout
from fathom_rlm.userdata import task_question

from envtools import cli
from envtools.policies.base import Policy
from envtools.policies.registry import get_policy
from fathom_lab import policies as fathom
from fathom_lab.evaluate import registered_tasks
from fathom_lab.ladder.overlap_reader import reading_any_text
from fathom_lab.ladder.protocol import parse_sub_answer
from fathom_lab.user_rows import (
    add_data_format_argument,
    load_user_rows,
    refuse_format_without_data,
    refuse_generated_options,
)

Format = Literal["prime-rl", "trl"]
FORMATS: tuple[str, ...] = ("prime-rl", "trl")


@dataclass
class Conversation:
    """One model's view of one exchange: the root of a rollout, or one sub-call."""

    role: Literal["root", "sub"]
    messages: list[Message]
    tools: list[ToolSchema]


@dataclass
class _Call:
    request: list[Message]
    tools: list[ToolSchema]
    reply: Any


@dataclass
class CallRecorder:
    """Wraps a chat function and keeps every request with its reply, in call order."""

    chat: ChatFn
    calls: list[_Call] = field(default_factory=list)

    async def __call__(self, messages: list[Message], tools: list[ToolSchema] | None) -> ChatReply:
        request = copy.deepcopy(messages)
        reply = await self.chat(messages, tools)
        self.calls.append(_Call(request, copy.deepcopy(tools or []), reply.message))
        return reply

    def conversations(self) -> list[Conversation]:
        """The finished exchanges: a call whose request no later call extends ended its exchange.

        The loop re-sends an exchange's whole history on every turn, so the turns of one
        sub-call form a chain of requests each extending the one before; the last call of each
        chain, plus its reply, is the whole conversation. Sub-calls may interleave (REPL code
        can start several); matching by prefix keeps them apart.
        """
        out: list[Conversation] = []
        for i, call in enumerate(self.calls):
            size = len(call.request)
            extended = any(
                len(later.request) > size and later.request[:size] == call.request
                for later in self.calls[i + 1 :]
            )
            if extended:
                continue
            turn = sum(m.get("role") == "assistant" for m in call.request)
            final, _ = normalize_assistant(call.reply, turn)
            out.append(Conversation("sub", [*call.request, final], call.tools))
        return out


@dataclass
class ExportedRollout:
    """One scored rollout and its conversations (empty when it failed)."""

    row: TaskRecord
    scores: dict[str, float] | None
    conversations: list[Conversation]
    llm_calls: int = 0
    error: str | None = None

    @property
    def reward(self) -> float:
        return float(self.scores[REWARD_NAME]) if self.scores else 0.0

    @property
    def ungrounded(self) -> list[str]:
        """Claims of its conversations' closing answers that nothing shown to them supports."""
        return [claim for c in self.conversations for claim in ungrounded_claims(c)]


_ANSWER_TAG = re.compile(r"<answer>(.*?)</answer>", re.DOTALL)


def ungrounded_claims(conversation: Conversation) -> list[str]:
    """The names and quotes in a conversation's closing answer that appear in none of the user
    and tool messages it was shown (normalised as the reward matches answers). Counts are
    computed, not read, so a bare number is never a claim; neither is `not found`."""
    closing = conversation.messages[-1].get("content") or ""
    tagged = _ANSWER_TAG.search(closing)
    answer = parse_sub_answer(tagged.group(1) if tagged else closing)
    claims = [c for c in (answer.final, *answer.next_names, *answer.quotes) if c]
    shown = " ".join(
        str(m.get("content") or "") for m in conversation.messages if m.get("role") in SHOWN
    )
    visible = f" {normalize_answer(shown)} "
    return [
        claim
        for claim in claims
        if not re.fullmatch(r"\s*\d+\s*", claim) and f" {normalize_answer(claim)} " not in visible
    ]


SHOWN = ("user", "tool")
"""The messages whose text a model was shown (the system prompt holds no document text)."""


def policy_chat(policy: Policy) -> ChatFn:
    """A scripted policy as the loop's chat function, called in-process."""

    async def chat(messages: list[Message], tools: list[ToolSchema] | None) -> ChatReply:
        result = await policy.respond(messages, tools)
        return ChatReply(result.message, result.usage)

    return chat


async def run_and_capture(
    row: TaskRecord, chat: ChatFn, caps: RolloutCaps | None = None, timeout_s: float = 600.0
) -> ExportedRollout:
    """One rollout through the real loop, with its root transcript and every sub-call recorded."""
    caps = caps or RolloutCaps()
    root_calls = CallRecorder(chat)
    sub_calls = CallRecorder(chat)
    transcript: list[Message] = []
    try:
        document = task_document(row)
        record = await asyncio.wait_for(
            run_rollout(
                document,
                task_question(row),
                root_calls,
                caps,
                sub_chat=sub_calls,
                transcript=transcript,
            ),
            timeout_s,
        )
        scores = score_rollout(record, row, RewardConfig.from_caps(caps), document=document)
    except Exception as exc:  # a failed rollout is reported and left out, never exported
        return ExportedRollout(row, None, [], error=f"{type(exc).__name__}: {exc}")
    tools = root_calls.calls[0].tools if root_calls.calls else []
    root = Conversation("root", copy.deepcopy(transcript), tools)
    return ExportedRollout(row, scores, [root, *sub_calls.conversations()], record.llm_calls)


def _message_for(message: Message, fmt: Format, call_names: dict[str, str]) -> Message:
    out = {k: v for k, v in message.items() if v is not None}
    if message.get("role") == "assistant":
        out.setdefault("content", "")
        calls = []
        for call in message.get("tool_calls") or []:
            function = dict(call["function"])
            call_names[call["id"]] = function["name"]
            if fmt == "trl":
                function["arguments"] = _as_object(function["arguments"])
            calls.append({"id": call["id"], "type": "function", "function": function})
        if calls:
            out["tool_calls"] = calls
    elif message.get("role") == "tool":
        out["name"] = call_names.get(str(message.get("tool_call_id")), "")
    return out


def _as_object(arguments: Any) -> Any:
    if not isinstance(arguments, str):
        return arguments
    try:
        return json.loads(arguments)
    except json.JSONDecodeError:
        return {"_raw": arguments}  # the model wrote invalid JSON; keep what it wrote


def to_row(
    conversation: Conversation, rollout: ExportedRollout, task: int, fmt: Format
) -> dict[str, Any]:
    """One JSONL row in `fmt` for one conversation of a scored rollout."""
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r}; known: {', '.join(FORMATS)}")
    names: dict[str, str] = {}
    messages = [_message_for(m, fmt, names) for m in conversation.messages]
    metadata = {
        "task": task,
        "seed": rollout.row.seed,
        "family": rollout.row.family,
        "doc_tokens": rollout.row.doc_tokens,
        "role": conversation.role,
        "reward": rollout.reward,
    }
    if rollout.row.source == "user":
        metadata["id"] = rollout.row.row_id
    return {
        "messages": messages,
        "tools": json.dumps(conversation.tools),
        "metadata": json.dumps(metadata),
    }


async def export_rollouts(
    rows: Sequence[TaskRecord],
    chat: ChatFn,
    *,
    caps: RolloutCaps | None = None,
    concurrency: int = 2,
) -> list[ExportedRollout]:
    """Every row once, at most `concurrency` rollouts at a time, in row order."""
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    gate = asyncio.Semaphore(concurrency)

    async def one(row: TaskRecord) -> ExportedRollout:
        async with gate:
            return await run_and_capture(row, chat, caps)

    # On user rows the reference reads text it has no grammar for with the overlap reader.
    any_text = reading_any_text() if any(r.source == "user" for r in rows) else nullcontext()
    with registered_tasks(rows), any_text:
        return list(await asyncio.gather(*(one(row) for row in rows)))


def select_rows(
    rollouts: Sequence[ExportedRollout],
    min_reward: float,
    fmt: Format,
    roles: Sequence[str] = ("root", "sub"),
) -> list[dict[str, Any]]:
    """The rows of every grounded rollout that scored at least `min_reward`, root first, in task
    order."""
    return [
        to_row(conversation, rollout, task, fmt)
        for task, rollout in enumerate(rollouts)
        if rollout.scores is not None and rollout.reward >= min_reward and not rollout.ungrounded
        for conversation in rollout.conversations
        if conversation.role in roles
    ]


def build_parser() -> cli.ArgumentParser:
    parser = cli.ArgumentParser(
        prog="python -m fathom_lab.sft_export", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument(
        "--policy", default="fathom-reference", choices=fathom.POLICIES, help="a scripted policy"
    )
    parser.add_argument(
        "--split", default=None, choices=tuple(SPLIT_SIZES), help="default train; not with --data"
    )
    parser.add_argument(
        "--n", type=cli.integer(1), default=None, help="the first n rows (default 16; --data: all)"
    )
    parser.add_argument(
        "--doc-tokens",
        type=cli.integer(MIN_DOC_TOKENS),
        default=None,
        help="default 16000; not with --data",
    )
    parser.add_argument(
        "--data",
        type=Path,
        default=None,
        help="a JSONL file of your own rows (the fathom-rlm README, 'Your own documents') to "
        "export from instead of a split",
    )
    add_data_format_argument(parser, alias=False)
    parser.add_argument("--min-reward", type=cli.number(0.0, 1.0), default=0.5)
    parser.add_argument("--format", choices=FORMATS, default="trl")
    parser.add_argument(
        "--roles",
        type=cli.names(("root", "sub"), "roles"),
        default=["root", "sub"],
        help="root, sub or both (comma-separated)",
    )
    parser.add_argument("--concurrency", type=cli.integer(1), default=2)
    parser.add_argument("--out", type=Path, required=True, help="the JSONL file to write")
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The arguments, each alone and taken together; a usage error (exit 2) otherwise."""
    parser = build_parser()
    args = parser.parse_args(argv)
    args.rows = None
    refuse_format_without_data(parser, args)
    if args.data is not None:
        _load_data(parser, args)
    else:
        args.split = args.split or "train"
        args.doc_tokens = args.doc_tokens or 16_000
        args.n = args.n or 16
        if args.n > SPLIT_SIZES[args.split]:
            limit = f"at most {SPLIT_SIZES[args.split]} (the {args.split} split)"
            parser.reject("--n", limit, args.n)
    if args.out.is_dir():
        parser.reject("--out", "a file path (a directory is there)", str(args.out))
    return args


def _load_data(parser: cli.ArgumentParser, args: argparse.Namespace) -> None:
    """The user rows of --data (every row checked first); a bad file or row is a usage error
    naming the line and the field."""
    refuse_generated_options(parser, args)
    args.data_format = args.data_format or "native"
    args.rows = load_user_rows(parser, args.data, args.data_format, limit=args.n)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    roles = args.roles
    if args.rows is not None:
        rows = args.rows
    else:
        rows = build_split(args.split, args.n, doc_tokens=args.doc_tokens)
    chat = policy_chat(get_policy(args.policy))
    rollouts = asyncio.run(export_rollouts(rows, chat, concurrency=args.concurrency))
    selected = select_rows(rollouts, args.min_reward, args.format, roles)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", encoding="utf-8") as handle:
        for row in selected:
            handle.write(json.dumps(row) + "\n")
    failed = [r for r in rollouts if r.error is not None]
    above = [r for r in rollouts if r.scores is not None and r.reward >= args.min_reward]
    ungrounded = [r for r in above if r.ungrounded]
    print(
        f"{len(rollouts)} rollouts: {len(above) - len(ungrounded)} kept "
        f"(reward >= {args.min_reward}), {len(rollouts) - len(above) - len(failed)} below, "
        f"{len(ungrounded)} ungrounded, {len(failed)} failed; "
        f"{len(selected)} conversations written to {args.out}"
    )
    for rollout in failed:
        which = rollout.row.row_id or f"seed {rollout.row.seed}"
        print(f"failed: {which}: {rollout.error}", file=sys.stderr)
    # Failures are loud: a policy or loop error is not a low score.
    return 1 if failed or not selected else 0


if __name__ == "__main__":
    raise SystemExit(main())
