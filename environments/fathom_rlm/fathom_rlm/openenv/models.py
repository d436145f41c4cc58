"""The wire types of fathom-rlm's OpenEnv environment, shared by its server and its client."""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field

TOOLS = ("repl", "llm", "answer")
"""The action's tools: the model's two tools and its final reply."""
MAX_TEXT_CHARS = 262_144
"""Longest text an action field may carry (64K tokens at 4 characters each, more than a model
turn writes). The server refuses a longer one before it is parsed or scored: an answer that
scores is at most `max_answer_chars` long (64 by default), and a 15 MB reply held the server's
event loop for a second."""


class FathomAction(Action):
    """One tool call of the model, or its final reply."""

    tool: str = Field(max_length=64, description="'repl', 'llm' or 'answer'")
    code: str | None = Field(
        None, max_length=MAX_TEXT_CHARS, description="repl: the Python code to run"
    )
    prompt: str | None = Field(None, max_length=MAX_TEXT_CHARS, description="llm: the sub-question")
    slice: str | None = Field(
        None,
        max_length=MAX_TEXT_CHARS,
        description='llm: "start:end" of the document or a variable',
    )
    arguments: str | None = Field(
        None,
        max_length=MAX_TEXT_CHARS,
        description="repl/llm: the call's arguments exactly as the model wrote them (JSON text), "
        "instead of code/prompt/slice; parsed as the in-process loop parses them, so a malformed "
        "call gets the same error",
    )
    message: str | None = Field(
        None,
        max_length=MAX_TEXT_CHARS,
        description="answer: the model's final reply, with one <answer>...</answer> block",
    )
    call_index: int = Field(0, ge=0, description="position of this call in the model's reply")
    usage: dict[str, int] | None = Field(
        None, description="the reply's reported usage {prompt_tokens, completion_tokens}"
    )
    finish_reason: str | None = Field(
        None,
        max_length=32,
        description="answer: the reply's finish_reason; 'length' (cut at the token cap) ends the "
        "episode as 'truncated', with no answer, whatever the reply holds",
    )


class FathomObservation(Observation):
    """What the model sees after an action; scores once the episode is done."""

    messages: list[dict[str, Any]] = Field(default_factory=list, description="reset: prompt")
    tools: list[dict[str, Any]] = Field(default_factory=list, description="reset: tool schemas")
    output: str = Field("", description="the tool's output, as the model should see it")
    error: str | None = Field(None, description="set when the action was refused or failed")
    rewards: dict[str, float] = Field(default_factory=dict, description="done: components")
    metrics: dict[str, float] = Field(default_factory=dict, description="done: metrics")
    ended_by: str | None = Field(None, description="done: 'answer', 'truncated' or 'max_turns'")


class FathomState(State):
    """The session's episode: its row, turns and sub-calls so far."""

    task_index: int | None = None
    question: str | None = None
    turns: int = 0
    sub_calls: int = 0
    done: bool = False
