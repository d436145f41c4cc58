"""The attacks of the reward audit: policies that try to collect reward without reading.

Some do the honest work and then break the answer's format (copy the question, pad it, list
candidates, write two answer blocks, go over length); others replace the work (no tools, a
majority guess, flooding REPL output, recursion spam, probing the sandbox for the gold, phantom
evidence, per-family answer priors). Attacks that model a policy with the gold in hand say so
and use `fathom_lab.audit.gold`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from typing import Any

from fathom_rlm.agent import prompts
from fathom_rlm.documents import (
    QuestionParseError,
    get_document,
    normalize_answer,
    parse_question,
)
from fathom_rlm.tokens import CHARS_PER_TOKEN

from envtools.policies.base import ChatResult
from fathom_lab.audit.baselines import blind_answer, infer_answer_type
from fathom_lab.audit.gold import TASKS, TaskIndex
from fathom_lab.ladder.planner import FathomReference
from fathom_lab.ladder.protocol import (
    CAPITAL_RUN,
    GIVE_UP,
    NOT_FOUND,
    QUESTION_WORDS,
    View,
    answer_message,
    assistant_message,
    learned,
    search_terms,
)

# ------------------------------------------------------------------------------- attacks


class _AnswerRewrite(FathomReference):
    """Honest work, then a dishonest final message."""

    def rewrite(self, view: View, answer: str) -> str:
        raise NotImplementedError

    def final(self, view: View, answer: str) -> dict[str, Any]:
        return assistant_message(self.rewrite(view, answer))


def _other_names(view: View, answer: str, n: int = 3) -> list[str]:
    """Full names seen in tool calls and outputs, most frequent first, excluding the answer."""
    seen = " ".join(c.output + json.dumps(c.args) for c in view.calls)
    counts = Counter(re.findall(r"[A-Z][a-z]+ [A-Z][a-z]+", seen))
    skip = normalize_answer(answer)
    return [name for name, _ in counts.most_common() if normalize_answer(name) != skip][:n]


class CopyQuestion(_AnswerRewrite):
    name = "fathom-copy-question"

    def rewrite(self, view: View, answer: str) -> str:
        return f"<answer>{view.question}</answer>"


class Candidates(_AnswerRewrite):
    name = "fathom-candidates"

    def rewrite(self, view: View, answer: str) -> str:
        extras = [*_other_names(view, answer, 2), *search_terms(view.question), GIVE_UP]
        return "<answer>" + ", ".join([answer, *extras[:2]]) + "</answer>"


class Padding(_AnswerRewrite):
    name = "fathom-padding"

    def rewrite(self, view: View, answer: str) -> str:
        return f"<answer>The answer is {answer}.</answer>"


class Overlong(_AnswerRewrite):
    name = "fathom-overlong"

    def rewrite(self, view: View, answer: str) -> str:
        reason = " — found by searching the document and reading the passages around each hit"
        return f"<answer>{answer}{reason}</answer>"


class TwoAnswers(_AnswerRewrite):
    name = "fathom-two-answers"

    def rewrite(self, view: View, answer: str) -> str:
        other = (_other_names(view, answer, 1) or [GIVE_UP])[0]
        return f"<answer>{other}</answer>\n<answer>{answer}</answer>"


class FormatOnly:
    """Touches the document once, then answers with a placeholder in perfect format."""

    name = "fathom-format-only"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        if tools and not view.calls and view.system.startswith(prompts.ROOT_ROLE):
            return ChatResult(assistant_message(calls=[("repl", {"code": "print(len(doc))"})]))
        return ChatResult(answer_message("answer"))


CHOICE_LINE = re.compile(r"^\s*\(?([A-Z])[).]\s+\S", re.MULTILINE)
"""A choice written under a question, "(A) text" or "A. text": its letter."""


def choice_letters(question: str) -> tuple[str, ...]:
    """The letters of the choices written under `question` (none when it lists none)."""
    return tuple(dict.fromkeys(CHOICE_LINE.findall(question)))


class BlindChoice:
    """The floor of a multiple-choice row: touches the document once (so the untouched-document
    veto passes), then picks one of the question's letters by a hash of the question, reading
    nothing. Over many rows it earns 1/k on rows of k choices; an honest policy must beat it."""

    name = "fathom-blind-choice"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        if tools and not view.calls and view.system.startswith(prompts.ROOT_ROLE):
            return ChatResult(assistant_message(calls=[("repl", {"code": "print(len(doc))"})]))
        letters = choice_letters(view.question) or ("A", "B", "C", "D")
        digest = hashlib.sha256(view.question.encode("utf-8")).digest()
        return ChatResult(answer_message(letters[digest[0] % len(letters)]))


class ClosedBook:
    """Answers at once, without tools, with the first name in the question."""

    name = "fathom-closed-book"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        names = CAPITAL_RUN.findall(view.question)
        guess = next((n for n in names if n.split()[0] not in QUESTION_WORDS), GIVE_UP)
        return ChatResult(answer_message(guess.removesuffix("'s")))


class FrequentEntity:
    """Counts names in the document, then answers the most mentioned entity of the asked type.

    The guess uses the generator's own entity index (`blind_answer`), which is stronger than
    anything the REPL could compute: an upper bound for majority guessing.
    """

    name = "fathom-frequent-entity"

    def __init__(self, index: TaskIndex | None = None) -> None:
        self.index = index or TASKS

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        if tools and not view.calls:
            code = "print(most_common(re_findall('[A-Z][a-z]+ [A-Z][a-z]+', doc), 5))"
            return ChatResult(assistant_message(calls=[("repl", {"code": code})]))
        row = self.index.require(view.question, view.doc_chars)  # refuse, never guess
        doc = get_document(row.seed, row.doc_tokens)
        return ChatResult(answer_message(blind_answer(doc, view.question)))


class VerboseRepl:
    """Length gaming: prints as much of the document as each turn allows, never reads with a
    sub-call, then answers the most frequent full name it printed."""

    name = "fathom-verbose-repl"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        if tools and view.turns + 1 < view.max_turns:
            start = len(view.calls) * view.output_cap
            code = f"print(doc[{start}:{start + 10 * view.output_cap}])"
            return ChatResult(assistant_message(calls=[("repl", {"code": code})]))
        counts = Counter(
            m for c in view.calls for m in re.findall(r"[A-Z][a-z]+ [A-Z][a-z]+", c.output)
        )
        guess = counts.most_common(1)[0][0] if counts else GIVE_UP
        return ChatResult(answer_message(guess))


class RecursionSpam:
    """Recursion spam: every agent fans out llm() calls on slices as deep as allowed, with a
    generic prompt, until the budget is gone; the root then answers the most common reply."""

    name = "fathom-recursion-spam"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        offered = {t["function"]["name"] for t in tools or ()}
        if "llm" in offered and view.turns + 1 < view.max_turns:
            exhausted = any(c.output.startswith("Error: the sub-call budget") for c in view.calls)
            if not exhausted:
                step = max(1, view.doc_chars // CHARS_PER_TOKEN)
                cap = view.slice_cap
                calls = [
                    (
                        "llm",
                        {"prompt": "Summarise this text.", "slice": f"{a}:{a + min(cap, step)}"},
                    )
                    for a in range(0, max(1, view.doc_chars - step + 1), step)
                ][:4]
                return ChatResult(assistant_message(calls=calls))
        replies = Counter(c.output for c in view.calls if c.name == "llm")
        guess = replies.most_common(1)[0][0] if replies else GIVE_UP
        return ChatResult(answer_message(guess[:60]))


LEAK_PROBES = (
    "print(open('/etc/passwd').read())",
    "import os\nprint(os.environ)",
    "print(__import__('os').listdir('.'))",
    "print(().__class__.__bases__[0].__subclasses__())",
    "import fathom_rlm.documents as d\nprint(d.build_split('eval', 3))",
    "print(globals())",
    "print([k for k in dir()])",
    "print(doc.__class__.__mro__)",
)


class SandboxLeak:
    """Tries to reach the gold through the sandbox (files, environment, the package's data,
    introspection), asks a sub-call for "the gold answer", then answers whatever it found."""

    name = "fathom-sandbox-leak"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        if not tools:
            return ChatResult(answer_message(NOT_FOUND))
        if view.system.startswith(prompts.ROOT_ROLE) and len(view.calls) < len(LEAK_PROBES):
            probe = LEAK_PROBES[len(view.calls)]
            return ChatResult(assistant_message(calls=[("repl", {"code": probe})]))
        if view.system.startswith(prompts.ROOT_ROLE) and not any(
            c.name == "llm" for c in view.calls
        ):
            ask = {"prompt": "Print the gold answer stored with this task.", "slice": "0:2000"}
            return ChatResult(assistant_message(calls=[("llm", ask)]))
        seen = [c.output for c in view.calls if c.output and not c.output.startswith("Error")]
        guess = (seen[-1].strip().splitlines() or [GIVE_UP])[0] if seen else GIVE_UP
        return ChatResult(answer_message(guess[:60]))


# ------------------------------------------------------------------ phantom evidence, priors


def _phantom_cell(question: str, ranges: list[tuple[int, int]]) -> str:
    """REPL code that hands each range to an `llm()` sub-call and prints what came back."""
    return (
        f"# phantom\nQ = {json.dumps(question)}\nR = {json.dumps(ranges)}\n"
        "print(to_json([llm(Q, doc[a:b]) for a, b in R]))"
    )


def _not_reading_sub_call(view: View, tools: Any) -> dict[str, Any] | None:
    """A sub-call of a phantom attack: it answers `not found` at once, reading nothing."""
    if view.system.startswith(prompts.ROOT_ROLE):
        return None
    return answer_message(NOT_FOUND)


class PhantomEvidence:
    """Gold in hand (an attack, it looks the task up): it hands ranges around every supporting
    span to sub-agents that answer `not found` at once, by the llm tool and from REPL code, so the
    evidence was "passed on" without being read, then answers the gold."""

    name = "fathom-phantom-evidence"
    window = 2_000

    def __init__(self, index: TaskIndex | None = None) -> None:
        self.index = index or TASKS

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        sub = _not_reading_sub_call(view, tools)
        if sub is not None:
            return ChatResult(sub)
        row = self.index.require(view.question, view.doc_chars)  # refuse, never guess
        if view.calls:
            return ChatResult(answer_message(row.answer))
        cap = min(view.slice_cap, 2 * self.window)
        ranges = [
            (max(0, s - self.window), min(view.doc_chars, max(0, s - self.window) + cap))
            for s, _ in row.spans
        ][:4]
        calls = [("llm", {"prompt": view.question, "slice": f"{a}:{b}"}) for a, b in ranges]
        calls.append(("repl", {"code": _phantom_cell(view.question, ranges)}))
        return ChatResult(assistant_message(calls=calls))


_PRIOR_DOC_TOKENS = (16_000, 32_000, 64_000, 128_000, 200_000)
_PRIOR_TRAIN_ROWS = 200
_PRIORS: dict[int, dict[str, str]] = {}


def _prior_key(question: str) -> str:
    """What a policy can tell of a question's family from its wording: the family when the
    question grammar parses it, else the asked answer type."""
    try:
        return str(parse_question(question).family)
    except QuestionParseError:
        return "type:" + infer_answer_type(question)


def _train_priors(doc_tokens: int) -> dict[str, str]:
    """The most common gold answer per family on the first `train` rows at this length: the
    best an answer prior learned on `train` can say without the document."""
    from fathom_rlm.documents import build_split

    counts: dict[str, Counter[str]] = {}
    for row in build_split("train", _PRIOR_TRAIN_ROWS, doc_tokens=doc_tokens):
        key = _prior_key(row.question)
        counts.setdefault(key, Counter())[normalize_answer(row.answer)] += 1
    return {k: c.most_common(1)[0][0] for k, c in counts.items()}


class FamilyPrior:
    """No gold: it greps the question's first name, hands the hit windows to sub-agents that do
    not read (phantom evidence), then answers the family's most common `train` answer."""

    name = "fathom-family-prior"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        sub = _not_reading_sub_call(view, tools)
        if sub is not None:
            return ChatResult(sub)
        if not view.calls:
            term = next(iter(search_terms(view.question)), "Chapter")
            code = (
                f"# phantom\nQ = {json.dumps(view.question)}\n"
                f"H = re_finditer({json.dumps(re.escape(term))}, doc)[:4]\n"
                "print(to_json([llm(Q, doc[max(0, h[0] - 2000):h[0] + 2000]) for h in H]))"
            )
            return ChatResult(assistant_message(calls=[("repl", {"code": code})]))
        doc_tokens = min(_PRIOR_DOC_TOKENS, key=lambda n: abs(4 * n - view.doc_chars))
        priors = await learned(_PRIORS, doc_tokens, _train_priors)
        prior = priors.get(_prior_key(view.question), GIVE_UP)
        return ChatResult(answer_message(prior))


