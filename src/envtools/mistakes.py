"""What a model did wrong in a rollout, by kind, read from its saved transcript.

The real-model table (benchmarks/real_model_table.py) counts these over `fathom_lab.evaluate`'s
transcripts.jsonl (fathom-rlm) and legacy `vf-eval`'s results.jsonl (gsm8k-multireward). Every
kind is read off what the rollout recorded, so a count is reproducible from the saved files:

* from the model's replies (root and sub-calls, in call order): a reply cut at the token cap
  (`finish_reason` "length"), cut inside a tool call, runaway repetition (a cut reply that
  mostly repeats itself), an empty turn (no text and no call), and, for the rollout's last root
  reply, an answer outside the `<answer>` tags (or, for gsm8k-multireward, outside `\\boxed{}`);
* from the tool results the root saw: a cell that printed nothing, and every call the
  environment refused or that failed, by the
  kind its "Error:" message names (a call that is not JSON, an unknown tool, a bad slice or
  variable, the tool's JSON-schema keys sent as arguments, other bad arguments, code that raised,
  code that ran out of time, a spent budget).

A rollout that never called a tool is one more kind.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from fathom_rlm.agent.errors import ERROR_KINDS, error_kind
from fathom_rlm.agent.tools import NO_OUTPUT
from fathom_rlm.agent.turns import CUT_FINISH_REASON

from envtools.tool_calls import text_of

REPLY_KINDS = (
    "no_tool_call",
    "answer_outside_tags",
    "cut_at_token_cap",
    "cut_inside_call",
    "runaway_repetition",
    "empty_turn",
)
TOOL_KINDS = ("printed_nothing", *ERROR_KINDS)
KINDS = (*REPLY_KINDS, *TOOL_KINDS)
"""Every kind a fathom-rlm rollout is counted under, in table order."""

GSM8K_KINDS = ("no_boxed_answer", "cut_at_token_cap", "runaway_repetition", "empty_turn")

_BOXED = re.compile(r"\\boxed\s*\{")


def _has_answer_block(text: str) -> bool:
    """Whether `<answer>` is followed somewhere by `</answer>` (two finds: linear)."""
    start = text.find("<answer>")
    return start >= 0 and text.find("</answer>", start + len("<answer>")) >= 0


def tool_result_kind(output: str) -> str | None:
    """The mistake kind of a tool result: a cell that printed nothing, an error by the kind its
    message names, or None for a normal result."""
    return "printed_nothing" if output == NO_OUTPUT else tool_error_kind(output)


def tool_error_kind(output: str) -> str | None:
    """The kind of a tool result that is an error ("Error: ..."), None for a normal result."""
    if not output.startswith("Error:"):
        return None
    return error_kind(output[len("Error:") :])


def repeats_itself(text: str, *, min_words: int = 24, max_distinct: float = 0.5) -> bool:
    """True for a loop such as "The answer is: The answer is: ...", not a long reply that merely
    reuses a few words: at most `max_distinct` of the text's word trigrams are distinct, or a text
    of 200+ characters compresses to an eighth of its size or less (a loop without spaces, such as
    "<answer><answer>...")."""
    data = text.encode("utf-8", "replace")
    if len(data) >= 200 and len(zlib.compress(data)) <= len(data) / 8:
        return True
    words = text.split()
    if len(words) < min_words:
        return False
    trigrams = list(zip(words, words[1:], words[2:], strict=False))
    return len(set(trigrams)) <= max_distinct * len(trigrams)


def _reply_kinds(reply: Mapping[str, Any]) -> list[str]:
    message = reply.get("message") or {}
    text = text_of(message.get("content"))
    calls = message.get("tool_calls") or []
    kinds = []
    if reply.get("finish_reason") == CUT_FINISH_REASON:
        kinds.append("cut_at_token_cap")
        if calls:  # the call may stop mid-JSON; it is not run
            kinds.append("cut_inside_call")
        written = [text, *(str((c.get("function") or {}).get("arguments", "")) for c in calls)]
        if repeats_itself("\n".join(written)):  # a loop inside a call's code counts too
            kinds.append("runaway_repetition")
    if not text.strip() and not calls:
        kinds.append("empty_turn")
    return kinds


def fathom_mistakes(line: Mapping[str, Any]) -> Counter[str]:
    """Counts by kind for one line of `fathom_lab.evaluate`'s transcripts.jsonl."""
    counts: Counter[str] = Counter()
    for reply in line.get("replies") or []:
        counts.update(_reply_kinds(reply))
    messages = line.get("messages") or []
    root_replies = [m for m in messages if m.get("role") == "assistant"]
    if not any(m.get("tool_calls") for m in root_replies):
        counts["no_tool_call"] += 1
    final = text_of(root_replies[-1].get("content")) if root_replies else ""
    if line.get("ended_by") == "answer" and not _has_answer_block(final):
        counts["answer_outside_tags"] += 1
    for message in messages:
        if message.get("role") == "tool":
            output = text_of(message.get("content"))
            kind = tool_result_kind(output)
            if kind:
                counts[kind] += 1
    return counts


def gsm8k_mistakes(completion: str, *, truncated: bool) -> Counter[str]:
    """Counts by kind for one gsm8k-multireward completion (its text and whether it was cut)."""
    counts: Counter[str] = Counter()
    if truncated:
        counts["cut_at_token_cap"] += 1
        if repeats_itself(completion):
            counts["runaway_repetition"] += 1
    if not completion.strip():
        counts["empty_turn"] += 1
    elif not _BOXED.search(completion):
        counts["no_boxed_answer"] += 1
    return counts


def total(counts: Iterable[Counter[str]]) -> Counter[str]:
    """The sum of per-rollout counts."""
    out: Counter[str] = Counter()
    for count in counts:
        out.update(count)
    return out
