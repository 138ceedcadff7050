"""The sequential rule (recaudit.stats._sequential): its ladder, its intervals against
scipy's, and its error rates under the stopping rule as shipped, by simulation.

The null simulations run the rule exactly as a run does: a first round of 3 replicates, then
after each look either stop (decided, stopped for futility, at or beyond the cap) or draw
replicates up to ``next``, for the default design and for the ladder's Bonferroni rule that
runs begun before it keep. The same simulated studies read with a fixed 0.05 test at every
look reject far more often than 0.05: the tests fail if the rule falls back to that reading.
The default design's own properties (calibration, futility, power) are in
``tests/stats/test_design.py``.
"""

from __future__ import annotations

import doctest

import numpy as np
import pytest
from scipy import stats as sps
from scipy import stats as ss

import recaudit.stats._sequential as seq
from recaudit.stats import (DEFAULT_RULE, LEGACY_RULE, Estimate, SequentialPlan,
                            estimate_mean, replicates_estimator, rung, rungs_upto,
                            sequential_family, sequential_test, sequential_welch)

RULES = [DEFAULT_RULE, LEGACY_RULE]

N_NULL = 2000
ALPHA = 0.05
# the upper end of a 99.9 % binomial band around alpha over N_NULL studies
LIMIT = ALPHA + 3.1 * np.sqrt(ALPHA * (1 - ALPHA) / N_NULL)


def test_doctests():
    assert doctest.testmod(seq).failed == 0


def test_ladder_and_spending():
    assert [rung(k) for k in range(1, 11)] == [3, 4, 6, 8, 12, 16, 24, 32, 48, 64]
    assert rungs_upto(20) == [3, 4, 6, 8, 12, 16]
    assert rungs_upto(2) == []
    assert SequentialPlan().rule == DEFAULT_RULE == "group-sequential-t"
    plan = SequentialPlan(cap=32, rule=LEGACY_RULE)
    assert plan.rule == "bonferroni-sqrt" and plan.spending.kind == "bonferroni"
    # 90 % over the design's 8 rungs in proportion to sqrt(rung), 10 % beyond, 0.1/(j(j+1))
    roots = np.sqrt([3, 4, 6, 8, 12, 16, 24, 32])
    assert [plan.weight(k) for k in range(1, 9)] == pytest.approx(0.9 * roots / roots.sum())
    assert plan.weight(9) == pytest.approx(0.1 / 2) and plan.weight(10) == pytest.approx(0.1 / 6)
    assert sum(plan.weight(k) for k in range(1, 400)) == pytest.approx(1 - 0.1 / 392)
    # a larger cap later keeps the first design: the same weights below it
    later = SequentialPlan(cap=128, design=32, rule="bonferroni-sqrt")
    assert [later.weight(k) for k in range(1, 12)] == [plan.weight(k) for k in range(1, 12)]
    assert SequentialPlan(cap=20, rule=LEGACY_RULE).last == 16
    assert SequentialPlan(comparisons=4, rule="bonferroni-sqrt").level(6) == pytest.approx(
        0.05 / 4 * plan.weight(3))
    with pytest.raises(ValueError, match="cap"):
        SequentialPlan(cap=2)
    with pytest.raises(ValueError, match="not a rung"):
        SequentialPlan(rule=LEGACY_RULE).level(5)
    # the default design looks at the rungs below its cap and at the cap itself
    assert SequentialPlan(cap=20).last == 20 and SequentialPlan(cap=20).designed == (
        3, 4, 6, 8, 12, 16, 20)
    with pytest.raises(ValueError, match="not a look of the design"):
        SequentialPlan(cap=20).level(5)
    with pytest.raises(ValueError, match="rule must be one of"):
        SequentialPlan(rule="pocock")


def _crossings(info, nominal, paths, rng):
    """Monte Carlo of the canonical joint distribution (a Brownian motion read at the times
    ``info``): the share of paths whose first crossing of ``|Z_k| >= z(nominal_k)`` is at
    look ``k``, per look."""
    steps = rng.standard_normal((paths, len(info))) * np.sqrt(np.diff(np.r_[0, info]))
    z = np.abs(np.cumsum(steps, axis=1)) / np.sqrt(info)
    cross = z >= -sps.norm.ppf(np.asarray(nominal) / 2)
    first = np.where(cross.any(axis=1), cross.argmax(axis=1), -1)
    return np.array([np.mean(first == k) for k in range(len(info))])


