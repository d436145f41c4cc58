"""The reference GDPO and GRPO advantages: the paper's collapse case and the defining formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gdpo_reference import collapse_example, gdpo_advantages, grpo_advantages

SQRT_HALF = math.sqrt(0.5)


def test_grpo_collapses_the_papers_three_groups_to_one_advantage() -> None:
    advantages = grpo_advantages(collapse_example())
    # Totals (0,1), (0,2), (1,2): a two-rollout z-score is always +-1/sqrt(2), whatever the gap.
    expected = np.array([[-SQRT_HALF, SQRT_HALF]] * 3)
    np.testing.assert_allclose(advantages, expected, atol=1e-3)


def test_gdpo_keeps_the_papers_three_groups_apart() -> None:
    per_group = gdpo_advantages(collapse_example(), batch_normalize=False)
    np.testing.assert_allclose(
        per_group,
        [[-SQRT_HALF, SQRT_HALF], [-2 * SQRT_HALF, 2 * SQRT_HALF], [-SQRT_HALF, SQRT_HALF]],
        atol=1e-3,
    )
    # The batch z-score rescales but keeps the (0, 2) group's advantage twice the others'.
    batch = gdpo_advantages(collapse_example())
    assert batch[1, 1] == pytest.approx(2 * batch[0, 1], rel=1e-3)
    assert batch[0, 1] == pytest.approx(batch[2, 1])
    assert batch[0, 1] > 0 and batch[0, 0] == pytest.approx(-batch[0, 1])
    assert batch.mean() == pytest.approx(0.0, abs=1e-9)
    assert np.std(batch, ddof=1) == pytest.approx(1.0, abs=1e-3)


def test_gdpo_matches_its_formula_on_random_rewards() -> None:
    rng = np.random.default_rng(7)
    rewards = rng.normal(size=(5, 4, 3))
    weights = [1.0, 0.5, 2.0]
    eps = 1e-4
    mean = rewards.mean(axis=1, keepdims=True)
    std = rewards.std(axis=1, ddof=1, keepdims=True)
    summed = (((rewards - mean) / (std + eps)) * weights).sum(axis=2)
    expected = (summed - summed.mean()) / (summed.std(ddof=1) + eps)
    np.testing.assert_allclose(gdpo_advantages(rewards, weights, eps), expected, rtol=1e-12)
    np.testing.assert_allclose(
        gdpo_advantages(rewards, weights, eps, batch_normalize=False), summed, rtol=1e-12
    )


def test_grpo_matches_its_formula_on_random_rewards() -> None:
    rng = np.random.default_rng(8)
    rewards = rng.normal(size=(3, 6, 2))
    total = rewards @ np.array([2.0, 1.0])
    expected = (total - total.mean(axis=1, keepdims=True)) / (
        total.std(axis=1, ddof=1, keepdims=True) + 1e-4
    )
    np.testing.assert_allclose(grpo_advantages(rewards, [2.0, 1.0]), expected, rtol=1e-12)


def test_one_component_gdpo_without_batch_step_equals_grpo() -> None:
    rewards = np.random.default_rng(9).integers(0, 2, size=(4, 5, 1)).astype(float)
    np.testing.assert_allclose(
        gdpo_advantages(rewards, batch_normalize=False), grpo_advantages(rewards)
    )


def test_a_zero_variance_component_contributes_nothing() -> None:
    # Every rollout of the group got the same length reward: only correctness separates them.
    rewards = np.array([[[1.0, 1.0], [0.0, 1.0], [1.0, 1.0], [0.0, 1.0]]])
    only_correctness = gdpo_advantages(rewards[:, :, :1], batch_normalize=False)
    np.testing.assert_allclose(gdpo_advantages(rewards, batch_normalize=False), only_correctness)
    assert np.all(np.isfinite(gdpo_advantages(np.zeros((2, 3, 2)))))
    np.testing.assert_array_equal(gdpo_advantages(np.zeros((2, 3, 2))), 0.0)


def test_nan_marks_a_reward_that_does_not_apply() -> None:
    rewards = np.array(
        [
            [[1.0, np.nan], [0.0, np.nan], [np.nan, np.nan]],  # third rollout: unscorable
            [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]],
        ]
    )
    advantages = gdpo_advantages(rewards)
    assert advantages[0, 2] == 0.0  # no component applies: no learning signal
    assert np.all(np.isfinite(advantages))
    # Group 0's first column is z-scored over its two scored rollouts only.
    per_group = gdpo_advantages(rewards, batch_normalize=False)
    assert per_group[0, 0] == pytest.approx(SQRT_HALF, rel=1e-3)
    assert per_group[0, 1] == pytest.approx(-SQRT_HALF, rel=1e-3)
    assert grpo_advantages(rewards)[0, 2] == 0.0


@pytest.mark.parametrize(
    ("rewards", "weights", "message"),
    [
        (np.zeros((2, 3)), None, "shape"),
        (np.zeros((2, 3, 2)), [1.0], "2 reward components"),
        (np.zeros((2, 3, 2)), [1.0, math.inf], "finite"),
        (np.full((1, 2, 1), math.inf), None, "finite or NaN"),
    ],
)
def test_bad_inputs_are_rejected(rewards: np.ndarray, weights: list | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        gdpo_advantages(rewards, weights)
    with pytest.raises(ValueError, match=message):
        grpo_advantages(rewards, weights)


def test_negative_eps_is_rejected() -> None:
    with pytest.raises(ValueError, match="eps"):
        gdpo_advantages(np.zeros((1, 2, 1)), eps=-1.0)
