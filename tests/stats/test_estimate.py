"""Intervals and tests of recaudit.stats against closed forms and scipy."""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from scipy import stats as ss

import recaudit.stats
from recaudit.stats import (Estimate, estimate_mean, holm, one_sample_test, paired_test, welch,
                            welch_test)


def test_docstring_examples():
    assert doctest.testmod(recaudit.stats).failed == 0


def test_one_replicate_is_the_one_sample_t_interval():
    x = np.random.default_rng(1).standard_normal(40) + 0.3
    est = estimate_mean(x)
    ref = ss.ttest_1samp(x, 0.0)
    assert est.design == "queries" and est.levels == "queries only"
    assert est.interval() == pytest.approx(tuple(ref.confidence_interval()), rel=1e-12)
    assert est.p_value() == pytest.approx(ref.pvalue, rel=1e-9)
    for alt in ("greater", "less"):
        assert est.p_value(0.0, alt) == pytest.approx(
            ss.ttest_1samp(x, 0.0, alternative=alt).pvalue, rel=1e-8)
    assert est.interval(0.9) == pytest.approx(
        tuple(ss.ttest_1samp(x, 0.0).confidence_interval(0.9)), rel=1e-12)


def test_one_value_per_replicate_is_the_t_interval_over_seeds():
    x = np.array([0.71, 0.74, 0.69, 0.75])
    est = estimate_mean(x, replicates=[0, 1, 2, 3], units=[0, 0, 0, 0])
    assert est.design == "replicates" and est.levels == "seeds only"
    assert est.interval() == pytest.approx(tuple(ss.ttest_1samp(x, 0).confidence_interval()))


def test_crossed_design_by_hand():
    # 2 seeds x 3 queries: ybar_s = (0.5, 0.7), ybar_q = (0.5, 0.6, 0.7), grand mean 0.6
    y = np.array([[0.4, 0.5, 0.6], [0.6, 0.7, 0.8]])
    seeds, queries = np.repeat([0, 1], 3), np.tile([0, 1, 2], 2)
    est = estimate_mean(y.ravel(), seeds, queries)
    ms_a = 3 * (0.1 ** 2 + 0.1 ** 2) / 1  # Q * sum (ybar_s - ybar)^2 / (S - 1)
    ms_b = 2 * (0.1 ** 2 + 0 + 0.1 ** 2) / 2  # S * sum (ybar_q - ybar)^2 / (Q - 1)
    assert est.design == "crossed" and est.mean == pytest.approx(0.6)
    np.testing.assert_allclose(est.parts, [(ms_a / 6, 1), (ms_b / 6, 2)])
    half = np.sqrt(ss.t.ppf(0.975, 1) ** 2 * ms_a / 6 + ss.t.ppf(0.975, 2) ** 2 * ms_b / 6)
    assert est.interval() == pytest.approx((0.6 - half, 0.6 + half))
    # the order of the rows does not matter
    perm = np.random.default_rng(0).permutation(6)
    again = estimate_mean(y.ravel()[perm], seeds[perm], queries[perm])
    np.testing.assert_allclose(again.parts, est.parts)
    assert again.mean == pytest.approx(est.mean)


def test_nested_design_uses_the_replicate_means():
    rng = np.random.default_rng(2)
    values = rng.random(7)
    seeds = np.array([0, 0, 0, 1, 1, 2, 2])
    queries = np.array([1, 2, 3, 0, 4, 5, 6])  # no query in two seeds
    est = estimate_mean(values, seeds, queries)
    means = [values[seeds == s].mean() for s in range(3)]
    assert est.design == "nested" and est.mean == pytest.approx(np.mean(means))
    assert est.interval() == pytest.approx(tuple(ss.ttest_1samp(means, 0).confidence_interval()))