@pytest.mark.parametrize("a", [0.05, 0.004])
def test_group_sequential_levels_spend_what_the_spending_function_says(a):
    # the group-sequential rule: Kim and DeMets' t ** rho over the design's rungs,
    # (1 - tail - slack) a in all, checked against a simulation of the looks' joint law (not
    # the recursion)
    plan = SequentialPlan(cap=48, rule="lan-demets-rho1")
    rule = plan.spending
    assert rule.kind == "group-sequential" and rule.slack > 0
    info = np.array(rungs_upto(48), dtype=float)
    nominal = [plan.nominal(k, a) for k in range(1, len(info) + 1)]
    per_look = _crossings(info, nominal, 400_000, np.random.default_rng(11))
    want = (1 - rule.tail - rule.slack) * a * np.diff(np.r_[0, (info / 48) ** rule.shape])
    se = np.sqrt(want / 400_000)
    assert np.all(np.abs(per_look - want) <= 4 * se + 1e-6)
    total = (1 - rule.tail - rule.slack) * a
    assert abs(per_look.sum() - total) <= 4 * np.sqrt(total / 400_000)
    # the looks' correlation is what the rule buys: the last look's nominal level is more
    # than the Bonferroni rule's at the same alpha, with the same spending shape
    assert nominal[-1] > 2 * SequentialPlan(cap=48, rule="bonferroni-sqrt").nominal(9, a)
    # nested rejection regions: every look's level grows with alpha (Holm needs it)
    for k in range(1, len(info) + 1):
        levels = [plan.nominal(k, x) for x in (1e-6, 1e-4, 0.01, 0.05, 0.2)]
        assert levels == sorted(levels)
        assert rule.level_for(plan.designed, k, plan.nominal(k, a)) == pytest.approx(a,
                                                                                  rel=1e-6)
    # beyond the design: the Bonferroni tail, tail a / (j (j + 1))
    assert plan.nominal(10, a) == pytest.approx(rule.tail * a / 2)


def test_group_sequential_repeated_p_is_the_smallest_level_at_which_some_look_rejects():
    rng = np.random.default_rng(3)
    x = 1.5 + rng.standard_normal(13)  # 13 replicates: looks at 3, 4, 6, 8 and 12
    plan = SequentialPlan(cap=64, rule="lan-demets-rho1")
    s = sequential_test(x, np.arange(13), plan=plan)
    fixed = [ss.ttest_1samp(x[:r], 0).pvalue for r in (3, 4, 6, 8, 12)]

    def rejects(a):
        return any(p <= plan.nominal(k, a) for k, p in enumerate(fixed, start=1))
    assert 0 < s.p < 0.5
    assert rejects(s.p * (1 + 1e-6)) and not rejects(s.p * (1 - 1e-4))
    # the shown interval is the last look's t interval at the nominal level of look 5
    h = ss.t.ppf(1 - plan.nominal(5, 0.05) / 2, 11) * x[:12].std(ddof=1) / np.sqrt(12)
    assert (s.low, s.high) == pytest.approx((x[:12].mean() - h, x[:12].mean() + h))


def test_repeated_p_is_the_smallest_over_the_looks_of_t_p_values_over_their_weights():
    rng = np.random.default_rng(3)
    x = 0.3 + rng.standard_normal(13)  # 13 replicates: looks at 3, 4, 6, 8 and 12
    plan = SequentialPlan(cap=64, rule=LEGACY_RULE)
    s = sequential_test(x, np.arange(13), plan=plan)
    assert s.look == 12 and s.available == 13
    by_hand = min(ss.ttest_1samp(x[:r], 0).pvalue / plan.weight(k)
                  for k, r in enumerate([3, 4, 6, 8, 12], start=1))
    assert s.p == pytest.approx(min(1.0, by_hand))
    # the shown interval is the last look's t interval at alpha x w_5
    h = ss.t.ppf(1 - 0.05 * plan.weight(5) / 2, 11) * x[:12].std(ddof=1) / np.sqrt(12)
    assert (s.low, s.high) == pytest.approx((x[:12].mean() - h, x[:12].mean() + h))


