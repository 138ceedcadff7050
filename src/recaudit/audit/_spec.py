"""Typed audit specifications: what to audit, and the trials that follow from it.

An audit is a grid ``datasets x models x perturbations x seeds`` over one split and one set of
metric settings. Every cell is a :class:`TrialSpec`; its result is a pure function of the spec
(and of the data it names), so trials can run in any order, in any process, on any machine.

A TOML file is the same data as :meth:`AuditConfig.to_dict` (see :func:`load_config`)::

    name = "quick"
    output = "quick.duckdb"
    seeds = [0, 1, 2]                 # or a count: seeds = 3
    draws = 1                         # perturbation draws per trained baseline (Oh et al. 2022
                                      # Table 4 repeats the draw 10 times: draws = 10)
    perturbations = ["random-delete", "casper-delete", "fuzz:AMR:10"]

    [[datasets]]
    name = "synthetic"
    options = { n_users = 300 }

    [[models]]
    name = "gru4rec"
    params = { epochs = 5 }

    [metrics]
    k = 10

    [executor]
    kind = "process"
    workers = 2

Every unknown key, wrong type or impossible value is a :class:`~recaudit.errors.ConfigError`
naming the key, the file and line, and the closest valid key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from recaudit.config import Config
from recaudit.errors import ConfigError
from recaudit.experiment import (DatasetSpec, ExecutorSpec, ModelSpec, SplitSpec, identity,
                                 spec_id, trial_key)

__all__ = ["DEFAULT_DEPTH", "MetricSpec", "AuditConfig", "TrialSpec", "build_model",
           "load_config", "perturbation_label"]


def build_model(spec: ModelSpec, **extra: Any) -> Any:
    """A fresh model of ``spec`` (``extra`` parameters below its own), wrapped by its
    stabilisation method when it has one (:mod:`recaudit.stabilise`): the audit fits
    stabilised models, so it is the audit that wraps them."""
    if spec.stabilise is None:
        return spec.create(**extra)
    from recaudit.stabilise import stabilise

    return stabilise(lambda: spec.create(**extra), spec.stabilise)


#: The rank-list depth an audit compares unless ``metrics.depth`` says otherwise: RBO at the
#: default p = 0.9 gives the depths below it a weight of p^100 < 3e-5 (``rbo_min`` and
#: ``rbo_max`` bound what they could add), and a baseline's lists cost 100 codes a query
#: whatever the catalogue's size.
DEFAULT_DEPTH = 100


@dataclass(frozen=True)
class MetricSpec(Config):
    """Similarity settings.

    k: cut-off of FRBO@k, Jaccard@k, the accuracy at k (HR@k, NDCG@k) and the top-k lists the
    store keeps; at most ``depth``. p: RBO persistence. depth: how many items of each ranking
    are kept and compared (default 100; k where a file or the command line sets a larger k
    and no depth): RBO and its bounds, the truncated RBO sum, average overlap and the
    reciprocal rank (MRR) are computed over the first ``depth`` items of both lists, the
    measures at k over the first k. A catalogue of fewer items is ranked whole.
    ``"full"`` (``None`` in Python) compares the whole catalogue, as Oh et al. 2022 (average
    overlap over the full list) and the paper presets do: each baseline then keeps every
    query's ranking of every item.
    """

    k: int = 10
    p: float = 0.9
    depth: int | None = DEFAULT_DEPTH

    _also: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "depth": {"const": "full", "description": "the whole catalogue"}}

    @classmethod
    def _normalise(cls, data: dict[str, Any]) -> dict[str, Any]:
        k = data.get("k")
        if "depth" not in data and isinstance(k, int) and k > DEFAULT_DEPTH:
            data["depth"] = k          # a file's or the command line's k above the default
        if data.get("depth") == "full":
            data["depth"] = None
        elif isinstance(data.get("depth"), str):
            raise ConfigError(f"metrics.depth must be an integer >= k or \"full\", got "
                              f"{data['depth']!r}", key="depth",
                              hint='depth = 100, or depth = "full" for the whole catalogue')
        return data

    def validate(self) -> None:
        if self.k < 1:
            raise self.invalid("k", f"metrics.k must be >= 1, got {self.k}")
        if not 0.0 < self.p < 1.0:
            raise self.invalid("p", f"metrics.p must be in (0, 1), got {self.p}")
        if self.depth is not None and self.depth < self.k:
            raise self.invalid("depth", f"metrics.depth ({self.depth}) is below metrics.k "
                                        f"({self.k}): the measures at k (FRBO@k, Jaccard@k, "
                                        f"HR@k, NDCG@k) read the first k items of each list",
                               hint=f"set depth >= {self.k}, or depth = \"full\"")


def perturbation_label(perturbation: Any) -> str:
    """How a trial's perturbation is labelled in a store: the name, or the canonical JSON of a
    table."""
    if isinstance(perturbation, str):
        return perturbation
    from recaudit.experiment import canonical_json

    return canonical_json(perturbation)


@dataclass(frozen=True)
class TrialSpec:
    """One cell of the grid. ``perturbation`` is a name or table read by
    :func:`recaudit.perturb.parse`; ``draw`` numbers the repeated draws of the perturbation
    against the same baseline (0: the first; its spec, and so its trial id, carries no
    ``draw`` key, so the ids of audits without repeated draws never change). A model's
    ``device`` parameter is not part of the id either: a trial run on a GPU and the same trial
    on the CPU are one trial (their lists differ in the last bits of the scores; the device
    each trial used is in its ``versions``)."""

    dataset: DatasetSpec
    split: SplitSpec
    model: ModelSpec
    seed: int
    perturbation: Any
    metrics: MetricSpec
    draw: int = 0

    @classmethod
    def from_identity(cls, d: Mapping[str, Any]) -> TrialSpec:
        """The trial whose identity (:meth:`to_dict`, as the ``spec`` column stores it) is
        ``d``."""
        return cls(DatasetSpec.from_dict(d["dataset"]), SplitSpec.from_dict(d["split"]),
                   ModelSpec.from_dict(d["model"]), int(d["seed"]), d["perturbation"],
                   MetricSpec.from_dict(d["metrics"]), int(d.get("draw", 0)))

    def to_dict(self) -> dict[str, Any]:
        """The trial's identity (:func:`recaudit.experiment.identity`): what makes it, and
        nothing else (not a model's ``title`` or ``device``; ``draw`` only when not 0)."""
        return identity(self)

    @property
    def label(self) -> str:
        """How progress and messages name the trial: ``model · perturbation · seed s`` (and
        ``· draw d``)."""
        return (f"{self.model.label} · {perturbation_label(self.perturbation)} · seed "
                f"{self.seed}" + (f" · draw {self.draw}" if self.draw else ""))

    def baseline_key(self, fingerprint: str) -> str:
        """Identifies the unperturbed model this trial is compared with: its identity without
        the perturbation, the draw and the metrics."""
        d = self.to_dict()
        d.pop("draw", None)
        del d["perturbation"], d["metrics"]
        return spec_id(d, fingerprint)

    def trial_id(self, fingerprint: str) -> str:
        """The trial's id: the hash of its identity and the data fingerprint
        (:func:`recaudit.experiment.trial_key`)."""
        return trial_key(self, fingerprint)


@dataclass(frozen=True)
class AuditConfig(Config):
    """A whole audit (build it in Python or load it from TOML with :func:`load_config`).

    models: the models (``[[models]]`` tables or names). perturbations: names or tables read
    by :func:`recaudit.perturb.parse` (``recaudit.perturb.available()`` lists them). seeds:
    training seeds (a list, or a count n for 0..n-1). datasets: the datasets (``[[datasets]]``
    tables or names). split: how each dataset is split. metrics: similarity settings.
    executor: where trials run. output: the results store (resumed if it exists). name: the
    audit's name in the store and the report. draws: how many times each perturbation is drawn
    against each trained baseline (Oh et al. 2022 repeat a random draw 10 times against one
    trained model, Table 4): every draw is a trial of its own with its own generator, and a
    repetition costs one fit instead of two. A perturbation that draws nothing at random
    (CASPER, TracIn, position removal, the references: ``needs.rng`` false,
    :class:`recaudit.perturb.Needs`) would give the same edit on every draw, so it is planned
    once per baseline (draw 0) whatever ``draws`` says, and counts as one draw.
    """

    models: tuple[ModelSpec, ...]
    perturbations: tuple[Any, ...] = ("random-delete",)
    seeds: tuple[int, ...] = (0,)
    datasets: tuple[DatasetSpec, ...] = (DatasetSpec(),)
    split: SplitSpec = SplitSpec()
    metrics: MetricSpec = MetricSpec()
    executor: ExecutorSpec = ExecutorSpec()
    output: str = "audit.duckdb"
    name: str = "audit"
    draws: int = 1

    _also: ClassVar[Mapping[str, Mapping[str, Any]]] = {
        "seeds": {"type": "integer", "minimum": 1, "description": "a count n: seeds 0..n-1"},
        "models": {"anyOf": [{"type": "string"}, {"type": "object"}]},
        "datasets": {"anyOf": [{"type": "string"}, {"type": "object"}]},
        "perturbations": {"anyOf": [{"type": "string"}, {"type": "object"}]}}

    @classmethod
    def _normalise(cls, data: dict[str, Any]) -> dict[str, Any]:
        seeds = data.get("seeds")
        if isinstance(seeds, int) and not isinstance(seeds, bool):
            if seeds < 1:
                raise ConfigError(f"a seed count must be >= 1, got {seeds}", key="seeds")
            data["seeds"] = tuple(range(seeds))
        for key in ("models", "datasets", "perturbations"):
            if isinstance(data.get(key), (str, Mapping)):
                data[key] = [data[key]]
        return data

    def validate(self) -> None:
        from recaudit.experiment import canonical_json
        from recaudit.perturb import parse

        for key in ("models", "perturbations", "seeds", "datasets"):
            if not getattr(self, key):
                raise self.invalid(key, f"{key} must not be empty")
        for i, m in enumerate(self.models):
            if m.stabilise is None:
                continue
            try:  # the method's options, and whether it applies to this model
                build_model(m)
            except ConfigError as exc:
                raise ConfigError(exc.message, key=f"models[{i}].stabilise"
                                  + (f".{exc.key}" if exc.key else ""), hint=exc.hint) from None
        if isinstance(self.draws, bool) or not isinstance(self.draws, int) or self.draws < 1:
            raise self.invalid("draws", f"draws must be an integer >= 1, got {self.draws!r}")
        if len(set(self.seeds)) != len(self.seeds):
            raise self.invalid("seeds", f"seeds must be distinct, got {list(self.seeds)}")
        for i, seed in enumerate(self.seeds):
            if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
                raise self.invalid(f"seeds[{i}]", f"a seed must be an integer >= 0, got "
                                                  f"{seed!r}")
        canonical = []
        for i, value in enumerate(self.perturbations):
            try:
                spec = parse(value)
            except ConfigError as exc:
                raise ConfigError(exc.message, key=f"perturbations[{i}]", hint=exc.hint) \
                    from None
            canonical.append(spec.name if isinstance(value, str) else dict(value))
            self._check_checkpoints(i, spec)
        self._check_repeats("perturbations", [perturbation_label(p) for p in canonical],
                            "more draws of one: draws = N")
        self._check_repeats("models", [canonical_json({k: v for k, v in m.to_dict().items()
                                                       if k != "title"})
                                       for m in self.models],
                            "a label is display only: two settings of one model differ in "
                            "their params")
        object.__setattr__(self, "perturbations", tuple(canonical))

    def _check_repeats(self, key: str, canonical: list[str], hint: str) -> None:
        """Two entries of ``key`` that are one (their trials would share ids)."""
        for i, c in enumerate(canonical):
            if c in canonical[:i]:
                j = canonical.index(c)
                raise self.invalid(f"{key}[{i}]", f"{key}[{i}] repeats {key}[{j}] ({c}): "
                                   "their trials would be the same trials",
                                   hint=f"list it once ({hint})")

    def _check_checkpoints(self, i: int, spec: Any) -> None:
        """A TracIn perturbation's ``checkpoint_every`` applies to models whose spec sets none
        (a model's own parameters come first); two different values would leave one unused."""
        every = getattr(spec, "checkpoint_every", None)
        for j, m in enumerate(self.models if every is not None else ()):
            own = m.params.get("checkpoint_every")
            if own is not None and own != every:
                raise ConfigError(
                    f"perturbations[{i}] asks for TracIn checkpoints every {every} epoch(s) but "
                    f"models[{j}] ({m.label}) sets checkpoint_every = {own}, which would be "
                    "used", key=f"perturbations[{i}].checkpoint_every",
                    hint="set the interval in one place: on the model, or on the perturbation")

    def draws_of(self, perturbation: Any) -> int:
        """How many draws of ``perturbation`` the audit plans against each baseline:
        ``draws``, or 1 for a perturbation that draws nothing at random (its ``needs.rng``
        is false: every draw would repeat draw 0's edit and fit)."""
        from recaudit.perturb import parse

        return self.draws if parse(perturbation).needs.rng else 1

    def trials(self) -> list[TrialSpec]:
        """The grid in a fixed order: dataset, model, seed, perturbation, draw (draws
        ``0 .. draws_of(perturbation) - 1``: a deterministic perturbation has draw 0 only, so
        its trials keep the ids they have without ``draws``)."""
        draws = {i: self.draws_of(p) for i, p in enumerate(self.perturbations)}
        return [TrialSpec(d, self.split, m, int(s), p, self.metrics, draw)
                for d in self.datasets for m in self.models for s in self.seeds
                for i, p in enumerate(self.perturbations) for draw in range(draws[i])]


def load_config(path: str | Path) -> AuditConfig:
    """Read and validate a TOML audit configuration (errors name file, line and key)."""
    return AuditConfig.from_toml(path)
