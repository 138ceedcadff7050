"""variance_parts: the method-of-moments components recover known variances, by simulation,
and agree with a by-hand ANOVA on a small balanced table."""

from __future__ import annotations

import numpy as np
import pytest

from recaudit.stats import variance_parts


def _draw(rng, S, D, Q, sd_seed, sd_draw, sd_query, sd_noise):
    y = (sd_seed * rng.standard_normal((S, 1, 1)) + sd_draw * rng.standard_normal((S, D, 1))
         + sd_query * rng.standard_normal((1, 1, Q)) + sd_noise * rng.standard_normal((S, D, Q)))
    s, d, q = np.meshgrid(np.arange(S), np.arange(D), np.arange(Q), indexing="ij")
    return y.ravel(), s.ravel(), d.ravel(), q.ravel()


def test_components_are_unbiased_on_average():
    rng = np.random.default_rng(1)
    truth = np.array([0.04, 0.02, 0.09, 0.01])  # variances: seed, draw, query, residual
    est = []
    for _ in range(300):
        y, s, d, q = _draw(rng, 6, 3, 40, *np.sqrt(truth))
        v = variance_parts(y, s, d, q)
        est.append([v.seed, v.draw, v.query, v.residual])
    # the truncation at 0 biases little here: every component is well above its noise
    np.testing.assert_allclose(np.mean(est, axis=0), truth, rtol=0.12)


def test_by_hand_anova_without_draws():
    # 2 seeds x 3 queries: MS_seed = 3 * sum (m_s - m)^2, MS_q = 2 * sum (m_q - m)^2 / 2,
    # residual the interaction mean square
    y = np.array([[1.0, 2.0, 4.0], [2.0, 2.0, 5.0]])
    s, q = np.repeat([0, 1], 3), np.tile([0, 1, 2], 2)
    v = variance_parts(y.ravel(), s, None, q)
    m, ms, mq = y.mean(), y.mean(1), y.mean(0)
    ms_s = 3 * ((ms - m) ** 2).sum()
    ms_q = 2 * ((mq - m) ** 2).sum() / 2
    ms_res = (((y - ms[:, None] - mq[None, :] + m) ** 2).sum()) / 2
    assert v.residual == pytest.approx(ms_res)
    assert v.seed == pytest.approx(max(0, (ms_s - ms_res) / 3))
    assert v.query == pytest.approx((ms_q - ms_res) / 2)
    assert v.draw == 0 and (v.seeds, v.draws, v.queries) == (2, 1, 3)
    assert sum(v.shares().values()) == pytest.approx(1)


def test_mean_shares_follow_the_counts():
    rng = np.random.default_rng(2)
    y, s, d, q = _draw(rng, 4, 1, 2000, 0.05, 0.0, 0.1, 0.05)
    v = variance_parts(y, s, d, q)
    sh = v.mean_shares()
    # seed: 0.0025 / 4 against query 0.01 / 2000: the seeds make nearly all of the mean's
    # variance although the queries make most of one measurement's
    assert sh["seed"] > 0.9 and v.shares()["query"] > 0.5


def test_incomplete_queries_are_left_out_and_one_trial_is_all_query():
    y, s, d, q = _draw(np.random.default_rng(3), 3, 1, 10, 0.1, 0, 0.1, 0.1)
    keep = ~((s == 2) & (q == 9))
    v = variance_parts(y[keep], s[keep], d[keep], q[keep])
    assert v.queries == 9 and v.seeds == 3
    one = variance_parts(y[s == 0], s[s == 0], None, q[s == 0])
    assert one.seed == 0 and one.query == pytest.approx(np.var(y[s == 0], ddof=1))
