"""A paper's claim as tested comparisons, decided in three-valued logic.

A claim is a tree of *rules* over measure keys. The leaves are comparisons, each tested on
the recorded samples (:class:`Samples`):

- :class:`Less` ``a < b`` (``Greater``: ``a > b``): paired per (replicate, unit) when both
  keys were measured on the same ones — the protocol of Betello et al. 2023 and Oh et al.
  2022, Shapiro-Wilk then paired t or Wilcoxon, combined with the interval over seeds and
  queries (:func:`recaudit.stats.paired_test`) — else Welch's unpaired test. Replicates
  ``"<seed>:<draw>"`` with other draws on the two sides (a perturbation that draws nothing at
  random is one draw per seed, :attr:`recaudit.perturb.Needs.rng`) are paired per (seed,
  unit), each side's draws averaged within the seed;
- :class:`Bound` ``a < c`` or ``a > c`` for a constant (one-sample test);
- :class:`Contrast` ``sum_i w_i mean(k_i) > 0`` over independent samples (e.g. a least-squares
  slope across mix ratios): ``t = C / sqrt(sum_i w_i^2 s_i^2 / n_i)`` with Welch-Satterthwaite
  degrees of freedom;
- :class:`Within` ``|a - b| <= rel |b|``: equivalence by two one-sided tests (TOST): it holds
  when the ``1 - 2 alpha`` interval of ``a - b`` lies inside the margin, is contradicted when
  the ``1 - alpha`` interval lies outside it;
- :class:`Exact` a function of the means of deterministic quantities (counts, a fitted
  model's properties given its seed): no sampling error, decided as computed.

A key without samples is compared on its value alone (test ``point``): right for
deterministic quantities, and named as such in the report for the rest.

Each leaf is *true* (significant in the claim's direction), *false* (significant the other
way) or *undecided*; the p-values of an experiment's leaves are Holm-adjusted together at the
paper's ``alpha``. A comparison without variation (every sample constant: test ``constant``)
is decided as computed, with one exception, the *tie*: both sides equal in every replicate
and unit (Shriver 2018's TopOut of 0 for a heuristic and for random fuzzing in every
modification set). A strict claim on a tie (``a > b``, ``a < c``) is undecided — equal is
not "beats", and a sample without variance is no evidence that the two never differ, so it
is not the opposite either — while its negation (:class:`Not`: "a never beats b") holds by
its exact meaning: no sample shows ``a`` above ``b``. A tie of point values (no samples)
reads the same way. :class:`All`, :class:`AnyOf` and :class:`AtLeast` combine them in Kleene's
strong three-valued logic: ``All`` is false as soon as one part is false, true when all are
true, undecided otherwise; ``AtLeast(n, parts)`` is true when ``n`` parts are true, false when
more than ``len(parts) - n`` are false; :class:`Not` swaps true and false (so "X never beats
Y" holds only where X is significantly below Y, or ties with it), a tie aside: every rule
also knows the truth of its negation (:meth:`Rule.negation`), which differs from ``not
truth`` only through ties.

A leaf whose keys were not all measured (a run that took part of the grid, or stopped
part-way) is *not measured*: undecided, and counted in Holm's family with p = 1, so the
measured leaves are adjusted as if it had been tested. Kleene's logic then decides a claim
whose missing leaves cannot change it ("CASPER is among the two lowest" holds when it is
significantly below all but one of the others, whatever the missing one gives); a claim they
could change stays not measured.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["All", "AnyOf", "AtLeast", "Bound", "Contrast", "Exact", "Finding", "Greater",
           "Less", "Not", "Rule", "Samples", "Within", "among_lowest", "decide", "lowest",
           "ordered"]

Samples = Mapping[str, pd.DataFrame]  # key -> columns replicate, unit, value


@dataclass(frozen=True)
class Finding:
    """A tested leaf: ``truth`` (None: undecided) after Holm's adjustment, the raw and
    adjusted p-values, the difference in the claim's direction with its 95 % interval, the
    minimum detectable effect at 80 % power and, when undecided, the replicates (seeds or
    draws) that would detect the observed difference (None: more replicates alone would not,
    or one replicate measured no replicate-to-replicate variation). ``tie``: both sides equal
    without variation (its strict claim undecided, its negation true). Read sequentially
    (test ``sequential``): ``p`` and ``p_adjusted`` are the level spent at the look,
    ``look`` the replicates it read, ``next`` the next round's, ``equivalent`` a difference
    inside the plan's margin. ``margin``: an equivalence leaf's (:class:`Within`) margin
    ``rel * |mean(b)|``; such a leaf is decided by two one-sided tests on the interval at
    the paper's alpha, so its ``p`` (of a zero difference) decides nothing. ``stop``: read
    sequentially and undecided, why no more replicates go to it (``futility``, ``cap``,
    ``beyond cap``; empty while it runs)."""

    text: str
    test: str
    difference: float
    low: float
    high: float
    p: float
    detectable: float
    needed: int | None
    levels: str
    raw_truth: bool | None = None  # the direction of the estimate, before the test
    p_adjusted: float = float("nan")
    truth: bool | None = None
    tie: bool = False  # both sides equal without variation (module docstring)
    # read sequentially (recaudit.reproduce._sequential): the replicates looked at, the
    # rung the next round runs to, and an equivalence within the plan's margin
    look: int = 0
    next: int | None = None
    equivalent: bool = False
    margin: float | None = None
    stop: str = ""  # read sequentially, undecided: why it stopped (Sequential.status)

    def to_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


def _frame(samples: Samples, key: str) -> pd.DataFrame | None:
    f = samples.get(key)
    return None if f is None or not len(f) else f


def _decided(est, diff: float, p: float, alpha: float, text: str, test: str) -> Finding:
    low, high = est.interval(0.95)
    needed = est.replicates_for(diff, alpha)  # kept by decide() only where undecided
    return Finding(text, test, diff, low, high, p, est.detectable(alpha), needed, est.levels,
                   raw_truth=bool(diff > 0) if diff != 0 else None,
                   tie=test == "constant" and diff == 0)


def _point(text: str, diff: float) -> Finding:
    return Finding(text, "point", diff, diff, diff, 0.0 if diff != 0 else 1.0, 0.0, None,
                   "none", raw_truth=bool(diff > 0) if diff != 0 else None, tie=diff == 0)


def _seed(replicates: pd.Series) -> pd.Series:
    return replicates.astype(str).str.split(":", n=1).str[0]


def _same_pairs(fa: pd.DataFrame, fb: pd.DataFrame) -> bool:
    """Both frames list the same (replicate, unit) pairs in the same order."""
    return len(fa) == len(fb) and all(
        np.array_equal(fa[c].to_numpy(), fb[c].to_numpy()) for c in ("replicate", "unit"))


def _pairs(fa: pd.DataFrame, fb: pd.DataFrame) -> pd.DataFrame | None:
    """``replicate, unit, value_a, value_b`` of two keys measured on the same (replicate,
    unit) pairs; else, for replicates ``"<seed>:<draw>"`` with other draws on each side, on
    the same (seed, unit) pairs, each side's draws averaged within the seed; else None."""
    if _same_pairs(fa, fb):  # the common case (one record's keys): what the merge would give
        return pd.DataFrame({"replicate": fa["replicate"], "unit": fa["unit"],
                             "value_a": fa["value"].to_numpy(),
                             "value_b": fb["value"].to_numpy()})
    joined = fa.merge(fb, on=["replicate", "unit"], suffixes=("_a", "_b"))
    if len(joined) == len(fa) == len(fb):
        return joined
    if not all(f["replicate"].astype(str).str.contains(":", regex=False).all()
               for f in (fa, fb)):
        return None
    a, b = (f.assign(replicate=_seed(f["replicate"])).groupby(
        ["replicate", "unit"], as_index=False, sort=False)["value"].mean() for f in (fa, fb))
    joined = a.merge(b, on=["replicate", "unit"], suffixes=("_a", "_b"))
    return joined if len(joined) == len(a) == len(b) else None