def test_a_look_reads_what_estimate_mean_reads_of_its_first_replicates():
    # replicates_estimator codes the replicates and units once; each look's estimate is
    # estimate_mean's of the first r replicates, also where a unit first appears late, a
    # value is missing, a pair repeats (an error at the look that holds it) or the names
    # are text
    rng = np.random.default_rng(13)
    reps, units = np.repeat(np.arange(8), 30), np.tile(np.arange(30), 8)
    y = 0.1 + rng.standard_normal(240)
    late = np.where(reps >= 5, units + 100, units)
    holes = y.copy()
    holes[rng.random(240) < 0.1] = np.nan
    names = np.array([f"seed-{r}" for r in reps]), np.array([f"q{u}" for u in units])
    for v, r, u in ((y, reps, units), (y, reps, late), (holes, reps, units), (y, *names),
                    (y[::30], reps[::30], None), (y, reps, None), (y, None, None)):
        at, n = replicates_estimator(v, r, u)
        rr = np.zeros(len(v), int) if r is None else r
        first = np.unique(rr)
        for k in range(1, n + 1):
            keep = np.isin(rr, first[:k])
            assert at(k) == estimate_mean(v[keep], rr[keep], None if u is None else u[keep])
        assert at(0).design == "empty"
    twice = np.r_[units[:-1], 0]  # the last replicate measures query 0 twice
    at, n = replicates_estimator(y, reps, twice)
    assert at(7) == estimate_mean(y[reps < 7], reps[reps < 7], twice[reps < 7])
    with pytest.raises(ValueError, match="appears twice"):
        at(8)


def test_a_family_reads_estimates_whose_parts_are_a_list():
    # p-values are remembered by value; an estimate that cannot be hashed is read as well
    rng = np.random.default_rng(14)
    x = 0.8 + rng.standard_normal(12)

    def at(r, parts=tuple):
        v = x[:r]
        return Estimate(float(v.mean()), parts([(float(v.var(ddof=1) / r), r - 1.0)]), r, r,
                        1, "replicates")
    (listed,) = sequential_family([(lambda r: at(r, list), 12)], SequentialPlan(cap=32))
    (tupled,) = sequential_family([(at, 12)], SequentialPlan(cap=32))
    assert isinstance(listed.estimate.parts, list)
    assert listed.reason() == tupled.reason() and (listed.p, listed.low, listed.high) == (
        tupled.p, tupled.low, tupled.high)


def test_holm_across_a_family():
    # three clear effects and one null: Holm tests the clear ones at 0.05/4, 0.05/3, 0.05/2
    rng = np.random.default_rng(6)
    items = [replicates_estimator(m + 0.01 * rng.standard_normal(8), np.arange(8))
             for m in (1.0, 0.5, -0.5, 0.0)]
    out = sequential_family(items, SequentialPlan(cap=8))
    assert [s.decision for s in out] == ["greater", "greater", "less", "undecided"]
    ps = sorted(s.p for s in out[:3])
    assert ps[0] <= 0.05 / 4 and ps[1] <= 0.05 / 3 and ps[2] <= 0.05 / 2
    assert out[3].level == pytest.approx(SequentialPlan(cap=8).nominal(4, 0.05 / 1))


def test_decisions_and_reasons():
    reps = np.arange(8)
    up = sequential_test(1.0 + 0.01 * np.sin(reps), reps)
    assert up.decision == "greater" and up.look == 8 and up.next is None
    down = sequential_test(-1.0 + 0.01 * np.sin(reps), reps)
    assert down.decision == "less"
    eq = sequential_test(0.001 * np.sin(reps), reps, plan=SequentialPlan(margin=0.01))
    assert eq.decision == "equivalent"
    # the same values without a margin: undecided, and no number of replicates decides 0
    open_ = sequential_test(0.001 * np.sin(reps), reps,
                            plan=SequentialPlan(cap=8, rule=LEGACY_RULE))
    assert open_.decision == "undecided" and open_.beyond_cap
    assert "would need" in open_.reason()
    # the default design: at its cap, undecided and stopped there
    at_cap = sequential_test(0.001 * np.sin(reps), reps, plan=SequentialPlan(cap=8))
    assert at_cap.status == "cap" and at_cap.next is None and not at_cap.beyond_cap
    assert "at the cap" in at_cap.reason()
    few = sequential_test([0.5, 0.6], [0, 1])
    assert few.look == 0 and few.next == 3 and "first look" in few.reason()


