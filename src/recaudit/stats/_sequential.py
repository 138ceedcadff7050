"""Decisions that survive looking: repeated confidence intervals on a fixed ladder of looks.

An audit that adds seeds until its comparisons are decided tests them again after every
round. Read as if the number of rounds had been fixed, those repeated tests reject a true null
far more often than ``alpha`` (five looks at 0.05 reject about 14 % of true nulls). The rule
here keeps the error rate at ``alpha`` whatever the data do to the schedule:

**The ladder.** Looks happen only when the growing count of replicates (seeds, draws,
modification sets) reaches a rung of one fixed ladder, ``3, 4, 6, 8, 12, 16, 24, 32, ...``
(rung ``k`` = ``3 * 2**((k-1)/2)`` for odd ``k``, ``4 * 2**((k-2)/2)`` for even ``k``).
Look ``k`` spends ``alpha_k = alpha * w_k`` with ``w_k = 1 / (k (k + 1))``, so that
``sum_k alpha_k = alpha`` over the whole, unbounded ladder (``alpha / 2`` at 3 replicates,
``alpha / 6`` at 4, ``alpha / 12`` at 6, ...; ``alpha / (K + 1)`` is left after rung ``K``).

**The interval.** At look ``k`` the comparison's interval is a fixed-sample one on the
first ``rung_k`` replicates (:mod:`recaudit.stats._estimate`: the replicates' t interval,
Welch's for two independent samples) at the two-sided level ``alpha_k``: a *repeated
confidence interval* (Jennison and Turnbull 1989) with the spending of Lan and DeMets (1983)
allocated by Bonferroni's inequality instead of the joint law of the looks. By the union
bound, the probability that *any* look's interval misses the true difference is at most
``sum_k alpha_k = alpha``: for any dependence between looks, for any rule deciding whether to
look again (the data, a budget, a cap, a later invocation with a larger cap), as long as looks
happen at rungs and the ladder and its weights are fixed in advance, as they are here. The
price of that generality is width: a look at 8 replicates uses ``alpha / 20``.

**Two levels** (seeds x test queries, the audit's crossed design): the mean difference is
``mu + a + b``, with ``a`` the replicates' part (it shrinks as replicates are added) and ``b``
the test queries' part, *one* draw fixed for the whole run (the test set does not change
between rounds). So ``b`` is bounded once, at ``query_share x alpha`` (``t(Q - 1)`` times its
standard error, ``sqrt(MS_B / (S Q))``), and only ``a`` spends along the ladder, at
``(1 - query_share) alpha_k``; the interval is the estimate plus or minus the *sum* of the two
half-widths (``|a| <= h_a`` and ``|b| <= h_b`` together imply ``|a + b| <= h_a + h_b``, and
the union bound adds their error rates). Re-estimating ``b``'s standard error at each look
from thousands of queries is the one approximation (exact as ``Q`` grows).

**The decisions.** ``greater`` when the interval lies above the null, ``less`` when below,
``equivalent`` when it lies inside ``[-margin, margin]`` around the null (a margin given in
the measure's units; 0 turns equivalence off), ``undecided`` otherwise. Every wrong decision
(a true null declared different, a difference of at least the margin declared equivalent)
needs an interval that misses the truth, so each happens with probability at most ``alpha``.
A family of ``m`` comparisons runs each at ``alpha / m`` (Bonferroni) and keeps the
family-wise rate at ``alpha``.

**The next round.** From the current estimate and variance parts (the replicate part
shrinking as ``1 / replicates``, the query part kept: :meth:`Estimate.with_replicates`),
``need`` is the first rung whose interval would decide the comparison at the observed
difference (direction, or equivalence within the margin); ``next`` the rung to run
to now: ``need``, but at most two rungs (twice the replicates) beyond the current one, so
that one noisy projection cannot spend the budget at once. A comparison whose ``need`` exceeds
the plan's cap gets no more replicates: it stops *beyond the cap* ("would need about N").

Compared with anytime-valid e-processes for the t-test (the mixture Bayes factor of
Grünwald, de Heide and Koolen 2024, whose confidence sequence is Lai's 1976), this ladder
decides earlier at few replicates (the critical value at 3 replicates is 6.2 here, 16.8 for a
mixture over prior scales 1/64 to 1024; equal from about 24) and handles the two-level design
with the intervals the fixed-sample reading already uses; e-processes allow looks at every
replicate, which rounds of trials do not need.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from recaudit.stats._estimate import Estimate, _codes, _t_quantile, estimate_mean, welch

__all__ = ["SequentialPlan", "Sequential", "rung", "rungs_upto", "spent", "sequential_test",
           "sequential_welch", "sequential_decision", "DECISIONS"]

#: What a sequential comparison can end as (module docstring).
DECISIONS = ("greater", "less", "equivalent", "undecided")

#: Projections look this far up the ladder (rung 40 = 3,145,728 replicates) before giving up.
_LAST_RUNG = 40


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


def spent(k: int, alpha: float) -> float:
    """``alpha_k = alpha / (k (k + 1))``: the level spent at look ``k``."""
    return alpha / (k * (k + 1))


@dataclass(frozen=True)
class SequentialPlan:
    """How a run decides its comparisons (module docstring).

    alpha: the family-wise error rate. comparisons: how many comparisons share it (each runs
    at ``alpha / comparisons``). margin: the equivalence margin, in the measure's units
    (0: no equivalence decision). cap: the most replicates a comparison may receive (the
    largest rung at or below it is the last look). null: the difference tested against.
    query_share: the part of a comparison's alpha spent, once, on the test queries' part of
    a two-level design (module docstring).
    """

    alpha: float = 0.05
    comparisons: int = 1
    margin: float = 0.0
    cap: int = 32
    null: float = 0.0
    query_share: float = 0.2

    def __post_init__(self) -> None:
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {self.alpha!r}")
        if self.comparisons < 1:
            raise ValueError(f"comparisons must be >= 1, got {self.comparisons!r}")
        if not self.margin >= 0:
            raise ValueError(f"margin must be >= 0, got {self.margin!r}")
        if not 0 < self.query_share < 1:
            raise ValueError(f"query_share must be in (0, 1), got {self.query_share!r}")
        if self.cap < rung(1):
            raise ValueError(f"cap must be at least {rung(1)} replicates (the first look), "
                             f"got {self.cap!r}")

    @property
    def per_comparison(self) -> float:
        return self.alpha / self.comparisons

    def level(self, r: int) -> float:
        """The two-sided level spent at the look at ``r`` replicates (a rung), queries'
        part included."""
        return spent(_index(r), self.per_comparison)

    def halfwidth(self, est: Estimate, k: int) -> float:
        """The half-width of look ``k``'s interval of ``est`` (module docstring: two levels
        split between the ladder and one bound on the queries' part)."""
        level = spent(k, self.per_comparison)
        if est.design != "crossed":
            return est.halfwidth(level / 2)
        (a, df_a), (b, df_b) = est.parts
        seeds = (1 - self.query_share) * level
        queries = self.query_share * self.per_comparison
        return float(_t_quantile(1 - seeds / 2, df_a) * np.sqrt(a)
                     + _t_quantile(1 - queries / 2, df_b) * np.sqrt(b))

    @property
    def last(self) -> int:
        """The last rung the cap allows."""
        return rungs_upto(self.cap)[-1]


