"""Tests of a difference: the papers' protocol, the two levels, Holm's correction.

**Paired** (:func:`paired_test`): two measures on the same replicates and queries (two
perturbations of one model, a model before and after, a perturbation and a noise floor). The
papers' protocol (Betello et al. 2023 §4.3; Oh et al. 2022 §6.1) runs on the per-query
differences: Shapiro-Wilk at ``normality`` (default 1e-3, Betello et al.'s level), then the
paired t-test if normality is not rejected, else the Wilcoxon signed-rank test. With several
replicates a query's difference is its mean over them (queries are the pairs; the papers pool
one replicate). That protocol sees query-to-query variation only, so with two replicates or
more the decision's p-value is the larger of the protocol's and the two-level interval's
(:mod:`recaudit.stats._estimate`, which adds seed-to-seed variation): a difference counts
only if it stands out from both. With one replicate the protocol alone decides (the two
coincide for normal data) and :attr:`Test.levels` says the seed level is unmeasured.

Shapiro-Wilk reads at most 5,000 differences (every ``ceil(n / 5000)``-th, in query order:
scipy's p-value is approximate beyond that); at that size it rejects any real data, so large
audits take Wilcoxon, as they should for bounded, skewed similarities.

**Unpaired** (:func:`welch_test`): independent samples (Shriver 2018's modification sets of two
heuristics), Welch's t-test.

**Many comparisons** (:func:`holm`): Holm's step-down adjustment, which controls the
family-wise error rate like Bonferroni at no loss of power.
"""

from __future__ import annotations

import functools
import math
import warnings
from dataclasses import dataclass

import numpy as np
from scipy import stats

from recaudit.stats._estimate import Estimate, estimate_mean, welch

__all__ = ["Test", "paired_test", "one_sample_test", "welch_test", "holm"]

_SHAPIRO_MAX = 5000


@dataclass(frozen=True)
class Test:
    """A tested difference.

    estimate: the difference (its mean, interval, detectable effect). p: the decision's
    two-sided p-value. test: what decided (``paired-t``, ``wilcoxon``, ``welch``,
    ``constant``: every difference equal, ``none``: too few pairs). p_protocol: the papers'
    test on the per-query differences; p_levels: the two-level interval's; shapiro_p:
    Shapiro-Wilk's on the differences (NaN when not run). pairs: differences read.
    """

    estimate: Estimate
    p: float
    test: str
    p_protocol: float
    p_levels: float
    shapiro_p: float
    pairs: int

    @property
    def difference(self) -> float:
        return self.estimate.mean

    @property
    def levels(self) -> str:
        return self.estimate.levels

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        return self.estimate.interval(level)

    def significant(self, alpha: float) -> bool:
        return bool(self.p < alpha)


def _unit_differences(d: np.ndarray, replicates: np.ndarray | None, units: np.ndarray | None,
                      design: str) -> np.ndarray:
    """The protocol's pairs: per-query means over replicates when every query is in every
    replicate; every (replicate, query) pair otherwise."""
    if design != "crossed" or units is None:
        return d
    codes, inverse = np.unique(units, return_inverse=True)
    return np.bincount(inverse.ravel(), weights=d, minlength=len(codes)) / \
        np.bincount(inverse.ravel(), minlength=len(codes))


