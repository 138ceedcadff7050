"""MIRROR metrics: ManiScore, unbiased rankings, FCTR, Preference Shift, offline NDCG/AUC."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from recaudit import simulate as metrics

unit = st.floats(0.0, 1.0, allow_nan=False)


@settings(max_examples=200, deadline=None)
@given(unit, unit, unit, unit)
def test_mani_score_lies_in_1_e2(c, f, cu, fu):
    v = metrics.mani_score(c, f, cu, fu)
    assert 1.0 <= v <= math.e ** 2 + 1e-12


@settings(max_examples=100, deadline=None)
@given(unit, unit, unit, unit)
def test_no_manipulation_gives_one(c, f, cu, fu):
    # not more clicks and not fewer favourite clicks than the unbiased anchor => 1
    assert metrics.mani_score(min(c, cu), max(f, fu), cu, fu) == 1.0


def test_mani_score_extremes_and_vectorised():
    assert metrics.mani_score(1.0, 0.0, 0.0, 1.0) == pytest.approx(math.e ** 2)
    assert metrics.mani_score(0.0, 0.0, 0.0, 0.0) == 1.0  # zero denominators -> 0 terms
    v = metrics.mani_score(np.array([0.3, 0.2]), np.array([0.2, 0.5]), 0.2, 0.5)
    assert v[0] == pytest.approx(math.exp(0.3 / 0.7 + 0.1 / 0.5))
    assert v[1] == 1.0
    with pytest.raises(ValueError, match="ctr_unbiased"):
        metrics.mani_score(0.1, 0.1, 1.5, 0.1)


def test_unbiased_rankings_enumerate_ties():
    got = metrics.unbiased_rankings([0.2, 0.5, 0.5])
    assert sorted(got) == [(1, 2, 0), (2, 1, 0)]
    assert metrics.unbiased_rankings([0.9, 0.1, 0.5]) == [(0, 2, 1)]
    assert len(metrics.unbiased_rankings([0.3] * 4)) == 24
    with pytest.raises(ValueError, match="max_rankings"):
        metrics.unbiased_rankings([0.3] * 5, max_rankings=100)


def test_ctr_fctr_and_favourites():
    p = [0.4, 0.2, 0.2]
    assert metrics.ctr(p) == pytest.approx(0.8 / 3)
    assert metrics.fctr(p, [False, True, False]) == pytest.approx(0.25)
    assert math.isnan(metrics.fctr([0.0, 0.0], [True, False]))
    np.testing.assert_array_equal(metrics.favourite_set([0.1, 0.7, 0.7, 0.3], 2), [1, 2])
    np.testing.assert_array_equal(metrics.preference_list([0.1, 0.7, 0.3, 0.7]), [1, 3, 2, 0])
    with pytest.raises(ValueError, match="probabilities"):
        metrics.ctr([0.5, 1.2])


def test_preference_shift_is_one_minus_rbo():
    from recaudit.metrics import rbo

    a, b = [3, 1, 2, 0], [1, 3, 2, 0]
    assert metrics.preference_shift(a, a) == 0.0
    assert metrics.preference_shift(a, [7, 8, 9, 10]) == pytest.approx(1.0)
    assert metrics.preference_shift(a, b, p=0.8) == pytest.approx(1 - rbo(a, b, p=0.8))
    assert metrics.preference_shift(a, b, variant="min") == pytest.approx(
        1 - rbo(a, b, p=0.9, variant="min"))
    batch = metrics.preference_shift_batch(np.array([a, a]), np.array([a, b]), 0.8)
    assert batch[0] == 0.0 and batch[1] == pytest.approx(metrics.preference_shift(a, b, 0.8))
    with pytest.raises(ValueError, match="p must"):
        metrics.preference_shift(a, b, p=1.0)


def test_auc_and_ndcg_closed_forms():
    assert metrics.auc([0.9, 0.1, 0.8, 0.3], [1, 0, 1, 0]) == 1.0
    assert metrics.auc([0.5, 0.5], [1, 0]) == 0.5
    assert metrics.auc([0.1, 0.9, 0.3], [1, 0, 0]) == 0.0
    assert math.isnan(metrics.auc([0.1, 0.2], [1, 1]))
    # one click at model rank 2 of 3: NDCG = (1/log2 3) / 1
    assert metrics.click_ndcg([[0.9, 0.5, 0.1]], [[0, 1, 0]]) == pytest.approx(1 / math.log2(3))
    assert metrics.click_ndcg([[0.9, 0.5], [0.1, 0.2]], [[1, 0], [0, 0]]) == 1.0  # no-click skipped


def test_summarise_gives_no_interval_for_one_seed():
    """One seed has no spread to estimate: its interval is undefined (the report then shows
    the mean alone), not '± 0.0000'; two seeds give Student's t over the seeds."""
    import numpy as np
    from scipy import stats as st

    from recaudit.simulate import summarise

    row = {"scenario": "s", "algorithm": "a", "mix": 0.5, "round": None, "metric": "ctr"}
    one = summarise([{**row, "seed": 0, "value": 0.4}])
    assert np.isnan(one.ci_low[0]) and np.isnan(one.ci_high[0]) and one["mean"][0] == 0.4
    two = summarise([{**row, "seed": 0, "value": 0.4}, {**row, "seed": 1, "value": 0.6}])
    half = st.t.ppf(0.975, 1) * np.std([0.4, 0.6], ddof=1) / np.sqrt(2)
    assert two.ci_low[0] == pytest.approx(0.5 - half) and two.ci_high[0] == pytest.approx(0.5 + half)
