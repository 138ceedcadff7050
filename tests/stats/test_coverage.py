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