def test_missing_cells_by_hand():
    # 2 seeds x 3 queries, query 2 missing in seed 1: seed means 0.5 and 0.7, mean 0.6;
    # weights 1/(2*3) in seed 0, 1/(2*2) in seed 1
    y = np.array([0.4, 0.5, 0.6, 0.6, 0.8])
    seeds, queries = np.array([0, 0, 0, 1, 1]), np.array([0, 1, 2, 0, 1])
    est = estimate_mean(y, seeds, queries)
    by_query = [(0.4 - 0.6) / 6 + (0.6 - 0.6) / 4, (0.5 - 0.6) / 6 + (0.8 - 0.6) / 4,
                (0.6 - 0.6) / 6]
    a = np.var([0.5, 0.7], ddof=1) / 2
    b = 3 / 2 * sum(x ** 2 for x in by_query)
    assert est.design == "crossed" and est.mean == pytest.approx(0.6)
    np.testing.assert_allclose(est.parts, [(a, 1), (b, 2)])
    # a complete table gives the crossed design's mean squares, whichever branch computes them
    rng = np.random.default_rng(4)
    full = rng.random((3, 5))
    s, q = np.repeat(np.arange(3), 5), np.tile(np.arange(5), 3)
    crossed = estimate_mean(full.ravel(), s, q)
    holed = np.append(full.ravel(), np.nan)  # one NaN row more: the incomplete branch's sums
    again = estimate_mean(holed, np.append(s, 3), np.append(q, 0))
    np.testing.assert_allclose(again.parts, crossed.parts)


def test_bounded_intervals_closed_forms():
    est = estimate_mean(np.array([77.0, 157.0]), [0, 1], [0, 0])  # two seeds' means
    m, h = 117.0, est.halfwidth(0.025)
    assert est.interval()[0] < 0  # the symmetric interval leaves the range
    assert est.interval(bounds=(0, np.inf)) == pytest.approx((m * np.exp(-h / m),
                                                              m * np.exp(h / m)))
    # an upper bound alone mirrors a lower one
    low, high = estimate_mean(-np.array([77.0, 157.0]), [0, 1], [0, 0]) \
        .interval(bounds=(-np.inf, 0))
    assert (low, high) == pytest.approx((-m * np.exp(h / m), -m * np.exp(-h / m)))
    # two bounds: the logit of the position in the range; on [-1, 1] Fisher's z = 2 atanh
    d = np.array([0.55, 0.62, 0.58])
    est = estimate_mean(d, [0, 1, 2], [0, 0, 0])
    m, h = d.mean(), est.halfwidth(0.025)
    z, dz = np.arctanh(m), h / (1 - m ** 2)
    assert est.interval(bounds=(-1, 1)) == pytest.approx((np.tanh(z - dz), np.tanh(z + dz)))
    p = (m + 1) / 2
    lg, dl = np.log(p / (1 - p)), h / (2 * p * (1 - p))
    assert est.interval(bounds=(-1, 1)) == pytest.approx(
        (2 / (1 + np.exp(-(lg - dl))) - 1, 2 / (1 + np.exp(-(lg + dl))) - 1))
    # no bounds, or infinite ones: the symmetric interval
    assert est.interval(bounds=(-np.inf, np.inf)) == pytest.approx(est.interval())
    # small half-width far from the bounds: the symmetric interval to first order
    tight = estimate_mean(0.3 + 1e-4 * np.arange(5), np.arange(5), np.zeros(5))
    assert tight.interval(bounds=(0, 1)) == pytest.approx(tight.interval(), abs=1e-7)


@pytest.mark.parametrize("values,bounds", [
    ([0.999, 0.2, 0.998], (0, 1)),              # a bound-hugging seed and an outlier
    ([1e-9, 3.0], (0, np.inf)),                 # two seeds, one near zero
    ([-0.999, 0.999], (-1, 1)),                 # the whole range
    ([-0.9999, -0.9], (-1, 1)),
    ([5.0, 5.0 + 1e-12], (5.0, 6.0)),           # on the edge, tiny spread
    ([1e6, 1.0, 2.0], (0, np.inf)),
])
def test_bounded_intervals_stay_inside_on_adversarial_values(values, bounds):
    est = estimate_mean(np.array(values), np.arange(len(values)), np.zeros(len(values)))
    for level in (0.5, 0.95, 0.999999):
        low, high = est.interval(level, bounds=bounds)
        assert bounds[0] <= low <= est.mean <= high <= bounds[1]
    plain = est.interval()
    assert plain[0] < bounds[0] or plain[1] > bounds[1] or values[0] == 5.0