def _compare(samples: Samples, means: Mapping[str, float], a: str, b: str | float,
             text: str, alpha: float, scale: float = 1.0, on_a: bool = False) -> Finding:
    """``mean(a) - scale * b`` (``b`` a key or a constant; ``on_a``: the scale multiplies
    ``a`` instead), tested paired or unpaired."""
    from recaudit.stats import one_sample_test, paired_test, welch_test

    sa, sb = (scale, 1.0) if on_a else (1.0, scale)
    fa = _frame(samples, a)
    fb = _frame(samples, b) if isinstance(b, str) else None
    if fa is not None and sa != 1.0:
        fa = fa.assign(value=sa * fa.value)
    if fb is not None and sb != 1.0:
        fb = fb.assign(value=sb * fb.value)
    ma = sa * means[a]
    mb = sb * means[b] if isinstance(b, str) else float(b)
    if fa is None or (isinstance(b, str) and fb is None):
        return _point(text, ma - mb)
    if fb is None:
        t = one_sample_test(fa.value.to_numpy(), mb, fa.replicate.to_numpy(),
                            fa.unit.to_numpy())
    else:
        joined = _pairs(fa, fb)
        if joined is not None:
            t = paired_test(joined.value_a.to_numpy(), joined.value_b.to_numpy(),
                            joined.replicate.to_numpy(), joined.unit.to_numpy())
        else:
            t = welch_test(fa.value.to_numpy(), fb.value.to_numpy())
    return _decided(t.estimate, t.difference, t.p, alpha, text, t.test)


