"""A sequential run's plan: its rule, its looks, and each look's nominal level.

:class:`SequentialPlan` holds what a run decides by (module docstring of
:mod:`recaudit.stats._sequential`): the family's alpha, the equivalence margin, the cap and the
design cap, the spending rule (:mod:`recaudit.stats._spending`) and the futility rule
(:mod:`recaudit.stats._design`). It answers where the looks are (:meth:`~SequentialPlan.looks_upto`,
:meth:`~SequentialPlan.index`, :meth:`~SequentialPlan.look`), at which nominal level each reads
its fixed-sample interval (:meth:`~SequentialPlan.nominal`) and how wide that interval is
(:meth:`~SequentialPlan.halfwidth`); :func:`_fixed_p` inverts an estimate's own interval.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np

from recaudit.stats._estimate import Estimate, _invert, _t_quantile
from recaudit.stats._ladder import looks_for, rung, rungs_upto
from recaudit.stats._spending import DEFAULT_RULE, RULES, Rule

__all__ = ["SequentialPlan"]

T = TypeVar("T")


@dataclass(frozen=True)
class SequentialPlan:
    """How a run decides its comparisons (module docstring).

    alpha: the family-wise error rate. margin: the equivalence margin, in the measure's units
    (0: no equivalence decision). cap: the most replicates a comparison may receive (its
    last look: the cap itself under a calibrated rule, the largest rung at or below it
    under the ladder's rules). design: the cap the spending was designed for (default
    ``cap``; a run continued later keeps its first design: the ladder's rules spend a tail of
    alpha beyond it, a calibrated rule none, so its looks end there). null: the difference
    tested against. query_share: the part of a comparison's alpha spent, once, on the test
    queries' part of a two-level design (the ladder's rules; a calibrated rule reads each
    look's own two-level interval). comparisons: for :func:`sequential_decision` alone, how
    many comparisons share ``alpha`` (Bonferroni); :func:`sequential_family` decides a family
    by Holm instead. rule: the name of the spending rule (:data:`RULES`,
    :mod:`recaudit.stats._spending`; default :data:`DEFAULT_RULE`); a run continued later
    keeps the rule it began with. futility: stop a comparison for futility (calibrated
    rules: :mod:`recaudit.stats._design`; non-binding, so ``False`` keeps the same alpha).
    detect: the difference futility is judged against, in the measure's units (None: the
    difference the fixed test at the design's cap detects with 80 % power at the
    comparison's level).
    """

    alpha: float = 0.05
    margin: float = 0.0
    cap: int = 32
    design: int | None = None
    null: float = 0.0
    query_share: float = 0.2
    comparisons: int = 1
    rule: str = DEFAULT_RULE
    futility: bool = True
    detect: float | None = None

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
        if self.detect is not None and not self.detect > 0:
            raise ValueError(f"detect must be a positive difference, got {self.detect!r}")
        for name in ("cap", "design"):
            v = getattr(self, name)
            if v is not None and v < rung(1):
                raise ValueError(f"{name} must be at least {rung(1)} replicates (the first "
                                 f"look), got {v!r}")

    @property
    def calibrated(self) -> bool:
        """The rule is a calibrated design (:mod:`recaudit.stats._calibration`): its looks
        end at its cap, and it stops for futility rather than on a projection."""
        return self.spending.kind == "calibrated"

    @property
    def last(self) -> int:
        """The last look the cap allows."""
        return self.looks_upto(self.cap)[-1]

    @property
    def spending(self) -> Rule:
        """The spending rule :attr:`rule` names."""
        return RULES[self.rule]

    @property
    def designed(self) -> tuple[int, ...]:
        """The looks of the design (up to :attr:`design`, else :attr:`cap`): the rungs, and
        for a calibrated rule the cap itself (:func:`looks_for`)."""
        cap = self.design or self.cap
        return looks_for(cap) if self.calibrated else _designed(cap)

    def looks_upto(self, n: int) -> list[int]:
        """The looks at ``n`` replicates or fewer: the ladder's rungs (without end for the
        ladder's rules, whose tail spends beyond the design), or the design's looks."""
        if self.calibrated:
            return [r for r in self.designed if r <= n] or [rung(1)]
        return rungs_upto(n)

    def index(self, r: int) -> int:
        """The ``k`` of the look at ``r`` replicates (1 for the first)."""
        looks = self.designed if self.calibrated else None
        if looks is not None:
            if r not in looks:
                raise ValueError(f"{r} replicates is not a look of the design {looks}")
            return looks.index(r) + 1
        k = 1
        while rung(k) < r:
            k += 1
        if rung(k) != r:
            raise ValueError(f"{r} is not a rung of the ladder")
        return k

    def look(self, k: int) -> int:
        """The replicates of look ``k`` (the inverse of :meth:`index`)."""
        if self.calibrated:
            looks = self.designed
            return looks[k - 1] if k <= len(looks) else looks[-1]
        return rung(k)

    def first(self, have: int = 0) -> int:
        """The look a run starts with when it already has ``have`` replicates: the first
        look at or above them (at most the last look)."""
        later = [r for r in self.looks_upto(max(self.cap, rung(1))) if r >= have]
        return later[0] if later else self.last

    def nominal(self, k: int, a: float) -> float:
        """``nu_k(a)``: the two-sided nominal level of look ``k``'s fixed-sample interval
        when the comparison is tested at ``a`` (module docstring)."""
        return self.spending.nominal(self.designed, k, a)

    def nominals(self, a: float) -> tuple[float, ...]:
        """``nu_k(a)`` of every look of the design, in order (cached: the futility rule
        reads them all at every look of every comparison, at a few levels ``a``)."""
        return _nominals(self.spending, self.designed, float(a))

    def weight(self, k: int) -> float:
        """``w_k = nu_k(alpha) / alpha``, look ``k``'s nominal level as a share of the
        plan's alpha (Bonferroni rules: the same at every level; the shares of a
        group-sequential rule sum to more than 1, the looks' correlation paying for it)."""
        return self.nominal(k, self.alpha) / self.alpha

    def level(self, r: int) -> float:
        """The two-sided nominal level of a single comparison's look at ``r`` replicates
        (a look of the plan): ``nu_k(alpha / comparisons)``."""
        return self.nominal(self.index(r), self.alpha / self.comparisons)

    def halfwidth(self, est: Estimate, k: int, a: float) -> float:
        """The half-width of look ``k``'s interval of ``est`` at the comparison level ``a``
        (module docstring: the look's own interval at ``nu_k(a)`` under a calibrated rule;
        under the ladder's rules two levels split between the ladder and one bound on the
        queries' part)."""
        if est.design != "crossed" or self.calibrated:
            return est.halfwidth(self.nominal(k, a) / 2)
        (va, df_a), (vb, df_b) = est.parts
        seeds = self.nominal(k, (1 - self.query_share) * a)
        queries = self.query_share * a
        return float((_t_quantile(1 - seeds / 2, df_a) * np.sqrt(va) if va > 0 else 0.0)
                     + (_t_quantile(1 - queries / 2, df_b) * np.sqrt(vb) if vb > 0 else 0.0))


