"""The mean of an audit measure and its uncertainty over seeds *and* test queries.

An audit measures a value ``y[s, q]`` per training replicate ``s`` (a seed, or a seed and a
perturbation draw) and test query ``q``. Both are samples: another seed trains another
model, another test set holds other users. The estimand is the mean over both populations,
estimated by the grand mean (the mean over replicates of the per-replicate means, as every
table of the papers reports).

**Crossed design** (every query measured in every replicate, the audit's case: the test set is
fixed, the seed changes training). The two-way random-effects model
``y[s, q] = mu + a[s] + b[q] + e[s, q]`` gives

    Var(mean) = s_a^2 / S + s_b^2 / Q + s_e^2 / (S Q)

with the mean squares ``MS_A = Q sum_s (ybar_s - ybar)^2 / (S - 1)`` (replicates) and
``MS_B = S sum_q (ybar_q - ybar)^2 / (Q - 1)`` (queries), ``E[MS_A] = s_e^2 + Q s_a^2`` and
``E[MS_B] = s_e^2 + S s_b^2``. We use ``A = MS_A / (S Q)`` (df ``S - 1``) and
``B = MS_B / (S Q)`` (df ``Q - 1``): ``E[A + B] = Var(mean) + s_e^2 / (S Q)``, a slight
over-estimate that keeps both parts positive. The interval is the modified large-sample one
(Graybill and Wang 1980) for a sum of variance parts, each scaled by its own t quantile:

    mean +- sqrt(t(S - 1)^2 A + t(Q - 1)^2 B)

Why not Welch-Satterthwaite with one pooled df, nor a two-level bootstrap: with 2-3 seeds both
under-cover when seed-to-seed variation dominates (simulated, ``Q = 300``: Satterthwaite 0.87
at two seeds, 0.92 at three; resampling 2-3 seeds has 3-10 distinct outcomes), while this
interval keeps >= 0.95 at every share of seed variance (``tests/stats/test_coverage.py``). Its
price is width at two seeds, where the replicate part is scaled by ``t(1) = 12.7``: two seeds
cannot tell seed-to-seed variation apart, and the interval says so.

**Crossed with missing cells** (the replicates share queries, but not every query is measured
in every replicate: a list's mean popularity of the items that entered it is undefined where
nothing entered). The grand mean weighs ``y[s, q]`` by ``w[s, q] = 1 / (S n_s)`` (``n_s``
values in replicate ``s``); the two parts are the one-way cluster sums of the weighted
residuals ``r = w (y - mean)``, by replicate and by query (the two-way clustering of Cameron,
Gelbach and Miller 2011 without its subtraction of the cell part, which keeps both positive):

    A = S / (S - 1) sum_s (sum_q r)^2 = var(ybar_s) / S                  (df S - 1)
    B = Q / (Q - 1) sum_q (sum_s r)^2                                    (df Q - 1)

For a complete table these are the crossed ``A`` and ``B`` above, term for term. The replicate
means alone (the nested formula) miss the query variation the replicates share, and
under-cover (simulated: 0.79 at five seeds with half the cells missing and query variation
dominant; this form 0.97, ``tests/stats/test_coverage.py``).

**Nested design** (no query is measured in two replicates, e.g. user groups chosen per seed):
the replicate means are independent, so ``Var(mean) = var(ybar_s) / S`` with ``S - 1`` df.
**One replicate**: the queries alone, ``var(y) / Q`` with ``Q - 1`` df (the interval then
ignores seed-to-seed variation, and :attr:`Estimate.levels` says so). **One value per
replicate** (MIRROR's per-seed CTR): the replicates alone. **Two independent samples**
(:func:`welch`): Welch's variance ``s1^2/n1 + s2^2/n2`` with the Welch-Satterthwaite df.

**Bounded quantities** (:meth:`Estimate.interval` with ``bounds``): a share, a change of a
Gini coefficient or a mean popularity cannot leave its range, but ``mean +- h`` can when ``h``
is large against the distance to a bound (two seeds: ``t(1) = 12.7``). The interval is then
built on a scale ``g`` that maps the range onto the whole line, and mapped back; by the delta
method ``Var g(mean) ~ g'(mean)^2 Var(mean)`` for every variance part alike, so the half-width
on that scale is ``g'(mean) h``:

    [g^-1(g(mean) - g'(mean) h), g^-1(g(mean) + g'(mean) h)]

with ``g(x) = logit((x - lo) / (hi - lo))`` for two finite bounds (on ``[-1, 1]`` this is
Fisher's ``z = 2 atanh(x)``), ``g(x) = log(x - lo)`` for a lower bound alone and
``g(x) = -log(hi - x)`` for an upper one. The interval lies inside the bounds, agrees with
``mean +- h`` to first order where ``h`` is small against the distance to the nearer bound,
and reaches further away from that bound where it is not: the sampling distribution of a mean
near a bound is skewed away from it. Why not clip ``mean +- h`` to the range: clipping keeps
the symmetric interval's misses on the far side (a mean of right-skewed positive values with
multiplicative seed effects: 0.85 coverage at three seeds, 0.93 on the log scale; changes in
``(-1, 1)`` near a bound, three to ten seeds: 0.89-0.91 symmetric, 0.92-0.93 on Fisher's
scale; ``tests/stats/test_coverage.py``, 400 simulations each).

Tests invert the interval: the two-sided p-value is the smallest ``alpha`` whose ``1 - alpha``
interval excludes the null value; one-sided likewise.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special, stats

__all__ = ["Estimate", "estimate_mean", "welch", "DESIGNS"]

#: How the values were laid out (see the module docstring).
DESIGNS = ("crossed", "nested", "queries", "replicates", "two-sample", "constant", "empty")


@dataclass(frozen=True)
class Estimate:
    """A mean and the variance parts of its sampling error.

    mean: the estimate. parts: ``(variance, df)`` per source of variation (their variances sum
    to the squared standard error). n: values used; replicates, units: how many of each.
    design: one of :data:`DESIGNS`.
    """

    mean: float
    parts: tuple[tuple[float, float], ...]
    n: int
    replicates: int
    units: int
    design: str

    @property
    def se(self) -> float:
        """Standard error of :attr:`mean`."""
        if self.design == "empty":
            return float("nan")
        return float(np.sqrt(sum(v for v, _ in self.parts)))

    @property
    def levels(self) -> str:
        """What the uncertainty covers: ``seeds and queries``, ``queries only`` (one
        replicate: seed-to-seed variation unmeasured), ``seeds only`` or ``none``."""
        return {"crossed": "seeds and queries", "nested": "seeds and queries",
                "queries": "queries only", "replicates": "seeds only",
                "two-sample": "both samples"}.get(self.design, "none")

    def halfwidth(self, alpha: float) -> float:
        """Half-width of the one-sided ``1 - alpha`` bound (two-sided: pass ``alpha / 2``)."""
        if self.design == "empty":
            return float("nan")
        if not 0 < alpha < 1:
            raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
        return float(np.sqrt(sum(_t_quantile(1 - alpha, df) ** 2 * v
                                 for v, df in self.parts if v > 0)))

    def interval(self, level: float = 0.95,
                 bounds: tuple[float, float] | None = None) -> tuple[float, float]:
        """The two-sided ``level`` interval of the mean; with ``bounds`` (``(lo, hi)``, either
        may be infinite) the interval of a quantity that cannot leave them, built on the logit
        or log scale (module docstring)."""
        h = self.halfwidth((1 - level) / 2)
        if bounds is None:
            return self.mean - h, self.mean + h
        return _bounded(self.mean, h, *map(float, bounds))

    def p_value(self, null: float = 0.0, alternative: str = "two-sided") -> float:
        """p-value of ``mean == null`` against ``alternative`` (``two-sided``, ``greater``:
        the mean exceeds ``null``, ``less``)."""
        if alternative not in ("two-sided", "greater", "less"):
            raise ValueError(f"alternative must be two-sided, greater or less, got "
                             f"{alternative!r}")
        if self.design == "empty":
            return float("nan")
        if alternative == "two-sided":
            return min(1.0, 2 * min(self.p_value(null, "greater"), self.p_value(null, "less")))
        gap = (self.mean - null) if alternative == "greater" else (null - self.mean)
        if gap < 0:
            other = "less" if alternative == "greater" else "greater"
            return 1.0 - self.p_value(null, other) if self.se > 0 else 1.0
        if gap == 0:
            return 0.5 if self.se > 0 else 1.0
        if self.se == 0:
            return 0.0  # a constant difference: no sampling variation left
        return _invert(self.halfwidth, gap, self.parts)

    def power(self, effect: float, alpha: float = 0.05) -> float:
        """The probability that the two-sided test at ``alpha`` rejects when the true
        difference is ``effect`` and the variance parts are what this estimate says.

        The test rejects when ``|mean| > sqrt(sum_i t_i^2 v_i')`` (the interval, inverted),
        with ``mean ~ N(effect, sum_i v_i)`` and each estimated part ``v_i'`` distributed as
        ``v_i chi2(df_i) / df_i``. The first part (the replicates': few degrees of freedom,
        where the t quantile and the spread of its estimate matter) is integrated over its
        chi-square law (256 midpoint nodes in probability); the others (the queries', with
        thousands) are taken at their values. For one part this is the exact power of the
        t-test (the non-central t law), which the usual ``(t_{1-alpha/2} + t_power) se``
        under-states by 20 % at three replicates."""
        return self._power_at(alpha)(effect)

    def _power_at(self, alpha: float) -> Callable[[float], float]:
        """:meth:`power` at ``alpha`` as a function of the effect: the rejection half-widths
        over the chi-square nodes computed once for the root searches that call it a dozen
        times (:meth:`detectable`), the same numbers."""
        if self.design == "empty":
            return lambda effect: float("nan")
        parts = [(v, df) for v, df in self.parts if v > 0]
        total = sum(v for v, _ in parts)
        if total == 0:
            return lambda effect: 1.0 if effect != 0 else 0.0
        (v0, df0), *rest = parts
        fixed = sum(_t_quantile(1 - alpha / 2, df) ** 2 * v for v, df in rest)
        x = _chi2_nodes(df0)
        h = np.sqrt(_t_quantile(1 - alpha / 2, df0) ** 2 * v0 * x + fixed)
        sd = np.sqrt(total)
        return lambda effect: float(np.mean(special.ndtr((-h - effect) / sd)
                                            + special.ndtr((effect - h) / sd)))

    def detectable(self, alpha: float = 0.05, power: float = 0.8) -> float:
        """Minimum detectable effect: the true difference from the null that a two-sided test
        at ``alpha`` detects with probability ``power`` (:meth:`power`, solved for the
        effect)."""
        if self.design == "empty":
            return float("nan")
        if self.se == 0:
            return 0.0
        guess = self.halfwidth(alpha / 2) + self.halfwidth(1 - power)
        hi = guess
        at = self._power_at(alpha)
        while at(hi) < power:
            hi *= 2
        return float(optimize.brentq(lambda e: at(e) - power, 0.0, hi, xtol=1e-12 * hi,
                                     rtol=1e-10))

    def replicates_for(self, effect: float, alpha: float = 0.05, power: float = 0.8,
                       most: int = 10_000) -> int | None:
        """The replicates (seeds, draws, sets) with which ``effect`` becomes detectable
        (:meth:`detectable` <= ``|effect|``), the variance of the replicate part shrinking as
        ``1 / replicates`` and the query part kept (:meth:`with_replicates`); ``None`` if no
        number up to ``most`` does (the query-level uncertainty alone is larger than the
        effect, or the effect is 0).

        :meth:`power` rises with the effect, so ``detectable <= |effect|`` is
        ``power(|effect|) >= power``: one evaluation of the power per candidate count instead
        of a root search for the detectable effect (a sixth of the time of evaluating a
        paper's claims)."""
        effect = abs(float(effect))
        if not np.isfinite(effect) or effect == 0 or self.design not in (
                "crossed", "nested", "replicates", "two-sample"):
            return None  # one replicate: the seed-to-seed variance is unknown

        def enough(m: int) -> bool:
            return self.with_replicates(m).power(effect, alpha) >= power

        lo, hi = 2, most
        if not enough(hi):
            return None
        if enough(lo):
            return lo
        # enough at hi, not at lo: bracket the count near the normal approximation's first
        # (widening by 10 %, 20 %, 40 %, ... until it holds), then bisect. The same count as
        # bisecting [2, most] (power rises with the count) in a third of the evaluations of
        # the power, each a new chi-square law for two samples.
        (v, _), *rest = self.parts
        room = (effect / (special.ndtri(1 - alpha / 2) + special.ndtri(power))) ** 2 - \
            sum(w for w, _ in rest)
        guess = v * self.replicates / room if room > 0 and v > 0 else float(hi)
        g = int(min(max(np.ceil(guess), lo + 1), hi - 1))
        up = not enough(g)
        lo, hi = (g, hi) if up else (lo, g)
        step = 0.1
        while hi - lo > 1:
            g = int(np.ceil(lo * (1 + step))) if up else int(hi / (1 + step))
            g = min(max(g, lo + 1), hi - 1)
            if enough(g):
                hi = g
                if up:
                    break
            else:
                lo = g
                if not up:
                    break
            step *= 2
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (lo, mid) if enough(mid) else (mid, hi)
        return hi

    def with_replicates(self, m: int) -> Estimate:
        """This estimate as it would be with ``m`` replicates: the replicate part's variance
        scales as ``1 / m`` with ``m - 1`` df (crossed: the query part is kept,
        conservatively); two samples grow both arms to ``m`` (Welch's df scaled alike). What
        a plan projects from a calibration or an earlier store."""
        r = self.replicates
        (v, df), *rest = self.parts
        parts: tuple[tuple[float, float], ...]
        if self.design == "two-sample":
            parts = ((v * r / m, max(1.0, df * (m - 1) / (r - 1))),)
        else:
            parts = ((v * r / m, float(m - 1)), *rest)
        return Estimate(self.mean, tuple(parts), self.n, m, self.units, self.design)


def _bounded(m: float, h: float, lo: float, hi: float) -> tuple[float, float]:
    """``mean +- h`` on the scale that maps ``(lo, hi)`` onto the line (module docstring)."""
    if not lo < hi:
        raise ValueError(f"bounds must be (low, high) with low < high, got ({lo}, {hi})")
    if not (np.isfinite(m) and np.isfinite(h)):
        return m - h, m + h  # NaN stays NaN; an infinite half-width: the whole range
    if not lo <= m <= hi:
        raise ValueError(f"the mean {m!r} lies outside the bounds ({lo}, {hi})")
    if h == 0:
        return m, m
    if m in (lo, hi):  # values on and beyond a bound: nothing to map
        raise ValueError(f"the mean {m!r} lies on a bound of ({lo}, {hi}) although its "
                         "values vary: some lie outside the bounds")
    if np.isfinite(lo) and np.isfinite(hi):
        w = hi - lo
        p = (m - lo) / w
        z, d = float(special.logit(p)), h / (w * p * (1 - p))
        return lo + w * float(special.expit(z - d)), lo + w * float(special.expit(z + d))
    if not (np.isfinite(lo) or np.isfinite(hi)):
        return m - h, m + h
    gap = m - lo if np.isfinite(lo) else hi - m
    with np.errstate(over="ignore"):  # the far end of a huge interval: infinite
        near, far = gap * float(np.exp(-h / gap)), gap * float(np.exp(h / gap))
    return (lo + near, lo + far) if np.isfinite(lo) else (hi - far, hi - near)


#: Quadrature nodes of :meth:`Estimate.power` over the replicate part's chi-square law.
_NODES = 256


@functools.lru_cache(maxsize=1024)
def _chi2_nodes(df: float) -> np.ndarray:
    """``chi2(df) / df`` at the :data:`_NODES` midpoints in probability (ones for infinite
    ``df``), read-only. Cached: solving :meth:`Estimate.detectable` calls :meth:`Estimate.power`
    a dozen times with the same ``df``, and these quantiles were nine tenths of its time
    (``recaudit reproduce list``, which decides every committed claim: 18 -> 4 s)."""
    u = (np.arange(_NODES) + 0.5) / _NODES
    # scipy's chi2.ppf is 2 gammaincinv(df / 2, u): the same numbers, without its checks
    x = 2 * special.gammaincinv(df / 2, u) / df if np.isfinite(df) else np.ones(_NODES)
    x.flags.writeable = False
    return x


def _t_quantile(q: float, df: float) -> float:
    """``stats.t.ppf(q, df)``, the same number: ``special.stdtrit`` is what it computes, without
    the distribution's argument checks (2 µs instead of 100; a p-value inverts this dozens of
    times). ``q == 1`` (an alpha below 1e-16, where a p-value's search starts) is infinite, as
    ppf says; where stdtrit gives no other finite number (``df = inf``, NaN in scipy 1.13, our
    floor) the distribution's own answer."""
    if q >= 1.0:
        return float("inf")
    x = float(special.stdtrit(df, q))
    return x if np.isfinite(x) else float(stats.t.ppf(q, df))


def _invert(halfwidth, gap: float, parts: tuple[tuple[float, float], ...] = ()) -> float:
    """The ``alpha`` at which ``halfwidth(alpha) == gap`` (``halfwidth`` falls with
    ``alpha``), searched on a log scale; 0 below 1e-300.

    With the estimate's ``parts`` (variance, degrees of freedom) the search starts from a
    bracket that holds the root: ``halfwidth(alpha) = sqrt(sum_i t_i(alpha)^2 v_i)`` lies
    between ``se t(alpha; df_max)`` and ``se t(alpha; df_min)`` (the t quantile falls as the
    degrees of freedom grow), so the root lies between the one-part p-values of ``gap / se``
    at the largest and at the smallest ``df``. One distinct ``df`` is the t-test's own
    p-value, in closed form. Without ``parts``, or where rounding puts the root outside that
    bracket, the whole range is searched."""
    f = lambda la: halfwidth(10.0 ** la) - gap  # noqa: E731 - a root-finding target
    lo, hi = -300.0, float(np.log10(0.5))
    dfs = [df for v, df in parts if v > 0]
    if dfs:
        z = gap / np.sqrt(sum(v for v, df in parts if v > 0))
        small, large = (float(special.stdtr(df, -z)) for df in (max(dfs), min(dfs)))
        if min(dfs) == max(dfs) and 1e-300 <= small < 0.5:
            return small
        a, b = (float(np.log10(x)) if x > 0 else -np.inf for x in (small, large))
        if lo < a < hi and f(a) >= 0:
            lo = a
        if lo < b < hi and f(b) <= 0:
            hi = b
    if lo == -300.0 and f(lo) < 0:
        return 0.0
    if hi == np.log10(0.5) and f(hi) > 0:
        return 0.5
    return float(10.0 ** optimize.brentq(f, lo, hi, xtol=1e-10))


def _codes(x: np.ndarray) -> tuple[np.ndarray, int]:
    """Each value's code in the sorted distinct values (``np.unique``'s inverse). Text (seed
    and query names, by the hundred thousand) through a hash table and a sort of the few
    distinct values: the same codes, in a fifth of the time. Distinct strings are sorted as a
    fixed-width numpy array (code point order, as Python compares ``str``), not as Python
    objects: a tenth of the time again on query names by the ten thousand."""
    if x.dtype.kind in "OUS":
        import pandas as pd

        codes, uniq = pd.factorize(x, sort=False)
        if len(codes) and codes.min() >= 0:  # no missing value (np.unique ranks those last)
            if uniq.dtype.kind == "O" and pd.api.types.infer_dtype(uniq) != "string":
                order = np.argsort(uniq, kind="stable")   # mixed objects: Python's order
            else:
                order = np.argsort(uniq.astype(str) if uniq.dtype.kind == "O" else uniq,
                                   kind="stable")
            rank = np.empty(len(order), dtype=np.intp)
            rank[order] = np.arange(len(order))
            return rank[codes], len(uniq)
    uniq, codes = np.unique(x, return_inverse=True)
    return codes.ravel(), len(uniq)


def estimate_mean(values, replicates=None, units=None) -> Estimate:
    """The mean of ``values`` and its sampling error (module docstring).

    values: one number per measurement; replicates: the seed (or seed and draw) of each
    (default: all one replicate); units: the test query of each (default: all distinct).
    NaN values are left out. A (replicate, unit) pair may appear once.
    """
    y = np.asarray(values, dtype=np.float64).ravel()
    rep = np.zeros(len(y), dtype=np.int64) if replicates is None else np.asarray(replicates)
    unit = np.arange(len(y)) if units is None else np.asarray(units)
    if len(rep) != len(y) or len(unit) != len(y):
        raise ValueError(f"values, replicates and units must have one entry each; got "
                         f"{len(y)}, {len(rep)} and {len(unit)}")
    ok = ~np.isnan(y)
    y, rep, unit = y[ok], rep[ok], unit[ok]
    if len(y) == 0:
        return Estimate(float("nan"), (), 0, 0, 0, "empty")
    r, n_rep = _codes(rep)
    u, n_unit = _codes(unit)
    return _coded(y, r, n_rep, u, n_unit)


def _coded(y: np.ndarray, r: np.ndarray, n_rep: int, u: np.ndarray, n_unit: int,
           checked: bool = False) -> Estimate:
    """:func:`estimate_mean` of values without NaN whose replicates and units are already
    coded (``r`` in ``0..n_rep - 1``, ``u`` in ``0..n_unit - 1``, each code present: the
    codes of :func:`_codes`). ``checked``: no (replicate, unit) pair is known to repeat (a
    look at the first replicates of values checked once), else that is checked here."""
    cells = r * n_unit + u
    if not checked and len(np.unique(cells)) != len(cells):
        raise ValueError("a (replicate, unit) pair appears twice; average duplicates first")
    rep_means = np.bincount(r, weights=y, minlength=n_rep) / np.bincount(r, minlength=n_rep)
    mean = float(rep_means.mean())
    if len(y) == 1:
        return Estimate(mean, ((0.0, 1.0),), 1, 1, 1, "constant")
    if np.ptp(y) == 0:
        return Estimate(mean, ((0.0, 1.0),), len(y), n_rep, n_unit, "constant")
    if n_rep == 1:
        return Estimate(mean, ((float(y.var(ddof=1)) / len(y), len(y) - 1),), len(y), 1,
                        n_unit, "queries")
    if len(y) == n_rep:  # one value per replicate
        return Estimate(mean, ((float(y.var(ddof=1)) / n_rep, n_rep - 1),), len(y), n_rep,
                        1, "replicates")
    if len(y) == n_rep * n_unit:  # every unit in every replicate
        flat = np.empty(n_rep * n_unit)
        flat[cells] = y
        unit_means = flat.reshape(n_rep, n_unit).mean(axis=0)
        ms_a = n_unit * float(((rep_means - mean) ** 2).sum()) / (n_rep - 1)
        ms_b = n_rep * float(((unit_means - mean) ** 2).sum()) / (n_unit - 1)
        sq = n_rep * n_unit
        return Estimate(mean, ((ms_a / sq, n_rep - 1), (ms_b / sq, n_unit - 1)), len(y),
                        n_rep, n_unit, "crossed")
    if np.bincount(u, minlength=n_unit).max() > 1:  # crossed, with missing cells
        n_s = np.bincount(r, minlength=n_rep)
        resid = (y - mean) / (n_rep * n_s[r])
        by_unit = np.bincount(u, weights=resid, minlength=n_unit)
        b = n_unit / (n_unit - 1) * float((by_unit ** 2).sum())
        return Estimate(mean, ((float(rep_means.var(ddof=1)) / n_rep, n_rep - 1),
                               (b, n_unit - 1)), len(y), n_rep, n_unit, "crossed")
    return Estimate(mean, ((float(rep_means.var(ddof=1)) / n_rep, n_rep - 1),), len(y), n_rep,
                    n_unit, "nested")


def welch(a, b) -> Estimate:
    """The difference of the means of two independent samples (``mean(a) - mean(b)``) with
    Welch's variance and Welch-Satterthwaite df, as ``scipy.stats.ttest_ind(equal_var=False)``.
    The replicate count is the smaller sample (:meth:`Estimate.replicates_for` grows both)."""
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    x, y = x[~np.isnan(x)], y[~np.isnan(y)]
    if len(x) < 2 or len(y) < 2:
        return Estimate(float("nan"), (), len(x) + len(y), min(len(x), len(y)), 1, "empty")
    diff = float(x.mean() - y.mean())
    va, vb = x.var(ddof=1) / len(x), y.var(ddof=1) / len(y)
    if va + vb == 0:
        return Estimate(diff, ((0.0, 1.0),), len(x) + len(y), min(len(x), len(y)), 1,
                        "constant")
    df = (va + vb) ** 2 / (va ** 2 / (len(x) - 1) + vb ** 2 / (len(y) - 1))
    return Estimate(diff, ((float(va + vb), float(df)),), len(x) + len(y),
                    min(len(x), len(y)), 1, "two-sample")
