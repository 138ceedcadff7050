"""Decisions that survive looking: repeated p-values on a fixed ladder of looks, Holm across.

A run that adds seeds until its comparisons are decided tests them again after every round.
Read as if the number of rounds had been fixed, those repeated tests reject a true null far
more often than ``alpha`` (a 0.05 test at each of the ten rungs up to 64 rejects about 25 % of
true nulls: ``tests/stats/test_sequential.py``). The rule here keeps the family-wise error
rate at ``alpha`` whatever the data do to the schedule.

**The ladder.** Looks happen when the growing count of replicates (seeds, draws,
modification sets) reaches a rung of one fixed ladder, ``3, 4, 6, 8, 12, 16, 24, 32, ...``
(rung ``k`` = ``3 * 2**((k-1)/2)`` for odd ``k``, ``4 * 2**((k-2)/2)`` for even ``k``).

**Spending.** Look ``k`` reads its interval at the nominal two-sided level ``nu_k(a)`` when
the comparison is tested at ``a``; a named rule (:data:`RULES`, :mod:`recaudit.stats._spending`)
fixes ``nu_k`` for the whole, unbounded ladder from the plan's *design* cap ``D`` (the cap of
the first run; a later run with a larger cap keeps it, and keeps the rule: the store's
``rounds`` and the record's ``sequential`` entry name it, and those that name none were run by
:data:`LEGACY_RULE`). The default, ``bonferroni-sqrt``, is Bonferroni's: ``nu_k(a) = a w_k``
with ``sum_k w_k = 1``, 90 % of it over the rungs up to ``D`` in proportion to
``sqrt(rung)`` — little at the first looks, which decide only large effects, and most where
the marginal ones are decided (the shape of the spending functions of Lan and DeMets 1983
between Pocock's and O'Brien and Fleming's) — and the remaining 10 % to the rungs beyond
``D``, ``0.1 / (j (j + 1))`` to the ``j``-th of them, so that a run continued past its design
still has alpha to spend.

**Repeated p-values.** At look ``k`` a comparison's interval is a fixed-sample one on the
first ``rung_k`` replicates (:mod:`recaudit.stats._estimate`: the replicates' t interval,
Welch's for two independent samples) at the two-sided level ``nu_k(a)``; its *repeated
p-value* ``p_k`` is the smallest ``a`` for which that interval excludes the null (or, for
equivalence, lies inside the margin), and the comparison's is ``P = min_k p_k`` over the rungs
its replicates reach. By the union bound, ``Pr(P <= u) <= sum_k u w_k = u`` under the null
whatever the looks, the stopping and the dependence between looks: ``P`` is a valid p-value,
at any time (Jennison and Turnbull 1989's repeated confidence intervals, with a Bonferroni
instead of the looks' joint law, which few replicates do not give: the group-sequential rule
``lan-demets-rho1`` uses that law and exceeds its level at 3-12 replicates unless it holds
alpha back, :mod:`recaudit.stats._spending`).

**Two levels** (seeds x test queries, the audit's crossed design): the mean difference is
``mu + a + b``, with ``a`` the replicates' part (it shrinks as replicates are added) and ``b``
the test queries' part, *one* draw fixed for the whole run (the test set does not change
between rounds). So ``b`` is bounded once, at ``query_share`` of the comparison's level,
and only ``a`` spends along the ladder: the interval is the estimate plus or minus the *sum*
of the two half-widths (``|a| <= h_a`` and ``|b| <= h_b`` together give ``|a + b| <= h_a +
h_b``, and the union bound adds their error rates). Re-estimating ``b``'s standard error at
each look from thousands of queries is the one approximation (exact as ``Q`` grows).

**The family.** The comparisons of a run are decided together by Holm's step-down procedure
on their repeated p-values (valid for any dependence; a p-value can only fall as looks are
added, so a decision once made stays): ``greater`` or ``less`` (the sign of the estimate at
the look that gave ``P``) for a rejected null, ``equivalent`` for a rejected "the difference
is at least the margin" (two one-sided tests folded into the interval lying inside
``[-margin, margin]``; with a margin each comparison adds this second hypothesis to the
family), ``undecided`` otherwise. Every wrong decision needs a true hypothesis rejected, so
the family-wise error rate of all decisions is at most ``alpha``.

**The next round.** From the latest estimate (the replicates' part shrinking as ``1 /
replicates``, the queries' part kept: :meth:`Estimate.with_replicates`), ``need`` is the first
rung at which the comparison's projected repeated p-value would pass its current Holm
threshold (direction or equivalence), at the observed difference (``OPTIMISM`` standard
errors towards a decision: 0, measured best in trials per decision on the records' own
variance structure, ``benchmarks/bench_sequential.py``; 1 keeps more comparisons going, at
twice the trials for a tenth more power); ``next`` the rung to run to now: ``need``, but at most
``STEPS`` = 1 rung (a third or a half more replicates) up, so that a noisy projection cannot
spend the budget at once and a comparison stops close to where it is decided (two rungs up,
as the first runs did, overshot: 7 % more trials for the same power on the records' variance
structure, ``benchmarks/bench_sequential.py --steps 2``). A comparison whose ``need``
exceeds the cap gets no more replicates: it stops *beyond the cap* ("would need about N").

Anytime-valid e-processes for the t-test (the mixture Bayes factor of Grünwald, de Heide and
Koolen 2024, whose confidence sequence is Lai's 1976) allow a look at every replicate, which
rounds of trials do not need; where audits decide they decide later: at ``alpha = 0.05``
the mixture's critical ``|t|`` (its prior scale chosen in hindsight for that number of
replicates, which favours it) is 4.14 at 8 replicates and 3.25 at 32, the ladder's
(``bonferroni-sqrt``, design cap 32) 4.08 and 2.77.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from recaudit.stats._estimate import Estimate, _codes, _t_quantile, estimate_mean, welch
from recaudit.stats._spending import DEFAULT_RULE, LEGACY_RULE, RULES, Rule

__all__ = ["SequentialPlan", "Sequential", "rung", "rungs_upto", "sequential_test",
           "sequential_welch", "sequential_decision", "sequential_family", "DECISIONS",
           "RULES", "DEFAULT_RULE", "LEGACY_RULE"]

#: What a sequential comparison can end as (module docstring).
DECISIONS = ("greater", "less", "equivalent", "undecided")

#: Projections look this far up the ladder (rung 40 = 3,145,728 replicates) before giving up.
_LAST_RUNG = 40
#: How many standard errors a projection leans towards a decision, and how many rungs one
#: round may climb (module docstring).
OPTIMISM = 0.0
STEPS = 1


def rung(k: int) -> int:
    """The ``k``-th rung of the ladder (``k >= 1``): 3, 4, 6, 8, 12, 16, 24, ..."""
    if k < 1:
        raise ValueError(f"rungs count from 1, got {k}")
    return 3 * 2 ** ((k - 1) // 2) if k % 2 else 4 * 2 ** ((k - 2) // 2)


def rungs_upto(n: int) -> list[int]:
    """Every rung ``<= n``."""
    out, k = [], 1
    while rung(k) <= n:
        out.append(rung(k))
        k += 1
    return out


def _index(r: int) -> int:
    """The ``k`` of rung ``r`` (``r`` must be a rung)."""
    k = 1
    while rung(k) < r:
        k += 1
    if rung(k) != r:
        raise ValueError(f"{r} is not a rung of the ladder")
    return k


@dataclass(frozen=True)
class SequentialPlan:
    """How a run decides its comparisons (module docstring).

    alpha: the family-wise error rate. margin: the equivalence margin, in the measure's units
    (0: no equivalence decision). cap: the most replicates a comparison may receive (the
    largest rung at or below it is the last look). design: the cap the spending was designed
    for (default ``cap``; a run continued with a larger cap keeps its first design). null:
    the difference tested against. query_share: the part of a comparison's alpha spent, once,
    on the test queries' part of a two-level design. comparisons: for
    :func:`sequential_decision` alone, how many comparisons share ``alpha`` (Bonferroni);
    :func:`sequential_family` decides a family by Holm instead. rule: the name of the
    spending rule (:data:`RULES`, :mod:`recaudit.stats._spending`; default
    :data:`DEFAULT_RULE`); a run continued later keeps the rule it began with.
    """

    alpha: float = 0.05
    margin: float = 0.0
    cap: int = 32
    design: int | None = None
    null: float = 0.0
    query_share: float = 0.2
    comparisons: int = 1
    rule: str = DEFAULT_RULE

    def __post_init__(self) -> None:
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {sorted(RULES)}, got {self.rule!r}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha!r}")
        if self.comparisons < 1:
            raise ValueError(f"comparisons must be >= 1, got {self.comparisons!r}")
        if not self.margin >= 0:
            raise ValueError(f"margin must be >= 0, got {self.margin!r}")
        if not 0 < self.query_share < 1:
            raise ValueError(f"query_share must be in (0, 1), got {self.query_share!r}")
        for name in ("cap", "design"):
            v = getattr(self, name)
            if v is not None and v < rung(1):
                raise ValueError(f"{name} must be at least {rung(1)} replicates (the first "
                                 f"look), got {v!r}")

    @property
    def last(self) -> int:
        """The last rung the cap allows."""
        return rungs_upto(self.cap)[-1]

    @property
    def spending(self) -> Rule:
        """The spending rule :attr:`rule` names."""
        return RULES[self.rule]

    @property
    def designed(self) -> tuple[int, ...]:
        """The rungs of the design (up to :attr:`design`, else :attr:`cap`)."""
        return _designed(self.design or self.cap)

    def nominal(self, k: int, a: float) -> float:
        """``nu_k(a)``: the two-sided nominal level of look ``k``'s fixed-sample interval
        when the comparison is tested at ``a`` (module docstring)."""
        return self.spending.nominal(self.designed, k, a)

    def weight(self, k: int) -> float:
        """``w_k = nu_k(alpha) / alpha``, look ``k``'s nominal level as a share of the
        plan's alpha (Bonferroni rules: the same at every level; the shares of a
        group-sequential rule sum to more than 1, the looks' correlation paying for it)."""
        return self.nominal(k, self.alpha) / self.alpha

    def level(self, r: int) -> float:
        """The two-sided nominal level of a single comparison's look at ``r`` replicates
        (a rung): ``nu_k(alpha / comparisons)``."""
        return self.nominal(_index(r), self.alpha / self.comparisons)

    def halfwidth(self, est: Estimate, k: int, a: float) -> float:
        """The half-width of look ``k``'s interval of ``est`` at the comparison level ``a``
        (module docstring: two levels split between the ladder and one bound on the
        queries' part)."""
        if est.design != "crossed":
            return est.halfwidth(self.nominal(k, a) / 2)
        (va, df_a), (vb, df_b) = est.parts
        seeds = self.nominal(k, (1 - self.query_share) * a)
        queries = self.query_share * a
        return float((_t_quantile(1 - seeds / 2, df_a) * np.sqrt(va) if va > 0 else 0.0)
                     + (_t_quantile(1 - queries / 2, df_b) * np.sqrt(vb) if vb > 0 else 0.0))