def test_next_round_grows_at_most_one_rung_and_stops_at_the_cap():
    rng = np.random.default_rng(5)
    x = 0.05 + rng.standard_normal(3)  # a small effect in noise: far from decided
    s = sequential_test(x, np.arange(3), plan=SequentialPlan(cap=1000, rule=LEGACY_RULE))
    assert s.decision == "undecided" and s.need > 4
    assert s.next == 4  # one rung up from 3
    near = sequential_test(np.r_[x, 1.0 + rng.standard_normal(9)], np.arange(12),
                           plan=SequentialPlan(cap=1000, rule=LEGACY_RULE))
    assert near.look == 12 and near.need > 16 and near.next == 16  # the clamp, from 12
    capped = sequential_test(x, np.arange(3), plan=SequentialPlan(cap=4, rule=LEGACY_RULE))
    assert capped.next in (4, None)
    assert sequential_test(x[:3], np.arange(3), plan=SequentialPlan(cap=3)).next is None
    # the default design goes to its next look whatever the projection says (no futility
    # stop at 3 replicates on this estimate), and never past its cap
    s = sequential_test(x, np.arange(3), plan=SequentialPlan(cap=10))
    assert s.status == "running" and s.next == 4
    late = sequential_test(np.sin(np.arange(8)), np.arange(8),
                           plan=SequentialPlan(cap=10, futility=False))
    assert late.status == "running" and late.look == 8 and late.next == 10


def _run_study(draw, plan):
    """The shipped stopping rule: 3 replicates, then up to ``next`` until it stops."""
    values, reps, units = draw(0, 3)
    while True:
        s = sequential_test(values, reps, units, plan=plan)
        if s.next is None:
            return s, values, reps, units
        more = draw(int(reps.max()) + 1, s.next)
        values, reps, units = (np.concatenate([a, b]) for a, b in zip(
            (values, reps, units), more))


def _crossed(rng, effect, n_queries=60, sd_seed=0.03, sd_query=0.1, sd_noise=0.05):
    b = sd_query * rng.standard_normal(n_queries)  # the fixed test set

    def draw(first, upto):
        s = np.arange(first, upto)
        y = (effect + sd_seed * rng.standard_normal((len(s), 1)) + b[None, :]
             + sd_noise * rng.standard_normal((len(s), n_queries)))
        return y.ravel(), np.repeat(s, n_queries), np.tile(np.arange(n_queries), len(s))
    return draw


@pytest.mark.slow  # 2,000 simulated studies run as shipped (10-20 s)
def test_false_decisions_under_optional_stopping_stay_below_alpha():
    # the ladder's rule of earlier runs; the default design's own (futility obeyed and
    # ignored, on another variance structure): tests/stats/test_design.py
    rng = np.random.default_rng(2026)
    plan = SequentialPlan(alpha=ALPHA, cap=32, rule=LEGACY_RULE)
    wrong = 0
    for _ in range(N_NULL):
        # the null: the mean over seeds *and* the query population is 0
        s, *_ = _run_study(_crossed(rng, 0.0), plan)
        wrong += s.decision in ("greater", "less")
    assert wrong / N_NULL <= LIMIT


@pytest.mark.parametrize("rule", RULES)
def test_every_rung_looked_at_keeps_alpha_where_fixed_tests_do_not(rule):
    # the worst case for the rule: no stop for futility, a look at every rung up to 64, one
    # value per replicate (no conservative query part). The repeated p-value of the last
    # look is the smallest over every rung, so one call reads all eight looks. A fixed 0.05
    # test at every look is what the ladder replaces.
    rng = np.random.default_rng(4)
    plan = SequentialPlan(alpha=ALPHA, cap=64, rule=rule)
    x = rng.standard_normal((N_NULL, 64))
    wrong = sum(sequential_test(row, np.arange(64), plan=plan).decision in ("greater", "less")
                for row in x)
    naive = np.zeros(N_NULL, dtype=bool)
    for r in rungs_upto(64):
        naive |= sps.ttest_1samp(x[:, :r], 0, axis=1).pvalue < ALPHA
    assert wrong / N_NULL <= LIMIT
    assert naive.mean() > 2.5 * ALPHA


