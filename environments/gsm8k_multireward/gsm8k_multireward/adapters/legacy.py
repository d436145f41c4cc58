"""verifiers legacy API (0.2.x–0.3.1): `load_environment(**kwargs)` returns a `SingleTurnEnv`.

The rubric's functions are named `correct_answer` and `length_reward`, so the legacy runner
records each raw score under that name in `state["metrics"]`; their weights are 1.0 and
`length_reward_weight`, so `state["reward"]` is the core's `total_reward`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

import verifiers as vf

from gsm8k_multireward.config import GSM8KConfig
from gsm8k_multireward.data import build_prompt, load_examples
from gsm8k_multireward.grading import MathGrader
from gsm8k_multireward.parsing import extract_answer
from gsm8k_multireward.rewards import CORRECT_ANSWER, LENGTH_REWARD, ascore_completion

_SCORES_KEY = "gsm8k_multireward_scores"


def completion_text(completion: Any) -> str:
    """The text of the last assistant message (messages may be dicts or message objects)."""
    if isinstance(completion, str):
        return completion
    for message in reversed(list(completion or [])):
        field = message.get if isinstance(message, Mapping) else _attribute_getter(message)
        if field("role") == "assistant":
            content = field("content")
            if isinstance(content, list):
                return "".join(
                    part.get("text", "") if isinstance(part, Mapping) else getattr(part, "text", "")
                    for part in content
                )
            return content or ""
    return ""


def _attribute_getter(message: Any) -> Any:
    return lambda name: getattr(message, name, None)


def reported_completion_tokens(state: Mapping[str, Any]) -> int | None:
    """Output tokens the API reported for this rollout, or None when it reported none.

    The runner keeps a usage tracker in `state["usage"]` from 0.1.10 on; it stays at 0 when
    the endpoint sends no usage, and a non-empty completion of 0 tokens means exactly that.
    """
    usage = state.get("usage")
    if not isinstance(usage, Mapping):
        return None
    try:
        tokens = int(usage.get("output_tokens") or 0)
    except (TypeError, ValueError):
        return None
    return tokens if tokens > 0 else None


def load_legacy_environment(**kwargs: Any) -> vf.Environment:
    """The legacy environment; `kwargs` are `GSM8KConfig`'s fields (`vf-eval -a '{...}'`)."""
    from datasets import Dataset

    config = GSM8KConfig(**kwargs)
    rows = load_examples(config)
    dataset = Dataset.from_list(
        [
            {"prompt": build_prompt(row["question"], config.system_prompt), "answer": row["answer"]}
            for row in rows
        ]
    )
    grader = MathGrader(
        max_workers=config.math_verify_max_workers, timeout=config.math_verify_timeout
    )

    async def scores(completion: Any, answer: str, state: dict[str, Any]) -> Mapping[str, float]:
        # Both rubric functions share one grading of the rollout: the first to ask starts it.
        pending: asyncio.Future[Mapping[str, float]] | None = state.get(_SCORES_KEY)
        if pending is None:
            grading = ascore_completion(
                completion_text(completion),
                str(answer),
                grader,
                config,
                reported_tokens=reported_completion_tokens(state),
            )
            pending = state[_SCORES_KEY] = asyncio.ensure_future(grading)
        # Shielded: one reward being cancelled does not cancel the other's grading.
        return await asyncio.shield(pending)

    async def correct_answer(completion: Any, answer: str, state: dict, **_: Any) -> float:
        return (await scores(completion, answer, state))[CORRECT_ANSWER]

    async def length_reward(completion: Any, answer: str, state: dict, **_: Any) -> float:
        return (await scores(completion, answer, state))[LENGTH_REWARD]

    parser = vf.Parser(extract_fn=extract_answer)
    rubric = vf.Rubric(
        funcs=[correct_answer, length_reward],
        weights=[1.0, config.length_reward_weight],
        parser=parser,
    )
    return vf.SingleTurnEnv(dataset=dataset, parser=parser, rubric=rubric)