def test_bounded_interval_errors_and_edges():
    const = estimate_mean(np.array([1.0, 1.0, 1.0]), [0, 1, 2], [0, 0, 0])
    assert const.interval(bounds=(0, 1)) == (1.0, 1.0)          # no variation: the point
    outside = estimate_mean(np.array([1.2, 1.4]), [0, 1], [0, 0])
    with pytest.raises(ValueError, match="outside the bounds"):
        outside.interval(bounds=(0, 1))
    on_edge = estimate_mean(np.array([-0.5, 0.5]), [0, 1], [0, 0])  # values beyond 0
    with pytest.raises(ValueError, match="on a bound"):
        on_edge.interval(bounds=(0, 1))
    with pytest.raises(ValueError, match="low < high"):
        on_edge.interval(bounds=(1, 0))
    empty = estimate_mean(np.array([np.nan]))
    assert all(np.isnan(empty.interval(bounds=(0, 1))))


def test_p_value_inverts_the_interval():
    rng = np.random.default_rng(3)
    seeds, queries = np.repeat(np.arange(3), 50), np.tile(np.arange(50), 3)
    y = 0.05 + 0.02 * np.repeat(rng.standard_normal(3), 50) + 0.1 * rng.standard_normal(150)
    est = estimate_mean(y, seeds, queries)
    p = est.p_value()
    assert 0 < p < 1
    low, _ = est.interval(1 - p)  # the 1 - p interval just touches 0
    assert low == pytest.approx(0.0, abs=1e-7)
    assert est.p_value(0.0, "greater") == pytest.approx(p / 2, rel=1e-6)


def test_small_p_values_are_scipys_and_two_parts_are_bracketed():
    # one part: the t-test's p-value, also far below the 1e-16 where ``1 - alpha`` rounds
    # to 1 (the inversion by search of before gave 5.6e-17 for any p below it)
    for gap, df in ((10.0, 30.0), (8.0, 1e4), (40.0, 3.0), (2.0, 5.0)):
        est = Estimate(gap, ((1.0, df),), 10, 10, 10, "replicates")
        assert est.p_value(0.0, "greater") / ss.t.sf(gap, df) == pytest.approx(1.0, rel=1e-9)
    # two parts: the root of the interval's half-width, between the one-part p-values of
    # gap / se at the two degrees of freedom (the search's bracket)
    est = Estimate(3.0, ((0.5, 4.0), (0.5, 400.0)), 10, 5, 400, "crossed")
    p = est.p_value(0.0, "greater")
    assert ss.t.sf(3.0, 400.0) < p < ss.t.sf(3.0, 4.0)
    assert est.halfwidth(p) == pytest.approx(3.0, rel=1e-9)
    assert est.p_value() == pytest.approx(2 * p, rel=1e-12)


def test_welch_matches_scipy():
    rng = np.random.default_rng(4)
    a, b = rng.normal(1.0, 1.0, 12), rng.normal(0.2, 3.0, 7)
    t, ref = welch_test(a, b), ss.ttest_ind(a, b, equal_var=False)
    assert t.test == "welch" and t.p == pytest.approx(ref.pvalue, rel=1e-12)
    assert t.estimate.p_value() == pytest.approx(ref.pvalue, rel=1e-7)
    assert t.interval() == pytest.approx(tuple(ref.confidence_interval()), rel=1e-10)
    assert welch([1.0], [2.0, 3.0]).design == "empty"