@functools.lru_cache(maxsize=256)
def _designed(cap: int) -> tuple[int, ...]:
    return tuple(rungs_upto(cap))


def _repeated_p(est: Estimate, k: int, plan: SequentialPlan, gap: float) -> float:
    """The smallest comparison level ``a`` at which look ``k``'s half-width is below
    ``gap`` (1 when none is, 0 for a constant that clears it)."""
    if not np.isfinite(est.mean) or est.design == "empty" or gap <= 0:
        return 1.0
    if est.se == 0:
        return 0.0
    if est.design != "crossed" and len(est.parts) == 1:  # t: in closed form
        (v, df), = est.parts
        return plan.spending.level_for(plan.designed, k,
                                       float(2 * special.stdtr(df, -gap / np.sqrt(v))))
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


@dataclass(frozen=True)
class Sequential:
    """A comparison after its latest look (module docstring).

    decision: one of :data:`DECISIONS`. estimate: the difference at the latest look. look:
    that rung (replicates used; 0: fewer than the first rung). level: the two-sided level of
    the shown interval (the comparison's Holm threshold times ``w_k``). low, high: that
    interval. p, p_equivalent: the repeated p-values (direction; equivalence, 1 without a
    margin). need: the rung the projection says would decide it (None: none up to rung 40).
    next: the rung to run to in the next round (None: decided, or beyond the cap).
    available: replicates given. within_margin: the equivalence hypothesis was rejected (the
    difference lies within the margin), also when a direction was decided too (a difference,
    smaller than the margin: ``decision`` then says the direction).
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

    @property
    def difference(self) -> float:
        return self.estimate.mean

    @property
    def decided(self) -> bool:
        return self.decision != "undecided"

    @property
    def beyond_cap(self) -> bool:
        """Undecided, and the projection needs more replicates than the cap allows."""
        return not self.decided and self.next is None

    @property
    def status(self) -> str:
        """``decided``, ``beyond cap`` or ``running``."""
        return "decided" if self.decided else "beyond cap" if self.beyond_cap else "running"

    def reason(self) -> str:
        """One line: what was decided, or why the comparison stops or goes on."""
        if self.decided:
            return f"{self.decision} at {self.look} replicates"
        if self.look == 0:
            return f"needs {rung(1)} replicates for a first look ({self.available} so far)"
        if self.estimate.design == "constant":
            return (f"every difference equals the null at {self.look} replicates: no "
                    "variation to test (a margin would call it equivalent)")
        if self.beyond_cap:
            about = "more than 3 million" if self.need is None else f"about {self.need}"
            return (f"would need {about} replicates (cap {self.plan.cap}); undecided at "
                    f"{self.look}")
        return f"undecided at {self.look} replicates; next look at {self.next}"


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
    each is looked at on every rung up to ``min(available, cap)``."""
    looks = []
    for at, available in items:
        ladder = rungs_upto(min(available, plan.cap))
        ests = [(_index(r), at(r)) for r in ladder]
        ps = [_ps(e, k, plan) for k, e in ests]
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
        return Sequential("undecided", est, 0, 0.0, nan, nan, rung(1), rung(1), available,
                          plan)
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
    if decision != "undecided":
        return Sequential(decision, est, rung(k), level, low, high, None, None, available,
                          plan, p_dir, p_eq, eq_ok)
    need = _need(est, k, plan, open_threshold)
    nxt = None if need is None or need > plan.cap else min(need, rung(k + STEPS), plan.last)
    if nxt is not None and nxt <= rung(k):
        nxt = None
    return Sequential(decision, est, rung(k), level, low, high, need, nxt, available, plan,
                      p_dir, p_eq)


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


def _first(replicates: np.ndarray, r: int) -> np.ndarray:
    """Mask of the values of the first ``r`` replicates (by their sorted codes)."""
    codes, _ = _codes(replicates)
    return codes < r


def replicates_estimator(values, replicates=None, units=None
                         ) -> tuple[Callable[[int], Estimate], int]:
    """``(estimate_at, available)`` of :func:`sequential_family` for per (replicate, unit)
    values (:func:`~recaudit.stats.estimate_mean`'s arguments): replicates in their sorted
    order (give integers: seed, draw or set numbers)."""
    y = np.asarray(values, dtype=np.float64).ravel()
    rep = np.zeros(len(y), dtype=np.int64) if replicates is None else \
        np.asarray(replicates).ravel()
    unit = None if units is None else np.asarray(units).ravel()
    _, n = _codes(rep) if len(rep) else (None, 0)

    def at(r: int) -> Estimate:
        keep = _first(rep, r)
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
    ('greater', 4, 0.0012)
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
