"""Running the evaluation: the task sample, the contenders (scripted policies or a model behind an
OpenAI-compatible endpoint) as chat functions, and every rollout through the real agent loop,
sandbox and reward. A rollout that fails is recorded with its error, never raised.

`fathom_lab.evaluate` is the command line; `fathom_lab.eval_report` turns the rollouts into the
report.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from fathom_rlm.adapters.scoring import document_text
from fathom_rlm.agent import ChatFn, ChatReply, RolloutCaps, run_rollout
from fathom_rlm.documents import TaskRecord, build_split
from fathom_rlm.rewards import RewardConfig, score_rollout
from fathom_rlm.userdata.grading import task_question

from envtools.policies.base import Policy
from fathom_lab import policies as fathom

SPLIT = "eval"
DEFAULT_N = 36
DEFAULT_DOC_TOKENS = 16_000
DEFAULT_CONCURRENCY = 4
DEFAULT_TIMEOUT_S = 300.0
MAX_ERROR_CHARS = 500

USER_ROW_POLICIES: tuple[str, ...] = (
    "fathom-reference",
    "fathom-reference-d2",
    "fathom-reference-d1",
    "fathom-reference-d0",
    "fathom-grep-only",
    "fathom-code-only",
    "fathom-closed-book",
    "fathom-format-only",
    "fathom-copy-question",
    "fathom-blind-choice",
)
"""The scripted policies that run on any text (the others read the generator's grammar or its
world). On real text the reference's sub-calls are answered by a generic reader (the sentences
that share the most words with the question), so its scores there are a floor, not a target."""
CHOICE_ROW_POLICIES: tuple[str, ...] = ("fathom-blind-choice",)
"""Policies that mean something only on user rows with choice questions (generated rows have
none): in the ladder of `--data` runs, left out of the default synthetic one."""


@dataclass
class Contender:
    """One thing under evaluation: the name it is reported under and its chat function."""

    name: str
    chat: ChatFn
    kind: str = "scripted"
    """"scripted" (a policy called in-process) or "model" (an OpenAI-compatible endpoint)."""
    aclose: Callable[[], Awaitable[None]] | None = None
    """Releases the contender's resources (an HTTP client) on the loop that used them."""


# ------------------------------------------------------------------------------ tasks


def sample_tasks(
    n: int = DEFAULT_N,
    *,
    doc_tokens: int = DEFAULT_DOC_TOKENS,
    seed: int = 0,
    split: str = SPLIT,
) -> list[TaskRecord]:
    """`n` rows of the eval split, stratified by family in proportion to the split's own mix.

    The whole split (200 questions over 20 documents) is built at `doc_tokens`, so the sample
    spans many documents rather than the first few; each family gets its proportional share
    (largest remainder), drawn with `seed`. Rows keep the split's order.
    """
    rows = build_split(split, doc_tokens=doc_tokens)  # type: ignore[arg-type]
    if not 1 <= n <= len(rows):
        raise ValueError(f"n must be between 1 and {len(rows)} (the size of the {split} split)")
    by_family: dict[str, list[int]] = {}
    for i, row in enumerate(rows):
        by_family.setdefault(row.family, []).append(i)
    shares = {f: n * len(idx) / len(rows) for f, idx in by_family.items()}
    quota = {f: math.floor(s) for f, s in shares.items()}
    leftover = n - sum(quota.values())
    for f in sorted(shares, key=lambda f: (quota[f] - shares[f], f))[:leftover]:
        quota[f] += 1
    rng = random.Random(seed)
    chosen = [i for f in sorted(by_family) for i in rng.sample(by_family[f], quota[f])]
    return [rows[i] for i in sorted(chosen)]


@contextlib.contextmanager
def registered_tasks(rows: Iterable[TaskRecord]) -> Iterator[None]:
    """Make the scripted readers find these rows, and never regenerate full splits meanwhile."""
    index = fathom.TASKS
    saved = (index.autoload_splits, dict(index.rows))
    index.autoload_splits = ()
    index.register(rows)
    try:
        yield
    finally:
        index.autoload_splits, index.rows = saved


