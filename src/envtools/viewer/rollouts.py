"""Saved rollouts of either environment, read into the one shape the viewer page draws.

Every source is read into a list of *view rollouts* (plain JSON-safe dicts):

* fathom-rlm: `fathom_lab.evaluate`'s transcripts.jsonl (and the real-model fixtures, one such
  line in a JSON file), legacy `vf-eval -s` results.jsonl, verifiers v1 traces.jsonl, TRL
  completions logs and `envtools.openenv_play` episodes;
* gsm8k-multireward: the same saved forms but the evaluation's, and the real-model fixtures.

A view rollout holds the question, the gold and the answer given, the ending, every reward
component, the correctness vetoes that fired (`fathom_rlm.rewards.correctness_vetoes`), mistakes
by kind (`envtools.mistakes`), the root turns (each tool result with its error kind) and the
sub-calls (prompt, slice, depth, caller and their own turns). Long texts are folded here, so a
page of a long run stays small: a text keeps its head, its tail and the evidence around every
supporting sentence it shows, and says how much was left out. The document itself is never
embedded; it is only regenerated (synthetic rows) or read from the document store (user rows)
to find the supporting sentences, which are marked wherever a tool output or a sub-call's slice
shows them.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from envtools import mistakes
from envtools.tool_calls import text_of

FATHOM = "fathom-rlm"
GSM8K = "gsm8k-multireward"

KEEP_CHARS = 2_400
"""A text longer than this is folded to its head, its tail and the windows around its marks."""
HEAD_CHARS = 1_200
TAIL_CHARS = 600
MARK_CONTEXT = 160
"""Characters kept on each side of a marked supporting sentence inside a folded text."""
MAX_MARKS = 24
"""Marks kept per text (a long output that repeats the evidence keeps its first ones)."""

OUTCOMES = ("right", "wrong", "failed")
MAX_REGENERATED_TOKENS = 1_000_000
"""The longest synthetic document regenerated to find evidence (the environment's target is
200K tokens); a row asking for more shows no marks."""
FIELD_CHARS = 2_000
"""A short field (question, answer, gold, error, names) longer than this is cut."""
NAME_CHARS = 200


# ---------------------------------------------------------------------------------- texts


def find_marks(text: str, pieces: Sequence[str]) -> list[list[int]]:
    """Every (start, end) where one of `pieces` occurs in `text`, overlaps merged, in order."""
    found: list[list[int]] = []
    for piece in pieces:
        start = text.find(piece)
        while start >= 0:
            found.append([start, start + len(piece)])
            start = text.find(piece, start + 1)
    return _merged(found)[:MAX_MARKS]


def _merged(ranges: Sequence[Sequence[int]]) -> list[list[int]]:
    """The (start, end) ranges sorted, overlapping or touching ones joined."""
    merged: list[list[int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return merged


def fold(text: str, marks: Sequence[Sequence[int]] = ()) -> dict[str, Any]:
    """`{"text", "marks", "chars"}`: the text, or its head, tail and the windows around its marks
    joined by a line saying how many characters were left out; marks point into what is kept,
    counted in UTF-16 code units as the page's script counts (an emoji is two)."""
    kept = _kept(text, marks)
    return {"text": kept["text"], "marks": _utf16(kept["text"], kept["marks"]), "chars": len(text)}


def _utf16(text: str, marks: Sequence[Sequence[int]]) -> list[list[int]]:
    if text.isascii():
        return [list(m) for m in marks]

    def unit(index: int) -> int:
        return len(text[:index].encode("utf-16-le", "surrogatepass")) // 2

    return [[unit(s), unit(e)] for s, e in marks]