class Rule:
    """A claim's rule (module docstring): ``leaves()`` to test, ``truth(found)`` to decide,
    ``negation(found)`` for the truth of its negation."""

    def leaves(self) -> list[Rule]:
        return [self]

    def keys(self) -> tuple[str, ...]:
        return tuple(k for leaf in self.leaves() for k in leaf._keys())

    def _keys(self) -> tuple[str, ...]:
        raise NotImplementedError

    def test(self, samples: Samples, means: Mapping[str, float], alpha: float) -> Finding:
        raise NotImplementedError

    def label(self) -> str:
        """How findings name this leaf (``a < b``, ``a > 0.7``, a contrast's text)."""
        return " vs ".join(self._keys())

    def truth(self, found: Mapping[int, Finding]) -> bool | None:
        return found[id(self)].truth

    def negation(self, found: Mapping[int, Finding]) -> bool | None:
        """The truth of "not this rule": ``not truth``, and true on a tie (module
        docstring)."""
        f = found[id(self)]
        if f.tie:
            return True
        return None if f.truth is None else not f.truth


def _times(scale: float, key: str) -> str:
    return key if scale == 1.0 else f"{scale:g} x {key}"


@dataclass(frozen=True, eq=False)
class Less(Rule):
    """``mean(a) < scale * mean(b)``; ``above=True``: ``mean(a) > scale * mean(b)``
    (:func:`Greater`)."""

    a: str
    b: str
    scale: float = 1.0
    above: bool = False

    def _keys(self):
        return (self.a, self.b)

    def label(self):
        return f"{self.a} {'>' if self.above else '<'} {_times(self.scale, self.b)}"

    def test(self, samples, means, alpha):
        text = self.label()
        if self.above:
            return _compare(samples, means, self.a, self.b, text, alpha, self.scale)
        # difference scale * b - a: positive when the claim's direction holds
        return _compare(samples, means, self.b, self.a, text, alpha, self.scale, True)


def Greater(a: str, b: str, scale: float = 1.0) -> Less:  # noqa: N802 - reads as a rule
    """``mean(a) > scale * mean(b)``."""
    return Less(a, b, scale, above=True)


@dataclass(frozen=True, eq=False)
class Bound(Rule):
    """``mean(a) < value`` (``below=True``) or ``> value``."""

    a: str
    value: float
    below: bool = True

    def _keys(self):
        return (self.a,)

    def label(self):
        return f"{self.a} {'<' if self.below else '>'} {self.value:g}"

    def test(self, samples, means, alpha):
        f = _compare(samples, means, self.a, self.value, self.label(), alpha)
        if not self.below:
            return f
        return Finding(f.text, f.test, -f.difference, -f.high, -f.low, f.p, f.detectable,
                       f.needed, f.levels, None if f.raw_truth is None else not f.raw_truth,
                       tie=f.tie)