# ------------------------------------------------------------------------ chat functions


def policy_chat(policy: Policy) -> ChatFn:
    """A scripted policy as the loop's chat function (no server in between)."""

    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> ChatReply:
        result = await policy.respond(messages, tools)
        return ChatReply(result.message, result.usage)

    return chat


def scripted_contenders(names: Sequence[str]) -> list[Contender]:
    """One contender per scripted fathom policy name; unknown names raise ValueError."""
    unknown = [n for n in names if n not in fathom.POLICIES]
    if unknown:
        known = ", ".join(fathom.POLICIES)
        raise ValueError(f"unknown policies {', '.join(unknown)}; known: {known}")
    return [Contender(name, policy_chat(fathom.POLICIES[name]())) for name in names]


def reply_from_completion(response: Any) -> ChatReply:
    """An OpenAI `ChatCompletion` as a `ChatReply`: first choice, function tool calls, usage and
    finish reason."""
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise ValueError("the completion has no choices")
    msg = choices[0].message
    message: dict[str, Any] = {"role": "assistant", "content": msg.content}
    calls = []
    for call in msg.tool_calls or ():
        fn = getattr(call, "function", None)
        # A non-function tool call keeps its type as the name, so the loop answers "unknown tool".
        name = fn.name if fn is not None else str(getattr(call, "type", "unknown"))
        arguments = fn.arguments if fn is not None else "{}"
        calls.append(
            {"id": call.id, "type": "function", "function": {"name": name, "arguments": arguments}}
        )
    if calls:
        message["tool_calls"] = calls
    usage = getattr(response, "usage", None)
    prompt = getattr(usage, "prompt_tokens", None)
    completion = getattr(usage, "completion_tokens", None)
    reported = None
    if isinstance(prompt, int) and isinstance(completion, int):
        reported = {"prompt_tokens": prompt, "completion_tokens": completion}
    finish = getattr(choices[0], "finish_reason", None)
    return ChatReply(message, reported, finish if isinstance(finish, str) else None)


