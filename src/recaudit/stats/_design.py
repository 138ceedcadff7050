"""The default design's futility rule and operating characteristics.

**Futility, non-binding.** A comparison that its cap would not decide should stop before
the cap, but only on evidence about the difference that matters, never on the observed
difference alone (an early, small, noisy estimate ends comparisons the cap would decide).
The rule spends ``beta`` (:data:`BETA`) of the probability of a futility stop under a *stated
alternative* ``delta`` by the function ``G(t) = t ** 2`` of the looks' times ``t_k = n_k / N``
(the beta-spending of Pampallona and Tsiatis 1994, Jennison and Turnbull 2000 sec. 7.2):
look ``k`` stops for futility when ``|Z_k| < f_k``, with ``f_k`` solved so that the paths
with drift ``theta = delta / se_N`` (``se_N`` the standard error projected to the cap ``N``)
that stop there have probability ``beta (G(t_k) - G(t_{k-1}))``, by the recursive
integration of :mod:`recaudit.stats._joint` through the efficacy boundaries. Like the
efficacy boundaries, ``f_k`` is applied to each look's own interval as a nominal level: the
look stops when its fixed-sample two-sided p-value exceeds ``2 (1 - Phi(f_k))``.

``delta`` is the user's ``--detect``; by default the difference that the fixed test at the
cap detects with 80 % power at the comparison's level (what the cap was chosen to find). The
rule is *non-binding*: the efficacy levels are computed as if no comparison ever stopped for
futility, so going on after a futility stop (``--futility off``, a later call) keeps alpha;
what futility costs is power at the alternative, at most ``beta`` (measured:
``benchmarks/bench_sequential.py``).

**Operating characteristics.** The same recursion under a drift gives, per look, the
probability of stopping for efficacy in either direction and for futility: the design's
power and expected replicates at any true difference (on the z scale: with few replicates
the t statistics' heavier tails make the figures approximate, which the benchmark's
simulations through the run's own stopping measure exactly).

**Why these constants.** ``rho = 2.5`` (:mod:`recaudit.stats._spending`), ``beta = 0.2`` and
``G(t) = t ** 2`` were chosen on the simulated operating characteristics of one comparison
with a cap of 32 (``benchmarks/bench_sequential.py --design``): at the difference the cap's
fixed test finds with 80 % power, 76 % decided in the right direction after 24.5 replicates
on average; at twice it, 15 replicates; under the null, 23. ``rho = 2`` stops sooner and
decides less (75 %), ``rho = 3`` decides more (77 %) but spends 16 replicates at twice the
difference; a larger ``beta`` or a flatter ``G`` stops null comparisons sooner and costs power.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import special

from recaudit.stats._estimate import Estimate

__all__ = ["BETA", "BETA_SHAPE", "POWER", "Operating", "futility_levels", "operating",
           "fixed_drift", "powered", "inflation"]

#: The probability of a futility stop spent under the alternative (module docstring).
BETA = 0.2
#: The exponent of the futility spending function ``t ** BETA_SHAPE``.
BETA_SHAPE = 2.0
#: The power at the cap that names the default alternative.
POWER = 0.8
#: Paths under the alternative that a futility table is solved on.
FUTILITY_PATHS = 1 << 15
#: Paths of :func:`operating` (its Monte Carlo error: about 0.3 points of power).
OPERATING_PATHS = 1 << 15
#: The root of the simulations' seeds (with the design and the drift).
_SEED = 20261208


@dataclass(frozen=True)
class Operating:
    """What a design does at a true difference (module docstring): ``power`` (decided in the
    difference's direction), ``wrong`` (decided the other way), ``futile`` (stopped for
    futility), ``expected`` (replicates on average), and per look the probability of
    ``stopping`` there for any reason."""

    power: float
    wrong: float
    futile: float
    expected: float
    stopping: tuple[float, ...]


def _spend(looks: tuple[int, ...], beta: float) -> np.ndarray:
    t = np.asarray(looks, dtype=np.float64) / looks[-1]
    return np.diff(np.concatenate([[0.0], beta * t ** BETA_SHAPE]))


@functools.lru_cache(maxsize=64)
def _draws(looks: tuple[int, ...], paths: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """The normals and chi-squares of ``paths`` paths (the same for every drift: common
    random numbers, so power grows with the drift), read-only."""
    rng = np.random.default_rng([_SEED, seed, *looks])
    steps = np.diff(np.concatenate([[0], looks]))
    z = rng.standard_normal((paths, len(looks)))
    w = np.column_stack([rng.chisquare(m - 1, paths) if m > 1 else np.zeros(paths)
                         for m in steps])
    z.flags.writeable = w.flags.writeable = False
    return z, w


def _t(looks: tuple[int, ...], theta: float, paths: int, seed: int) -> np.ndarray:
    """Signed one-sample t statistics at the ``looks`` of ``paths`` paths whose replicates
    have mean ``theta / sqrt(N)`` and variance 1 (the increments' law of
    :func:`recaudit.stats._calibration.t_paths`)."""
    z, w = _draws(looks, paths, seed)
    effect = theta / np.sqrt(looks[-1])
    out = np.empty((paths, len(looks)))
    s, q, prev = np.zeros(paths), np.zeros(paths), 0
    for k, look in enumerate(looks):
        m = look - prev
        u = m * effect + np.sqrt(m) * z[:, k]
        q = q + w[:, k] + (prev * m / look * (s / prev - u / m) ** 2 if prev else 0.0)
        s = s + u
        prev = look
        out[:, k] = (s / look) / np.sqrt(q / ((look - 1) * look))
    return out


def _crit(looks: tuple[int, ...], levels: tuple[float, ...]) -> np.ndarray:
    """The |t| of each look's two-sided level (infinite for a level of 0)."""
    df = np.asarray(looks, dtype=np.float64) - 1
    lv = np.asarray(levels, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(lv > 0, -special.stdtrit(df, np.maximum(lv, 1e-300) / 2), np.inf)


@functools.lru_cache(maxsize=4096)
def _futility(looks: tuple[int, ...], nominal: tuple[float, ...], theta: float,
              beta: float) -> tuple[float, ...]:
    t = np.abs(_t(looks, theta, FUTILITY_PATHS, 0))
    crit = _crit(looks, nominal)
    spend = _spend(looks, beta)
    alive = np.ones(FUTILITY_PATHS, dtype=bool)
    out = [1.0] * len(looks)
    df = np.asarray(looks, dtype=np.float64) - 1
    for k in range(len(looks) - 1):
        alive &= t[:, k] < crit[k]
        quota = int(round(spend[k] * FUTILITY_PATHS))
        running = np.sort(t[alive, k])
        if len(running) == 0:  # the alternative would have been decided by now: still
            out[k:-1] = [0.0] * (len(looks) - 1 - k)  # running contradicts it
            break
        if quota <= 0:
            continue
        bound = float(running[quota - 1]) if quota <= len(running) else np.inf
        out[k] = float(2 * special.stdtr(df[k], -bound)) if np.isfinite(bound) else 0.0
        alive &= t[:, k] > bound
    return tuple(out)


def futility_levels(looks: tuple[int, ...], nominal: tuple[float, ...], theta: float,
                    beta: float = BETA) -> tuple[float, ...]:
    """Per look, the fixed-sample two-sided p-value above which the look stops for futility
    (1 where it never does, and at the last look): solved look by look on
    :data:`FUTILITY_PATHS` t paths with the drift ``theta = delta / se_N`` (the alternative
    over the standard error at the cap), so that the share of them stopping there is the
    look's part of ``beta`` (module docstring). ``nominal``: the looks' efficacy levels at
    the comparison's level."""
    return _futility(tuple(looks), tuple(float(v) for v in nominal),
                     round(abs(float(theta)), 2), float(beta))


def _crossed(looks: tuple[int, ...], theta: float, paths: int, seed: int, share: float
             ) -> tuple[np.ndarray, np.ndarray]:
    """(t statistics, two-sided p-values) at the ``looks`` of paths of an audit's two-level
    design: at the cap the replicates' part of the mean's variance is ``1 - share`` and the
    test queries' part ``share`` (one draw ``b`` shared by every look, its variance taken as
    known: thousands of queries), each look's statistic the difference over both parts with
    the Welch-Satterthwaite degrees of freedom."""
    z, w = _draws(looks, paths, seed)
    b = np.sqrt(share) * np.random.default_rng([_SEED, seed, 7, *looks]).standard_normal(paths)
    sigma = np.sqrt((1.0 - share) * looks[-1])
    t = np.empty((paths, len(looks)))
    p = np.empty_like(t)
    s, q, prev = np.zeros(paths), np.zeros(paths), 0
    for k, look in enumerate(looks):
        m = look - prev
        u = np.sqrt(m) * z[:, k]
        q = q + w[:, k] + (prev * m / look * (s / prev - u / m) ** 2 if prev else 0.0)
        s = s + u
        prev = look
        own = sigma ** 2 * q / ((look - 1) * look)
        v = own + share
        df = np.where(own > 0, v ** 2 / np.maximum(own ** 2 / (look - 1), 1e-300), 1e9)
        t[:, k] = (theta + sigma * s / look + b) / np.sqrt(v)
        p[:, k] = 2 * special.stdtr(df, -np.abs(t[:, k]))
    return t, p


def operating(looks: tuple[int, ...], nominal: tuple[float, ...], theta: float, *,
              futility: tuple[float, ...] | None = None, share: float = 0.0,
              paths: int = OPERATING_PATHS, seed: int = 1) -> Operating:
    """The design's operating characteristics at the drift ``theta`` (the true difference
    over the standard error at the cap), by simulation on the t scale: paths of normal
    replicates looked at as the run looks (each look's t-test against the efficacy levels
    ``nominal`` and, before the last, the futility levels ``futility``; None: no futility
    stop). ``share``: the test queries' part of the variance at the cap (0: one value per
    replicate; an audit's two-level design, :func:`_crossed`)."""
    looks = tuple(int(x) for x in looks)
    if share > 0:
        t, p = _crossed(looks, abs(theta), paths, seed, float(share))
        effect = -p  # reject where p <= level: -p >= -level
        crit = -np.asarray(nominal, dtype=np.float64)
        quit_at = None if futility is None else -np.asarray(futility, dtype=np.float64)
    else:
        t = _t(looks, abs(theta), paths, seed)
        effect = np.abs(t)
        crit = _crit(looks, nominal)
        quit_at = _crit(looks, futility) if futility is not None else None
    done = np.zeros(paths, dtype=bool)
    right = wrong = futile = 0
    stopping = np.zeros(len(looks))
    for k in range(len(looks)):
        a = effect[:, k]
        cross = ~done & (a >= crit[k])
        right += int((cross & (t[:, k] > 0)).sum())
        wrong += int((cross & (t[:, k] <= 0)).sum())
        stop = cross
        if quit_at is not None and k < len(looks) - 1:
            quit_ = ~done & ~cross & (a < quit_at[k])
            futile += int(quit_.sum())
            stop = stop | quit_
        stopping[k] = stop.sum() / paths
        done |= stop
    stopping[-1] += (~done).sum() / paths
    if theta == 0:  # no direction is right: every decision is a false one
        right, wrong = 0, right + wrong
    return Operating(right / paths, wrong / paths, futile / paths,
                     float(np.asarray(looks, dtype=np.float64) @ stopping),
                     tuple(float(s) for s in stopping))


def fixed_drift(cap: int, alpha: float, power: float = POWER) -> float:
    """The drift ``delta / se_N`` that the fixed two-sided t-test of ``cap`` replicates at
    ``alpha`` detects with ``power`` (:meth:`~recaudit.stats.Estimate.detectable` of one
    replicate part with ``cap - 1`` df: the non-central t law)."""
    one = Estimate(0.0, ((1.0, float(cap - 1)),), cap, cap, 1, "replicates")
    return one.detectable(alpha, power)


@functools.lru_cache(maxsize=256)
def _powered(looks: tuple[int, ...], nominal: tuple[float, ...], alpha: float,
             power: float, futility_theta: float | None, share: float) -> tuple[float, float]:
    fix = fixed_drift(looks[-1], alpha, power)
    fut = None if futility_theta is None else futility_levels(looks, nominal, futility_theta)
    lo, hi = 0.5 * fix, 3.0 * fix
    for _ in range(16):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if operating(looks, nominal, mid, futility=fut,
                                        share=share).power < power else (lo, mid)
    return hi, operating(looks, nominal, hi, futility=fut, share=share).expected


def powered(looks: tuple[int, ...], nominal: tuple[float, ...], alpha: float, *,
            power: float = POWER, futility_theta: float | None = None, share: float = 0.0
            ) -> tuple[float, float]:
    """``(theta, expected)``: the drift at the cap (difference over the standard error at
    the cap) that the design decides in its direction with ``power``, and the replicates it
    spends there on average (:func:`operating`, with the test queries' ``share`` of the
    variance at the cap), with futility spent under the drift ``futility_theta`` (None: no
    futility stop)."""
    ft = None if futility_theta is None else round(abs(float(futility_theta)), 2)
    return _powered(tuple(looks), tuple(float(v) for v in nominal), float(alpha),
                    float(power), ft, round(float(share), 3))


def inflation(looks: tuple[int, ...], nominal: tuple[float, ...], alpha: float) -> float:
    """How many times the fixed test's replicates the design needs for the same power
    (80 %) at its cap, futility judged against the default alternative:
    ``(theta_design / theta_fixed) ** 2``."""
    fixed = fixed_drift(looks[-1], alpha)
    theta, _ = powered(looks, nominal, alpha, futility_theta=fixed)
    return (theta / fixed) ** 2
