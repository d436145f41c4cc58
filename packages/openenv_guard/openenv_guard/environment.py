"""What the environments served behind the guard share: the row a reset names
(`RowResetArgs`), and refusing openenv-core's synchronous entry points."""

from __future__ import annotations

import random
from typing import Any, ClassVar, TypeVar

from openenv.core.env_server.interfaces import Environment

ActT = TypeVar("ActT")
ObsT = TypeVar("ObsT")
StateT = TypeVar("StateT")


def row_index(size: int, task_index: int | None, seed: int | None) -> int:
    """The row `RowResetArgs` name among `size`: `task_index`, else `seed` modulo `size`, else a
    random row. ValueError for a `task_index` out of range."""
    if task_index is not None:
        if not 0 <= task_index < size:
            raise ValueError(f"task_index must be in [0, {size}), got {task_index}")
        return task_index
    if seed is not None:
        return seed % size
    return random.randrange(size)


class LoopEnvironment(Environment[ActT, ObsT, StateT]):
    """An openenv-core environment whose sessions run on the server's event loop, side by side:
    a subclass implements `reset_async` and `step_async`; `reset` and `step` refuse, naming the
    environment (`env_name`)."""

    SUPPORTS_CONCURRENT_SESSIONS = True
    env_name: ClassVar[str]

    def reset(self, seed: int | None = None, episode_id: str | None = None, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self.env_name} runs on the server's event loop: use reset_async")

    def step(self, action: ActT, timeout_s: float | None = None, **kwargs: Any) -> Any:
        raise RuntimeError(f"{self.env_name} runs on the server's event loop: use step_async")


__all__ = ["LoopEnvironment", "row_index"]