def openai_chat(
    client: Any,
    model: str,
    *,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> ChatFn:
    """A model behind an OpenAI-compatible endpoint (an `openai.AsyncOpenAI` client) as a chat
    function; the loop and its sub-calls all go through it."""

    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> ChatReply:
        kwargs: dict[str, Any] = {"model": model, "messages": messages}
        if tools:
            kwargs["tools"] = tools
        if temperature is not None:
            kwargs["temperature"] = temperature
        if max_tokens is not None:
            kwargs["max_tokens"] = max_tokens
        response = await client.chat.completions.create(**kwargs)
        return reply_from_completion(response)

    return chat


def endpoint_contender(
    model: str,
    base_url: str,
    *,
    api_key: str = "EMPTY",
    name: str | None = None,
    temperature: float | None = None,
    max_tokens: int | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Contender:
    """A model behind an OpenAI-compatible endpoint. The client is made on first use, inside the
    running loop, and closed by `evaluate` on that same loop."""
    clients: list[Any] = []
    chats: list[ChatFn] = []

    async def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> ChatReply:
        if not chats:
            import openai

            client = openai.AsyncOpenAI(base_url=base_url, api_key=api_key, timeout=timeout_s)
            clients.append(client)
            chats.append(openai_chat(client, model, temperature=temperature, max_tokens=max_tokens))
        return await chats[0](messages, tools)

    async def aclose() -> None:
        chats.clear()
        while clients:
            await clients.pop().close()

    return Contender(name or model, chat, kind="model", aclose=aclose)


# ------------------------------------------------------------------------------ rollouts

TRANSCRIPT_KEY = "transcript"
"""The key of `run_one`'s result holding what the model wrote: the task row, the root messages
(system, question, assistant and tool turns), every model reply in call order, root and
sub-calls, each with its usage and finish reason (what `envtools.replay` feeds back), and every
sub-call with its prompt, slice, depth, caller and conversation (what `envtools.viewer` nests)."""


def recording_chat(chat: ChatFn, replies: list[dict[str, Any]]) -> ChatFn:
    """`chat`, appending every reply (message, usage, finish reason) to `replies` as it comes."""

    async def recorded(
        messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ChatReply:
        reply = await chat(messages, tools)
        replies.append(
            {
                "message": getattr(reply, "message", None),
                "usage": getattr(reply, "usage", None),
                "finish_reason": getattr(reply, "finish_reason", None),
                "tools": bool(tools),
            }
        )
        return reply

    return recorded


def _error_text(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}".strip().rstrip(":")
    return text if len(text) <= MAX_ERROR_CHARS else text[:MAX_ERROR_CHARS] + " [cut]"


async def run_one(
    contender: Contender,
    task_index: int,
    row: TaskRecord,
    *,
    caps: RolloutCaps | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> dict[str, Any]:
    """One rollout and its scores as a small JSON-safe dict; a failure is recorded, not raised."""
    out: dict[str, Any] = {
        "policy": contender.name,
        "task": task_index,
        "seed": row.seed,
        "doc_tokens": row.doc_tokens,
        "family": row.family,
        "depth": row.depth,
        "question": row.question,
        "gold": row.answer,
        "answer": None,
        "ended_by": None,
        "error": None,
        "scores": None,
        "summary": None,
        "wall_s": 0.0,
    }
    if row.source == "user":
        out |= {"row_id": row.row_id, "answer_kind": row.answer_kind}
    transcript: list[dict[str, Any]] = []
    replies: list[dict[str, Any]] = []
    sub_calls: list[dict[str, Any]] = []
    out[TRANSCRIPT_KEY] = {
        "task_row": row.to_json(),
        "messages": transcript,
        "replies": replies,
        "sub_calls": sub_calls,
    }
    start = time.perf_counter()
    try:
        # Generated in a worker thread (once per seed even when rollouts ask at the same time),
        # so a new document never stalls the other rollouts on the event loop.
        document = await document_text(row)
        chat = recording_chat(contender.chat, replies)
        record = await asyncio.wait_for(
            run_rollout(
                document,
                task_question(row),
                chat,
                caps,
                transcript=transcript,
                sub_transcripts=sub_calls,
            ),
            timeout_s,
        )
        config = RewardConfig.from_caps(caps)
        scores = await asyncio.to_thread(score_rollout, record, row, config, document=document)
    except Exception as exc:  # any policy, endpoint or tool failure stays with this rollout
        out["error"] = _error_text(exc)
        out["root_turns_before_error"] = sum(m.get("role") == "assistant" for m in transcript)
    else:
        out["answer"] = record.final_answer
        out["ended_by"] = record.ended_by
        out["scores"] = {k: float(v) for k, v in scores.items()}
        out["summary"] = record.summary()
    out["wall_s"] = round(time.perf_counter() - start, 3)
    return out


async def evaluate(
    contenders: Sequence[Contender],
    rows: Sequence[TaskRecord],
    *,
    caps: RolloutCaps | None = None,
    concurrency: int = DEFAULT_CONCURRENCY,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    progress: Callable[[str], None] | None = None,
) -> list[dict[str, Any]]:
    """Every contender on every row, at most `concurrency` rollouts at a time, in a fixed order."""
    if concurrency < 1:
        raise ValueError("concurrency must be >= 1")
    gate = asyncio.Semaphore(concurrency)
    remaining = Counter({c.name: len(rows) for c in contenders})

    async def job(contender: Contender, index: int, row: TaskRecord) -> dict[str, Any]:
        async with gate:
            result = await run_one(contender, index, row, caps=caps, timeout_s=timeout_s)
        remaining[contender.name] -= 1
        if progress is not None and remaining[contender.name] == 0:
            progress(f"done: {contender.name}")
        return result

    jobs = [job(c, i, row) for c in contenders for i, row in enumerate(rows)]
    try:
        return list(await asyncio.gather(*jobs))
    finally:
        for contender in contenders:
            if contender.aclose is not None:
                with contextlib.suppress(Exception):
                    await contender.aclose()