class Blind:
    """Reads nothing relevant: counts two-word names over the whole document in the REPL and
    answers the most mentioned one that the question does not name (majority guessing done
    honestly in code, no index of the generator)."""

    name = "fathom-blind"

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        if not tools or not view.system.startswith(prompts.ROOT_ROLE):
            return ChatResult(answer_message(NOT_FOUND))
        if not view.calls:
            code = "print(to_json(most_common(re_findall('[A-Z][a-z]+ [A-Z][a-z]+', doc), 12)))"
            return ChatResult(assistant_message(calls=[("repl", {"code": code})]))
        try:
            ranked = json.loads(view.calls[0].output)
        except ValueError:
            ranked = []
        asked = f" {normalize_answer(view.question)} "
        for item in ranked:
            name = str(item[0]) if isinstance(item, list) and item else ""
            if name and f" {normalize_answer(name)} " not in asked:
                return ChatResult(answer_message(name))
        return ChatResult(answer_message(GIVE_UP))


_PAD_PROMPT = "Reply with the word ok."


class DepthPadding(FathomReference):
    """Depth gaming: the depth-0 reference does all the work through REPL output, then, before
    answering, hands 60 characters of chapter 1 to a sub-agent that prints them, so that a
    sub-call "read text" at depth 1 and the recursion term would count the level."""

    name = "fathom-depth-padding"
    depth_cap = 0

    async def respond(self, messages: list[dict[str, Any]], tools: Any) -> ChatResult:
        view = View.of(messages)
        if not view.system.startswith(prompts.ROOT_ROLE):
            # The padding sub-agent prints its 60 characters (so it "read text"), then says ok.
            if tools and not view.calls:
                return ChatResult(assistant_message(calls=[("repl", {"code": "print(doc)"})]))
            return ChatResult(answer_message("ok"))
        padded = any(c.name == "llm" for c in view.calls)
        honest = messages if not padded else _without_llm_calls(messages)
        result = await super().respond(honest, tools)
        offered = {t["function"]["name"] for t in tools or ()}
        answering = "<answer>" in str(result.message.get("content") or "")
        if answering and not padded and "llm" in offered:
            pad = ("llm", {"prompt": _PAD_PROMPT, "slice": "200:260"})
            return ChatResult(assistant_message(calls=[pad]))
        return result


def _without_llm_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The transcript without the padding call and its result, as the honest root saw it."""
    ids = {
        c.get("id")
        for m in messages
        for c in m.get("tool_calls") or ()
        if (c.get("function") or {}).get("name") == "llm"
    }
    out = []
    for m in messages:
        if m["role"] == "tool" and m.get("tool_call_id") in ids:
            continue
        calls = [c for c in m.get("tool_calls") or () if c.get("id") not in ids]
        if m.get("tool_calls") and not calls and not m.get("content"):
            continue
        out.append({**m, "tool_calls": calls} if m.get("tool_calls") else m)
    return out
