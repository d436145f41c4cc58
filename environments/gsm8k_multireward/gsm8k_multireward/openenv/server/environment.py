"""gsm8k-multireward as an OpenEnv environment, served by openenv-core's own server.

    python -m gsm8k_multireward.adapters.openenv --port 8000 --data PATH/TO/gsm8k/test.jsonl

One session is one question: `reset` picks a row and returns its prompt (system message and
question); the one action, `answer`, carries the model's reply (and, when the endpoint reported
it, its completion tokens), which is graded by the core. The final observation carries the
reward (`correct_answer` + `length_reward_weight` x `length_reward`) and both components under
their names, so a trainer can normalise each (GDPO) or use the sum (GRPO).

The math-verify pool is the server process's (one per process, workers started on the first
grading) and closes with the server. The server runs behind `openenv_guard` (bearer tokens,
per-client sessions, size, depth and argument checks, idle and life timeouts: see
docs/serving.md); the data is loaded before it binds, so a bad `--data` fails at start.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import Action, ConcurrencyConfig, Observation, State
from openenv_guard import (
    GuardSettings,
    RowResetArgs,
    add_guard_arguments,
    fail_at_start,
    guard_app,
    guard_settings,
    serve,
)
from openenv_guard.middleware import ServingGuard
from pydantic import Field

from gsm8k_multireward.config import GSM8KConfig
from gsm8k_multireward.data import build_prompt, load_examples
from gsm8k_multireward.grading import MathGrader
from gsm8k_multireward.rewards import CORRECT_ANSWER, LENGTH_REWARD, REWARD, ascore_completion


class Gsm8kAction(Action):
    """The model's final reply to the question."""

    tool: str = Field("answer", description="always 'answer'")
    message: str = Field(description="the model's reply; graded on its last \\boxed{} answer")
    completion_tokens: int | None = Field(
        None, ge=0, description="the reply's completion tokens, if the endpoint reported them"
    )


class Gsm8kObservation(Observation):
    messages: list[dict[str, Any]] = Field(default_factory=list, description="reset: prompt")
    error: str | None = Field(None, description="set when the action was refused")
    rewards: dict[str, float] = Field(default_factory=dict, description="done: components")


class Gsm8kState(State):
    task_index: int | None = None
    question: str | None = None
    done: bool = False


@dataclass(frozen=True)
class ServerOptions:
    config: GSM8KConfig = field(default_factory=GSM8KConfig)


_ROWS: dict[str, list[dict[str, Any]]] = {}
_GRADERS: dict[tuple[int, float], MathGrader] = {}


def _rows(config: GSM8KConfig) -> list[dict[str, Any]]:
    key = repr(config)
    if key not in _ROWS:
        _ROWS[key] = load_examples(config)
    return _ROWS[key]


def _grader(config: GSM8KConfig) -> MathGrader:
    key = (config.math_verify_max_workers, config.math_verify_timeout)
    if key not in _GRADERS:
        _GRADERS[key] = MathGrader(max_workers=key[0], timeout=key[1])
    return _GRADERS[key]


def close_graders() -> None:
    """Close this process's graders and their math-verify pools (at server shutdown)."""
    graders = list(_GRADERS.values())
    _GRADERS.clear()
    for grader in graders:
        grader.close()