def test_paired_protocol_follows_the_papers():
    rng = np.random.default_rng(5)
    a = rng.random(300)
    normal = a - 0.01 + 0.05 * rng.standard_normal(300)
    t = paired_test(a, normal)
    assert t.test == "paired-t" and t.shapiro_p >= 1e-3
    assert t.p == pytest.approx(ss.ttest_rel(a, normal).pvalue, rel=1e-12)
    skewed = a - rng.exponential(0.02, 300) ** 2
    t = paired_test(a, skewed)
    assert t.test == "wilcoxon" and t.shapiro_p < 1e-3
    assert t.p == pytest.approx(ss.wilcoxon(a - skewed).pvalue, rel=1e-12)
    # the protocol's normality level is the caller's
    assert paired_test(a, skewed, normality=0.0).test == "paired-t"


def test_constant_differences_and_identical_lists():
    ones = np.ones(20)
    t = one_sample_test(ones, 1.0)  # a deterministic model refitted: RBO exactly 1
    assert t.test == "constant" and t.p == 1.0 and t.interval() == (0.0, 0.0)
    t = paired_test(ones, ones - 0.1)
    assert t.test == "constant" and t.p == 0.0 and t.difference == pytest.approx(0.1)
    assert paired_test([1.0, 2.0], [1.0, 1.0]).test == "none"


def test_several_seeds_need_both_levels_to_agree():
    # a difference that every query shows in seed 0 and reverses in seed 1: the per-query
    # protocol (which averages seeds) and the two-level interval disagree; the larger p wins
    rng = np.random.default_rng(6)
    q = 400
    a = rng.random(2 * q)
    shift = np.repeat([0.06, -0.04], q) + 0.005 * rng.standard_normal(2 * q)
    t = paired_test(a, a - shift, np.repeat([0, 1], q), np.tile(np.arange(q), 2))
    assert t.p_protocol < 1e-10 and t.p_levels > 0.05
    assert t.p == t.p_levels and not t.significant(0.05)


def test_paired_beats_unpaired_when_queries_vary_more_than_the_difference():
    rng = np.random.default_rng(7)
    level = rng.beta(2, 2, 500)  # queries differ a lot
    floor = level
    pert = level - 0.01 - 0.005 * rng.random(500)  # every query a little lower
    assert paired_test(pert, floor).p < 1e-10
    assert welch_test(pert, floor).p > 0.05  # the unpaired comparison misses it


def test_holm_closed_form_and_properties():
    p = np.array([0.01, 0.04, 0.03, np.nan, 0.005])
    adj = holm(p)
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4 x 0.005, 3 x 0.01, 2 x 0.03, max(0.06, 1 x 0.04)
    np.testing.assert_allclose(adj, [0.03, 0.06, 0.06, np.nan, 0.02])
    rng = np.random.default_rng(8)
    raw = rng.random(30) ** 3
    adj = holm(raw)
    assert np.all(adj >= raw) and np.all(adj <= 1)
    order = np.argsort(raw)
    assert np.all(np.diff(adj[order]) >= 0)  # monotone in the raw order
    assert holm([]).shape == (0,)


@pytest.mark.parametrize("n", [3, 5, 30])
def test_detectable_effect_has_the_power_it_claims(n):
    rng = np.random.default_rng(9 + n)
    est = estimate_mean(rng.normal(0, 1.0, n), np.arange(n))
    mde = est.detectable(0.05, 0.8)
    se = est.se
    # the exact power of the t-test is the non-central t law's
    nc = mde / se
    crit = ss.t.ppf(0.975, n - 1)
    exact = ss.nct.sf(crit, n - 1, nc) + ss.nct.cdf(-crit, n - 1, nc)
    assert exact == pytest.approx(0.8, abs=0.003)
    # simulated power at that effect (true sd = the sample's estimate): about 0.8
    sims = rng.normal(mde, se * np.sqrt(n), (4000, n))
    power = np.mean(ss.ttest_1samp(sims, 0, axis=1).pvalue < 0.05)
    assert 0.77 < power < 0.83
    # the textbook (t_{1-alpha/2} + t_power) se falls short at few replicates
    if n == 3:
        assert (crit + ss.t.ppf(0.8, n - 1)) * se < 0.96 * mde


