"""Reference advantages for multi-reward RL: GDPO (normalise each reward, then sum) and GRPO.

GDPO (arXiv 2601.05242) z-scores every reward component within its group of rollouts, takes the
weighted sum of those per-component advantages, then z-scores that sum over the whole batch.
GRPO sums the weighted components first and z-scores the total within each group, which maps
different mixes of components to the same advantage (`collapse_example` shows the paper's case).

Conventions match TRL's `GRPOTrainer` (`multi_objective_aggregation="normalize_then_sum"` and the
default `"sum_then_normalize"` with `scale_rewards="group"`), so these functions can audit it:

- `rewards` has shape `(n_groups, group_size, n_rewards)`: one group per prompt, one row per
  rollout, one column per named reward component, in the order of `weights`.
- NaN marks a reward that does not apply to a rollout (TRL's `None`). It is left out of every
  mean and standard deviation; a rollout whose every component is NaN gets advantage 0.
- Standard deviations are sample standard deviations (Bessel's correction, like `torch.std`);
  with fewer than two values a standard deviation is undefined, and that term drops out.
- `eps` is added to each standard deviation before dividing (TRL and the paper use 1e-4).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

DEFAULT_EPS = 1e-4

__all__ = ["DEFAULT_EPS", "collapse_example", "gdpo_advantages", "grpo_advantages"]


def gdpo_advantages(
    rewards: ArrayLike,
    weights: Sequence[float] | None = None,
    eps: float = DEFAULT_EPS,
    batch_normalize: bool = True,
) -> NDArray[np.float64]:
    """GDPO advantages of shape `(n_groups, group_size)`.

    For each component k and group g: `A_k = (r_k - mean_g(r_k)) / (std_g(r_k) + eps)`; then
    `A = sum_k w_k A_k` (NaN terms skipped); then, when `batch_normalize`, `A` is z-scored over
    every scorable rollout of the batch: `(A - mean_B(A)) / (std_B(A) + eps)`.
    `weights=None` weighs every component 1.
    """
    grid, w = _checked(rewards, weights, eps)
    unscorable = np.isnan(grid).all(axis=2)
    mean_k = _nanmean(grid, axis=1)
    std_k = _nanstd(grid, axis=1)
    per_component = (grid - mean_k) / (std_k + eps)
    summed = _nansum(per_component * w, axis=2)
    summed[unscorable] = np.nan
    if batch_normalize:
        summed = (summed - _nanmean(summed, axis=None)) / (_nanstd(summed, axis=None) + eps)
    return np.nan_to_num(summed, nan=0.0)


def grpo_advantages(
    rewards: ArrayLike,
    weights: Sequence[float] | None = None,
    eps: float = DEFAULT_EPS,
) -> NDArray[np.float64]:
    """GRPO advantages of shape `(n_groups, group_size)`: weighted sum, then a group z-score.

    `total = sum_k w_k r_k` (NaN components skipped), `A = (total - mean_g) / (std_g + eps)`.
    """
    grid, w = _checked(rewards, weights, eps)
    unscorable = np.isnan(grid).all(axis=2)
    total = _nansum(grid * w, axis=2)
    total[unscorable] = np.nan
    advantages = (total - _nanmean(total, axis=1)) / (_nanstd(total, axis=1) + eps)
    return np.nan_to_num(advantages, nan=0.0)


def collapse_example() -> NDArray[np.float64]:
    """The paper's collapse case: three groups of two rollouts, two binary rewards each.

    The groups' reward totals are (0, 1), (0, 2) and (1, 2). GRPO gives every group the same
    advantages (about -0.71 and +0.71), although in the second group the better rollout won on
    both rewards; GDPO gives that group twice the advantage of the other two (before the batch
    z-score, about -1.41 and +1.41).
    """
    return np.array(
        [
            [[0.0, 0.0], [1.0, 0.0]],  # totals 0 and 1: one reward separates the rollouts
            [[0.0, 0.0], [1.0, 1.0]],  # totals 0 and 2: both rewards do
            [[1.0, 0.0], [1.0, 1.0]],  # totals 1 and 2: one reward separates them
        ]
    )


def _checked(
    rewards: ArrayLike, weights: Sequence[float] | None, eps: float
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    grid = np.array(rewards, dtype=np.float64)
    if grid.ndim != 3:
        raise ValueError(
            f"rewards must have shape (n_groups, group_size, n_rewards), got shape {grid.shape}"
        )
    if np.isinf(grid).any():
        raise ValueError("rewards must be finite or NaN (NaN marks a reward that does not apply)")
    n_rewards = grid.shape[2]
    if weights is None:
        w = np.ones(n_rewards)
    else:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (n_rewards,):
            raise ValueError(f"got {w.size} weights for {n_rewards} reward components")
        if not np.isfinite(w).all():
            raise ValueError(f"weights must be finite, got {list(w)}")
    if not (eps >= 0 and np.isfinite(eps)):
        raise ValueError(f"eps must be a finite number >= 0, got {eps!r}")
    return grid, w


# numpy warns on all-NaN slices and zero degrees of freedom; both are expected here (a reward
# that applies to no rollout of a group, a group of one) and end as NaN, which is then skipped.


def _nanmean(values: NDArray[np.float64], axis: int | None) -> NDArray[np.float64]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(values, axis=axis, keepdims=True)


def _nanstd(values: NDArray[np.float64], axis: int | None) -> NDArray[np.float64]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanstd(values, axis=axis, ddof=1, keepdims=True)


def _nansum(values: NDArray[np.float64], axis: int) -> NDArray[np.float64]:
    # np.nansum of an all-NaN slice is 0, which is what a rollout with no applicable term gets.
    return np.nansum(values, axis=axis)
