"""Typed audit specifications: what to audit, and the trials that follow from it.

An audit is a grid ``datasets x models x perturbations x seeds`` over one split and one set of
metric settings. Every cell is a :class:`TrialSpec`; its result is a pure function of the spec
(and of the data it names), so trials can run in any order, in any process, on any machine.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from recaudit.errors import ConfigError

__all__ = ["DatasetSpec", "SplitSpec", "ModelSpec", "MetricSpec", "ExecutorSpec",
           "AuditConfig", "TrialSpec", "canonical_json"]


def canonical_json(obj: Any) -> str:
    """Deterministic JSON (sorted keys, no whitespace) used for hashing specs."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=_default)


def _default(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return dict(obj)
    if isinstance(obj, (tuple, set, frozenset)):
        return list(obj)
    raise TypeError(f"not JSON-serialisable: {type(obj).__name__}")


def _freeze(mapping: Mapping[str, Any] | None) -> dict[str, Any]:
    """A private copy (specs never share mutable state with the caller)."""
    return dict(mapping or {})


@dataclass(frozen=True)
class DatasetSpec:
    """A dataset: a registry ``name`` (``synthetic`` is built in) or a file ``path``.

    ``options`` go to the generator (synthetic) or the reader (files: ``format``, ``sep``,
    column mapping, ...). Users with fewer than ``min_user_interactions`` rows are dropped
    (Oh et al. 2022 §3.1 and Betello et al. 2023 §4.1 use 10); ``k_core`` applies an iterated
    core filter instead. ``sample_users`` then keeps a seeded uniform sample of that many
    users (reduced-scale runs; ``recaudit.data.sample_users``).
    """

    name: str = "synthetic"
    path: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    min_user_interactions: int = 10
    k_core: int | None = None
    sample_users: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "options", _freeze(self.options))
        if self.min_user_interactions < 0:
            raise ConfigError("dataset.min_user_interactions must be >= 0")
        if self.k_core is not None and self.k_core < 1:
            raise ConfigError("dataset.k_core must be >= 1")
        if self.sample_users is not None and (isinstance(self.sample_users, bool) or
                                              not isinstance(self.sample_users, int) or
                                              self.sample_users < 1):
            raise ConfigError("dataset.sample_users must be None or an integer >= 1")

    @property
    def label(self) -> str:
        return self.name if self.path is None else f"{self.name}:{self.path}"


@dataclass(frozen=True)
class SplitSpec:
    """How to split: ``temporal-ratio`` (seed 000), ``leave-last-out`` (seed 003) or
    ``global-temporal``. ``max_len`` bounds the context stored with each test query."""

    method: str = "temporal-ratio"
    ratio: float = 0.9
    validation: bool = False
    max_len: int = 200
    floor: str = "train"

    def __post_init__(self) -> None:
        if self.method not in ("temporal-ratio", "leave-last-out", "global-temporal"):
            raise ConfigError(f"split.method {self.method!r} is not one of temporal-ratio, "
                              "leave-last-out, global-temporal")
        if not 0.0 < self.ratio < 1.0:
            raise ConfigError(f"split.ratio must be in (0, 1), got {self.ratio}")
        if self.max_len < 1:
            raise ConfigError("split.max_len must be >= 1")
        if self.floor not in ("train", "test"):
            raise ConfigError(f"split.floor {self.floor!r} must be 'train' or 'test' (which "
                              "part of each user's rows is rounded down)")
        if self.floor != "train" and self.method != "temporal-ratio":
            raise ConfigError("split.floor applies to method = 'temporal-ratio' only")

    def options(self) -> dict[str, Any]:
        opts: dict[str, Any] = {"max_len": self.max_len}
        if self.method != "leave-last-out":
            opts["ratio"] = self.ratio
        if self.method != "global-temporal":
            opts["validation"] = self.validation
        if self.method == "temporal-ratio":
            opts["floor"] = self.floor
        return opts


@dataclass(frozen=True)
class ModelSpec:
    """A registered model name and its parameters (see ``recaudit models list``)."""

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        object.__setattr__(self, "params", _freeze(self.params))

    @property
    def label(self) -> str:
        if not self.params:
            return self.name
        return self.name + "(" + ",".join(f"{k}={v}" for k, v in sorted(self.params.items())) + ")"


@dataclass(frozen=True)
class MetricSpec:
    """Similarity settings: RBO persistence ``p``, cut-off ``k`` for FRBO@k, Jaccard@k and
    accuracy@k, and the rank-list ``depth`` compared (``None`` = the full catalogue)."""

    k: int = 10
    p: float = 0.9
    depth: int | None = None

    def __post_init__(self) -> None:
        if self.k < 1:
            raise ConfigError(f"metrics.k must be >= 1, got {self.k}")
        if not 0.0 < self.p < 1.0:
            raise ConfigError(f"metrics.p must be in (0, 1), got {self.p}")
        if self.depth is not None and self.depth < self.k:
            raise ConfigError(f"metrics.depth ({self.depth}) must be >= metrics.k ({self.k})")


