"""The looks' joint law: the canonical joint distribution of group-sequential statistics.

A replicate adds an independent increment to the sum of the differences, so the
standardised statistics ``Z_k`` at the looks ``n_k`` are a Brownian motion read at the times
``n_k`` (Jennison and Turnbull 2000, ch. 3 and 11): on the score scale ``S_k = Z_k sqrt(n_k)``
the increments ``S_k - S_{k-1}`` are independent ``N(eta (n_k - n_{k-1}), n_k - n_{k-1})``
with ``eta`` the standardised difference per replicate (0 under the null). Crossing
probabilities of boundaries on ``|Z_k|`` are computed by the recursive numerical integration of
Armitage, McPherson and Rowe (1969): the density of the paths still running is carried from
look to look on a grid (Simpson's rule), each step a convolution with the increment's normal
density.

:func:`_table` gives the two-sided nominal levels that spend a spending function's share of
the type I error at each look, for a grid of levels; :func:`z_nominal` and
:func:`z_level_for` read it and its inverse at any level.
"""

from __future__ import annotations

import functools

import numpy as np
from scipy import optimize, special

#: log10 of the levels ``a`` a group-sequential table is computed at (interpolated between).
_GRID = np.linspace(-12.0, 0.0, 97)
#: Quadrature points per look of the recursive integration (odd: Simpson's rule).
_POINTS = 241


def _simpson(n: int) -> np.ndarray:
    w = np.ones(n)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return w / 3.0


@functools.lru_cache(maxsize=64)
def _table(design: tuple[int, ...], rho: float, kept: float
           ) -> tuple[np.ndarray, np.ndarray]:
    """log10 ``nu_k(a)`` for every design rung (rows) and every ``a`` of :data:`_GRID`, the
    design spending ``(1 - kept) a``."""
    info = np.asarray(design, dtype=np.float64)
    spent = (1 - kept) * np.diff(np.concatenate([[0.0], (info / info[-1]) ** rho]))
    out = np.empty((len(design), len(_GRID)))
    for i, la in enumerate(_GRID):
        out[:, i] = np.log10(np.maximum(_boundaries(info, 10.0 ** la * spent), 1e-320))
    if np.any(np.diff(out, axis=1) < -1e-9):
        raise RuntimeError(f"the group-sequential levels of the design {design} with rho {rho} "
                           "do not grow with alpha: the rule cannot give valid p-values here")
    return _GRID, out


def _boundaries(info: np.ndarray, spend: np.ndarray) -> np.ndarray:
    """Nominal two-sided levels of the looks at the information ``info`` that spend
    ``spend[k]`` of the type I error at look ``k`` under the canonical joint distribution
    (recursive integration on the score scale ``S_k = Z_k sqrt(info_k)``)."""
    nominal = np.empty(len(info))
    c = float(-special.ndtri(spend[0] / 2))
    nominal[0] = spend[0]
    sd = np.sqrt(info[0])
    x = np.linspace(-c * sd, c * sd, _POINTS)
    f = np.exp(-0.5 * (x / sd) ** 2) / (sd * np.sqrt(2 * np.pi)) * _simpson(_POINTS) * \
        (x[1] - x[0])  # the continuation density times the quadrature weights
    for k in range(1, len(info)):
        step = np.sqrt(info[k] - info[k - 1])
        sk = np.sqrt(info[k])

        def cross(b: float) -> float:
            return float(f @ (special.ndtr((-b - x) / step) + special.ndtr((x - b) / step)))

        target = spend[k]
        if target <= 0 or cross(40 * sk) >= target:
            b = 40 * sk
        elif cross(0.0) <= target:
            b = 0.0
        else:
            b = optimize.brentq(lambda v: cross(v) - target, 0.0, 40 * sk, xtol=1e-10 * sk,
                                rtol=1e-12)
        c = b / sk
        nominal[k] = 2 * special.ndtr(-c)
        edge = min(b, 10 * sk)  # beyond 10 sd the density is below 1e-23
        y = np.linspace(-edge, edge, _POINTS)
        # the increment's normal density from each x to each y, in place (the same numbers
        # as the expression written out, a fifth of the time: no 241 x 241 temporaries)
        kernel = np.subtract.outer(y, x)
        kernel /= step
        np.square(kernel, out=kernel)
        kernel *= -0.5
        np.exp(kernel, out=kernel)
        kernel /= step * np.sqrt(2 * np.pi)
        dens = kernel @ f
        f, x = dens * _simpson(_POINTS) * (y[1] - y[0]), y
    return nominal




def z_nominal(design: tuple[int, ...], rho: float, kept: float, k: int, a: float) -> float:
    """``nu_k(a)`` of the table of ``design`` spending ``(1 - kept) a`` by ``t ** rho``
    (interpolated in log10 between the grid's levels; proportional below it, where the looks'
    crossings no longer overlap and the union bound is tight)."""
    grid, table = _table(design, rho, kept)
    la = np.log10(min(max(a, 1e-300), 1.0))
    if la < grid[0]:
        return float(10.0 ** (table[k - 1, 0] + la - grid[0]))
    return float(10.0 ** np.interp(la, grid, table[k - 1]))


def z_level_for(design: tuple[int, ...], rho: float, kept: float, k: int,
                nominal: float) -> float:
    """The inverse of :func:`z_nominal` in ``a``: the smallest level at which look ``k``
    rejects a fixed-sample two-sided p-value ``nominal`` (1 when none does)."""
    if nominal <= 0:
        return 0.0
    grid, table = _table(design, rho, kept)
    ln = np.log10(nominal)
    row = table[k - 1]
    if ln >= row[-1]:
        return 1.0
    if ln < row[0]:
        return float(10.0 ** (grid[0] + ln - row[0]))
    return float(10.0 ** np.interp(ln, row, grid))