@dataclass(frozen=True, eq=False)
class Contrast(Rule):
    """``sum_i w_i mean(k_i) > 0`` (module docstring): paired when every key was measured on
    the same (replicate, unit) pairs — the contrast computed per pair, then tested as one
    sample — else over independent samples with Welch-Satterthwaite degrees of freedom."""

    weights: tuple[tuple[str, float], ...]
    text: str

    def _keys(self):
        return tuple(k for k, _ in self.weights)

    def label(self):
        return self.text

    def test(self, samples, means, alpha):
        from recaudit.stats import Estimate, one_sample_test

        frames = [_frame(samples, k) for k, _ in self.weights]
        c = float(sum(w * means[k] for k, w in self.weights))
        found_frames = [f for f in frames if f is not None and len(f) >= 2]
        if len(found_frames) < len(frames):
            return _point(self.text, c)
        frames = found_frames
        index = [f.set_index(["replicate", "unit"]).value for f in frames]
        pairs_of = [set(ix.index) for ix in index]
        if all(p == pairs_of[0] and len(p) == len(ix) for p, ix in zip(pairs_of, index)):
            per_pair = sum(w * ix.reindex(index[0].index)
                           for (_, w), ix in zip(self.weights, index))
            pairs = per_pair.reset_index()
            t = one_sample_test(pairs.value.to_numpy(), 0.0, pairs.replicate.to_numpy(),
                                pairs.unit.to_numpy())
            return _decided(t.estimate, t.difference, t.p, alpha, self.text, t.test)
        parts = [(w * w * f.value.var(ddof=1) / len(f), len(f) - 1.0)
                 for (_, w), f in zip(self.weights, frames)]
        var = sum(v for v, _ in parts)
        df = var ** 2 / sum(v * v / d for v, d in parts if v > 0) if var > 0 else 1.0
        est = Estimate(c, ((var, df),), int(sum(len(f) for f in frames)),
                       min(len(f) for f in frames), 1, "two-sample" if var > 0 else "constant")
        from scipy import stats as sps   # (here: listing the experiments imports no scipy)

        p = (0.0 if c != 0 else 1.0) if var == 0 else \
            float(2 * sps.t.sf(abs(c) / np.sqrt(var), df))
        found = _decided(est, c, p, alpha, self.text, "welch-contrast")
        return replace(found, tie=var == 0 and c == 0)


@dataclass(frozen=True, eq=False)
class Within(Rule):
    """``|mean(a) - mean(b)| <= rel * |mean(b)|`` by two one-sided tests (TOST)."""

    a: str
    b: str
    rel: float

    def _keys(self):
        return (self.a, self.b)

    def label(self):
        return f"|{self.a} - {self.b}| <= {self.rel:g} x |{self.b}|"

    def test(self, samples, means, alpha):
        text = self.label()
        f = _compare(samples, means, self.a, self.b, text, alpha)
        margin = self.rel * abs(means[self.b])
        if f.test == "point":
            inside = abs(f.difference) <= margin
            return Finding(text, "point", margin - abs(f.difference), f.low, f.high,
                           0.0, 0.0, None, "none", raw_truth=inside)
        return replace(f, tie=False)  # decided by decide(): TOST on the finding's interval


@dataclass(frozen=True, eq=False)
class Exact(Rule):
    """A function of deterministic quantities' values, decided as computed."""

    fn: Callable[[Mapping[str, float]], bool]
    over: tuple[str, ...]
    text: str = "exact"

    def _keys(self):
        return self.over

    def test(self, samples, means, alpha):
        holds = bool(self.fn(means))
        return Finding(self.text, "exact", float("nan"), float("nan"), float("nan"),
                       0.0, 0.0, None, "none", raw_truth=holds)


@dataclass(frozen=True, eq=False)
class AtLeast(Rule):
    """True when ``n`` of ``parts`` are true; false when more than ``len(parts) - n`` are
    false (Kleene)."""

    n: int
    parts: tuple[Rule, ...]

    def leaves(self):
        return [leaf for p in self.parts for leaf in p.leaves()]

    def truth(self, found):
        values = [p.truth(found) for p in self.parts]
        if sum(v is True for v in values) >= self.n:
            return True
        if sum(v is False for v in values) > len(values) - self.n:
            return False
        return None

    def negation(self, found):
        """True when more than ``len(parts) - n`` parts' negations are true (fewer than
        ``n`` parts can hold); false when ``n`` parts are true."""
        if sum(p.negation(found) is True for p in self.parts) > len(self.parts) - self.n:
            return True
        if sum(p.truth(found) is True for p in self.parts) >= self.n:
            return False
        return None


