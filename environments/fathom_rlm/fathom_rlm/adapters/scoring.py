"""The three calls both adapters make into the core: rows, the document of a row, the scores."""

from __future__ import annotations

import asyncio
from typing import Any

from fathom_rlm.adapters.arguments import FathomArguments
from fathom_rlm.agent import RolloutRecord
from fathom_rlm.rewards import REWARD_NAME, SCORE_NAMES, RewardConfig, score_rollout

__all__ = ["REWARD_NAME", "SCORE_NAMES", "build_rows", "document_text", "load_document", "score"]

_PENDING: dict[tuple[int, int], asyncio.Future[str]] = {}


def build_rows(args: FathomArguments) -> list[dict[str, Any]]:
    """The split's rows (small dicts, never the document)."""
    from fathom_rlm.documents import build_split

    return build_split(
        args.split,  # type: ignore[arg-type]  # checked by build_split
        args.num_examples,
        doc_tokens=args.doc_tokens,
        family_mix=args.family_mix,
    )


def load_document(row: dict[str, Any]) -> str:
    """The row's document, regenerated from its seed (the core caches recent seeds)."""
    from fathom_rlm.documents import get_document

    return get_document(int(row["seed"]), int(row["doc_tokens"])).text


async def document_text(row: dict[str, Any]) -> str:
    """`load_document` off the event loop, generated once when several rollouts of one group ask
    for the same seed at the same time (the core's cache only helps once a document exists)."""
    key = (int(row["seed"]), int(row["doc_tokens"]))
    pending = _PENDING.get(key)
    if pending is None or pending.get_loop() is not asyncio.get_running_loop():
        pending = asyncio.ensure_future(asyncio.to_thread(load_document, row))
        _PENDING[key] = pending

        def forget(done: asyncio.Future[str]) -> None:
            if _PENDING.get(key) is done:
                del _PENDING[key]

        pending.add_done_callback(forget)
    return await asyncio.shield(pending)


def reward_config(args: FathomArguments) -> RewardConfig:
    """The reward config of these arguments' rollout caps, so the scorer and the prompt agree."""
    return RewardConfig.from_caps(args.caps())


def score(
    record: RolloutRecord | None, row: dict[str, Any], args: FathomArguments
) -> dict[str, float]:
    """`score_rollout` under the names in `SCORE_NAMES`. A rollout that left no record (it was
    stopped before the loop returned) scores as an empty one: no answer, no tool use."""
    return score_rollout(record or RolloutRecord(ended_by="stopped"), row, reward_config(args))
