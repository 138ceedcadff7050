"""What a sequential design promises, in its own words: the plan of ``--until-decided``.

A fixed test's plan says "a difference of X is detected with 80 % power at N seeds". A
sequential design is judged by what it decides and what it spends on the way
(:mod:`recaudit.stats._design`): with a cap of ``N``, the difference it decides in the right
direction 80 % of the time, how many replicates it spends there on average, and how many a
comparison with no difference costs before futility (or the cap) stops it.
:func:`design_summary` computes these for one comparison from an estimate of its variance
(a pilot store, or a calibration) projected to the cap; the figures are the design's
operating characteristics on the t scale (simulated), scaled by that standard error; an
audit's test queries' part, which more replicates do not shrink, is simulated as one draw
shared by every look.
"""

from __future__ import annotations

from dataclasses import dataclass

from recaudit.stats._design import fixed_drift, futility_levels, operating, powered
from recaudit.stats._estimate import Estimate
from recaudit.stats._plan import SequentialPlan

__all__ = ["DesignSummary", "design_summary"]


@dataclass(frozen=True)
class DesignSummary:
    """One comparison's design (module docstring). cap: its last look; looks: all of them;
    level: the comparison's level (its share of the family's alpha); decided: the
    difference decided in its direction 80 % of the time; spent: the replicates spent on
    average there; null_spent: those spent when there is no difference; detect, power,
    detect_spent: at the asked difference (``--detect``), the share decided and the
    replicates spent (None when none was asked); futility: whether the design stops for
    futility."""

    cap: int
    looks: tuple[int, ...]
    level: float
    decided: float
    spent: float
    null_spent: float
    futility: bool
    detect: float | None = None
    power: float | None = None
    detect_spent: float | None = None

    def sentence(self, unit: str = "seeds") -> str:
        """``with a cap of 32, a difference of X is decided 80 % of the time, after about N
        seeds on average``, with the asked difference's figures after it."""
        text = (f"with a cap of {self.cap}, a difference of {self.decided:.4g} is decided "
                f"80 % of the time, after about {self.spent:.0f} {unit} on average (no "
                f"difference: about {self.null_spent:.0f})")
        if self.detect is not None and self.power is not None:
            text += (f"; {self.detect:g} is decided {100 * self.power:.0f} % of the time, "
                     f"after about {self.detect_spent:.0f}")
        return text


def design_summary(estimate: Estimate, plan: SequentialPlan, *, comparisons: int = 1,
                   detect: float | None = None) -> DesignSummary:
    """The design of ``plan`` for a comparison whose variance ``estimate`` describes (at
    any number of replicates: its replicate part is projected to the cap, its query part
    kept), tested at ``plan.alpha / comparisons`` (Bonferroni: the level Holm starts a
    family of that many at). ``detect``: a difference to give the power of (default
    ``plan.detect``). Needs a calibrated rule (the ladder's rules have no design to
    describe: a :class:`ValueError`)."""
    if not plan.calibrated:
        raise ValueError(f"the rule {plan.rule!r} projects from the observed difference: it "
                         "has no operating characteristics to plan with")
    looks = plan.designed
    a = plan.alpha / max(1, comparisons)
    nominal = tuple(plan.nominal(k, a) for k in range(1, len(looks) + 1))
    at_cap = estimate.with_replicates(looks[-1])
    se = at_cap.se
    # the test queries' part of the variance at the cap: it does not shrink with replicates
    share = 0.0 if at_cap.design != "crossed" or not se > 0 else \
        float(sum(v for v, _ in at_cap.parts[1:]) / se ** 2)
    detect = plan.detect if detect is None else detect
    fut_theta = None
    if plan.futility:
        fut_theta = plan.detect / se if plan.detect is not None and se > 0 else \
            fixed_drift(looks[-1], a)
    theta, spent = powered(looks, nominal, a, futility_theta=fut_theta, share=share)
    fut = None if fut_theta is None else futility_levels(looks, nominal, fut_theta)
    null = operating(looks, nominal, 0.0, futility=fut, share=share).expected
    power = detect_spent = None
    if detect is not None and se > 0:
        at = operating(looks, nominal, detect / se, futility=fut, share=share)
        power, detect_spent = at.power, at.expected
    return DesignSummary(looks[-1], looks, a, theta * se, spent, null, plan.futility,
                         detect, power, detect_spent)
