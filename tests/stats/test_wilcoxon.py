"""``wilcoxon_p``: scipy's Wilcoxon signed-rank p-value, computed faster where scipy runs its
exact sign-flip permutation test (at most 13 differences with a zero or a tie); the numbers
must be scipy's, bit for bit, since claims and the committed page are decided on them."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from scipy import stats

from recaudit.stats._tests import _r_plus, wilcoxon_p


def _cases():
    rng = np.random.default_rng(7)
    for i in range(24):
        n = int(rng.integers(3, 12))
        kind = i % 4
        if kind == 0:    # integers: ties and zeros
            d = rng.integers(-3, 4, n).astype(float)
        elif kind == 1:  # rounded: ties
            d = np.round(rng.normal(0.2, 1, n), 1)
        elif kind == 2:  # a few rationals, as reciprocal-rank differences
            d = rng.choice([0.0, 0.5, -0.25, 1 / 3, -1 / 3, 0.125], n)
        else:            # continuous with zeros
            d = rng.normal(0, 1, n)
            d[: n // 3] = 0
        if np.any(d != 0):
            yield d
    yield np.array([1.0, 2.0, 2.0, -1.0, 3.0, 0.0])
    yield np.linspace(-1, 2, 20)           # no ties, more than 13: scipy's own path
    yield np.r_[np.zeros(3), np.arange(1, 16.0)]  # ties beyond 13: asymptotic


@pytest.mark.parametrize("d", list(_cases()), ids=lambda d: f"n{len(d)}")
def test_the_p_value_is_scipys(d):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert wilcoxon_p(d) == float(stats.wilcoxon(d).pvalue)


def test_the_statistic_is_the_rank_sum_of_the_positive_differences():
    # |d| = 1, 2, 2, 1, 3 (zero dropped): ranks 1.5, 3.5, 3.5, 1.5, 5; positives 1, 2, 2, 3
    d = np.array([1.0, 2.0, -2.0, -1.0, 3.0, 0.0])
    assert _r_plus(d) == 1.5 + 3.5 + 5
    flips = np.array([d, -d])
    assert _r_plus(flips).tolist() == [10.0, 3.5 + 1.5]  # row by row
