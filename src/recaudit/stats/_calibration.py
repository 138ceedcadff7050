"""Group-sequential levels that keep alpha with 3-12 replicates: a calibration on the t scale.

The levels of a group-sequential design come from the looks' joint law
(:mod:`recaudit.stats._joint`), which is the law of *z* statistics. Each look of an audit
reads a *t* interval (a handful of seeds; the replicates' variance estimated at every look),
and the significance level approach (Jennison and Turnbull 2000, sec. 3.8) applies the
z design's nominal level ``nu_k(b)`` to it. Each look then has its exact marginal level, but
the t statistics of neighbouring looks are less correlated than the z statistics (each
carries its own variance estimate), so the chance that *some* look rejects exceeds ``b``:
by 4-10 % at 3-12 replicates (``tests/stats/test_design.py``).

**The calibration.** Write ``P_Z = min_k b_k`` for the significance level approach's
repeated p-value, ``b_k`` the smallest ``b`` at which look ``k``'s t interval excludes the
null. When each look reads the one-sample t statistic of normal replicates, the law of the
looks' t statistics is *pivotal* (free of the mean and of the variance), so the
distribution function ``H`` of ``P_Z`` under the null is a property of the design alone, and

    P = H(P_Z),    Pr(P <= u) = u,    nu_k(a) = nu_k^Z(H^-1(a))

is an exact repeated p-value and the design's calibrated levels. This is Jennison and
Turnbull's (1991, *Biometrika* 78, 133-141) exact group-sequential t-test, with their
numerical integration over the running sums and sums of squares replaced by a simulation:
:data:`PATHS` null paths drawn look to look from the exact law of the increments (the new
replicates' sum, normal, and their sum of squared deviations, chi-square with ``m - 1`` df,
joined to the running ones by the pooled-variance identity), with a seed fixed by the design,
so a design's levels are a pure function of its looks and ``rho``. ``H`` is tabulated at the
z table's levels (an eighth of a decade apart, interpolated on the log scale between them);
its Monte Carlo error is ``sqrt(u (1 - u) / PATHS)``: 0.4 % of ``u`` at 0.05, 1.4 % at 0.005.
Below :data:`RESOLVED` simulated crossings (``u`` < 2e-4) the simulation cannot tell, and
``H(b)`` is bounded by ``min(sum_k nu_k^Z(b), H(b_0))`` — the union bound over the looks'
exact marginal levels, and the first resolved value: never below the truth.

Other designs (two levels of seeds and queries, Welch's two samples) apply the same levels to
their own look's interval; what that keeps is checked by simulation
(``tests/stats/test_design.py``).
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import special

from recaudit.stats._joint import _table, z_level_for, z_nominal

__all__ = ["calibrated_nominal", "calibrated_level_for", "t_paths", "PATHS", "RESOLVED"]

#: Null paths simulated per design (module docstring).
PATHS = 1 << 20
#: Paths per block of the simulation (memory: a few MB).
_BLOCK = 1 << 16
#: Simulated crossings below which ``H`` is bounded instead of estimated.
RESOLVED = 200
#: The root of every design's seed (with its looks and ``rho``).
_SEED = 20261207


def t_paths(rng: np.random.Generator, looks: np.ndarray, n: int, effect: float = 0.0
            ) -> np.ndarray:
    """Signed one-sample t statistics at the ``looks`` (columns) of ``n`` paths (rows) of
    normal replicates with mean ``effect`` and variance 1, drawn look to look from the law of
    the increments: the new replicates' sum (normal) and their sum of squared deviations
    (chi-square, ``m - 1`` df), joined to the running ones by the pooled-variance identity."""
    out = np.empty((n, len(looks)))
    s, q, prev = np.zeros(n), np.zeros(n), 0
    for k, look in enumerate(looks):
        m = int(look) - prev
        u = m * effect + np.sqrt(m) * rng.standard_normal(n)
        w = rng.chisquare(m - 1, n) if m > 1 else 0.0
        q = q + w + (prev * m / look * (s / prev - u / m) ** 2 if prev else 0.0)
        s = s + u
        prev = int(look)
        out[:, k] = (s / look) / np.sqrt(q / ((look - 1) * look))
    return out


@functools.lru_cache(maxsize=32)
def _calibration(design: tuple[int, ...], rho: float) -> tuple[np.ndarray, np.ndarray]:
    """``(grid, log10 H)``: the z table's levels and the calibration at each (module
    docstring)."""
    grid, table = _table(design, rho, 0.0)
    looks = np.asarray(design, dtype=np.float64)
    # the t quantile each look rejects beyond, per level of the grid (falling along a row)
    crit = -special.stdtrit(looks[:, None] - 1, 10.0 ** table / 2)
    rng = np.random.default_rng(np.random.SeedSequence([_SEED, round(rho * 1000), *design]))
    counts = np.zeros(len(grid) + 1, dtype=np.int64)
    for start in range(0, PATHS, _BLOCK):
        t = np.abs(t_paths(rng, looks, min(_BLOCK, PATHS - start)))
        first = np.full(len(t), len(grid))
        for k in range(len(design)):  # the first level at which look k rejects
            first = np.minimum(first, np.searchsorted(-crit[k], -t[:, k], side="left"))
        counts += np.bincount(first, minlength=len(grid) + 1)
    crossed = np.cumsum(counts)[:-1]
    h = crossed / PATHS
    resolved = np.flatnonzero(crossed >= RESOLVED)
    start = int(resolved[0]) if len(resolved) else len(grid) - 1
    union = (10.0 ** table).sum(axis=0)
    h[:start] = np.minimum(union[:start], h[start])
    h = np.maximum.accumulate(np.maximum(h, 1e-300))
    # strictly increasing for the inverse (a flat stretch only where the bound caps it)
    log_h = np.log10(h) + 1e-12 * np.arange(len(grid))
    return grid, log_h


def calibrated_nominal(design: tuple[int, ...], rho: float, k: int, a: float) -> float:
    """``nu_k(a) = nu_k^Z(H^-1(a))``: look ``k``'s two-sided nominal level (module
    docstring)."""
    grid, log_h = _calibration(design, rho)
    la = np.log10(min(max(a, 1e-300), 1.0))
    if la >= log_h[-1]:
        lb = 0.0
    elif la < log_h[0]:
        lb = grid[0] + la - log_h[0]
    else:
        lb = float(np.interp(la, log_h, grid))
    return z_nominal(design, rho, 0.0, k, 10.0 ** lb)


def calibrated_level_for(design: tuple[int, ...], rho: float, k: int, nominal: float
                         ) -> float:
    """The inverse of :func:`calibrated_nominal` in ``a``: ``H`` of the z design's level."""
    b = z_level_for(design, rho, 0.0, k, nominal)
    if b <= 0:
        return 0.0
    grid, log_h = _calibration(design, rho)
    lb = np.log10(b)
    if lb >= grid[-1]:
        return 1.0
    la = log_h[0] + lb - grid[0] if lb < grid[0] else float(np.interp(lb, grid, log_h))
    return float(min(1.0, 10.0 ** la))