@dataclass(frozen=True, eq=False)
class Not(Rule):
    """The negation: true when ``part`` is false, false when true, undecided otherwise (a
    claim that something does *not* happen is shown only by its opposite, significant), and
    true where ``part`` is a strict comparison on a tie (module docstring)."""

    part: Rule

    def leaves(self):
        return self.part.leaves()

    def truth(self, found):
        return self.part.negation(found)

    def negation(self, found):
        return self.part.truth(found)


def All(*parts: Rule) -> AtLeast:  # noqa: N802 - reads as a logical connective
    return AtLeast(len(parts), tuple(parts))


def AnyOf(*parts: Rule) -> AtLeast:  # noqa: N802
    return AtLeast(1, tuple(parts))


def lowest(target: str, others) -> AtLeast:
    """``target`` lower than every one of ``others``."""
    return All(*(Less(target, o) for o in others if o != target))


def among_lowest(target: str, others, n: int) -> AtLeast:
    """``target`` among the ``n`` lowest: below all but ``n - 1`` of ``others`` (false when
    ``n`` of them are significantly below it)."""
    rest = [o for o in others if o != target]
    return AtLeast(len(rest) - (n - 1), tuple(Less(target, o) for o in rest))


def ordered(*keys: str) -> AtLeast:
    """``keys[0] < keys[1] < ...``."""
    return All(*(Less(a, b) for a, b in zip(keys, keys[1:])))


#: The test of a leaf whose keys were not all measured (module docstring).
UNMEASURED = "not measured"


def _unmeasured(leaf: Rule) -> Finding:
    nan = float("nan")
    return Finding(f"{' vs '.join(leaf._keys())} (not measured)", UNMEASURED, nan, nan, nan,
                   1.0, nan, None, "none")


def decide(rules: list[Rule], samples: Samples, means: Mapping[str, float],
           alpha: float) -> tuple[list[bool | None], dict[int, Finding]]:
    """Test every leaf of ``rules`` once, Holm-adjust their p-values together (exact and
    point leaves are not tests and are not counted), and decide each rule."""
    from recaudit.stats import holm

    leaves = {id(leaf): leaf for r in rules for leaf in r.leaves()}
    found = {i: leaf.test(samples, means, alpha)
             if all(k in means for k in leaf._keys()) else _unmeasured(leaf)
             for i, leaf in leaves.items()}
    tested = [i for i, f in found.items() if f.test not in ("exact", "point")]
    adjusted = dict(zip(tested, holm([found[i].p for i in tested])))
    for i, f in found.items():
        p_adj = adjusted.get(i, f.p)
        if f.test == UNMEASURED:
            truth = None
        elif f.test in ("exact", "point"):
            truth = f.raw_truth
        elif isinstance(leaf := leaves[i], Within):  # constant too: inside the margin or not
            truth = _tost(f, leaf, means, alpha, p_adj)
            f = replace(f, margin=leaf.rel * abs(means[leaf.b]))
        elif f.tie:  # equal without variation: neither side beats (module docstring)
            truth = None
        elif f.test == "constant":  # no variation: decided as computed
            truth = bool(f.raw_truth)
        else:
            truth = None if not p_adj < alpha else f.raw_truth
        found[i] = replace(f, p_adjusted=p_adj, truth=truth,
                           needed=f.needed if truth is None else None)
    return [r.truth(found) for r in rules], found


def _tost(f: Finding, rule: Within, means: Mapping[str, float], alpha: float,
          p_adj: float) -> bool | None:
    """TOST on a finding of ``a - b``: its interval at ``1 - 2 alpha`` rebuilt from the 95 %
    one by scaling the half-width (normal approximation of the ratio of quantiles)."""
    margin = rule.rel * abs(means[rule.b])
    half95 = (f.high - f.low) / 2
    if not np.isfinite(half95):
        return None
    from scipy import stats as sps

    z = sps.norm.ppf
    half_eq = half95 * z(1 - alpha) / z(0.975)
    half_diff = half95 * z(1 - alpha / 2) / z(0.975)
    if abs(f.difference) + half_eq <= margin:
        return True
    if abs(f.difference) - half_diff > margin:
        return False
    return None
