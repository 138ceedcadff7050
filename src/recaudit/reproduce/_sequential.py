"""A paper's claims decided sequentially: what ``reproduce run --until-decided`` reads.

The fixed-sample reading (:func:`recaudit.reproduce.rules.decide`: every leaf tested once,
Holm over the experiment) is right for a grid fixed before the run. A run that adds seeds,
draws or modification sets until its claims are decided looks at every leaf again after each
round, so each leaf is instead decided by the sequential rule
(:func:`recaudit.stats.sequential_family`: repeated p-values on the ladder 3, 4, 6, 8, 12,
... replicates, Holm over the experiment's tested leaves), which keeps the experiment's
family-wise error rate at the paper's ``alpha`` under any number of looks.

Each leaf's difference is the one the fixed reading tests, in the claim's direction: paired per
(replicate, unit) where both keys were measured on the same pairs (the replicate — seed, draw —
is what grows), else two independent samples whose units are the replicates (Shriver 2018's
modification sets, compared by Welch's interval; set ``i`` of each cell is its ``i``-th
replicate), a one-sample difference against a constant, or a contrast. A leaf is then

- *true* when the interval lies on the claim's side of 0, *false* when on the other side;
- *equivalent* when the plan has a margin and the interval lies within it: neither true nor
  false, but decided — the comparison shows no difference as large as the margin, so more
  replicates are not spent on it. For a directional claim ("A beats B") this means the
  claimed effect, if any, is smaller than the margin: the claim is not supported at a size
  that matters, which the report says in those words; it is not "contradicted" (that needs the
  opposite direction);
- for :class:`~recaudit.reproduce.rules.Within` (|a - b| within ``rel x |b|``, the paper's
  own tolerance as its margin, in a family of its own with its share of alpha): true when
  decided equivalent; false when the latest look's interval lies wholly outside the tolerance
  (a reading of that one look at the leaf's Holm level, not a sequential test of its own);
- undecided otherwise, with the rung that would decide it (``need``) and the next round's.

Ties, constants, exact and point leaves read as in the fixed reading.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping

import numpy as np
import pandas as pd

from recaudit.reproduce.rules import (Bound, Contrast, Finding, Less, Rule, Samples, Within,
                                      _frame, _pairs, _unmeasured)
from recaudit.stats import (Estimate, Sequential, SequentialPlan, estimate_mean,
                            sequential_family, welch)

__all__ = ["decide_sequential", "leaf_estimator"]


def _natural(values) -> np.ndarray:
    """Codes of ``values`` in natural order (``"2:0" < "10:0"``; ``"AMR:3" < "AMR:12"``)."""
    def key(v: object) -> tuple:
        return tuple(int(p) if p.isdigit() else p for p in re.split(r"(\d+)", str(v)))

    uniq = sorted(set(values), key=key)
    code = {u: i for i, u in enumerate(uniq)}
    return np.array([code[v] for v in values], dtype=np.int64)


def _paired(frame: pd.DataFrame, a: str = "value_a", b: str | None = "value_b",
            const: float = 0.0):
    """(estimate_at, available) of a paired or one-sample difference per (replicate, unit)."""
    d = frame[a].to_numpy(float) - (frame[b].to_numpy(float) if b else const)
    reps = _natural(frame["replicate"].to_numpy())
    units = frame["unit"].to_numpy()

    def at(r: int) -> Estimate:
        keep = reps < r
        return estimate_mean(d[keep], reps[keep], units[keep])
    return at, int(reps.max()) + 1 if len(reps) else 0


def _independent(fa: pd.DataFrame, fb: pd.DataFrame):
    """(estimate_at, available) of two independent samples whose units are the replicates."""
    xa = fa.iloc[np.argsort(_natural(fa["unit"].to_numpy()), kind="stable")].value.to_numpy(float)
    xb = fb.iloc[np.argsort(_natural(fb["unit"].to_numpy()), kind="stable")].value.to_numpy(float)
    return (lambda r: welch(xa[:r], xb[:r])), min(len(xa), len(xb))


def leaf_estimator(leaf: Rule, samples: Samples, means: Mapping[str, float]):
    """``(estimate_at, available)`` of a tested leaf's difference in the claim's direction
    (module docstring): ``estimate_at(r)`` is the difference over the first ``r``
    replicates; None for a leaf without samples (compared on its values)."""
    if isinstance(leaf, Contrast):
        found = [_frame(samples, k) for k, _ in leaf.weights]
        frames = [f for f in found if f is not None]
        if len(frames) < len(found):
            return None
        index = [f.set_index(["replicate", "unit"]).value for f in frames]
        if not all(set(ix.index) == set(index[0].index) for ix in index):
            return None  # independent samples: no replicate to grow (read as fixed)
        per_pair = sum(w * ix.reindex(index[0].index) for (_, w), ix in
                       zip(leaf.weights, index)).reset_index()
        return _paired(per_pair, "value", None)
    if isinstance(leaf, (Less, Within)):
        a, b = (leaf.a, leaf.b)
        sa, sb = 1.0, getattr(leaf, "scale", 1.0)
        if isinstance(leaf, Less) and not leaf.above:  # difference scale * b - a
            a, b, sa, sb = leaf.b, leaf.a, leaf.scale, 1.0
        fa, fb = _frame(samples, a), _frame(samples, b)
        if fa is None or fb is None:
            return None
        fa, fb = fa.assign(value=sa * fa.value), fb.assign(value=sb * fb.value)
        joined = _pairs(fa, fb)
        return _paired(joined) if joined is not None else _independent(fa, fb)
    if isinstance(leaf, Bound):
        fa = _frame(samples, leaf.a)
        if fa is None:
            return None
        at, n = _paired(fa.rename(columns={"value": "v"}), "v", None, leaf.value)
        if not leaf.below:
            return at, n

        def flipped(r: int) -> Estimate:  # value - mean(a): positive when below holds
            e = at(r)
            return dataclasses.replace(e, mean=-e.mean)
        return flipped, n
    return None


def _finding(leaf: Rule, s: Sequential, text: str, plan: SequentialPlan) -> Finding:
    est = s.estimate
    within = isinstance(leaf, Within)
    if s.look == 0 or est.design == "empty":
        truth = None
    elif within:  # equivalent within the tolerance, or wholly outside it (module docstring)
        m = plan.margin
        truth = True if s.within_margin else \
            False if (s.low > m or s.high < -m) else None
    else:
        truth = {"greater": True, "less": False}.get(s.decision)
    tie = est.design == "constant" and est.mean == 0
    if est.design == "constant" and not within:
        truth = None if tie else bool(est.mean > 0)
    return Finding(text, "sequential", est.mean, s.low, s.high,
                   s.p_equivalent if within or s.decision == "equivalent" else s.p,
                   est.detectable(s.level) if est.design not in ("empty", "constant")
                   else 0.0, s.need if truth is None else None, est.levels,
                   raw_truth=bool(est.mean > 0) if est.mean == est.mean and est.mean != 0
                   else None, p_adjusted=s.level, truth=truth, tie=tie,
                   look=s.look, next=s.next if truth is None else None,
                   equivalent=s.decision == "equivalent" and not within,
                   stop=s.status if truth is None and s.status != "running" else "")


def decide_sequential(rules: list[Rule], samples: Samples, means: Mapping[str, float],
                      plan: SequentialPlan) -> tuple[list[bool | None], dict[int, Finding]]:
    """Every leaf of ``rules`` decided by the sequential rule (module docstring), the tested
    leaves one family (Holm on their repeated p-values; a :class:`Within` leaf's tolerance is
    its margin); the same return as :func:`recaudit.reproduce.rules.decide`."""
    leaves = {id(leaf): leaf for r in rules for leaf in r.leaves()}
    estimators = {i: leaf_estimator(leaf, samples, means) for i, leaf in leaves.items()
                  if all(k in means for k in leaf._keys())}
    found: dict[int, Finding] = {}
    family: dict[float, list[int]] = {}   # leaves by margin: one Holm family per margin
    for i, leaf in leaves.items():
        if i not in estimators:
            found[i] = _unmeasured(leaf)
        elif estimators[i] is None:  # no samples: as computed (exact, point)
            fixed = leaf.test(samples, means, plan.alpha)
            truth = fixed.raw_truth if fixed.test in ("exact", "point") else None
            found[i] = dataclasses.replace(fixed, truth=truth, p_adjusted=fixed.p)
        else:
            margin = leaf.rel * abs(means[leaf.b]) if isinstance(leaf, Within) else \
                plan.margin
            family.setdefault(margin, []).append(i)
    tested = sum(len(v) for v in family.values())
    for margin, ids in family.items():
        # the families share alpha in proportion to their size (Bonferroni between them)
        own = dataclasses.replace(plan, margin=margin,
                                  alpha=plan.alpha * len(ids) / max(1, tested))
        decided = sequential_family([estimators[i] for i in ids], own)
        for i, s in zip(ids, decided):
            found[i] = _finding(leaves[i], s, leaves[i].label(), own)
    return [r.truth(found) for r in rules], found
