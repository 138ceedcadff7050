"""How a sequential comparison spends its alpha over its looks: the named rules.

A *rule* maps a comparison's level ``a`` to the nominal two-sided level ``nu_k(a)`` at which
look ``k`` of a design (:mod:`recaudit.stats._ladder`) reads its fixed-sample interval, such
that a true null is rejected at some look with probability at most ``a`` however the looks
are taken or skipped. A plan names its rule; a store or record keeps the name, so a run
continued later spends as it began. Three kinds:

**Calibrated** (``group-sequential-t``, the default): the looks' joint law, with its
small-sample error corrected. ``a`` is spent over the design's looks (the rungs below the
cap, then the cap) by the power family ``F(t) = t ** rho`` of Kim and DeMets (1987),
``rho = 2.75`` (between Pocock's ``rho`` near 1 and O'Brien and Fleming's near 3: little at the
first looks, most at the cap); the z boundaries come from the recursive integration of
:mod:`recaudit.stats._joint`, and the levels they give each look's t interval are calibrated
so that the chance of some look rejecting is exactly ``a`` for t statistics of normal
replicates (:mod:`recaudit.stats._calibration`: Jennison and Turnbull's 1991 exact
sequential t-test, by simulation). No alpha is kept for looks beyond the cap: the cap is the
design's last look. ``rho`` was chosen with the futility rule of :mod:`recaudit.stats._design`
on the design's power and replicates (``benchmarks/bench_sequential.py --one``).

**Bonferroni** (``bonferroni-sqrt``, the rule of every run before the calibrated design and
of every store or record that names none): ``nu_k(a) = a w_k`` with fixed weights summing to
1 over the unbounded ladder — ``1 - tail`` (90 %) over the rungs up to the design cap ``D`` in
proportion to ``rung ** shape`` (``shape = 1/2``), and ``tail / (j (j + 1))`` to the ``j``-th
rung beyond ``D``. The union bound needs nothing of the looks' joint law, only each look's
exact marginal level, so the guarantee holds for every design the looks read and at every
``a``; the price is power at the cap (its last look of a cap of 32 reads 0.009 of a 0.05).

**Group-sequential** (``lan-demets-rho1``): the looks' joint law without the calibration.
``(1 - tail - slack) a`` is spent over the design's rungs by ``t ** rho``, and ``nu_k(a) =
2 (1 - Phi(c_k))`` is applied to each look's own interval: Jennison and Turnbull's (2000, sec.
3.8) *significance level approach* for an unknown variance. Its marginals are exact but its
joint level is not: with few replicates the t statistics of neighbouring looks are less
correlated than the ``Z_k`` and the level is exceeded (1.04-1.10 times the design's share),
which the ``slack`` (10 %) pays for.

Skipping looks is safe for every kind: the levels are fixed in advance for every look, so
the looks a run takes reject only where the full set would. ``nu_k(a)`` grows with ``a`` at
every look (checked when a group-sequential table is built; the calibration is a monotone
map), so the rejection regions are nested and ``P = inf {a: some look rejects at a}`` is a
valid p-value for Holm.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from recaudit.stats._calibration import calibrated_level_for, calibrated_nominal
from recaudit.stats._joint import z_level_for, z_nominal

__all__ = ["Rule", "RULES", "DEFAULT_RULE", "LEGACY_RULE"]

#: The kinds of rule (module docstring).
KINDS = ("bonferroni", "group-sequential", "calibrated")


@dataclass(frozen=True)
class Rule:
    """A spending rule (module docstring). kind: one of :data:`KINDS`. shape: the Bonferroni
    weights' exponent (``rung ** shape``) or the spending function's ``rho`` (``t ** rho``).
    tail: the share of alpha for the rungs beyond the design (0 for ``calibrated``: its cap is
    its last look). slack: the share held back for the significance level approach's excess
    (``group-sequential`` only; ``calibrated`` corrects it exactly instead)."""

    kind: str
    shape: float
    tail: float
    slack: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, got {self.kind!r}")
        if self.kind == "calibrated" and (self.tail or self.slack):
            raise ValueError("a calibrated rule spends all of alpha over its design's looks: "
                             f"tail and slack must be 0, got {self.tail!r}, {self.slack!r}")
        if self.kind != "calibrated" and not 0 < self.tail < 1:
            raise ValueError(f"tail must be in (0, 1), got {self.tail!r}")
        if not 0 <= self.slack < 1 - self.tail:
            raise ValueError(f"slack must be in [0, 1 - tail), got {self.slack!r}")

    def nominal(self, design: tuple[int, ...], k: int, a: float) -> float:
        """``nu_k(a)``: look ``k``'s two-sided nominal level at the comparison level ``a``
        for a design of the rungs ``design`` (module docstring)."""
        d = len(design)
        if k > d:
            j = k - d
            return self.tail * a / (j * (j + 1)) if self.tail else 0.0
        if self.kind == "bonferroni":
            return a * _bonferroni(design, self.shape, self.tail)[k - 1]
        if self.kind == "calibrated":
            return calibrated_nominal(design, self.shape, k, a)
        return z_nominal(design, self.shape, self.tail + self.slack, k, a)

    def level_for(self, design: tuple[int, ...], k: int, nominal: float) -> float:
        """The inverse of :meth:`nominal` in ``a``: the smallest comparison level at which
        look ``k`` rejects a fixed-sample two-sided p-value ``nominal`` (1 when none does)."""
        d = len(design)
        if nominal <= 0:
            return 0.0
        if k > d:
            j = k - d
            return min(1.0, nominal * j * (j + 1) / self.tail) if self.tail else 1.0
        if self.kind == "bonferroni":
            return min(1.0, nominal / _bonferroni(design, self.shape, self.tail)[k - 1])
        if self.kind == "calibrated":
            return calibrated_level_for(design, self.shape, k, nominal)
        return z_level_for(design, self.shape, self.tail + self.slack, k, nominal)


@functools.lru_cache(maxsize=256)
def _bonferroni(design: tuple[int, ...], shape: float, tail: float) -> np.ndarray:
    w = np.asarray(design, dtype=np.float64) ** shape
    return (1 - tail) * w / w.sum()


#: The named rules; a plan names its rule and a store or record keeps that name, so a run
#: continued later spends as it began.
RULES: dict[str, Rule] = {
    "bonferroni-sqrt": Rule("bonferroni", 0.5, 0.1),
    "lan-demets-rho1": Rule("group-sequential", 1.0, 0.05, slack=0.1),
    "group-sequential-t": Rule("calibrated", 2.75, 0.0),
}
#: The rule of runs whose store or record names none (those before rules were named).
LEGACY_RULE = "bonferroni-sqrt"
#: The rule of new runs (the options measured: ``benchmarks/bench_sequential.py`` and
#: ``docs/concepts/statistics.md``).
DEFAULT_RULE = "group-sequential-t"