def _kept(text: str, marks: Sequence[Sequence[int]]) -> dict[str, Any]:
    if len(text) <= KEEP_CHARS:
        return {"text": text, "marks": [list(m) for m in marks]}
    windows = [(0, HEAD_CHARS), (len(text) - TAIL_CHARS, len(text))]
    windows += [(max(0, s - MARK_CONTEXT), min(len(text), e + MARK_CONTEXT)) for s, e in marks]
    kept = _merged(windows)
    parts: list[str] = []
    offsets: list[tuple[int, int, int]] = []  # (start in text, end in text, start in output)
    position = 0
    for start, end in kept:
        if start > position:
            parts.append(f"\n[… {start - position:,} characters not kept in the viewer …]\n")
        offsets.append((start, end, sum(len(p) for p in parts)))
        parts.append(text[start:end])
        position = end
    moved = []
    for s, e in marks:
        for start, end, out in offsets:
            if start <= s and e <= end:
                moved.append([out + s - start, out + e - start])
                break
    return {"text": "".join(parts), "marks": moved}


def folded(text: str, pieces: Sequence[str] = ()) -> dict[str, Any]:
    """`text` folded, with the supporting `pieces` it shows marked."""
    return fold(text, find_marks(text, pieces) if pieces else [])


# ------------------------------------------------------------------------------ messages


def _arguments_text(arguments: Any) -> str:
    """A call's arguments for reading: `repl` code as code, other JSON indented, raw text as is."""
    if isinstance(arguments, str):
        try:
            decoded = json.loads(arguments)
        except (ValueError, RecursionError):
            return arguments
    else:
        decoded = arguments
    if isinstance(decoded, dict) and set(decoded) == {"code"} and isinstance(decoded["code"], str):
        return decoded["code"]
    try:
        return json.dumps(decoded, indent=1, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):
        return repr(decoded)[:KEEP_CHARS]


def _decoded(value: Any) -> Any:
    """A field as saved: an object or list saved as JSON text decoded, anything else as is."""
    if not isinstance(value, str) or value[:1] not in ("[", "{"):
        return value
    try:
        return json.loads(value)
    except (ValueError, RecursionError):
        return value


def _openai_call(call: Any) -> dict[str, Any]:
    """A tool call in the OpenAI shape, from that shape or a flat `{"id", "name", "arguments"}`
    (as JSON text: legacy verifiers saves its calls so)."""
    call = _decoded(call)
    if not isinstance(call, Mapping):
        return {"function": {"name": "", "arguments": str(call)}}
    if isinstance(call.get("function"), Mapping):
        return dict(call)
    return {"id": call.get("id"), "function": {k: call.get(k) for k in ("name", "arguments")}}


def normal_messages(messages: Any) -> list[dict[str, Any]]:
    """A saved conversation as a list of OpenAI-shaped message dicts."""
    messages = _decoded(messages)
    if isinstance(messages, str):
        return [{"role": "assistant", "content": messages}]
    out = []
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, Mapping):
            continue
        message = dict(message)
        if message.get("tool_calls"):
            message["tool_calls"] = [_openai_call(c) for c in message["tool_calls"]]
        out.append(message)
    return out


def view_turns(
    messages: Iterable[Mapping[str, Any]], pieces: Sequence[str] = ()
) -> tuple[list[dict[str, Any]], str | None]:
    """The turns of one conversation after its system prompt (returned apart), as the page
    draws them: each assistant reply with its calls (numbered from 1), each tool result with its
    error kind and the supporting sentences it shows marked."""
    turns: list[dict[str, Any]] = []
    system = None
    reply = 0
    for message in messages:
        role = message.get("role")
        text = text_of(message.get("content"))
        if role == "system" and system is None and not turns:
            system = _cut(text, 10 * KEEP_CHARS)
        elif role == "assistant":
            reply += 1
            calls = []
            for call in message.get("tool_calls") or []:
                function = (call.get("function") if isinstance(call, Mapping) else None) or {}
                calls.append(
                    {
                        "name": _cut(function.get("name") or "", NAME_CHARS),
                        "arguments": fold(_arguments_text(function.get("arguments"))),
                    }
                )
            turns.append({"role": "assistant", "reply": reply, "text": fold(text), "calls": calls})
        elif role == "tool":
            kind = mistakes.tool_result_kind(text)
            turns.append(
                {
                    "role": "tool",
                    "name": _cut(message.get("name") or "", NAME_CHARS),
                    "text": folded(text, () if kind else pieces),
                    "error_kind": kind,
                }
            )
        else:
            turns.append({"role": _cut(role, NAME_CHARS), "text": folded(text, pieces)})
    return turns, system


