"""How a sequential comparison spends its alpha over the ladder of looks: the named rules.

A *rule* maps a comparison's level ``a`` to the nominal two-sided level ``nu_k(a)`` at which
look ``k`` (rung ``rung(k)`` of :mod:`recaudit.stats._sequential`'s ladder) reads its
fixed-sample interval, such that a true null is rejected at some look with probability at
most ``a`` however the looks are taken or skipped. A plan names its rule; a store or record
keeps the name, so a run continued later spends as it began.

**Bonferroni** (``bonferroni-sqrt``, the default and the rule of every run before rules
were named): ``nu_k(a) = a w_k`` with fixed weights summing to 1 over the unbounded ladder —
``1 - tail`` (90 %) over the rungs up to the design cap ``D`` in proportion to
``rung ** shape`` (``shape = 1/2``: little at the first looks, which decide only large
effects, most where the marginal ones are decided; Lan and DeMets' 1983 spending between
Pocock's and O'Brien and Fleming's shapes), and ``tail / (j (j + 1))`` to the ``j``-th rung
beyond ``D``. The union bound needs nothing of the looks' joint law, only each look's exact
marginal level, so the guarantee holds for every design the looks read (t, Welch, two
levels) and at every ``a``. Weights in proportion to the rung (``shape = 1``, the linear
spending function of Kim and DeMets 1987), equal weights (Pocock-like) or a smaller tail
were measured and spend as many trials or more (``docs/concepts/statistics.md``).

**Group-sequential** (``lan-demets-rho1``, an alternative, not the default): the looks'
joint law is used. A replicate adds an independent increment to the sum of the differences,
so the standardised statistics ``Z_k`` at the rungs ``r_k`` are a Brownian motion read at the
times ``r_k`` (the *canonical joint distribution* of Jennison and Turnbull 2000, ch. 3 and
11). ``(1 - tail - slack) a`` is spent over the design's rungs by ``F(t) = t ** rho``, and the
critical values ``c_k`` are solved look by look from the exact crossing probabilities,
computed by the recursive numerical integration of Armitage, McPherson and Rowe (1969):
``Pr(|Z_j| < c_j for j < k, |Z_k| >= c_k) = (1 - tail - slack) a (F(t_k) - F(t_{k-1}))``.
``nu_k(a) = 2 (1 - Phi(c_k))`` is applied to each look's own interval (t with the look's df,
Welch's): Jennison and Turnbull's (2000, sec. 3.8) *significance level approach* for an
unknown variance. Its marginals are exact but its joint level is not: with few replicates
the t statistics of neighbouring looks are less correlated than the ``Z_k`` and the level is
exceeded (simulated, one value per replicate, every rung looked at: 1.04-1.10 times the
design's share from 3 replicates on), which the ``slack`` (10 %) pays for. Measured on the
records' variance structure it spends about as many trials as ``bonferroni-sqrt`` (within the
benchmark's noise), so the union bound's exact guarantee stays the default.

Skipping rungs is safe for both kinds: the levels are fixed in advance for every rung of the
ladder, so the looks a run takes reject only where the full ladder would. ``nu_k(a)`` grows
with ``a`` at every look (checked when a group-sequential table is built), so the rejection
regions are nested and ``P = inf {a: some look rejects at a}`` is a valid p-value for Holm.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

__all__ = ["Rule", "RULES", "DEFAULT_RULE", "LEGACY_RULE"]

#: log10 of the levels ``a`` a group-sequential table is computed at (interpolated between).
_GRID = np.linspace(-12.0, 0.0, 97)
#: Quadrature points per look of the recursive integration (odd: Simpson's rule).
_POINTS = 241


@dataclass(frozen=True)
class Rule:
    """A spending rule (module docstring). kind: ``bonferroni`` or ``group-sequential``.
    shape: the Bonferroni weights' exponent (``rung ** shape``) or the spending function's
    ``rho`` (``t ** rho``). tail: the share of alpha for the rungs beyond the design. slack:
    the share held back for the significance level approach's excess (group-sequential
    only; module docstring)."""

    kind: str
    shape: float
    tail: float
    slack: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in ("bonferroni", "group-sequential"):
            raise ValueError(f"kind must be 'bonferroni' or 'group-sequential', got "
                             f"{self.kind!r}")
        if not 0 < self.tail < 1:
            raise ValueError(f"tail must be in (0, 1), got {self.tail!r}")
        if not 0 <= self.slack < 1 - self.tail:
            raise ValueError(f"slack must be in [0, 1 - tail), got {self.slack!r}")

    def nominal(self, design: tuple[int, ...], k: int, a: float) -> float:
        """``nu_k(a)``: look ``k``'s two-sided nominal level at the comparison level ``a``
        for a design of the rungs ``design`` (module docstring)."""
        d = len(design)
        if k > d:
            j = k - d
            return self.tail * a / (j * (j + 1))
        if self.kind == "bonferroni":
            return a * _bonferroni(design, self.shape, self.tail)[k - 1]
        grid, table = _table(design, self.shape, self.tail + self.slack)
        la = np.log10(min(max(a, 1e-300), 1.0))
        if la < grid[0]:  # far below the table: the union bound is tight there
            return float(10.0 ** (table[k - 1, 0] + la - grid[0]))
        return float(10.0 ** np.interp(la, grid, table[k - 1]))

    def level_for(self, design: tuple[int, ...], k: int, nominal: float) -> float:
        """The inverse of :meth:`nominal` in ``a``: the smallest comparison level at which
        look ``k`` rejects a fixed-sample two-sided p-value ``nominal`` (1 when none does)."""
        d = len(design)
        if nominal <= 0:
            return 0.0
        if k > d:
            j = k - d
            return min(1.0, nominal * j * (j + 1) / self.tail)
        if self.kind == "bonferroni":
            return min(1.0, nominal / _bonferroni(design, self.shape, self.tail)[k - 1])
        grid, table = _table(design, self.shape, self.tail + self.slack)
        ln = np.log10(nominal)
        row = table[k - 1]
        if ln >= row[-1]:
            return 1.0
        if ln < row[0]:
            return float(10.0 ** (grid[0] + ln - row[0]))
        return float(10.0 ** np.interp(ln, row, grid))


@functools.lru_cache(maxsize=256)
def _bonferroni(design: tuple[int, ...], shape: float, tail: float) -> np.ndarray:
    w = np.asarray(design, dtype=np.float64) ** shape
    return (1 - tail) * w / w.sum()


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
        dens = np.exp(-0.5 * ((y[:, None] - x[None, :]) / step) ** 2) / (step * np.sqrt(
            2 * np.pi)) @ f
        f, x = dens * _simpson(_POINTS) * (y[1] - y[0]), y
    return nominal


#: The named rules; a plan names its rule and a store or record keeps that name, so a run
#: continued later spends as it began.
RULES: dict[str, Rule] = {
    "bonferroni-sqrt": Rule("bonferroni", 0.5, 0.1),
    "lan-demets-rho1": Rule("group-sequential", 1.0, 0.05, slack=0.1),
}
#: The rule of runs whose store or record names none (those before rules were named).
LEGACY_RULE = "bonferroni-sqrt"
#: The rule of new runs (the options measured: ``benchmarks/bench_sequential.py`` and
#: ``docs/concepts/statistics.md``).
DEFAULT_RULE = "bonferroni-sqrt"
