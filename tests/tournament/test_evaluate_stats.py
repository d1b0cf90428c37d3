"""Statistics of evaluate.py against known values (agents.tournament.stats)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from agents.tournament.stats import group_means, group_sums, mean_ci, ratio_ci, wilson_interval, z_value


def test_z_value_of_95_percent_is_1_96():
    assert z_value(0.95) == pytest.approx(1.959963984540054, abs=1e-12)
    assert z_value(0.99) == pytest.approx(2.5758293035489, abs=1e-9)


def test_wilson_interval_of_8_out_of_10_is_0490_to_0943():
    lo, hi = wilson_interval(8, 10)
    assert round(lo, 3) == 0.490
    assert round(hi, 3) == 0.943
    assert lo == pytest.approx(0.4901624, abs=1e-6)
    assert hi == pytest.approx(0.9433178, abs=1e-6)


def test_wilson_interval_at_the_edges_stays_inside_0_1():
    assert wilson_interval(0, 10) == pytest.approx((0.0, 0.2775328), abs=1e-6)
    assert wilson_interval(10, 10) == pytest.approx((0.7224672, 1.0), abs=1e-6)


def test_wilson_interval_counts_a_half_win():
    lo, hi = wilson_interval(5.5, 11)
    assert (lo + hi) / 2 == pytest.approx(0.5)


def test_wilson_interval_rejects_more_successes_than_trials():
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


def test_wilson_interval_of_no_trials_is_nan():
    assert all(math.isnan(x) for x in wilson_interval(0, 0))


def test_mean_ci_of_one_to_five_is_3_plus_minus_1386():
    m, lo, hi = mean_ci([1, 2, 3, 4, 5])
    # sd = sqrt(2.5), se = sqrt(0.5), half width = 1.959964 * 0.707107 = 1.385904
    assert m == 3.0
    assert lo == pytest.approx(3 - 1.3859038, abs=1e-6)
    assert hi == pytest.approx(3 + 1.3859038, abs=1e-6)


def test_mean_ci_of_a_constant_sample_has_zero_width():
    assert mean_ci(np.zeros(50)) == (0.0, 0.0, 0.0)


def test_mean_ci_of_one_sample_has_nan_bounds():
    m, lo, hi = mean_ci([2.5])
    assert m == 2.5 and math.isnan(lo) and math.isnan(hi)


def test_group_means_averages_within_each_group_in_group_order():
    np.testing.assert_array_equal(group_means([1, 3, 10, 20, 5], [7, 7, 2, 2, 9]), [15.0, 2.0, 5.0])


def test_ratio_ci_with_a_constant_denominator_is_the_mean_ci_of_the_ratios():
    assert ratio_ci([2, 4, 6, 8], [2, 2, 2, 2]) == pytest.approx(mean_ci([1, 2, 3, 4]), abs=1e-12)


def test_ratio_ci_of_a_known_sample():
    # ratio 6/4 = 1.5; residuals num - 1.5 den = (-0.5, 0, 0.5), sd 0.5; se = 0.5 / (sqrt(3) * 4/3)
    r, lo, hi = ratio_ci([1, 3, 2], [1, 2, 1])
    assert r == 1.5
    assert lo == pytest.approx(1.5 - 0.4243437, abs=1e-6)
    assert hi == pytest.approx(1.5 + 0.4243437, abs=1e-6)


def test_ratio_ci_weights_samples_by_their_denominator_not_equally():
    # A short game (1 round, +3) and a long one (9 rounds, +1): 4 points over 10 rounds, not (3 + 1/9) / 2.
    assert ratio_ci([3, 1], [1, 9])[0] == pytest.approx(0.4)


def test_group_sums_add_within_each_group_in_group_order():
    np.testing.assert_array_equal(group_sums([1, 3, 10, 20, 5], [7, 7, 2, 2, 9]), [30.0, 4.0, 5.0])