# ------------------------------------------------------------------------------- fathom


def _fathom_task(row: Mapping[str, Any] | None) -> Any:
    if not row:
        return None
    from fathom_rlm.documents import TaskRecord

    try:
        return TaskRecord.from_json(row)
    except ValueError:
        return None


def supporting_pieces(task: Any) -> list[str]:
    """The supporting sentences of a fathom task, from its regenerated document (synthetic) or
    the document store (user rows); none when the task names no evidence or its text is gone."""
    if task is None or not task.spans:
        return []
    if task.source != "user" and not 0 < task.doc_tokens <= MAX_REGENERATED_TOKENS:
        return []  # a saved row cannot make the viewer build any document it names
    from fathom_rlm.documents.store import UnknownDocumentError, task_document
    from fathom_rlm.evidence import support_pieces

    try:
        document = task_document(task)
    except (UnknownDocumentError, OSError, ValueError):
        return []
    return support_pieces(task.spans, document)


def fathom_vetoes(answer: str | None, task: Any, scores: Mapping[str, float] | None) -> list[str]:
    """The correctness vetoes that fired, from the rollout's own scores (empty without them)."""
    if task is None or not scores or "touched_document" not in scores:
        return []
    from fathom_rlm.rewards import correctness_vetoes

    evidence = bool(scores.get("evidence_seen")) or not scores.get("evidence_applicable", 1.0)
    return correctness_vetoes(
        answer,
        task,
        touched_document=bool(scores["touched_document"]),
        evidence_seen=evidence,
    )


def _sub_calls(entries: Any, pieces: Sequence[str]) -> list[dict]:
    """The sub-calls, numbered by position: a caller is kept only when it comes earlier (so the
    nesting is a tree, whatever a saved file claims)."""
    out: list[dict[str, Any]] = []
    position: dict[Any, int] = {}
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping):
            continue
        here = len(out)
        saved_index, parent = entry.get("index"), entry.get("parent")
        if isinstance(saved_index, int) and not isinstance(saved_index, bool):
            position.setdefault(saved_index, here)
        turns, system = view_turns(normal_messages(entry.get("messages") or []), pieces)
        where = entry.get("slice")
        out.append(
            {
                "index": here,
                "parent": position.get(parent) if position.get(parent, here) < here else None,
                "turn": _whole(entry.get("turn")),
                "depth": _whole(entry.get("depth")),
                "kind": _cut(entry.get("kind"), NAME_CHARS),
                "origin": _cut(entry.get("origin"), NAME_CHARS),
                "slice": [_whole(x) for x in where] if _is_pair(where) else None,
                "slice_source": _cut(entry.get("slice_source"), NAME_CHARS),
                "slice_chars": _whole(entry.get("slice_chars")),
                "prompt": fold(_cut(entry.get("prompt"), 10 * KEEP_CHARS) or ""),
                "system": system,
                "turns": turns,
            }
        )
    return out


# ---------------------------------------------------------------------- saved values, bounded


def _cut(value: Any, limit: int = FIELD_CHARS) -> str | None:
    """A saved field as text of at most `limit` characters (and a note of what was cut)."""
    if value is None:
        return None
    if not isinstance(value, str):
        try:
            value = json.dumps(value, ensure_ascii=False)[: limit + 1]
        except (TypeError, ValueError, RecursionError):
            value = f"<{type(value).__name__}>"
    if len(value) <= limit:
        return value
    return value[:limit] + f" [… {len(value) - limit:,} characters not kept …]"


