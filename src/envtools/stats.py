"""Small statistics for evaluation reports: means with percentile-bootstrap confidence intervals,
and the upper end of an interval for a share, with or without clustered trials.

The percentile bootstrap resamples the observations with replacement, recomputes the mean of each
resample, and takes the central `confidence` share of those means as the interval. The seed fixes
the resamples, so a report is reproducible to the last digit.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

DEFAULT_RESAMPLES = 2_000
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class Estimate:
    """A sample mean and its bootstrap interval; all NaN when there were no observations."""

    mean: float
    low: float
    high: float
    n: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def format(self, digits: int = 3) -> str:
        """`0.812 [0.703, 0.906]`, or `n/a` without observations."""
        if self.n == 0:
            return "n/a"
        return f"{self.mean:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


def _resampled_indices(size: int, resamples: int, seed: int) -> Iterator[np.ndarray]:
    """``resamples`` bootstrap draws of ``size`` indices with replacement, in blocks of rows, so
    a large sample never needs a resamples x size index array at once."""
    rng = np.random.default_rng(seed)
    block = max(1, 4_000_000 // size)
    for start in range(0, resamples, block):
        yield rng.integers(0, size, size=(min(block, resamples - start), size))


def bootstrap_ci(
    values: Sequence[float],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float]:
    """The percentile-bootstrap interval of the mean of `values`: `(low, high)`.

    Raises ValueError on an empty sample, a confidence outside (0, 1) or fewer than one resample.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    if resamples < 1:
        raise ValueError("resamples must be >= 1")
    data = np.asarray(values, dtype=float)
    if data.ndim != 1 or data.size == 0:
        raise ValueError("values must be a non-empty sequence of numbers")
    means = np.concatenate(
        [data[idx].mean(axis=1) for idx in _resampled_indices(data.size, resamples, seed)]
    )
    alpha = 1.0 - confidence
    low, high = np.quantile(means, [alpha / 2, 1.0 - alpha / 2])
    return float(low), float(high)


def mean_ci(
    values: Sequence[float],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> Estimate:
    """The mean of `values` with its bootstrap interval; an all-NaN `Estimate` when empty."""
    if len(values) == 0:
        return Estimate(math.nan, math.nan, math.nan, 0)
    low, high = bootstrap_ci(values, confidence=confidence, resamples=resamples, seed=seed)
    mean = float(np.mean(np.asarray(values, dtype=float)))
    # The mean of a constant sample can differ from its resample means in the last bit.
    return Estimate(mean, min(low, mean), max(high, mean), len(values))


def wilson_upper(k: float, n: int, z: float = 1.96) -> float:
    """Upper end of the Wilson score interval of ``k`` successes in ``n`` trials (95% by default;
    ``k`` may be fractional, as for ties shared evenly); 1.0 without trials."""
    if n == 0:
        return 1.0
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre + spread) / (1 + z * z / n)


def clustered_upper(
    hits: Sequence[float],
    trials: Sequence[int],
    *,
    confidence: float = DEFAULT_CONFIDENCE,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> float:
    """Upper end of the `confidence` interval (95% by default) of a share whose trials come in
    clusters: ``hits[i]`` of ``trials[i]`` in cluster ``i`` (one document's questions, say).

    Trials that share a cluster succeed or fail together more often than independent ones, so
    the clusters are resampled whole (a percentile bootstrap of the ratio of sums). A handful of
    clusters with no success would give an upper end of 0, so the answer is never below the
    Wilson upper end of the pooled count: the larger of the two. 1.0 without trials.
    """
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    h, t = np.asarray(hits, dtype=float), np.asarray(trials, dtype=float)
    if h.shape != t.shape or h.ndim != 1:
        raise ValueError("hits and trials must have one entry per cluster")
    if np.any(h < 0) or np.any(h > t):
        raise ValueError("each cluster's hits must lie between 0 and its trials")
    k, n = float(h.sum()), int(t.sum())
    if n == 0:
        return 1.0
    wilson = wilson_upper(k, n, z=NormalDist().inv_cdf(0.5 + confidence / 2))
    kept = []
    for idx in _resampled_indices(h.size, resamples, seed):
        hit_sums, sums = h[idx].sum(axis=1), t[idx].sum(axis=1)
        kept.append(hit_sums[sums > 0] / sums[sums > 0])  # a resample with no trials has no share
    shares = np.concatenate(kept)
    high = float(np.quantile(shares, 1.0 - (1.0 - confidence) / 2)) if shares.size else 1.0
    return max(wilson, high)
