"""Scripted GSM8K policies: a ladder from a perfect solver to a policy that never answers.

Where the gold answers come from: the answering policies read the same JSONL file the
environment is pointed at (`{"question": ..., "answer": "...#### <final>"}` per line), named by
the environment variable `GSM8K_POLICY_DATA` (or passed as `data_path`). They find the row whose
question appears in the last user message; the request itself never carries the gold. Every
policy is deterministic given the question.

Usage is reported with `completion_tokens = max(1, len(content) // 4)` (and the same estimate over
the prompt's text for `prompt_tokens`): a stand-in for a tokenizer, close to the environment's
own characters-per-token fallback, so reported and estimated lengths agree.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from envtools import cli
from envtools.policies.base import ChatResult, Policy
from envtools.policies.registry import Ladder

DATA_ENV_VAR = "GSM8K_POLICY_DATA"
CHARS_PER_TOKEN = 4
VERBOSE_TOKENS = 2048
"""Length of `gsm8k-verbose` answers: twice the environment's default 1024-token threshold."""


def estimate_tokens(text: str) -> int:
    """The token count the policies report: one token per four characters, at least one."""
    return max(1, len(text) // CHARS_PER_TOKEN)


def message_text(message: dict[str, Any]) -> str:
    """The text of a chat message whose content is a string or a list of content parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            part.get("text", "")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def final_answer(solution: str) -> str:
    """The final answer of a GSM8K solution (the text after `####`), without thousands commas."""
    return solution.split("####")[-1].strip().replace(",", "")


class GoldAnswers:
    """Question → final answer, read once from a GSM8K-style JSONL file."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._answers: dict[str, str] = {}
        with self.path.open(encoding="utf-8") as handle:
            for line in handle:
                if line.strip():
                    row = json.loads(line)
                    self._answers[row["question"].strip()] = final_answer(str(row["answer"]))

    def lookup(self, prompt: str) -> str:
        """The gold for the question contained in `prompt`; ValueError when there is none."""
        prompt = prompt.strip()
        if prompt in self._answers:
            return self._answers[prompt]
        # The environment may wrap the question in instructions: take the longest question
        # contained in the prompt so a short question cannot shadow a longer one.
        best = max((q for q in self._answers if q and q in prompt), key=len, default=None)
        if best is None:
            raise ValueError(f"question not found in {self.path}: {prompt[:80]!r}")
        return self._answers[best]


def _wrong_number(gold: str) -> str:
    """A number that differs from the gold (gold + 1, or 1 when the gold is not a number)."""
    try:
        value = float(gold)
    except ValueError:
        return "1"
    wrong = value + 1
    return str(int(wrong)) if wrong.is_integer() else str(wrong)


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return message_text(message)
    raise ValueError("the request has no user message")


class Gsm8kPolicy:
    """One rung of the ladder; `style` decides what the answer looks like."""

    STYLES = ("gold", "verbose", "wrong", "noanswer")

    def __init__(self, style: str, data_path: str | os.PathLike[str] | None = None) -> None:
        if style not in self.STYLES:
            raise ValueError(f"unknown style {style!r}; expected one of {self.STYLES}")
        self.style = style
        self.name = f"gsm8k-{style}"
        self._data_path = data_path
        self._gold: GoldAnswers | None = None

    def _gold_for(self, question: str) -> str:
        if self._gold is None:
            path = self._data_path or os.environ.get(DATA_ENV_VAR)
            if not path:
                raise ValueError(f"{self.name} needs ${DATA_ENV_VAR}: a GSM8K-style JSONL path")
            self._gold = GoldAnswers(path)
        return self._gold.lookup(question)

    def compose(self, question: str) -> str:
        """The assistant's reply to one question."""
        if self.style == "noanswer":
            return "<think>Let me work through this.</think>\nI am not sure of the final number."
        gold = self._gold_for(question)
        if self.style in ("gold", "wrong"):
            said = gold if self.style == "gold" else _wrong_number(gold)
            return (
                f"<think>Working it through gives {said}.</think>\nThe answer is \\boxed{{{said}}}."
            )
        # verbose: correct, but the reasoning alone is longer than the default length threshold.
        line = f"Checking the arithmetic once more, the result is still {gold}.\n"
        padding = line * (VERBOSE_TOKENS * CHARS_PER_TOKEN // len(line) + 1)
        return f"<think>\n{padding}</think>\nThe answer is \\boxed{{{gold}}}."

    async def respond(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None
    ) -> ChatResult:
        content = self.compose(_last_user_text(messages))
        prompt_text = "".join(message_text(m) for m in messages)
        return ChatResult(
            message={"role": "assistant", "content": content},
            usage={
                "prompt_tokens": estimate_tokens(prompt_text),
                "completion_tokens": estimate_tokens(content),
            },
        )


def _factory(style: str) -> Callable[[], Policy]:
    return lambda: Gsm8kPolicy(style)


POLICIES: dict[str, Callable[[], Policy]] = {
    f"gsm8k-{style}": _factory(style) for style in Gsm8kPolicy.STYLES
}


def _configure_server(parser: cli.ArgumentParser, args: object) -> None:
    """A named data file must be there before the server starts."""
    data = os.environ.get(DATA_ENV_VAR)
    if data:
        parser.require_file(f"${DATA_ENV_VAR}", data, "GSM8K JSONL the gsm8k policies answer from")


LADDER = Ladder(POLICIES, configure_server=_configure_server)
"""The entry point `envtools.ladders: gsm8k` (this lab's pyproject.toml)."""