def _number(value: Any) -> float | None:
    """A finite number, else None (NaN, infinities, text and the like are shown as missing)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _whole(value: Any) -> int | None:
    number = _number(value)
    return int(number) if number is not None and abs(number) < 1e15 else None


def _is_pair(value: Any) -> bool:
    return (
        isinstance(value, list | tuple)
        and len(value) == 2
        and all(_whole(x) is not None for x in value)
    )


def _task_id(value: Any) -> int | str | None:
    return _whole(value) if _number(value) is not None else _cut(value, NAME_CHARS)


def _scores(scores: Any) -> dict[str, float | None]:
    if not isinstance(scores, Mapping):
        return {}
    return {_cut(k, NAME_CHARS): _number(v) for k, v in list(scores.items())[:200]}


def _outcome(error: Any, correct: float | None) -> str:
    if error:
        return "failed"
    return "right" if correct else "wrong"


def fathom_rollout(
    line: Mapping[str, Any],
    *,
    task_row: Mapping[str, Any] | None = None,
    policy: str | None = None,
    question: str | None = None,
) -> dict[str, Any]:
    """One fathom-rlm rollout: an `fathom_lab.evaluate` transcript line or anything of its shape
    (`messages`, optionally `replies`, `sub_calls`, `scores`, `ended_by`, `error`)."""
    from fathom_rlm.agent.answer import answer_blocks, single_answer

    row = task_row if task_row is not None else line.get("task_row")
    task = _fathom_task(row)
    pieces = supporting_pieces(task)
    messages = normal_messages(line.get("messages") or [])
    turns, system = view_turns(messages, pieces)
    # The answer the reward graded (one block of a reply that ended the rollout), and what the
    # page shows: every block when there is not exactly one.
    final = _last_reply(messages) if line.get("ended_by") == "answer" else ""
    graded = single_answer(final)
    answer = graded if graded is not None else " | ".join(answer_blocks(final)) or None
    scores = _scores(line.get("scores"))
    subs = _sub_calls(line.get("sub_calls") or [], pieces)
    asked = question or (task.question if task is not None else _user_text(messages))
    error = _cut(line.get("error") or None)
    return {
        "env": FATHOM,
        "policy": _cut(line.get("policy") or policy or "?", NAME_CHARS),
        "task": _task_id(line.get("task")),
        "family": task.family if task is not None else None,
        "question": _cut(asked),
        "gold": _cut(task.answer) if task is not None else None,
        "aliases": [_cut(a, NAME_CHARS) for a in task.aliases[:20]] if task is not None else [],
        "answer": _cut(answer),
        "ending": _cut(line.get("ended_by") or ("error" if error else "unknown"), NAME_CHARS),
        "error": error,
        "outcome": _outcome(error, scores.get("correctness")),
        "reward": scores.get("reward"),
        "scores": scores,
        "vetoes": fathom_vetoes(graded, task, scores),
        "tokens": scores.get("total_tokens"),
        "tool_errors": _whole(scores.get("tool_errors")) or 0,
        "mistakes": dict(mistakes.fathom_mistakes({**line, "messages": messages})),
        "system": system,
        "turns": turns,
        "sub_calls": subs,
        "evidence": len(pieces),
        "evidence_marks": sum(
            len(t["text"]["marks"])
            for turns_ in (turns, *(s["turns"] for s in subs))
            for t in turns_
        ),
    }


def _user_text(messages: Iterable[Mapping[str, Any]]) -> str | None:
    for message in messages:
        if message.get("role") == "user":
            return text_of(message.get("content"))
    return None


# ------------------------------------------------------------------------------- gsm8k


def gsm8k_rollout(
    *,
    question: str | None,
    completion: str,
    gold: str | None,
    scores: Mapping[str, float],
    policy: str,
    truncated: bool = False,
    task: Any = None,
    error: str | None = None,
) -> dict[str, Any]:
    """One gsm8k-multireward completion: its text, the boxed answer the grader reads, the gold
    and both rewards."""
    from gsm8k_multireward.parsing import extract_answer

    scores = _scores(scores)
    error = _cut(error or None)
    return {
        "env": GSM8K,
        "policy": _cut(policy, NAME_CHARS),
        "task": _task_id(task),
        "family": None,
        "question": _cut(question),
        "gold": _cut(gold),
        "aliases": [],
        "answer": _cut(extract_answer(completion)),
        "ending": "error" if error else ("truncated" if truncated else "answer"),
        "error": error,
        "outcome": _outcome(error, scores.get("correct_answer")),
        "reward": scores.get("reward"),
        "scores": scores,
        "vetoes": [],
        "tokens": scores.get("completion_tokens"),
        "tool_errors": 0,
        "mistakes": dict(mistakes.gsm8k_mistakes(completion, truncated=truncated)),
        "system": None,
        "turns": [{"role": "assistant", "reply": 1, "text": fold(completion), "calls": []}],
        "sub_calls": [],
        "evidence": 0,
    }


# ------------------------------------------------------------------------------ sources


def _which_env(scores: Mapping[str, Any], env: str | None) -> str:
    if env is not None:
        return env
    return GSM8K if "correct_answer" in scores else FATHOM


def from_eval_line(line: Mapping[str, Any], env: str | None = None) -> dict[str, Any]:
    """An `fathom_lab.evaluate` transcript line, or a real-model fixture (either environment)."""
    if "task_row" in line:
        return fathom_rollout(line)
    scores = line.get("scores") or {}
    completion = line.get("completion")
    text = completion if isinstance(completion, str) else _last_reply(completion or [])
    return gsm8k_rollout(
        question=_user_text(line.get("prompt") or []),
        completion=text,
        gold=line.get("answer"),
        scores={**scores, "completion_tokens": line.get("completion_tokens")},
        policy=str(line.get("policy") or "model"),
        truncated=bool(line.get("is_truncated")),
    )


def _last_reply(messages: Sequence[Mapping[str, Any]]) -> str:
    replies = [m for m in messages if m.get("role") == "assistant"]
    return text_of(replies[-1].get("content")) if replies else ""


VF_ENDINGS = {"answered": "answer", "no_tools_called": "answer", "max_turns_reached": "max_turns"}
"""Legacy verifiers' `stop_condition` names as the loop's endings (others are kept as named)."""


def from_vf_eval(line: Mapping[str, Any], env: str | None = None) -> dict[str, Any]:
    """A row of legacy `vf-eval -s` results.jsonl: scores under `metrics` and beside the row,
    the fathom task row in `info` (an object, or its JSON text)."""
    metrics = dict(_decoded(line.get("metrics")) or {})
    for key, value in line.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and key not in metrics:
            metrics[key] = value
    metrics["reward"] = line.get("reward", metrics.get("reward"))
    metrics.pop("example_id", None)
    prompt = normal_messages(line.get("prompt") or [])
    completion = normal_messages(line.get("completion") or [])
    policy = str(line.get("model") or "model")
    usage = _decoded(line.get("token_usage")) or {}
    error = line.get("error")
    error = str(error) if error else None
    if _which_env(metrics, env) == GSM8K:
        return gsm8k_rollout(
            question=_user_text(prompt),
            completion=_last_reply(completion),
            gold=str(line.get("answer")) if line.get("answer") is not None else None,
            scores={**metrics, "completion_tokens": usage.get("output_tokens")},
            policy=policy,
            truncated=bool(line.get("is_truncated")),
            task=line.get("example_id"),
            error=error,
        )
    row = _decoded(line.get("info"))
    stop = line.get("stop_condition")
    if line.get("is_truncated"):
        ended = "truncated"
    elif stop:
        ended = VF_ENDINGS.get(stop, stop)
    elif completion and completion[-1].get("role") == "assistant":
        ended = "answer"
    else:
        ended = "max_turns"
    rollout = {
        "policy": policy,
        "task": line.get("example_id"),
        "messages": [*prompt, *completion],
        "scores": metrics,
        "ended_by": ended,
        "error": error,
    }
    return fathom_rollout(rollout, task_row=row if isinstance(row, Mapping) else None)


def from_trl_completion(line: Mapping[str, Any], env: str | None = None) -> dict[str, Any]:
    """A row of a TRL completions log (`labs/gsm8k_multireward/training/gsm8k_grpo_gdpo.py report`
    gathers them): the
    step, the question, the completion and every logged reward and the advantage."""
    scores = {k: v for k, v in line.items() if isinstance(v, (int, float)) and k != "step"}
    completion = line.get("completion")
    policy = f"step {line.get('step')}"
    question = line.get("question")
    if isinstance(question, str) and question.startswith("Question: "):
        question = question[len("Question: ") :]
    if _which_env(scores, env) == GSM8K:
        text = completion if isinstance(completion, str) else _last_reply(completion or [])
        return gsm8k_rollout(
            question=question, completion=text, gold=None, scores=scores, policy=policy
        )
    messages = completion if isinstance(completion, list) else []
    if isinstance(completion, str):
        messages = [{"role": "assistant", "content": completion}]
    ended = "answer" if messages and messages[-1].get("role") == "assistant" else "max_turns"
    if messages and messages[-1].get("tool_calls"):
        ended = "max_turns"
    rollout = {"policy": policy, "messages": messages, "scores": scores, "ended_by": ended}
    view = fathom_rollout(rollout, question=question)
    view["step"] = line.get("step")
    return view


def from_openenv_episode(line: Mapping[str, Any], env: str | None = None) -> dict[str, Any]:
    """An `envtools.openenv_play` episode (the server never sends the gold: it is not shown)."""
    scores = line.get("scores") or {}
    error = line.get("error")
    if _which_env(scores, env) == GSM8K:
        messages = line.get("messages") or []
        replies = line.get("replies") or [{}]
        usage = replies[-1].get("usage") or {}
        return gsm8k_rollout(
            question=_user_text(messages),
            completion=_last_reply(messages),
            gold=None,
            scores={**scores, "completion_tokens": usage.get("completion_tokens")},
            policy=str(line.get("policy") or "model"),
            truncated=line.get("ended_by") == "length",
            task=line.get("task"),
            error=error,
        )
    return fathom_rollout({**line, "policy": line.get("policy") or "model"})


def trace_conversations(nodes: Sequence[Mapping[str, Any]]) -> list[list[int]]:
    """The conversations of a verifiers v1 trace as lists of node indices, the root agent's
    first: each starts at a node without a parent and follows its latest child (a sub-call's
    branch starts a new one)."""
    children: dict[int, int] = {}
    for index, node in enumerate(nodes):
        parent = node.get("parent")
        if isinstance(parent, int):
            children[parent] = index  # the latest child wins
    conversations = []
    for index, node in enumerate(nodes):
        if node.get("parent") is not None:
            continue
        chain: list[int] = []
        at: int | None = index
        while at is not None and len(chain) <= len(nodes):
            chain.append(at)
            at = children.get(at)
        conversations.append(chain)
    return conversations


def from_v1_episode(line: Mapping[str, Any], env: str | None = None) -> dict[str, Any]:
    """An episode of verifiers v1's traces.jsonl (`eval`, or `vf-eval` from 0.4.0): the root
    conversation, and every sub-call's branch as a sub-call under the root reply it follows in
    the trace (a trace records neither a branch's caller nor its depth)."""
    trace = (line.get("traces") or [{}])[0]
    scores = {name: r.get("score") for name, r in (trace.get("rewards") or {}).items()}
    scores.update(trace.get("metrics") or {})
    data = (trace.get("task") or {}).get("data") or {}
    agent = (trace.get("agent") or {}).get("config") or {}
    policy = str(agent.get("model") or "model")
    errors = [*(line.get("errors") or []), *(trace.get("errors") or [])]
    error = "; ".join(str(e.get("message", e) if isinstance(e, Mapping) else e) for e in errors)
    nodes = trace.get("nodes") or []
    chains = trace_conversations(nodes)

    def messages(chain: list[int]) -> list[dict[str, Any]]:
        return [dict(nodes[i].get("message") or {}) for i in chain]

    root = messages(chains[0]) if chains else []
    if _which_env(scores, env) == GSM8K:
        return gsm8k_rollout(
            question=data.get("prompt") or _user_text(root),
            completion=_last_reply(root),
            gold=data.get("answer"),
            scores=scores,
            policy=policy,
            truncated=trace.get("stop_condition") == "truncated",
            error=error or None,
        )
    root_nodes = chains[0] if chains else []
    replies = [i for i in root_nodes if (nodes[i].get("message") or {}).get("role") == "assistant"]
    subs = []
    for number, chain in enumerate(chains[1:]):
        conversation = messages(chain)
        subs.append(
            {
                "index": number,
                "parent": None,
                "turn": sum(i < chain[0] for i in replies),
                "kind": "branch of the trace",
                "prompt": _user_text(conversation) or "",
                "messages": conversation,
            }
        )
    summary = (trace.get("info") or {}).get("fathom") or {}
    rollout = {
        "policy": policy,
        "messages": root,
        "scores": scores,
        "ended_by": summary.get("ended_by") or ("error" if error else "unknown"),
        "error": error or None,
        "sub_calls": subs,
    }
    return fathom_rollout(rollout, task_row=data.get("row"))


READERS = {
    "evaluate": from_eval_line,
    "vf-eval": from_vf_eval,
    "v1": from_v1_episode,
    "trl": from_trl_completion,
    "openenv": from_openenv_episode,
}
"""Every source by the name `--source` takes."""
NEEDS: dict[str, tuple[str, ...]] = {
    "evaluate": ("task_row", "prompt", "messages"),
    "vf-eval": ("completion",),
    "v1": ("traces",),
    "trl": ("completion",),
    "openenv": ("messages", "error"),
}
"""A line read as each source holds at least one of these keys (else it is another source's)."""


def read(line: Mapping[str, Any], source: str, env: str | None = None) -> dict[str, Any]:
    """One saved line as a view rollout, read as `source`; ValueError if it is not of that form."""
    if not any(key in line for key in NEEDS[source]):
        wanted = " or ".join(f"`{k}`" for k in NEEDS[source])
        raise ValueError(f"not a {source} line (it has no {wanted})")
    return READERS[source](line, env)


def sniff(line: Mapping[str, Any]) -> str:
    """The source a saved line comes from, by its keys."""
    if "task_row" in line or ("source" in line and "prompt" in line and "scores" in line):
        return "evaluate"
    if "traces" in line:
        return "v1"
    if "step" in line and "completion" in line:
        return "trl"
    if "prompt" in line and "completion" in line:
        return "vf-eval"
    if "replies" in line or ("task" in line and "error" in line):
        return "openenv"
    raise ValueError(
        "not a saved rollout this viewer reads (an fathom_lab.evaluate transcript, a vf-eval -s "
        "result, a verifiers v1 trace, a TRL completions log or an openenv_play episode); its "
        f"keys: {sorted(line)[:12]}"
    )


def summary(rollouts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The glance at a run: correctness by family and policy, endings and mistakes by kind."""
    by_family: dict[str, dict[str, list[int]]] = {}
    for r in rollouts:
        family = r["family"] or r["env"]
        cell = by_family.setdefault(family, {}).setdefault(r["policy"], [0, 0])
        cell[0] += r["outcome"] == "right"
        cell[1] += 1
    endings = Counter(r["ending"] for r in rollouts)
    found: Counter[str] = Counter()
    for r in rollouts:
        found.update(r["mistakes"])
    order = [*mistakes.KINDS, *mistakes.GSM8K_KINDS]
    kinds = sorted(found, key=lambda k: (order.index(k) if k in order else len(order), k))
    return {
        "rollouts": len(rollouts),
        # In the run's own order: an evaluation writes its policies in ladder order.
        "policies": list(dict.fromkeys(r["policy"] for r in rollouts)),
        "outcomes": {o: sum(r["outcome"] == o for r in rollouts) for o in OUTCOMES},
        "correct_by_family": {f: by_family[f] for f in sorted(by_family)},
        "endings": dict(endings.most_common()),
        "mistakes": {k: found[k] for k in kinds},
    }
