"""The plan's detectable difference against the audit's power, by simulation.

Data from the two-level model ``d[s, q] = delta + a[s] + b[q] + e[s, q]`` with known
variances. The plan (what ``recaudit audit --dry-run`` computes: the variance parts of an
earlier store's differences, projected to ``n`` seeds, solved for 80 % power) must lie within
25 % of the difference the audit's decision (:func:`recaudit.stats.paired_test` at 0.05)
detects with 80 % power: below 0.75 x plan the audit's power is under 0.8, above 1.25 x plan
it is over 0.8. The query-level bound the plan used before (``(z + z) sd / sqrt(Q)``) fails
this by a factor of 10 or more where seeds vary.
"""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.stats import Estimate, estimate_mean, paired_test

SD_SEED, SD_QUERY, SD_NOISE, QUERIES = 0.02, 0.1, 0.05, 150


def _draw(rng, effect, n_seeds):
    y = (effect + SD_SEED * rng.standard_normal((n_seeds, 1))
         + SD_QUERY * rng.standard_normal((1, QUERIES))
         + SD_NOISE * rng.standard_normal((n_seeds, QUERIES)))
    return (y.ravel(), np.repeat(np.arange(n_seeds), QUERIES),
            np.tile(np.arange(QUERIES), n_seeds))


def _power(rng, effect, n_seeds, sims=400):
    hits = 0
    for _ in range(sims):
        d, seeds, queries = _draw(rng, effect, n_seeds)
        hits += paired_test(d, np.zeros_like(d), seeds, queries).p < 0.05
    return hits / sims


def _known(n_seeds):
    sq = n_seeds * QUERIES
    return Estimate(0.0, ((SD_SEED ** 2 / n_seeds + SD_NOISE ** 2 / sq, n_seeds - 1),
                          (SD_QUERY ** 2 / QUERIES + SD_NOISE ** 2 / sq, QUERIES - 1)),
                    sq, n_seeds, QUERIES, "crossed")


@pytest.mark.parametrize("n_seeds", [3, 5, 10])
def test_plan_from_known_variances_is_within_25_percent_of_the_audits_power(n_seeds):
    rng = np.random.default_rng(100 + n_seeds)
    plan = _known(n_seeds).detectable()
    assert _power(rng, 0.75 * plan, n_seeds) < 0.8 < _power(rng, 1.25 * plan, n_seeds)
    # the query-level bound the plan gave before is below what the audit can detect (far
    # below at few seeds, where the replicates' t quantile has 2 degrees of freedom)
    z = 1.959964 + 0.841621
    query_only = z * np.sqrt(SD_QUERY ** 2 + SD_NOISE ** 2) / np.sqrt(QUERIES)
    assert query_only < (0.5 if n_seeds == 3 else 1.0) * plan


def test_plan_from_an_earlier_store_is_mostly_within_25_percent():
    # what --like reads: an earlier audit of 32 seeds of the same model; its replicates'
    # variance has 31 degrees of freedom, so the plan it gives at 5 seeds is within 25 % of
    # the plan from the true variances (checked against the audit's power above) in most
    # stores (sqrt(chi2(31) / 31) lies in [0.75, 1.25] with probability 0.99)
    rng = np.random.default_rng(7)
    truth = _known(5).detectable()
    ratios = []
    for _ in range(200):
        d, seeds, queries = _draw(rng, 0.0, 32)
        ratios.append(estimate_mean(d, seeds, queries).with_replicates(5).detectable() / truth)
    ratios = np.array(ratios)
    assert np.mean(np.abs(ratios - 1) <= 0.25) >= 0.95
    assert 0.9 < np.median(ratios) < 1.1


def test_seeds_for_a_difference_reach_it():
    est = _known(3)
    need = est.replicates_for(0.03)
    assert need is not None
    assert est.with_replicates(need).detectable() <= 0.03 < \
        est.with_replicates(need - 1).detectable()
    rng = np.random.default_rng(5)
    assert _power(rng, 0.03, need) >= 0.75