def _r_plus(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """Wilcoxon's signed-rank statistic (the rank sum of the positive differences; zeros
    dropped, tied magnitudes sharing their average rank) along ``axis``, for many rows at
    once."""
    x = np.moveaxis(np.asarray(x, dtype=np.float64), axis, -1)
    ranks = stats.rankdata(np.where(x == 0, np.nan, np.abs(x)), axis=-1, nan_policy="omit")
    return np.sum(np.where(x > 0, ranks, 0.0), axis=-1)


def wilcoxon_p(d: np.ndarray) -> float:
    """Two-sided p-value of ``scipy.stats.wilcoxon(d)`` (its defaults), the same number.

    With at most 13 differences and a zero or a tie among them, recent scipy runs an exact
    sign-flip permutation test (all ``2**n`` flips) calling its statistic once per flip, about
    0.2 s a test; here the same test is run with the statistic computed for all flips at once
    (:func:`_r_plus`): the same null distribution, so the same p-value, some 30 times faster
    (``tests/stats/test_wilcoxon.py`` compares the two). Every other case is scipy's, and so
    is every case under scipy 1.13 (our floor), which uses the normal approximation there."""
    d = np.asarray(d, dtype=np.float64)
    magnitudes = np.abs(d[d != 0])
    small_with_ties = (len(d) <= 13 and len(magnitudes) > 0 and not np.isnan(d).any()
                       and (len(magnitudes) < len(d)
                            or len(np.unique(magnitudes)) < len(magnitudes)))
    if not (small_with_ties and _scipy_permutes()):
        return float(stats.wilcoxon(d).pvalue)
    return _sign_flip_p(d)


def _sign_flip_p(d: np.ndarray) -> float:
    return float(stats.permutation_test((d,), _r_plus, permutation_type="samples",
                                        vectorized=True, n_resamples=9999,
                                        alternative="two-sided", axis=-1).pvalue)


@functools.cache
def _scipy_permutes() -> bool:
    """Whether this scipy answers a small sample with ties by the sign-flip permutation test
    (recent releases) rather than the normal approximation (1.13, our floor): asked once, on a
    sample of four."""
    probe = np.array([1.0, 1.0, 2.0, -3.0])
    return float(stats.wilcoxon(probe).pvalue) == _sign_flip_p(probe)


def _protocol(d: np.ndarray, normality: float) -> tuple[float, str, float]:
    """``(p, test, shapiro_p)`` of the papers' protocol on differences ``d`` (two-sided)."""
    if len(d) < 3:
        return float("nan"), "none", float("nan")
    if np.all(d == 0):
        return 1.0, "constant", float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        if np.ptp(d) == 0:  # every pair moved by the same amount
            return wilcoxon_p(d), "wilcoxon", float("nan")
        step = math.ceil(len(d) / _SHAPIRO_MAX)
        shapiro = float(stats.shapiro(d[::step]).pvalue)
        if shapiro >= normality:
            return float(stats.ttest_1samp(d, 0.0).pvalue), "paired-t", shapiro
        return wilcoxon_p(d), "wilcoxon", shapiro


def paired_test(a, b, replicates=None, units=None, *, normality: float = 1e-3) -> Test:
    """Test ``mean(a - b) == 0``, ``a`` and ``b`` measured on the same (replicate, unit)
    pairs, given in the same order (module docstring). NaN pairs are left out."""
    x = np.asarray(a, dtype=np.float64).ravel()
    y = np.asarray(b, dtype=np.float64).ravel()
    if x.shape != y.shape:
        raise ValueError(f"paired samples must have the same length, got {len(x)} and "
                         f"{len(y)}")
    d = x - y
    ok = ~np.isnan(d)
    reps = None if replicates is None else np.asarray(replicates).ravel()[ok]
    unit = None if units is None else np.asarray(units).ravel()[ok]
    d = d[ok]
    est = estimate_mean(d, reps, unit)
    p_proto, used, shapiro = _protocol(_unit_differences(d, reps, unit, est.design), normality)
    p_levels = est.p_value(0.0)
    if est.design == "constant":
        p = 1.0 if est.mean == 0 else 0.0
        return Test(est, p, "constant", p_proto, p_levels, shapiro, len(d))
    p = p_proto if est.design == "queries" or used == "none" else max(p_proto, p_levels)
    return Test(est, float(p), used, p_proto, p_levels, shapiro, len(d))


def one_sample_test(values, null: float = 0.0, replicates=None, units=None, *,
                    normality: float = 1e-3) -> Test:
    """Test ``mean(values) == null`` (e.g. RBO against 1) with :func:`paired_test`'s rules;
    the estimate is of ``values - null``."""
    x = np.asarray(values, dtype=np.float64)
    return paired_test(x, np.full_like(x, float(null)), replicates, units,
                       normality=normality)


def welch_test(a, b) -> Test:
    """Welch's unpaired t-test of ``mean(a) == mean(b)`` (``scipy.stats.ttest_ind``,
    ``equal_var=False``); the estimate is of ``mean(a) - mean(b)``."""
    est = welch(a, b)
    if est.design == "empty":
        return Test(est, float("nan"), "none", float("nan"), float("nan"), float("nan"),
                    est.n)
    if est.design == "constant":
        p = 1.0 if est.mean == 0 else 0.0
        return Test(est, p, "constant", p, p, float("nan"), est.n)
    x = np.asarray(a, dtype=np.float64)
    y = np.asarray(b, dtype=np.float64)
    p = float(stats.ttest_ind(x[~np.isnan(x)], y[~np.isnan(y)], equal_var=False).pvalue)
    return Test(est, p, "welch", p, p, float("nan"), est.n)


def holm(pvalues) -> np.ndarray:
    """Holm's adjusted p-values (same order; NaN stays NaN and is not counted):
    ``p_(i) -> max_{j <= i} min(1, (m - j + 1) p_(j))`` over the ``m`` sorted p-values.
    Reject where the adjusted value is below the family's ``alpha``."""
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, np.nan)
    ok = ~np.isnan(p)
    m = int(ok.sum())
    if m == 0:
        return out
    idx = np.flatnonzero(ok)
    order = np.argsort(p[idx], kind="stable")
    scaled = np.minimum(1.0, (m - np.arange(m)) * p[idx][order])
    out[idx[order]] = np.maximum.accumulate(scaled)
    return out
