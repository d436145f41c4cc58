"""The wire types of gsm8k-multireward's OpenEnv environment, shared by its server and client."""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import Field


class Gsm8kAction(Action):
    """The model's final reply to the question."""

    tool: str = Field("answer", description="always 'answer'")
    message: str = Field(description="the model's reply; graded on its last \\boxed{} answer")
    completion_tokens: int | None = Field(
        None, ge=0, description="the reply's completion tokens, if the endpoint reported them"
    )


class Gsm8kObservation(Observation):
    """The prompt after `reset`; the reward and its components once the reply is graded."""

    messages: list[dict[str, Any]] = Field(default_factory=list, description="reset: prompt")
    error: str | None = Field(None, description="set when the action was refused")
    rewards: dict[str, float] = Field(default_factory=dict, description="done: components")


class Gsm8kState(State):
    """The session's question."""

    task_index: int | None = None
    question: str | None = None
    done: bool = False
