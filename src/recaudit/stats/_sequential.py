"""Decisions that survive looking: repeated p-values at a design's looks, Holm across.

A run that adds seeds until its comparisons are decided tests them again after every round.
Read as if the number of rounds had been fixed, those repeated tests reject a true null far
more often than ``alpha`` (a 0.05 test at each of the ten rungs up to 64 rejects about 25 % of
true nulls: ``tests/stats/test_sequential.py``). The rules here keep the family-wise error
rate at ``alpha`` whatever the data do to the schedule.

**The looks.** Looks happen when the growing count of replicates (seeds, draws,
modification sets) reaches a rung of one fixed ladder, ``3, 4, 6, 8, 12, 16, 24, 32, ...``
(:mod:`recaudit.stats._ladder`); the default design also looks at its cap, its last look.

**The default design** (``group-sequential-t``, :data:`DEFAULT_RULE`): a group-sequential
design with the power of its cap. Look ``k`` of ``K`` reads its fixed-sample interval at the
nominal level ``nu_k(a)`` of a spending function ``t ** 2.75`` of the looks' times
``n_k / N`` (little early, most at the cap: the last look of a cap of 32 reads 0.040 of a
0.05), from the looks' joint law (:mod:`recaudit.stats._joint`) calibrated on the t scale so
that 3-12 replicates keep alpha exactly (:mod:`recaudit.stats._calibration`). A comparison
that its cap would not decide stops for *futility*, judged against a stated alternative (the
plan's ``detect``, by default the difference the fixed test at the cap detects with 80 %
power), never on the observed difference alone; the rule is non-binding
(:mod:`recaudit.stats._design`). At the cap's 80 %-power difference it decides in the right
direction 76 % of the time after 25 of 32 seeds on average; at twice it after 16; with no
difference it stops after 23 (``benchmarks/bench_sequential.py --one``). Its cap is its last
look: a run continued later with a larger cap keeps the first design, whose alpha is spent.

**The ladder's rules** (``bonferroni-sqrt``, :data:`LEGACY_RULE`, the rule of every run
before the default design; ``lan-demets-rho1``): look ``k`` reads its interval at ``nu_k(a)``
over the unbounded ladder (:mod:`recaudit.stats._spending`), a tail of alpha kept for rungs
beyond the design cap; a comparison goes on while the projection of its current estimate
(the replicates' part shrinking as ``1 / replicates``, the queries' part kept:
:meth:`Estimate.with_replicates`) finds a rung within the cap at which its repeated p-value
would pass its Holm threshold (``need``), at most ``STEPS`` = 1 rung up a round, and stops
*beyond the cap* otherwise ("would need about N"). Runs begun under them go on under them:
the store's ``rounds`` and the record's ``sequential`` entry name the rule (those that name
none were run by :data:`LEGACY_RULE`).

**Repeated p-values.** At look ``k`` a comparison's interval is a fixed-sample one on the
first ``n_k`` replicates (:mod:`recaudit.stats._estimate`: the replicates' t interval, the
two-level interval of seeds x queries, Welch's for two independent samples) at the
two-sided level ``nu_k(a)``; its *repeated p-value* ``p_k`` is the smallest ``a`` for which
that interval excludes the null (or, for equivalence, lies inside the margin), and the
comparison's is ``P = min_k p_k`` over the looks its replicates reach. The levels are fixed
in advance for every look, so ``Pr(P <= u) <= u`` under the null whatever the looks, the
stopping and the dependence between looks: ``P`` is a valid p-value, at any time (Jennison
and Turnbull 1989's repeated confidence intervals). Skipping looks only removes chances to
reject.

**Two levels** (seeds x test queries, the audit's crossed design): the mean difference is
``mu + a + b``, with ``a`` the replicates' part (it shrinks as replicates are added) and ``b``
the test queries' part, *one* draw fixed for the whole run. The default design reads each
look's own two-level interval (Graybill and Wang's, :mod:`recaudit.stats._estimate`): ``b``
shared by every look makes the looks' statistics more correlated than the design's law, in
the canonical form with a compressed time, so by Slepian's (1962) inequality the
one-sided crossing probabilities can only fall. The ladder's rules bound ``b`` once, at
``query_share`` of the comparison's level, and spend only ``a`` along the ladder.

**The family.** The comparisons of a run are decided together by Holm's step-down procedure
on their repeated p-values (valid for any dependence; a p-value can only fall as looks are
added, so a decision once made stays): ``greater`` or ``less`` (the sign of the estimate at
the look that gave ``P``) for a rejected null, ``equivalent`` for a rejected "the difference
is at least the margin" (two one-sided tests folded into the interval lying inside
``[-margin, margin]``; with a margin each comparison adds this second hypothesis to the
family, and futility does not stop it), ``undecided`` otherwise. Every wrong decision needs
a true hypothesis rejected, so the family-wise error rate of all decisions is at most
``alpha``; a comparison's futility and its alternative are judged at its current Holm
threshold.

Anytime-valid e-processes for the t-test (the mixture Bayes factor of Grünwald, de Heide and
Koolen 2024, whose confidence sequence is Lai's 1976) allow a look at every replicate, which
rounds of trials do not need; where audits decide they decide later: at ``alpha = 0.05``
the mixture's critical ``|t|`` (its prior scale chosen in hindsight for that number of
replicates, which favours it) is 4.14 at 8 replicates and 3.25 at 32, the default design's
(cap 32) 5.67 and 2.15.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize

from recaudit.stats._design import POWER, futility_levels, inflation
from recaudit.stats._estimate import Estimate, _codes, _coded, estimate_mean, welch
from recaudit.stats._ladder import looks_for, rung, rungs_upto
from recaudit.stats._plan import SequentialPlan, _fixed_p, by_value
from recaudit.stats._spending import DEFAULT_RULE, LEGACY_RULE, RULES

__all__ = ["SequentialPlan", "Sequential", "rung", "rungs_upto", "looks_for", "stopped",
           "STOPPED",
           "sequential_test", "sequential_welch", "sequential_decision", "sequential_family",
           "DECISIONS", "RULES", "DEFAULT_RULE", "LEGACY_RULE"]

#: What a sequential comparison can end as (module docstring).
DECISIONS = ("greater", "less", "equivalent", "undecided")

#: Projections look this far up the ladder (rung 40 = 3,145,728 replicates) before giving up.
_LAST_RUNG = 40
#: How many standard errors a projection leans towards a decision, and how many rungs one
#: round may climb (module docstring).
OPTIMISM = 0.0
STEPS = 1


def _repeated_p(est: Estimate, k: int, plan: SequentialPlan, gap: float) -> float:
    """The smallest comparison level ``a`` at which look ``k``'s half-width is below
    ``gap`` (1 when none is, 0 for a constant that clears it)."""
    if not np.isfinite(est.mean) or est.design == "empty" or gap <= 0:
        return 1.0
    if est.se == 0:
        return 0.0
    if plan.calibrated or (est.design != "crossed" and len(est.parts) == 1):
        return plan.spending.level_for(plan.designed, k, _fixed_p(est, gap))
    f = lambda la: plan.halfwidth(est, k, 10.0 ** la) - gap  # noqa: E731
    if f(0.0) > 0:
        return 1.0
    if f(-300.0) < 0:
        return 0.0
    return float(10.0 ** optimize.brentq(f, -300.0, 0.0, xtol=1e-8))


def _ps(est: Estimate, k: int, plan: SequentialPlan) -> tuple[float, float]:
    """(direction, equivalence) repeated p-values of look ``k``."""
    gap = abs(est.mean - plan.null) if np.isfinite(est.mean) else 0.0
    p_dir = _repeated_p(est, k, plan, gap)
    p_eq = _repeated_p(est, k, plan, plan.margin - gap) if plan.margin > 0 else 1.0
    return p_dir, p_eq


@by_value(4096)
def _looked(est: Estimate, k: int, plan: SequentialPlan) -> tuple[float, float]:
    """:func:`_ps` of a look, remembered by value: a run decides again after every round,
    and its earlier looks read the same replicates, so the same estimates (each p-value a
    root search; equal estimates and plans give equal p-values)."""
    return _ps(est, k, plan)


@dataclass(frozen=True)
class Sequential:
    """A comparison after its latest look (module docstring).

    decision: one of :data:`DECISIONS`. estimate: the difference at the latest look. look:
    that look's replicates (0: fewer than the first look). level: the two-sided level of
    the shown interval (the look's nominal level at the comparison's Holm threshold). low,
    high: that interval (a repeated confidence interval). p, p_equivalent: the repeated
    p-values (direction; equivalence, 1 without a margin). need: under the ladder's rules,
    the rung the projection says would decide it (None: none up to rung 40); for a
    comparison stopped for futility, about how many replicates a design would need to
    decide the largest difference its interval still allows 80 % of the time. next: the
    look to run to in the next round (None: decided, stopped, or at the cap). available:
    replicates given. within_margin: the equivalence hypothesis was rejected (the
    difference lies within the margin), also when a direction was decided too (a
    difference, smaller than the margin: ``decision`` then says the direction). futile:
    stopped for futility (:mod:`recaudit.stats._design`).
    """

    decision: str
    estimate: Estimate
    look: int
    level: float
    low: float
    high: float
    need: int | None
    next: int | None
    available: int
    plan: SequentialPlan
    p: float = 1.0
    p_equivalent: float = 1.0
    within_margin: bool = False
    futile: bool = False

    @property
    def difference(self) -> float:
        return self.estimate.mean

    @property
    def decided(self) -> bool:
        return self.decision != "undecided"

    @property
    def beyond_cap(self) -> bool:
        """Undecided and stopped by the ladder's projection: it needs more replicates than
        the cap allows (rules that project; a calibrated rule stops for futility or at its
        cap instead)."""
        return (not self.decided and self.next is None and not self.futile
                and not self.plan.calibrated)

    @property
    def status(self) -> str:
        """``decided``, ``futility`` (stopped for futility), ``cap`` (undecided at the
        cap), ``beyond cap`` (the ladder's projection) or ``running``."""
        if self.decided:
            return "decided"
        if self.futile:
            return "futility"
        if self.next is None and self.look > 0:
            return "cap" if self.plan.calibrated else "beyond cap"
        return "running"

    def reason(self) -> str:
        """One line: what was decided, or why the comparison stops or goes on."""
        if self.decided:
            return f"{self.decision} at {self.look} replicates"
        if self.look == 0:
            return (f"needs {self.plan.look(1)} replicates for a first look "
                    f"({self.available} so far)")
        if self.estimate.design == "constant":
            return (f"every difference equals the null at {self.look} replicates: no "
                    "variation to test (a margin would call it equivalent)")
        if self.futile:
            largest = max(abs(self.low - self.plan.null), abs(self.high - self.plan.null))
            about = "more than 3 million" if self.need is None else f"about {self.need}"
            return (f"stopped for futility at {self.look} replicates: its repeated interval "
                    f"[{self.low:+.4g}, {self.high:+.4g}] still allows differences up to "
                    f"{largest:.4g}, which {about} replicates would decide 80 % of the time")
        if self.status == "cap":
            return f"undecided at the cap, {self.look} replicates"
        if self.beyond_cap:
            about = "more than 3 million" if self.need is None else f"about {self.need}"
            return (f"would need {about} replicates (cap {self.plan.cap}); undecided at "
                    f"{self.look}")
        return f"undecided at {self.look} replicates; next look at {self.next}"


#: Why a run stopped (:func:`stopped`), in words.
STOPPED = {"decided": "every comparison is decided",
           "futility": "the undecided comparisons stopped for futility: the cap would not "
                       "decide the differences their intervals still allow",
           "beyond cap": "the undecided comparisons would need more replicates than the cap",
           "cap": "the cap is spent"}


def stopped(decisions: Sequence[Sequential]) -> str | None:
    """Why a run whose comparisons are ``decisions`` stops (a key of :data:`STOPPED`), or
    None while some comparison still runs: every one decided; else the cap reached by an
    undecided one; else futility; else the ladder's projection beyond the cap."""
    statuses = {s.status for s in decisions}
    if "running" in statuses:
        return None
    if statuses <= {"decided"}:
        return "decided"
    for why in ("cap", "futility", "beyond cap"):
        if why in statuses:
            return why
    return "decided"


def _holm(pvalues: Sequence[float], alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Holm's step-down on ``pvalues``: (rejected, the threshold each was tested at)."""
    p = np.asarray(pvalues, dtype=np.float64)
    m = len(p)
    order = np.argsort(p, kind="stable")
    rejected = np.zeros(m, dtype=bool)
    threshold = np.full(m, alpha / max(1, m))
    for rank, i in enumerate(order):
        threshold[i] = alpha / (m - rank)
        if p[i] <= threshold[i]:
            rejected[i] = True
        else:
            for j in order[rank + 1:]:  # the rest stay at this step's threshold
                threshold[j] = alpha / (m - rank)
            break
    return rejected, threshold


def sequential_family(items: Sequence[tuple[Callable[[int], Estimate], int]],
                      plan: SequentialPlan) -> list[Sequential]:
    """Decide a family of comparisons together (module docstring: Holm on their repeated
    p-values). ``items``: per comparison, ``(estimate_at, available)`` — ``estimate_at(r)``
    the difference over its first ``r`` replicates, ``available`` the replicates so far;
    each is looked at on every look of the plan up to ``min(available, cap)``."""
    looks = []
    for at, available in items:
        ladder = [r for r in plan.looks_upto(min(available, plan.cap)) if r <= available]
        ests = [(plan.index(r), at(r)) for r in ladder]
        ps = [_looked(e, k, plan) for k, e in ests]
        looks.append((ests, ps, available))
    hyp: list[tuple[int, str, float]] = []
    for j, (_, ps, _) in enumerate(looks):
        hyp.append((j, "dir", min((p for p, _ in ps), default=1.0)))
        if plan.margin > 0:
            hyp.append((j, "eq", min((q for _, q in ps), default=1.0)))
    rejected, threshold = _holm([h[2] for h in hyp], plan.alpha)
    by_j: dict[int, dict[str, tuple[bool, float]]] = {}
    for (j, kind, _), rej, thr in zip(hyp, rejected, threshold):
        by_j.setdefault(j, {})[kind] = (bool(rej), float(thr))
    open_threshold = float(plan.alpha / max(1, int((~rejected).sum())))
    return [_one(ests, ps, available, by_j.get(j, {}), open_threshold, plan)
            for j, (ests, ps, available) in enumerate(looks)]


def _one(ests, ps, available: int, tested: dict, open_threshold: float,
         plan: SequentialPlan) -> Sequential:
    nan = float("nan")
    if not ests:
        est = Estimate(nan, (), 0, 0, 0, "empty")
        return Sequential("undecided", est, 0, 0.0, nan, nan, plan.look(1), plan.look(1),
                          available, plan)
    k, est = ests[-1]
    p_dir, p_eq = min(p for p, _ in ps), min(q for _, q in ps)
    dir_ok, dir_thr = tested.get("dir", (False, open_threshold))
    eq_ok, eq_thr = tested.get("eq", (False, open_threshold))
    decision = "undecided"
    if dir_ok:
        best = ests[int(np.argmin([p for p, _ in ps]))][1]
        decision = "greater" if best.mean > plan.null else "less"
    elif eq_ok:
        decision = "equivalent"
    shown = eq_thr if decision == "equivalent" else dir_thr
    h = plan.halfwidth(est, k, shown) if est.se == est.se else nan
    low, high = est.mean - h, est.mean + h
    level = plan.nominal(k, shown)
    here = plan.look(k)
    if decision != "undecided":
        return Sequential(decision, est, here, level, low, high, None, None, available,
                          plan, p_dir, p_eq, eq_ok)
    if plan.calibrated:
        later = [r for r in plan.looks_upto(plan.cap) if r > here]
        if not later:
            return Sequential(decision, est, here, level, low, high, None, None, available,
                              plan, p_dir, p_eq)
        if plan.futility and _futile(est, k, plan, open_threshold):
            largest = max(abs(low - plan.null), abs(high - plan.null))
            need = _to_decide(est, largest, open_threshold, plan)
            return Sequential(decision, est, here, level, low, high, need, None, available,
                              plan, p_dir, p_eq, futile=True)
        return Sequential(decision, est, here, level, low, high, None, later[0], available,
                          plan, p_dir, p_eq)
    need = _need(est, k, plan, open_threshold)
    nxt = None if need is None or need > plan.cap else min(need, rung(k + STEPS), plan.last)
    if nxt is not None and nxt <= here:
        nxt = None
    return Sequential(decision, est, here, level, low, high, need, nxt, available, plan,
                      p_dir, p_eq)


#: Designs whose futility rule applies (one replicate, a constant: nothing to project).
_PROJECTED = ("crossed", "nested", "replicates", "two-sample")


def _alternative(est: Estimate, plan: SequentialPlan, a: float) -> float:
    """The drift ``delta / se_N`` of the futility rule's alternative at the design's cap
    ``N``: ``plan.detect``, else the difference the fixed test at the cap detects with 80 %
    power at ``a``, over the standard error projected to the cap."""
    at_cap = est.with_replicates(plan.designed[-1])
    delta = plan.detect if plan.detect is not None else at_cap.detectable(a, POWER)
    return float(delta / at_cap.se) if at_cap.se > 0 else float("inf")


def _futile(est: Estimate, k: int, plan: SequentialPlan, a: float) -> bool:
    """Look ``k`` stops ``est`` for futility at the comparison level ``a``
    (:func:`recaudit.stats._design.futility_levels`: its fixed-sample p-value above the
    look's futility level under the plan's alternative)."""
    if est.design not in _PROJECTED or not est.se > 0 or plan.margin > 0:
        return False
    theta = _alternative(est, plan, a)
    if not np.isfinite(theta):
        return False
    level = futility_levels(plan.designed, plan.nominals(a), theta)[k - 1]
    return _fixed_p(est, abs(est.mean - plan.null)) > level


def _to_decide(est: Estimate, delta: float, a: float, plan: SequentialPlan) -> int | None:
    """About how many replicates a design like the plan's, capped there, needs to decide a
    difference ``delta`` 80 % of the time: the fixed test's count at ``a``
    (:meth:`Estimate.replicates_for`), times the design's inflation at its own cap
    (:func:`recaudit.stats._design.inflation`)."""
    if est.design not in _PROJECTED:
        return None
    fixed = est.replicates_for(delta, a, POWER)
    if fixed is None:
        return None
    return int(np.ceil(fixed * inflation(plan.designed, plan.nominals(a), a)))


def _need(est: Estimate, k: int, plan: SequentialPlan, threshold: float) -> int | None:
    """The first rung after look ``k`` whose projected repeated p-value passes
    ``threshold`` (module docstring), or None. The projection can lean ``OPTIMISM`` standard
    errors towards a decision (the difference farther from the null for a direction, nearer
    for equivalence)."""
    if est.design not in ("crossed", "nested", "replicates", "two-sample"):
        return None
    gap, se = abs(est.mean - plan.null), est.se
    direction = dataclasses.replace(est, mean=plan.null + gap + OPTIMISM * se)
    equivalence = dataclasses.replace(est, mean=plan.null + max(0.0, gap - OPTIMISM * se))

    def passes(e: Estimate, j: int) -> bool:
        p_dir = _ps(e if e is direction else dataclasses.replace(e, mean=direction.mean), j,
                    plan)[0]
        p_eq = _ps(dataclasses.replace(e, mean=equivalence.mean), j, plan)[1]
        return min(p_dir, p_eq) <= threshold

    if est.design == "crossed":  # the queries' part alone already too wide: no rung decides
        (_, df_a), (vb, df_b) = est.parts
        if not passes(Estimate(est.mean, ((0.0, df_a), (vb, df_b)), est.n, est.replicates,
                               est.units, "crossed"), _LAST_RUNG):
            return None
    for j in range(k + 1, _LAST_RUNG + 1):
        if passes(est.with_replicates(rung(j)), j):
            return rung(j)
    return None


def sequential_decision(estimate_at: Callable[[int], Estimate], available: int,
                        plan: SequentialPlan) -> Sequential:
    """One comparison decided alone, at ``plan.alpha / plan.comparisons`` (module
    docstring): a family of one. The general form of :func:`sequential_test` and
    :func:`sequential_welch`, for any design."""
    from dataclasses import replace

    own = replace(plan, alpha=plan.alpha / plan.comparisons, comparisons=1)
    (s,) = sequential_family([(estimate_at, available)], own)
    return replace(s, plan=plan)


def replicates_estimator(values, replicates=None, units=None
                         ) -> tuple[Callable[[int], Estimate], int]:
    """``(estimate_at, available)`` of :func:`sequential_family` for per (replicate, unit)
    values (:func:`~recaudit.stats.estimate_mean`'s arguments): replicates in their sorted
    order (give integers: seed, draw or set numbers).

    The replicates and units are coded once: the first ``r`` replicates are those whose code
    is below ``r``, and where no value is NaN, no (replicate, unit) pair repeats and the look
    holds every unit, their codes are what :func:`~recaudit.stats.estimate_mean` would give
    them (the same estimate, without sorting the values again at every look)."""
    y = np.asarray(values, dtype=np.float64).ravel()
    rep = np.zeros(len(y), dtype=np.int64) if replicates is None else \
        np.asarray(replicates).ravel()
    unit = None if units is None else np.asarray(units).ravel()
    codes, n = _codes(rep) if len(rep) else (np.zeros(0, dtype=np.intp), 0)
    fast = None
    if n and len(rep) == len(y) and (unit is None or len(unit) == len(y)) and \
            not np.isnan(y).any():
        u, n_unit = _codes(unit) if unit is not None else (np.arange(len(y)), len(y))
        if unit is None or len(np.unique(codes * n_unit + u)) == len(y):
            fast = u, n_unit

    def at(r: int) -> Estimate:
        keep = codes < r
        if fast is not None and r >= 1:  # r < 1: none, the empty estimate
            u, n_unit = fast
            if unit is None:  # every value its own unit: as estimate_mean numbers them
                return _coded(y[keep], codes[keep], min(r, n), np.arange(int(keep.sum())),
                              int(keep.sum()), checked=True)
            uk = u[keep]
            if np.bincount(uk, minlength=n_unit).all():
                return _coded(y[keep], codes[keep], min(r, n), uk, n_unit, checked=True)
        return estimate_mean(y[keep], rep[keep], None if unit is None else unit[keep])

    return at, n


def sequential_test(values, replicates=None, units=None, *,
                    plan: SequentialPlan | None = None) -> Sequential:
    """Decide ``mean(values) == plan.null`` sequentially, alone (module docstring).

    values, replicates, units: as for :func:`~recaudit.stats.estimate_mean` — the per
    (replicate, unit) differences of a paired comparison, or the values of a one-sample one.
    Replicates are taken in their sorted order (give integers: seed, draw or set numbers);
    the look uses the first ``rung`` of them.

    >>> import numpy as np
    >>> from recaudit.stats import SequentialPlan, sequential_test
    >>> rng = np.random.default_rng(0)
    >>> seeds = np.repeat(np.arange(4), 100)
    >>> d = 0.05 + 0.01 * rng.standard_normal(4)[seeds] + 0.02 * rng.standard_normal(400)
    >>> s = sequential_test(d, seeds, np.tile(np.arange(100), 4), plan=SequentialPlan(cap=32))
    >>> s.decision, s.look, round(s.p, 4)
    ('greater', 4, 0.024)
    """
    at, n = replicates_estimator(values, replicates, units)
    return sequential_decision(at, n, plan or SequentialPlan())


def sequential_welch(a, b, *, plan: SequentialPlan | None = None) -> Sequential:
    """Decide ``mean(a) - mean(b) == plan.null`` for two independent samples, each in the
    order its replicates were drawn (modification set 0, 1, ...): the look at rung ``r``
    reads the first ``r`` of each with Welch's interval (:func:`~recaudit.stats.welch`)."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    return sequential_decision(lambda r: welch(x[:r], y[:r]), min(len(x), len(y)),
                               plan or SequentialPlan())