def _replicates(rng, effect, sd=0.02):
    def draw(first, upto):
        s = np.arange(first, upto)
        return effect + sd * rng.standard_normal(len(s)), s, np.zeros(len(s), np.int64)
    return draw


@pytest.mark.slow  # 2,000 simulated studies run as shipped (10-20 s)
@pytest.mark.parametrize("rule", RULES)
def test_false_equivalence_stays_below_alpha(rule):
    # a true difference exactly at the margin must not be called equivalent
    rng = np.random.default_rng(7)
    plan = SequentialPlan(alpha=ALPHA, cap=64, margin=0.02, rule=rule)
    wrong = sum(_run_study(_replicates(rng, 0.02), plan)[0].decision == "equivalent"
                for _ in range(N_NULL))
    assert wrong / N_NULL <= LIMIT


def test_real_effects_and_true_equivalence_are_decided():
    rng = np.random.default_rng(8)
    hits = [_run_study(_crossed(rng, 0.1), SequentialPlan(cap=64, rule=LEGACY_RULE))[0]
            for _ in range(100)]
    assert np.mean([h.decision == "greater" for h in hits]) > 0.9
    assert np.median([h.look for h in hits]) <= 8  # large effects stop early
    # the default design keeps early alpha for the cap: the same effects decided as often,
    # a look or two later
    hits = [_run_study(_crossed(rng, 0.1), SequentialPlan(cap=64))[0] for _ in range(100)]
    assert np.mean([h.decision == "greater" for h in hits]) > 0.9
    assert np.median([h.look for h in hits]) <= 16
    same = [_run_study(_crossed(rng, 0.0, sd_seed=0.005, sd_query=0.01), SequentialPlan(
        cap=64, margin=0.03))[0] for _ in range(100)]
    assert np.mean([h.decision == "equivalent" for h in same]) > 0.9


@pytest.mark.slow  # 2,000 simulated studies run as shipped (10-20 s)
@pytest.mark.parametrize("rule", RULES)
def test_welch_null_under_optional_stopping(rule):
    rng = np.random.default_rng(9)
    plan = SequentialPlan(alpha=ALPHA, cap=96, rule=rule)
    wrong = 0
    for _ in range(N_NULL):
        a, b = rng.normal(0.2, 0.05, 96), rng.normal(0.2, 0.08, 96)
        n = 3
        while True:
            s = sequential_welch(a[:n], b[:n], plan=plan)
            if s.next is None:
                break
            n = s.next
        wrong += s.decision in ("greater", "less")
    assert wrong / N_NULL <= LIMIT


@pytest.mark.slow  # 40,000 simulated studies, vectorised (10-30 s)
def test_group_sequential_rule_needs_its_slack_with_few_replicates():
    # the worst case, one value per replicate and every rung to 32 looked at: the
    # significance level approach exceeds the design's share (the t statistics of few
    # replicates are less correlated than the Brownian motion's), the slack covers it
    from recaudit.stats._spending import Rule

    rng = np.random.default_rng(12)
    n = 40_000
    x = rng.standard_normal((n, 32))
    fixed = np.array([sps.ttest_1samp(x[:, :r], 0, axis=1).pvalue for r in rungs_upto(32)])
    plan = SequentialPlan(cap=32, rule="lan-demets-rho1")
    rule = plan.spending
    no_slack = Rule("group-sequential", rule.shape, rule.tail)
    for a in (0.05, 0.01):
        shipped = [plan.nominal(k, a) for k in range(1, 9)]
        bare = [no_slack.nominal(plan.designed, k, a) for k in range(1, 9)]
        rate = np.mean((fixed <= np.array(shipped)[:, None]).any(axis=0))
        excess = np.mean((fixed <= np.array(bare)[:, None]).any(axis=0))
        se = np.sqrt(a / n)
        assert rate <= a + 2 * se
        assert excess > (1 - rule.tail) * a + 2 * se
