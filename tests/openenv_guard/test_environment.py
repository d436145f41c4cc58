"""What the environments served behind the guard share: the row a reset names (`task_index`,
else `seed` modulo the row count, else a random row) and the refusal of openenv-core's
synchronous entry points."""

from __future__ import annotations

import random
from typing import Any

import pytest
from fathom_rlm._vendor.openenv_guard import LoopEnvironment, row_index


def test_task_index_names_the_row() -> None:
    assert row_index(5, 3, seed=None) == 3
    assert row_index(5, 0, seed=4) == 0  # task_index wins over seed


@pytest.mark.parametrize("task_index", [5, 6, -1])
def test_a_task_index_out_of_range_is_refused(task_index: int) -> None:
    with pytest.raises(ValueError, match=rf"task_index must be in \[0, 5\), got {task_index}"):
        row_index(5, task_index, seed=None)


def test_seed_picks_the_row_modulo_the_row_count() -> None:
    assert [row_index(5, None, seed) for seed in (0, 4, 5, 12)] == [0, 4, 0, 2]


def test_without_either_a_random_row(monkeypatch: pytest.MonkeyPatch) -> None:
    picked = [row_index(3, None, None) for _ in range(200)]
    assert set(picked) == {0, 1, 2}
    monkeypatch.setattr(random, "randrange", lambda size: size - 1)
    assert row_index(7, None, None) == 6


class _Env(LoopEnvironment[Any, Any, Any]):
    env_name = "some-env"

    @property
    def state(self) -> Any:
        return None


def test_the_synchronous_entry_points_refuse_naming_the_environment() -> None:
    env = _Env()
    assert env.SUPPORTS_CONCURRENT_SESSIONS is True
    with pytest.raises(RuntimeError) as error:
        env.reset(seed=1)
    assert str(error.value) == "some-env runs on the server's event loop: use reset_async"
    with pytest.raises(RuntimeError) as error:
        env.step({"tool": "answer"})
    assert str(error.value) == "some-env runs on the server's event loop: use step_async"