def test_detectable_effect_of_a_two_level_design_has_its_power():
    # seeds x queries: the audit's test (the paired test's decision) at the plan's effect
    rng = np.random.default_rng(12)
    n_seeds, n_queries, sd_seed, sd_query, sd_noise = 4, 300, 0.02, 0.1, 0.05
    seeds = np.repeat(np.arange(n_seeds), n_queries)
    queries = np.tile(np.arange(n_queries), n_seeds)

    def draw(effect):
        return (effect + sd_seed * np.repeat(rng.standard_normal(n_seeds), n_queries)
                + sd_query * np.tile(rng.standard_normal(n_queries), n_seeds)
                + sd_noise * rng.standard_normal(n_seeds * n_queries))

    # the true variance parts: E[A] = sd_seed^2 / S + sd_noise^2 / (S Q), E[B] likewise
    sq = n_seeds * n_queries
    truth = Estimate(0.0, ((sd_seed ** 2 / n_seeds + sd_noise ** 2 / sq, n_seeds - 1),
                           (sd_query ** 2 / n_queries + sd_noise ** 2 / sq, n_queries - 1)),
                     sq, n_seeds, n_queries, "crossed")
    mde = truth.detectable()
    power = np.mean([paired_test(draw(mde), np.zeros(sq), seeds, queries).p < 0.05
                     for _ in range(1000)])
    assert 0.76 < power < 0.84


def test_replicates_needed_to_resolve_an_effect():
    rng = np.random.default_rng(10)
    seeds, queries = np.repeat(np.arange(3), 100), np.tile(np.arange(100), 3)
    y = 0.01 + 0.02 * np.repeat(rng.standard_normal(3), 100) + 0.05 * rng.standard_normal(300)
    est = estimate_mean(y, seeds, queries)
    assert est.detectable() > 0.01
    need = est.replicates_for(0.01)
    assert need is not None and need > 3
    assert est.with_replicates(need).detectable() <= 0.01 < est.with_replicates(need - 1).detectable()
    for effect, alpha, power in ((0.02, 0.05, 0.8), (0.015, 0.01, 0.9), (0.01, 0.05, 0.9),
                                 (0.2, 0.05, 0.8)):
        n = est.replicates_for(-effect, alpha, power)  # the fewest that detect it, either sign
        assert est.with_replicates(n).detectable(alpha, power) <= effect
        assert n == 2 or est.with_replicates(n - 1).detectable(alpha, power) > effect
    # larger effects need fewer replicates; one replicate cannot say
    assert est.replicates_for(0.05) <= need
    assert estimate_mean(y[:100]).replicates_for(0.01) is None
    assert est.replicates_for(0.0) is None


def test_bad_input_is_named():
    with pytest.raises(ValueError, match="one entry each"):
        estimate_mean([1.0, 2.0], replicates=[0])
    with pytest.raises(ValueError, match="appears twice"):
        estimate_mean([1.0, 2.0], replicates=[0, 0], units=[1, 1])
    with pytest.raises(ValueError, match="same length"):
        paired_test([1.0, 2.0], [1.0])
    with pytest.raises(ValueError, match="alternative"):
        estimate_mean([1.0, 2.0, 3.0]).p_value(0, "bigger")
    assert np.isnan(estimate_mean([np.nan]).mean)


@pytest.mark.parametrize("values", [
    np.array(["q10", "q9", "é", "Z", "a", "ä", "q10", "a"], dtype=object),  # code point order
    np.array(["q10", "q9", "é", "Z", "a", "q10"]),                          # fixed-width str
    np.array([10, 9, 2, 10, 9], dtype=object),                              # numbers as objects
    np.array(["b", 3, "a", 3, "b"], dtype=object)[[0, 2, 4]],               # strings again
    np.array([b"x", b"a", b"x"]),
])
def test_group_codes_are_numpys_unique_inverse(values):
    """The fast codes of text (hash table, then a sort of the distinct values) are those of
    ``np.unique``: the same groups in the same order, so estimates are unchanged."""
    from recaudit.stats._estimate import _codes

    codes, n = _codes(values)
    uniq, inverse = np.unique(values, return_inverse=True)
    assert n == len(uniq)
    np.testing.assert_array_equal(codes, inverse.ravel())
