"""What the trainer adapters of an RL environment share (standard library only, so an
environment's core may import it): the installed verifiers' API (`releases`), and the object a
TRL launcher takes with TRL's named reward functions (`trl`). `env_adapters.fields` (pydantic) is
imported on its own."""

from .releases import has_v1_api, require_legacy_api, verifiers_release
from .trl import (
    BatchScores,
    RewardBatch,
    RewardFunc,
    TRLEnvironment,
    named_rewards,
)

__all__ = [
    "BatchScores",
    "RewardBatch",
    "RewardFunc",
    "TRLEnvironment",
    "has_v1_api",
    "named_rewards",
    "require_legacy_api",
    "verifiers_release",
]
