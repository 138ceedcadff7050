"""Coverage of the two-level interval, by simulation of the two-way random-effects model
``y[s, q] = a[s] + b[q] + e[s, q]`` (true mean 0), and the error rate of the paired test.

The queries-only interval (every value pooled as if from one seed) is what an audit that
ignores the seed level would give: it under-covers whenever seeds differ, and these tests
fail if the estimate falls back to it.
"""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.stats import estimate_mean, paired_test

N_SIM = 400  # binomial se of a 0.95 coverage: 0.011


def _simulate(rng, n_seeds, n_queries, sd_seed, sd_query=0.15, sd_noise=0.1):
    y = (sd_seed * rng.standard_normal((n_seeds, 1))
         + sd_query * rng.standard_normal((1, n_queries))
         + sd_noise * rng.standard_normal((n_seeds, n_queries)))
    return (y.ravel(), np.repeat(np.arange(n_seeds), n_queries),
            np.tile(np.arange(n_queries), n_seeds))


def _coverage(rng, n_seeds, sd_seed, pooled=False, n_queries=200):
    hits = 0
    for _ in range(N_SIM):
        y, seeds, queries = _simulate(rng, n_seeds, n_queries, sd_seed)
        est = estimate_mean(y) if pooled else estimate_mean(y, seeds, queries)
        low, high = est.interval()
        hits += low <= 0 <= high
    return hits / N_SIM


@pytest.mark.parametrize("n_seeds,sd_seed", [(2, 0.1), (3, 0.1), (3, 0.01), (5, 0.03),
                                             (10, 0.05), (3, 0.0)])
def test_two_level_interval_covers(n_seeds, sd_seed):
    rng = np.random.default_rng(n_seeds * 100 + int(sd_seed * 1000))
    assert _coverage(rng, n_seeds, sd_seed) >= 0.92


@pytest.mark.parametrize("n_seeds,sd_seed", [(3, 0.03), (10, 0.05)])
def test_ignoring_the_seed_level_under_covers(n_seeds, sd_seed):
    rng = np.random.default_rng(7 + n_seeds)
    assert _coverage(rng, n_seeds, sd_seed, pooled=True) < 0.8
    assert _coverage(rng, n_seeds, sd_seed) >= 0.92


def test_paired_test_holds_its_level_when_seeds_disagree():
    # no true difference, but each seed's perturbation moves all its queries alike (the
    # seed-to-seed variation of a difference): the per-query protocol alone rejects far too
    # often; the decision, which also needs the two-level interval, does not
    rng = np.random.default_rng(11)
    n_seeds, n_queries, reject, reject_protocol = 3, 150, 0, 0
    for _ in range(N_SIM):
        base = rng.random(n_seeds * n_queries)
        d, seeds, queries = _simulate(rng, n_seeds, n_queries, 0.02, 0.0, 0.05)
        t = paired_test(base + d, base, seeds, queries)
        reject += t.p < 0.05
        reject_protocol += t.p_protocol < 0.05
    assert reject / N_SIM <= 0.07
    assert reject_protocol / N_SIM > 0.3


# --- incomplete layouts and bounded quantities -------------------------------------------

def _lognormal(rng, n_seeds, n_queries, sd_seed, sd_query, sd_noise, missing):
    """``y = 100 exp(a[s] + b[q] + e[s, q])`` with a share ``missing`` of the cells left out
    (NaN): a positive, right-skewed quantity such as a list's mean popularity of the items
    that entered it. Its mean over seeds and queries is ``100 exp(sum of the variances / 2)``.
    """
    y = 100 * np.exp(sd_seed * rng.standard_normal((n_seeds, 1))
                     + sd_query * rng.standard_normal((1, n_queries))
                     + sd_noise * rng.standard_normal((n_seeds, n_queries)))
    y[rng.random(y.shape) < missing] = np.nan
    truth = 100 * np.exp((sd_seed ** 2 + sd_query ** 2 + sd_noise ** 2) / 2)
    return (y.ravel(), np.repeat(np.arange(n_seeds), n_queries),
            np.tile(np.arange(n_queries), n_seeds), truth)


