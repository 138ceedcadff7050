"""What a reproduction is: published values, the paper's claims, our measures, a verdict.

An :class:`Experiment` re-runs one table or figure of a paper at a named *scale* (``small``:
fits on 2 CPU cores in about an hour, with the reductions its ``scales`` entry lists;
``paper``: the paper's own settings) and returns our *measures*, a flat mapping
``"model/perturbation/metric" -> float``. It carries

- :class:`Value` rows: a number printed in the paper (with its table or figure) next to the
  measure that corresponds to it, and the absolute tolerance within which ours "matches";
- :class:`Claim` rows: findings stated in the paper's text, checked on our measures (e.g.
  "CASPER lowers LatentCross's RBO more than random deletion").

Verdict (:func:`verdict`): **reproduced** when every claim holds and every value matches;
**direction reproduced** when every claim holds but some values do not match (the effect is
there, its size differs); **not reproduced** when a claim fails; **not run** without measures.
Values without a claim never decide "not reproduced" on their own: a different absolute level
at a reduced scale is expected, a reversed finding is not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Value", "Claim", "Experiment", "Scope", "verdict", "compare_values",
           "VERDICTS"]

VERDICTS = ("reproduced", "direction reproduced", "not reproduced", "not run")


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
    """A finding of the paper, tested on our measures (``keys`` must all be measured)."""

    text: str
    source: str
    keys: tuple[str, ...]
    test: Callable[[Mapping[str, float]], bool]

    def check(self, measures: Mapping[str, float]) -> bool | None:
        if any(k not in measures for k in self.keys):
            return None
        return bool(self.test(measures))


@dataclass(frozen=True)
class Scope:
    """The part of a scale's grid a run takes: the first ``seeds`` training seeds, ``draws``
    perturbation draws per trained model, only the ``models`` named (``None``: the scale's
    own). Users, epochs and model sizes are never reduced this way: a run that cannot afford
    the whole grid takes less of it, says so in its record, and the claims it cannot read
    stay undecided."""

    seeds: int | None = None
    draws: int | None = None
    models: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        from recaudit.errors import ConfigError

        for key in ("seeds", "draws"):
            v = getattr(self, key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 1):
                raise ConfigError(f"{key} must be an integer >= 1, got {v!r}", key=key)
        if self.models is not None:
            object.__setattr__(self, "models", tuple(self.models))
            if not self.models:
                raise ConfigError("models must name at least one model", key="models")

    @property
    def reduced(self) -> bool:
        return self.seeds is not None or self.draws is not None or self.models is not None

    def flags(self) -> str:
        """The command-line options of this scope (``" --seeds 1 --models jodie"``)."""
        parts = [(k, getattr(self, k)) for k in ("seeds", "draws")]
        parts.append(("models", None if self.models is None else ",".join(self.models)))
        return "".join(f" --{k} {v}" for k, v in parts if v is not None)

    def take(self, seeds: tuple[int, ...], draws: int = 1) -> tuple[tuple[int, ...], int]:
        """The seeds and draws of a run whose scale asks for ``seeds`` and ``draws``."""
        n = len(seeds) if self.seeds is None else min(self.seeds, len(seeds))
        return tuple(seeds[:n]), draws if self.draws is None else min(self.draws, draws)

    def pick(self, models: tuple[str, ...], known: tuple[str, ...]) -> tuple[str, ...]:
        """``models`` restricted to the scope's (each of which must be one of ``known``)."""
        if self.models is None:
            return models
        from recaudit.errors import ConfigError, did_you_mean

        for m in self.models:
            if m not in known:
                raise ConfigError(f"unknown model {m!r} for this experiment; its models are "
                                  f"{', '.join(known)}" + did_you_mean(m, known), key="models")
        return tuple(m for m in models if m in self.models)


@dataclass
class Experiment:
    """One reproducible artefact of a paper (see the module docstring).

    ``run(workdir, scale, workers)`` does the work (resumable: finished parts are kept in
    ``workdir``) and returns the measures. ``unavailable`` explains why it cannot run here
    (e.g. data not available offline), or is ``None``. ``repeatable``: the runner takes a
    fourth argument, the :class:`Scope` of the run (fewer seeds, draws or models than the
    scale's).
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

    def run(self, workdir: Path, scale: str, workers: int = 1,
            scope: Scope | None = None) -> dict[str, float]:
        from recaudit.errors import ConfigError

        if scale not in self.scales:
            raise ConfigError(f"experiment {self.name!r} has no scale {scale!r}; choose one of "
                              f"{', '.join(self.scales)}")
        scope = scope or Scope()
        if scope.reduced and not self.repeatable:
            raise ConfigError(f"experiment {self.name!r} does not take --seeds, --draws or "
                              "--models; run it at its scale's grid")
        workdir.mkdir(parents=True, exist_ok=True)
        if self.repeatable:
            return self.runner(workdir, scale, workers, scope)
        return self.runner(workdir, scale, workers)


def compare_values(exp: Experiment, measures: Mapping[str, float]) -> list[dict[str, Any]]:
    """One row per published value: paper, ours, companions, difference, match."""
    rows = []
    for v in exp.values:
        ours = measures.get(v.key)
        match = None
        if ours is not None and v.paper is not None:
            match = abs(ours - v.paper) <= v.tol
        rows.append({"label": v.label, "source": v.source, "paper": v.paper, "ours": ours,
                     "also": {k: measures.get(k) for k in v.also}, "tol": v.tol,
                     "match": match})
    return rows


def verdict(exp: Experiment, measures: Mapping[str, float]) -> str:
    """``reproduced`` / ``direction reproduced`` / ``not reproduced`` / ``not run``."""
    if not measures:
        return "not run"
    claims = [c.check(measures) for c in exp.claims]
    if any(c is False for c in claims):
        return "not reproduced"
    if any(c is None for c in claims):
        return "not run"
    matches = [r["match"] for r in compare_values(exp, measures) if r["match"] is not None]
    return "reproduced" if all(matches) else "direction reproduced"