@dataclass(frozen=True)
class Sequential:
    """A comparison after its latest look (module docstring).

    decision: one of :data:`DECISIONS`. estimate: the difference at the look (over the
    look's replicates). look: the rung looked at (replicates used; 0: fewer than the first
    rung). level: the two-sided error level spent at that look. low, high: its interval.
    need: the rung the projection says would decide it (None: none up to rung 40).
    next: the rung to run to in the next round (None: decided, or beyond the cap).
    available: replicates given.
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
        if self.beyond_cap:
            about = "more than 3 million" if self.need is None else f"about {self.need}"
            return (f"would need {about} replicates (cap {self.plan.cap}); undecided at "
                    f"{self.look}")
        return f"undecided at {self.look} replicates; next look at {self.next}"


def _decide(est: Estimate, k: int, plan: SequentialPlan) -> tuple[str, float, float]:
    if est.design == "empty" or not np.isfinite(est.mean):
        return "undecided", float("nan"), float("nan")
    h = plan.halfwidth(est, k)
    low, high = est.mean - h, est.mean + h
    if low > plan.null:
        return "greater", low, high
    if high < plan.null:
        return "less", low, high
    if plan.margin > 0 and plan.null - plan.margin < low and high < plan.null + plan.margin:
        return "equivalent", low, high
    return "undecided", low, high


def _need(est: Estimate, r: int, plan: SequentialPlan) -> int | None:
    """The first rung after ``r`` whose projected interval decides at the observed
    difference (module docstring), or None."""
    if est.design not in ("crossed", "nested", "replicates", "two-sample"):
        return None
    gap = abs(est.mean - plan.null)
    room = plan.margin - gap if plan.margin > 0 else -1.0
    for k in range(_index(r) + 1, _LAST_RUNG + 1):
        m = rung(k)
        h = plan.halfwidth(est.with_replicates(m), k)
        if h < gap or h < room:
            return m
    return None


def sequential_decision(estimate_at: Callable[[int], Estimate], available: int,
                        plan: SequentialPlan) -> Sequential:
    """The decision of one comparison whose first ``r`` replicates give
    ``estimate_at(r)``, with ``available`` replicates so far: looks at the largest rung at or
    below ``min(available, cap)`` (module docstring). The general form of
    :func:`sequential_test` and :func:`sequential_welch`, for any design."""
    usable = rungs_upto(min(available, plan.cap))
    if not usable:
        est = estimate_at(available) if available > 0 else Estimate(
            float("nan"), (), 0, 0, 0, "empty")
        return Sequential("undecided", est, 0, 0.0, float("nan"), float("nan"), rung(1),
                          rung(1), available, plan)
    r = usable[-1]
    est = estimate_at(r)
    level = plan.level(r)
    decision, low, high = _decide(est, _index(r), plan)
    if decision != "undecided":
        return Sequential(decision, est, r, level, low, high, None, None, available, plan)
    need = _need(est, r, plan)
    k = _index(r)
    nxt = None if need is None or need > plan.cap else min(need, rung(k + 2), plan.last)
    if nxt is not None and nxt <= r:
        nxt = None
    return Sequential(decision, est, r, level, low, high, need, nxt, available, plan)


def _first(replicates: np.ndarray, r: int) -> np.ndarray:
    """Mask of the values of the first ``r`` replicates (by their sorted codes)."""
    codes, _ = _codes(replicates)
    return codes < r


def sequential_test(values, replicates=None, units=None, *,
                    plan: SequentialPlan | None = None) -> Sequential:
    """Decide ``mean(values) == plan.null`` sequentially (module docstring).

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
    >>> s.decision, s.look, round(s.level, 4)
    ('greater', 4, 0.0083)
    """
    plan = plan or SequentialPlan()
    y = np.asarray(values, dtype=np.float64).ravel()
    rep = np.zeros(len(y), dtype=np.int64) if replicates is None else \
        np.asarray(replicates).ravel()
    unit = None if units is None else np.asarray(units).ravel()
    _, n = _codes(rep) if len(rep) else (None, 0)

    def at(r: int) -> Estimate:
        keep = _first(rep, r)
        return estimate_mean(y[keep], rep[keep], None if unit is None else unit[keep])

    return sequential_decision(at, n, plan)


def sequential_welch(a, b, *, plan: SequentialPlan | None = None) -> Sequential:
    """Decide ``mean(a) - mean(b) == plan.null`` for two independent samples, each in the
    order its replicates were drawn (modification set 0, 1, ...): the look at rung ``r``
    reads the first ``r`` of each with Welch's interval (:func:`~recaudit.stats.welch`)."""
    plan = plan or SequentialPlan()
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    return sequential_decision(lambda r: welch(x[:r], y[:r]), min(len(x), len(y)), plan)