def _nested_interval(y, seeds):
    """The replicate means alone (what the estimate gave before it knew missing cells)."""
    from scipy import stats as ss

    ok = ~np.isnan(y)
    means = [np.mean(y[ok & (seeds == s)]) for s in np.unique(seeds)]
    h = ss.t.ppf(0.975, len(means) - 1) * np.std(means, ddof=1) / np.sqrt(len(means))
    return np.mean(means) - h, np.mean(means) + h


def test_missing_cells_keep_the_query_level():
    # five seeds, half of every seed's queries missing, the queries' variation dominant: the
    # replicate means alone under-cover, the two-way sums do not
    rng = np.random.default_rng(5)
    hits = {"two-way": 0, "nested": 0}
    for _ in range(N_SIM):
        y, seeds, queries, truth = _lognormal(rng, 5, 150, 0.02, 0.8, 0.5, 0.5)
        est = estimate_mean(y, seeds, queries)
        assert est.design == "crossed" and len(est.parts) == 2
        for name, (low, high) in (("two-way", est.interval()),
                                  ("nested", _nested_interval(y, seeds))):
            hits[name] += low <= truth <= high
    assert hits["two-way"] / N_SIM >= 0.93
    assert hits["nested"] / N_SIM < 0.85


@pytest.mark.parametrize("n_seeds,sd_seed,missing", [(2, 0.5, 0.5), (3, 0.5, 0.0),
                                                     (3, 0.1, 0.5), (5, 0.5, 0.9),
                                                     (3, 0.02, 0.5)])
def test_log_scale_interval_of_a_positive_mean_covers(n_seeds, sd_seed, missing):
    rng = np.random.default_rng(n_seeds * 10 + int(sd_seed * 100))
    hits = 0
    for _ in range(N_SIM):
        y, seeds, queries, truth = _lognormal(rng, n_seeds, 150, sd_seed, 0.3, 0.8, missing)
        low, high = estimate_mean(y, seeds, queries).interval(bounds=(0, np.inf))
        assert 0 < low <= high
        hits += low <= truth <= high
    assert hits / N_SIM >= 0.92


def test_clipping_keeps_the_far_side_misses_that_the_log_scale_removes():
    # strong multiplicative seed effects (factor e^0.8 per sd) at three seeds: the replicate
    # means are right-skewed; the symmetric interval misses above the truth, whether clipped
    # at 0 or not, and the log scale moves those misses back
    rng = np.random.default_rng(17)
    clip = log = 0
    for _ in range(N_SIM):
        y, seeds, queries, truth = _lognormal(rng, 3, 150, 0.8, 0.3, 0.5, 0.0)
        est = estimate_mean(y, seeds, queries)
        low, high = est.interval()
        clip += max(low, 0.0) <= truth <= high
        low, high = est.interval(bounds=(0, np.inf))
        log += low <= truth <= high
    assert log / N_SIM >= 0.9
    assert log - clip >= 0.02 * N_SIM


def _fisher_truth(mu, sd):
    """E[tanh(mu + sd Z)], by Gauss-Hermite quadrature."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    return float(np.sum(w * np.tanh(mu + sd * x)) / np.sqrt(2 * np.pi))


@pytest.mark.parametrize("n_seeds,mu,sd", [(2, 0.0, 0.05), (3, 1.5, 0.4), (3, -2.0, 0.3),
                                           (5, 0.8, 0.6), (10, 2.5, 0.3)])
def test_fisher_scale_interval_of_a_change_in_minus_one_to_one_covers(n_seeds, mu, sd):
    # one value per seed in (-1, 1) (a change of a Gini coefficient per trial), some near a
    # bound: the interval stays inside (-1, 1) and covers the mean
    rng = np.random.default_rng(n_seeds + int(mu * 10) + 500)
    truth, hits = _fisher_truth(mu, sd), 0
    for _ in range(N_SIM):
        d = np.tanh(mu + sd * rng.standard_normal(n_seeds))
        low, high = estimate_mean(d, np.arange(n_seeds)).interval(bounds=(-1, 1))
        assert -1 < low <= high < 1
        hits += low <= truth <= high
    assert hits / N_SIM >= 0.92
