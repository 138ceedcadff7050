"""What a reproduction is: published values, the paper's claims, our measures, a verdict.

An :class:`Experiment` re-runs one table or figure of a paper at a named *scale* (``small``:
fits on 2 CPU cores in about an hour, with the reductions its ``scales`` entry lists;
``paper``: the paper's own settings) and returns our :class:`Measures`: a flat mapping
``"model/perturbation/metric" -> float`` of means, with the *samples* behind them (per key:
``replicate`` — seed or perturbation draw —, ``unit`` — test query, simulated run or
modification set — and ``value``) where the quantity varies. It carries

- :class:`Value` rows: a number printed in the paper (with its table or figure) next to the
  measure that corresponds to it. It *matches* when the paper's number lies within ``tol`` of
  our 95 % interval (of our value, for a quantity without samples);
- :class:`Claim` rows: findings stated in the paper's text, as rules of tested comparisons
  (:mod:`recaudit.reproduce.rules`) at the paper's ``alpha`` — 0.05 for Oh et al. 2022
  (Wilcoxon, Table 4), Zhu et al. 2023 and Shriver 2018 (Welch), 1e-3 for Betello et al. 2023
  (Shapiro-Wilk, then paired t or Wilcoxon) — Holm-adjusted over the experiment. A claim
  *holds* (significant in the paper's direction), is *contradicted* (significant the other
  way) or is *undecided* (not significant: the report gives the effect the run could have
  detected and the replicates that would resolve it).

*Other data*: a claim the paper states about a dataset the run does not have (Shriver 2018's
Chapter 3 on MovieLens 20M, run on ml-latest-small; Betello et al. 2023's Table 3 on ML-1M,
run on ML-100k) is tested on the data that stands in (:attr:`Experiment.substitute` for a
whole scale, :attr:`Claim.substitute` for one claim). It then *holds* or *differs*
(significant the other way on that data), never "contradicted": another dataset says nothing
about a finding on the paper's.

Verdict (:func:`verdict`): **contradicted** when a claim on the paper's data is contradicted;
**incomplete** when none is and some could not be tested because their trials are missing (a
run stopped part-way, or cut with ``--models`` / ``--perturbations``); **undecided** when
some are undecided at this scale; **differs on other data** when the rest hold but a claim
tested on other data differs; **holds on other data** when every claim holds and every one
was tested on other data; **reproduced** when every claim holds and every value matches;
**direction reproduced** when every claim holds but some values do not match (the effect is
there, its size differs); **not run** without measures. Values without a claim never decide
on their own: a different absolute level at a reduced scale is expected, a reversed finding
is not; on other data they do not decide at all.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from recaudit.reproduce._scope import Scope
from recaudit.reproduce.rules import Exact, Finding, Rule, decide

__all__ = ["CLAIM_STATES", "OTHER_DATA_STATES", "OTHER_DATA_VERDICTS", "VERDICTS", "Claim",
           "Experiment", "Measures", "Value", "compare_values", "evaluate_claims", "verdict"]

#: The verdicts a record can get; :data:`OTHER_DATA_VERDICTS` rest on data that stands in for
#: the paper's (counted apart).
VERDICTS = ("reproduced", "direction reproduced", "contradicted", "undecided", "incomplete",
            "holds on other data", "differs on other data", "not run")
OTHER_DATA_VERDICTS = ("holds on other data", "differs on other data")
#: A claim's state: tested in the paper's direction, the other way, or neither.
CLAIM_STATES = {True: "holds", False: "contradicted", None: "undecided"}
#: The same on data that stands in for the paper's: the other way is "differs".
OTHER_DATA_STATES = {True: "holds", False: "differs", None: "undecided"}


class Measures(dict):
    """Means by key, and ``samples``: key -> frame of ``replicate, unit, value`` for the
    quantities that vary (module docstring). A plain dict of means is a :class:`Measures`
    without samples."""

    def __init__(self, means: Mapping[str, float] | None = None,
                 samples: Mapping[str, pd.DataFrame] | None = None) -> None:
        super().__init__(means or {})
        self.samples: dict[str, pd.DataFrame] = dict(samples or {})

    def merge(self, other: Mapping[str, float]) -> None:
        self.update(other)
        self.samples.update(getattr(other, "samples", {}))

    def prefixed(self, prefix: str) -> Measures:
        if not prefix:
            return self
        return Measures({f"{prefix}/{k}": v for k, v in self.items()},
                        {f"{prefix}/{k}": v for k, v in self.samples.items()})


@dataclass(frozen=True)
class Value:
    """One number printed in a paper, and which of our measures corresponds to it.

    ``key``: our measure; ``paper``: the printed value (``None``: only ours is shown, e.g. a
    figure without numbers); ``source``: table or figure; ``tol``: absolute tolerance for a
    match; ``also``: keys of companion measures shown beside ours (RBO p = 0.9 next to average
    overlap, where a paper's "RBO" is average overlap).
    """

    key: str
    label: str
    paper: float | None
    source: str
    tol: float = 0.02
    also: tuple[str, ...] = ()


@dataclass(frozen=True)
class Claim:
    """A finding of the paper as a rule of tested comparisons (:mod:`recaudit.reproduce.rules`);
    :meth:`exact` for a claim on deterministic quantities (counts, a seeded fit's
    properties). ``substitute``: the claim is stated about a dataset the experiment does not
    run, and this says what stands in (``"ML-100k for ML-1M"``): it holds or differs there,
    it is never contradicted (module docstring)."""

    text: str
    source: str
    rule: Rule
    substitute: str | None = None

    @classmethod
    def exact(cls, text: str, source: str, keys, fn: Callable[[Mapping[str, float]], bool],
              substitute: str | None = None) -> Claim:
        return cls(text, source, Exact(fn, tuple(keys)), substitute)

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(self.rule.keys()))

    def check(self, measures: Mapping[str, float], alpha: float = 0.05) -> bool | None:
        """This claim alone on ``measures`` (its own leaves Holm-adjusted): True / False /
        None (undecided, or missing keys that could change it: see :func:`evaluate_claims`)."""
        if not any(k in measures for k in self.keys):
            return None
        return decide([self.rule], getattr(measures, "samples", {}), measures, alpha)[0][0]


@dataclass
class Experiment:
    """One reproducible artefact of a paper (see the module docstring).

    ``run(workdir, scale, workers)`` does the work (resumable: finished parts are kept in
    ``workdir``) and returns the measures. ``unavailable`` explains why it cannot run here
    (e.g. data not available offline), or is ``None``. ``repeatable``: the runner takes a
    fourth argument, the :class:`Scope` of the run (fewer seeds, draws or models than the
    scale's). ``plannable``: the runner trains only through stability audits
    (:func:`recaudit.reproduce._audit.audit_trials`), so ``--dry-run`` can plan it.
    ``substitute``: per scale, the data that stands in for the paper's at that scale (every
    claim is then tested on other data: module docstring), e.g. ``{"small": "ml-latest-small
    for MovieLens 20M"}``. ``downloads``: per scale, the registered datasets
    (:mod:`recaudit.data.datasets`) it reads that a machine may lack: a run checks them first
    and names the ``recaudit datasets fetch`` that gets them. ``unit``: what the samples'
    units are (``queries``, ``users``, ``sets per cell``...) and ``paper_repetitions`` what
    the paper repeated (``"3 seeds"``; empty where it does not say), for the repetitions the
    report shows beside each verdict. ``grows``: what a run that goes on until its claims are
    decided adds (``seeds`` or ``draws``: modification sets, perturbation draws; ``None``:
    it cannot, e.g. exact values). ``models``: the model names its ``--models`` takes (the
    first part of its measure keys), so that such a run grows only the models its undecided
    claims read.
    """

    name: str
    paper: str
    title: str
    artefacts: str
    data: str
    scales: Mapping[str, str]
    runner: Callable[..., dict[str, float]]
    values: tuple[Value, ...] = ()
    claims: tuple[Claim, ...] = ()
    notes: tuple[str, ...] = ()
    unavailable: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)
    repeatable: bool = False
    plannable: bool = False
    alpha: float = 0.05
    substitute: Mapping[str, str] = field(default_factory=dict)
    downloads: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    unit: str = "queries"
    paper_repetitions: str = ""
    grows: str | None = None
    models: tuple[str, ...] = ()

    def other_data(self, claim: Claim, scale: str | None) -> str | None:
        """What stands in for the paper's data for ``claim`` at ``scale`` (None: the paper's
        own data)."""
        return claim.substitute or (self.substitute.get(scale) if scale else None)

    def missing_data(self, scale: str) -> list[str]:
        """The registered datasets ``scale`` reads (:attr:`downloads`) that are not on this
        machine (no mirror, cache or bundled copy)."""
        from recaudit.data import datasets

        reg = datasets.default_registry()
        return [d for d in self.downloads.get(scale, ()) if reg.locate(d) is None]

    def run(self, workdir: Path, scale: str, workers: int = 1,
            scope: Scope | None = None) -> Measures:
        return self.call(workdir, scale, workers, scope, create=True)

    def call(self, workdir: Path, scale: str, workers: int = 1, scope: Scope | None = None,
             *, create: bool = False) -> Measures:
        """The runner, after checking ``scale`` and ``scope``; ``create``: make ``workdir``
        first (a run; planning creates nothing)."""
        from recaudit.errors import ConfigError

        if scale not in self.scales:
            raise ConfigError(f"experiment {self.name!r} has no scale {scale!r}; choose one of "
                              f"{', '.join(self.scales)}")
        missing = self.missing_data(scale)
        if missing:
            raise ConfigError(f"experiment {self.name!r} at scale {scale!r} reads "
                              f"{', '.join(missing)}, which is not on this machine",
                              hint="with network access, "
                              + " and ".join(f"`recaudit datasets fetch {d}`" for d in missing)
                              + " downloads and checks it (or put a copy in a "
                              "$RECAUDIT_MIRROR directory)")
        scope = scope or Scope()
        if scope.reduced and not self.repeatable:
            raise ConfigError(f"experiment {self.name!r} does not take --seeds, --draws, "
                              "--models, --perturbations or --no-train; run it at its "
                              "scale's grid")
        if scope.device is not None and not self.plannable:
            raise ConfigError(f"experiment {self.name!r} is not a stability audit: it trains "
                              "where its own settings say, so it does not take --device",
                              key="device")
        if create:
            workdir.mkdir(parents=True, exist_ok=True)
        out = self.runner(workdir, scale, workers, scope) if self.repeatable else \
            self.runner(workdir, scale, workers)
        return out if isinstance(out, Measures) else Measures(out)


def _interval(measures: Mapping[str, float], key: str) -> tuple[float, float] | None:
    from recaudit.stats import estimate_mean

    f = getattr(measures, "samples", {}).get(key)
    if f is None or len(f) < 2:
        return None
    est = estimate_mean(f.value.to_numpy(), f.replicate.to_numpy(), f.unit.to_numpy())
    return est.interval(0.95) if est.design != "empty" else None


def compare_values(exp: Experiment, measures: Mapping[str, float]) -> list[dict[str, Any]]:
    """One row per published value: paper, ours (with its 95 % interval where sampled),
    companions, difference, match (the paper's number within ``tol`` of our interval)."""
    rows = []
    for v in exp.values:
        ours = measures.get(v.key)
        match, ci = None, None
        if ours is not None:
            ci = _interval(measures, v.key)
        if ours is not None and v.paper is not None:
            low, high = ci if ci is not None else (ours, ours)
            match = low - v.tol <= v.paper <= high + v.tol
        rows.append({"label": v.label, "source": v.source, "paper": v.paper, "ours": ours,
                     "ci": None if ci is None else [float(ci[0]), float(ci[1])],
                     "also": {k: measures.get(k) for k in v.also}, "tol": v.tol,
                     "match": match})
    return rows


def evaluate_claims(exp: Experiment, measures: Mapping[str, float],
                    scale: str | None = None, plan: Any = None) -> list[dict[str, Any]]:
    """Every claim's state (``holds`` / ``contradicted`` / ``undecided`` / ``not measured``;
    ``differs`` instead of ``contradicted`` for a claim tested on other data than the paper's
    at ``scale``, whose ``other_data`` says what stood in) with its tested comparisons, the
    p-values Holm-adjusted over the experiment's claims.

    A claim with some of its keys measured is decided when its missing comparisons cannot
    change it (:mod:`recaudit.reproduce.rules`); its ``missing`` lists the keys not measured.
    One none of whose keys was measured, or that its missing comparisons could change, is
    "not measured".

    ``plan`` (a :class:`~recaudit.stats.SequentialPlan`, for a run that went on until
    decided): every leaf is read by the sequential rule instead
    (:mod:`recaudit.reproduce._sequential`), at the plan's alpha (the paper's), cap and
    margin; a claim undecided whose open comparisons are all *equivalent* (inside the
    margin) is ``equivalent``: the run shows no effect as large as the margin, for or
    against it."""
    measured = [c for c in exp.claims if any(k in measures for k in c.keys)]
    if plan is not None:
        from recaudit.reproduce._sequential import decide_sequential

        truths, found = decide_sequential([c.rule for c in measured],
                                          getattr(measures, "samples", {}), measures, plan)
    else:
        truths, found = decide([c.rule for c in measured], getattr(measures, "samples", {}),
                               measures, exp.alpha)
    state = {id(c): t for c, t in zip(measured, truths)}
    out = []
    for c in exp.claims:
        missing = [k for k in c.keys if k not in measures]
        truth = state.get(id(c))
        findings: list[Finding] = [found[id(leaf)] for leaf in c.rule.leaves()] \
            if id(c) in state else []
        other = exp.other_data(c, scale)
        states = OTHER_DATA_STATES if other else CLAIM_STATES
        open_ = [f for f in findings if f.truth is None]
        name = "not measured" if truth is None and missing else states[truth]
        if truth is None and not missing and open_ and all(f.equivalent for f in open_):
            name = "equivalent"
        out.append({"text": c.text, "source": c.source, "state": name,
                    "holds": truth, "tests": [f.to_dict() for f in findings],
                    **({"missing": missing} if missing else {}),
                    **({"other_data": other} if other else {})})
    return out


def verdict(exp: Experiment, measures: Mapping[str, float],
            claims: list[dict[str, Any]] | None = None, scale: str | None = None) -> str:
    """One of :data:`VERDICTS` (module docstring); ``scale``: the record's, which says
    whether its claims were tested on other data than the paper's. A claim found
    *equivalent* (a sequential run's: no effect as large as its margin) is neither held nor
    contradicted: the verdict counts it as undecided."""
    if not measures:
        return "not run"
    claims = evaluate_claims(exp, measures, scale) if claims is None else claims
    states = [c["state"] for c in claims]
    if "contradicted" in states:
        return "contradicted"
    if "not measured" in states:
        return "incomplete"
    if "undecided" in states or "equivalent" in states:
        return "undecided"
    if "differs" in states:
        return "differs on other data"
    if claims and all(c.get("other_data") for c in claims):
        return "holds on other data"
    matches = [r["match"] for r in compare_values(exp, measures) if r["match"] is not None]
    return "reproduced" if all(matches) else "direction reproduced"