@dataclass(frozen=True)
class ExecutorSpec:
    """Where trials run: ``inprocess``, ``process`` (a pool of ``workers`` processes, each
    limited to ``threads_per_worker`` threads) or ``ray`` (optional extra; ``address`` of a
    cluster, ``None`` starts a local one).

    ``devices`` (e.g. ``["cuda:0"]`` or ``["cuda:0", "cuda:1"]``) are dealt to the pool's
    workers round-robin: worker ``w`` trains every model whose ``device`` is ``"auto"`` (or
    ``"cuda"``) on ``devices[w % len(devices)]``, so ``workers = 16, devices = ["cuda:0"]``
    runs 16 trials at a time on one GPU. Models with ``device = "cpu"`` stay on the CPU. The
    device is not part of a trial's identity: use one kind of device per audit (CUDA and CPU
    results differ in the last bits); the device used is recorded with each trial.
    """

    kind: str = "inprocess"
    workers: int = 1
    threads_per_worker: int = 1
    address: str | None = None
    devices: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.kind not in ("inprocess", "process", "ray"):
            raise ConfigError(f"executor.kind {self.kind!r} is not one of inprocess, process, ray")
        if self.workers < 1 or self.threads_per_worker < 1:
            raise ConfigError("executor.workers and executor.threads_per_worker must be >= 1")
        if isinstance(self.devices, str) or not all(isinstance(d, str) for d in self.devices):
            raise ConfigError("executor.devices must be a list of device names, e.g. "
                              '["cuda:0"]')
        object.__setattr__(self, "devices", tuple(self.devices))
        from recaudit.models import check_device

        for d in self.devices:
            check_device(d)
        if self.devices and self.kind == "ray":
            raise ConfigError("executor.devices is for kind = 'process' (and 'inprocess'); "
                              "Ray places trials on GPUs itself")
        if self.kind == "inprocess" and len(self.devices) > 1:
            raise ConfigError("executor.kind = 'inprocess' runs on one device; use kind = "
                              "'process' with workers >= 2 for several")


@dataclass(frozen=True)
class TrialSpec:
    """One cell of the grid. ``perturbation`` is a canonical perturbation name or mapping
    understood by :func:`recaudit.perturb.parse`."""

    dataset: DatasetSpec
    split: SplitSpec
    model: ModelSpec
    seed: int
    perturbation: Any
    metrics: MetricSpec

    def to_dict(self) -> dict[str, Any]:
        return json.loads(canonical_json(asdict(self)))

    def baseline_key(self, fingerprint: str) -> str:
        """Identifies the unperturbed model this trial is compared with."""
        d = self.to_dict()
        del d["perturbation"], d["metrics"]
        return _hash(d, fingerprint)

    def trial_id(self, fingerprint: str) -> str:
        """Hash of the canonical spec and the data fingerprint."""
        return _hash(self.to_dict(), fingerprint)


def _hash(d: dict[str, Any], fingerprint: str) -> str:
    return hashlib.sha256((canonical_json(d) + fingerprint).encode()).hexdigest()[:20]


@dataclass(frozen=True)
class AuditConfig:
    """A whole audit. Build it in Python or load it from TOML with
    :func:`recaudit.audit.load_config`."""

    models: tuple[ModelSpec, ...]
    perturbations: tuple[Any, ...] = ("random-delete",)
    seeds: tuple[int, ...] = (0,)
    datasets: tuple[DatasetSpec, ...] = (DatasetSpec(),)
    split: SplitSpec = SplitSpec()
    metrics: MetricSpec = MetricSpec()
    executor: ExecutorSpec = ExecutorSpec()
    output: str = "audit.duckdb"
    name: str = "audit"

    def __post_init__(self) -> None:
        for key in ("models", "perturbations", "seeds", "datasets"):
            value = tuple(getattr(self, key))
            if not value:
                raise ConfigError(f"{key} must not be empty")
            object.__setattr__(self, key, value)
        if len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"seeds must be distinct, got {list(self.seeds)}")

    def trials(self) -> list[TrialSpec]:
        """The grid in a fixed order: dataset, model, seed, perturbation."""
        return [TrialSpec(d, self.split, m, int(s), p, self.metrics)
                for d in self.datasets for m in self.models for s in self.seeds
                for p in self.perturbations]