class Gsm8kEnvironment(Environment[Gsm8kAction, Gsm8kObservation, Gsm8kState]):
    """One question per session; stateless between sessions apart from the shared grader."""

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, options: ServerOptions) -> None:
        super().__init__()
        self.options = options
        self._state = Gsm8kState()
        self._row: dict[str, Any] | None = None

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        raise RuntimeError("gsm8k-multireward runs on the server's event loop: use reset_async")

    def step(self, action: Gsm8kAction, timeout_s: float | None = None, **kwargs: Any) -> Any:
        raise RuntimeError("gsm8k-multireward runs on the server's event loop: use step_async")

    async def reset_async(
        self,
        seed: int | None = None,
        episode_id: str | None = None,
        task_index: int | None = None,
        **kwargs: Any,
    ) -> Gsm8kObservation:
        """Pose row `task_index` (else `seed` modulo the row count, else a random row)."""
        config = self.options.config
        rows = await asyncio.to_thread(_rows, config)
        if task_index is not None and not 0 <= task_index < len(rows):
            raise ValueError(f"task_index must be in [0, {len(rows)}), got {task_index}")
        if task_index is None:
            task_index = seed % len(rows) if seed is not None else random.randrange(len(rows))
        self._row = rows[task_index]
        self._state = Gsm8kState(
            episode_id=episode_id or uuid.uuid4().hex,
            task_index=task_index,
            question=self._row["question"],
        )
        return Gsm8kObservation(messages=build_prompt(self._row["question"], config.system_prompt))

    async def step_async(
        self, action: Gsm8kAction, timeout_s: float | None = None, **kwargs: Any
    ) -> Gsm8kObservation:
        if self._row is None:
            raise RuntimeError("no episode: call reset() before step()")
        if self._state.done:
            raise RuntimeError("the episode is over: call reset() to start another")
        self._state.step_count += 1
        if action.tool != "answer":
            reason = f"Error: unknown tool {action.tool[:40]!r}; the only action is answer."
            return Gsm8kObservation(error=reason)
        config = self.options.config
        scores = await ascore_completion(
            action.message,
            self._row["answer"],
            _grader(config),
            config,
            reported_tokens=action.completion_tokens,
        )
        self._state.done = True
        return Gsm8kObservation(
            done=True,
            reward=scores[REWARD],
            rewards={CORRECT_ANSWER: scores[CORRECT_ANSWER], LENGTH_REWARD: scores[LENGTH_REWARD]},
        )

    @property
    def state(self) -> Gsm8kState:
        return self._state


def create_gsm8k_app(options: ServerOptions, settings: GuardSettings) -> ServingGuard:
    """openenv-core's app for gsm8k-multireward behind the guard (with `/healthz`)."""
    app = create_app(
        lambda: Gsm8kEnvironment(options),
        Gsm8kAction,
        Gsm8kObservation,
        env_name="gsm8k-multireward",
        # Idle sessions are closed by the guard (it counts only time spent waiting for the
        # client), so openenv-core's own reaper stays off.
        concurrency_config=ConcurrencyConfig(max_concurrent_envs=settings.max_sessions),
    )

    async def close_process_resources() -> None:
        await asyncio.to_thread(close_graders)

    app.router.on_shutdown.append(close_process_resources)
    return guard_app(app, settings, RowResetArgs, Gsm8kAction)


def main(argv: list[str] | None = None) -> None:
    defaults = GSM8KConfig()
    parser = argparse.ArgumentParser(
        prog="python -m gsm8k_multireward.adapters.openenv",
        description="Serve gsm8k-multireward over OpenEnv (openenv-core HTTP + WebSocket).",
    )
    add_guard_arguments(parser, max_sessions=256)
    parser.add_argument("--data", default=defaults.dataset_name, help="local JSONL or hub name")
    parser.add_argument("--split", default=defaults.dataset_split)
    parser.add_argument("--num-examples", type=int, default=None)
    parser.add_argument(
        "--length-threshold-tokens", type=int, default=defaults.length_threshold_tokens
    )
    parser.add_argument("--length-reward-weight", type=float, default=defaults.length_reward_weight)
    args = parser.parse_args(argv)
    settings = guard_settings(args)
    config = replace(
        defaults,
        dataset_name=args.data,
        dataset_split=args.split,
        num_examples=args.num_examples,
        length_threshold_tokens=args.length_threshold_tokens,
        length_reward_weight=args.length_reward_weight,
    )
    try:  # the rows are loaded now, so bad data fails here and not at the first reset
        if not _rows(config):
            fail_at_start(f"--data {args.data} has no rows")
    except Exception as exc:
        fail_at_start(f"cannot load --data {args.data}: {' '.join(str(exc).split())[:300]}")
    serve(create_gsm8k_app(ServerOptions(config), settings), settings, "gsm8k-multireward")


if __name__ == "__main__":
    main()