@functools.lru_cache(maxsize=256)
def _designed(cap: int) -> tuple[int, ...]:
    return tuple(rungs_upto(cap))


@functools.lru_cache(maxsize=1024)
def _nominals(rule: Rule, designed: tuple[int, ...], a: float) -> tuple[float, ...]:
    return tuple(rule.nominal(designed, k, a) for k in range(1, len(designed) + 1))


def by_value(maxsize: int) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """``functools.lru_cache`` of a pure function of estimates and plans, which computes
    directly where an argument cannot be hashed (an :class:`Estimate` built with its parts
    in a list)."""
    def wrap(fn: Callable[..., T]) -> Callable[..., T]:
        cached = functools.lru_cache(maxsize=maxsize)(fn)

        @functools.wraps(fn)
        def call(*args: Any) -> T:
            try:
                hash(args)
            except TypeError:
                return fn(*args)
            return cached(*args)
        return call
    return wrap


@by_value(256)
def _fixed_p(est: Estimate, gap: float) -> float:
    """The smallest two-sided level whose fixed-sample interval of ``est`` is narrower than
    ``gap`` (1 when none is; 0 for a constant). Remembered by value: the futility rule asks
    again for the p-value the look's repeated p-value was read from (a root search for two
    parts)."""
    if est.se == 0:
        return 0.0
    return float(min(1.0, 2 * _invert(est.halfwidth, gap, est.parts)))  # one part: t's own
