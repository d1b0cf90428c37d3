"""Statistics of a tournament: confidence intervals for means and proportions.

Both intervals are the usual large-sample ones. ``mean_ci`` is the normal-approximation interval of
a mean (the samples are deals, hundreds or thousands of them, where Student's t and the normal
quantile agree to better than 1%). ``wilson_interval`` is Wilson's score interval of a proportion,
which stays inside [0, 1] and behaves well near 0 and 1 and for small counts.
"""

from __future__ import annotations

import math
from statistics import NormalDist

import numpy as np


def z_value(confidence: float = 0.95) -> float:
    """Return the two-sided standard-normal quantile for ``confidence`` (1.95996... for 0.95)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence!r}")
    return NormalDist().inv_cdf(0.5 + confidence / 2.0)


def mean_ci(x, confidence: float = 0.95) -> tuple[float, float, float]:
    """Return (mean, lower, upper): the mean of ``x`` and its normal-approximation CI.

    The bounds are NaN with fewer than two samples (no spread to estimate).
    """
    x = np.asarray(x, np.float64).ravel()
    if x.size == 0:
        return math.nan, math.nan, math.nan
    m = float(x.mean())
    if x.size < 2:
        return m, math.nan, math.nan
    half = z_value(confidence) * float(x.std(ddof=1)) / math.sqrt(x.size)
    return m, m - half, m + half


def wilson_interval(successes: float, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Return Wilson's score interval (lower, upper) for ``successes`` out of ``n`` trials.

    ``successes`` may be fractional (a draw counted as half a win). NaNs when ``n`` is 0.
    """
    if n < 0 or successes < 0 or successes > n:
        raise ValueError(f"need 0 <= successes <= n, got {successes!r} of {n!r}")
    if n == 0:
        return math.nan, math.nan
    z = z_value(confidence)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def ratio_ci(num, den, confidence: float = 0.95) -> tuple[float, float, float]:
    """Return (ratio, lower, upper): ``sum(num) / sum(den)`` and its CI over the paired samples.

    Each sample ``i`` is one independent unit (a deal) contributing ``num[i]`` (say, a points
    difference summed over its games) and ``den[i] > 0`` (the rounds those games took). The
    interval is the usual delta-method (linearised) one of a ratio estimator: the standard error is
    ``sd(num - ratio * den) / (sqrt(n) * mean(den))``. With a constant ``den`` it is exactly
    ``mean_ci(num / den)``.
    """
    num = np.asarray(num, np.float64).ravel()
    den = np.asarray(den, np.float64).ravel()
    if num.shape != den.shape:
        raise ValueError(f"num and den must have the same length, got {num.size} and {den.size}")
    if num.size == 0 or den.sum() <= 0:
        return math.nan, math.nan, math.nan
    r = float(num.sum() / den.sum())
    if num.size < 2:
        return r, math.nan, math.nan
    resid = num - r * den
    half = z_value(confidence) * float(resid.std(ddof=1)) / (math.sqrt(num.size) * float(den.mean()))
    return r, r - half, r + half


def group_sums(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Return the sum of ``values`` within each group id, in ascending group order."""
    values = np.asarray(values, np.float64)
    _, inv = np.unique(np.asarray(groups), return_inverse=True)
    return np.bincount(inv, weights=values)


def group_means(values: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Return the mean of ``values`` within each group id, in ascending group order."""
    values = np.asarray(values, np.float64)
    _, inv = np.unique(np.asarray(groups), return_inverse=True)
    return np.bincount(inv, weights=values) / np.bincount(inv)
