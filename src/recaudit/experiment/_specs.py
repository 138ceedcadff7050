"""The specs every study shares: a dataset, a split, a model, an executor.

All are frozen :class:`~recaudit.config.Config` dataclasses: typed, documented per field,
validated at construction, ``from_dict``/``to_dict`` round trips. A study's trial spec combines
them with its own fields; its id is :func:`~recaudit.experiment.spec_id` of the whole.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from recaudit.config import Config
from recaudit.errors import RecauditWarning

__all__ = ["DatasetSpec", "SplitSpec", "ModelSpec", "ExecutorSpec"]


#: The dataset a spec without ``name`` and ``path`` names.
_DEFAULT_NAME = "synthetic"


@dataclass(frozen=True)
class DatasetSpec(Config):
    """A dataset: a registry ``name`` (``synthetic`` is built in) or a file ``path``.

    name: registered dataset (``recaudit datasets list``), ``synthetic``, or a label for
    ``path`` (left out: the file's name labels it). path: an interaction file (CSV/TSV,
    Parquet, RecBole, JODIE, MovieLens, ...) instead of a registered dataset. options: for
    the generator (synthetic: see ``recaudit.data.SyntheticConfig``) or the reader (files:
    ``format``, ``sep``, ``columns``, ...). min_user_interactions: drop users with fewer
    rows (Oh et al. 2022 §5 and Betello et al. 2023 use 10). k_core: apply an iterated
    k-core filter instead (None: off). sample_users: then keep a seeded uniform sample of
    this many users (None: all; for reduced-scale runs, ``recaudit.data.sample_users``).
    """

    _shorthand = "name"

    name: str = _DEFAULT_NAME
    path: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    min_user_interactions: int = 10
    k_core: int | None = None
    sample_users: int | None = None

    def validate(self) -> None:
        if self.min_user_interactions < 0:
            raise self.invalid("min_user_interactions",
                               f"must be >= 0, got {self.min_user_interactions}")
        if self.k_core is not None and self.k_core < 1:
            raise self.invalid("k_core", f"must be >= 1 (or None), got {self.k_core}")
        if self.sample_users is not None and self.sample_users < 1:
            raise self.invalid("sample_users", f"must be >= 1 (or None), got "
                                               f"{self.sample_users}")

    def to_dict(self) -> dict[str, Any]:
        """The spec as data; a file given by its path alone has no ``name`` (its default,
        ``synthetic``, names the generator, which a file never is; the trial ids, built by
        :func:`recaudit.experiment.identity`, keep it as they always did)."""
        d = super().to_dict()
        if self.path is not None and self.name == _DEFAULT_NAME:
            del d["name"]
        return d

    @property
    def label(self) -> str:
        """The dataset's name in tables, figures and stores: ``name``; for a file, the file's
        name (never its folder) when ``name`` is the file's (``--dataset plays.csv`` gives
        ``name = "plays"``: ``plays.csv``) or was left out (``DatasetSpec(path="plays.csv")``,
        a ``[[datasets]]`` table with ``path`` alone: ``name`` keeps its default,
        ``synthetic``, which a file never is). Stores written before kept another label, and
        a resumed audit keeps writing what its store holds (:attr:`legacy_labels`)."""
        if self.path is None:
            return self.name
        file = os.path.basename(os.path.normpath(self.path))
        return file if self.name in (os.path.splitext(file)[0], file, _DEFAULT_NAME) \
            else self.name

    @property
    def legacy_labels(self) -> tuple[str, ...]:
        """The labels stores written before :attr:`label` named files by name gave this
        dataset, the earliest first: ``name:path``, and for a file without a name of its own
        ``synthetic`` (the default name, which stores written before labelled it by)."""
        if self.path is None:
            return ()
        return (f"{self.name}:{self.path}",) + (
            (self.name,) if self.name == _DEFAULT_NAME else ())


@dataclass(frozen=True)
class SplitSpec(Config):
    """How to split the log into training data and test queries.

    method: ``temporal-ratio`` (per user, Oh et al. 2022), ``leave-last-out`` (Betello et al.
    2023) or ``global-temporal``. ratio: the training share of temporal splits. validation:
    hold out a validation query per user too. max_len: context length stored with each query.
    floor: which part of a user's rows ``temporal-ratio`` rounds down: ``"train"``
    (``floor(ratio n)`` rows train) or ``"test"`` (the last ``floor((1 - ratio) n)`` rows
    test: CASPER's released code).
    """

    method: Literal["temporal-ratio", "leave-last-out", "global-temporal"] = "temporal-ratio"
    ratio: float = 0.9
    validation: bool = False
    max_len: int = 200
    floor: Literal["train", "test"] = "train"

    def validate(self) -> None:
        if not 0.0 < self.ratio < 1.0:
            raise self.invalid("ratio", f"must be in (0, 1), got {self.ratio}")
        if self.max_len < 1:
            raise self.invalid("max_len", f"must be >= 1, got {self.max_len}")
        if self.floor != "train" and self.method != "temporal-ratio":
            raise self.invalid("floor", "applies to method = 'temporal-ratio' only")

    def options(self) -> dict[str, Any]:
        """Keyword arguments of :func:`recaudit.data.split` for ``method``."""
        opts: dict[str, Any] = {"max_len": self.max_len}
        if self.method != "leave-last-out":
            opts["ratio"] = self.ratio
        if self.method != "global-temporal":
            opts["validation"] = self.validation
        if self.method == "temporal-ratio":
            opts["floor"] = self.floor
        return opts


_INTERPRETERS = ("python", "python3", "Rscript", "julia", "node", "bash", "sh", "uv", "run")


def _program(template: str) -> str:
    """The file a command template runs: its first argument that is neither an interpreter
    nor an option nor a placeholder (``python fit.py {train}`` -> ``fit.py``)."""
    import shlex

    try:
        words = shlex.split(template)
    except ValueError:
        words = template.split()
    for w in words:
        base = w.rsplit("/", 1)[-1]
        if base in _INTERPRETERS or base.startswith(("python3.", "-")) or "{" in w:
            continue
        return base
    return words[0].rsplit("/", 1)[-1] if words else "?"


@dataclass(frozen=True)
class ModelSpec(Config):
    """A registered model and its parameters, optionally stabilised.

    name: a registered model (``recaudit models list``). params: its parameters, validated
    against the model's own configuration. stabilise: a stabilisation method and its options,
    ``{method = "finest", epochs = 10}`` or ``{method = "ensemble", n = 5}``
    (:mod:`recaudit.stabilise`; None: the plain model). A stabilised spec is a model of its
    own: its trial ids, baselines and label differ from the plain model's, whose ids are
    unchanged (``to_dict`` leaves ``stabilise`` out when it is None). title: the name shown
    in tables, figures and stores (``label = "..."`` in a model table); display only, it
    does not change trial ids. Without one, :attr:`label` is ``name(k=v,...)``, and a
    command model's is ``command(<its training program>)``.
    """

    _shorthand = "name"

    name: str
    params: Mapping[str, Any] = field(default_factory=dict)
    stabilise: Mapping[str, Any] | None = None
    title: str | None = None

    @classmethod
    def _normalise(cls, data: dict[str, Any]) -> dict[str, Any]:
        from recaudit.errors import ConfigError

        if "label" in data:
            if "title" in data:
                raise ConfigError("give the model's label once (label or title)", key="label")
            data["title"] = data.pop("label")
        return data

    def validate(self) -> None:
        from recaudit.config import Config as _Config
        from recaudit.errors import ConfigError
        from recaudit.models import config_class

        try:  # the model's options, not the model: a built-in one's without torch
            config = config_class(self.name)
        except ConfigError as exc:
            raise self.invalid("name", exc.message) from None
        if isinstance(config, type) and issubclass(config, _Config):
            try:
                config.from_dict(self.params, what=f"model {self.name!r}", noun="parameter")
            except ConfigError as exc:
                inner = (exc.key or "").split(".")[-1]
                raise ConfigError(exc.message, key=f"params.{inner}" if inner else "params",
                                  hint=exc.hint) from None
        if self.stabilise is not None and not isinstance(self.stabilise, Mapping):
            raise self.invalid("stabilise", "expected a table such as {method = \"finest\"}, "
                                            f"got {type(self.stabilise).__name__} "
                                            f"{self.stabilise!r}")

    def to_dict(self) -> dict[str, Any]:
        d = super().to_dict()
        for key in ("stabilise", "title"):
            if d[key] is None:
                del d[key]
        return d

    @property
    def base(self) -> ModelSpec:
        """The plain model of this spec (itself when it is not stabilised)."""
        return self if self.stabilise is None else ModelSpec(self.name, self.params)

    def create(self, **extra: Any) -> Any:
        """A fresh *plain* model of this spec (``extra`` parameters below ``params``). The
        ``stabilise`` options are data here: the study that fits the model wraps it
        (:func:`recaudit.audit.build_model`), and validates them."""
        from recaudit.models import create

        return create(self.name, **{**extra, **self.params})

    @property
    def label(self) -> str:
        """``name(k=v,...)`` with every parameter (sorted), then ``+method(k=v,...)`` when
        stabilised: unique per spec; :attr:`title` when set."""
        return self.label_of(self.to_dict())

    @staticmethod
    def label_of(data: Mapping[str, Any]) -> str:
        """:attr:`label` of a spec stored as plain data (``to_dict``), without building the
        spec: a store is read, and its report rendered, where the model cannot be imported."""
        name, params = str(data["name"]), dict(data.get("params") or {})
        stabilise, title = data.get("stabilise"), data.get("title") or data.get("label")
        if title:
            return str(title)
        if name == "command" and isinstance(params.get("train"), str):
            return f"command({_program(params['train'])})"
        label = name
        if params:
            label += "(" + ",".join(f"{k}={v}" for k, v in sorted(params.items())) + ")"
        if stabilise is not None:
            opts = {k: v for k, v in stabilise.items() if k != "method"}
            label += f"+{stabilise.get('method')}"
            if opts:
                label += "(" + ",".join(f"{k}={v}" for k, v in sorted(opts.items())) + ")"
        return label


@dataclass(frozen=True)
class ExecutorSpec(Config):
    """Where trials run; every executor gives the same numbers.

    kind: ``inprocess``, ``process`` (a pool of spawned processes) or ``ray`` (optional extra;
    one machine or a cluster, see ``docs/howto/cluster.md``). workers: processes of the pool
    (or concurrent trials of a local Ray cluster started for the audit). threads_per_worker:
    the torch thread limit of each worker process (for work outside a model's own setting: the
    neural models train and rank with their ``num_threads`` parameter, default 1); on Ray
    also the CPUs each trial reserves (``num_cpus``).
    address: a Ray cluster's address, e.g. ``"auto"`` on a node of a cluster started with
    ``ray start`` or ``"ray://head:10001"`` (None: start a local one).
    devices: devices dealt to the pool's workers round-robin, e.g. ``["cuda:0"]``: worker ``w``
    trains every model whose ``device`` is ``"auto"`` (or ``"cuda"``) on
    ``devices[w % len(devices)]``, so ``workers = 16, devices = ["cuda:0"]`` runs 16 trials at a
    time on one GPU; models with ``device = "cpu"`` stay on the CPU. The device is not part of
    a trial's identity: use one kind of device per audit (CUDA and CPU results differ in the
    last bits); the device used is recorded with each trial.
    gpus_per_trial: Ray only: the GPUs each trial reserves (Ray's ``num_gpus``; a fraction
    packs several trials on a GPU, ``0.125``: eight). The trial's models with device ``"auto"``
    or ``"cuda"`` train on the GPU Ray assigned; 0: trials run on CPUs only.
    retries: how often a trial (or a baseline) whose worker process or node died is run
    again: the process pool is replaced and its unfinished trials rerun; on Ray, elsewhere
    (Ray's ``max_retries``). Errors raised by a trial itself are not retried. 0: never.
    cache_uri: where baseline rank lists are kept between trials and runs: a directory or an
    fsspec URL (``s3://bucket/audit``, ``gs://...``; needs ``s3fs``/``gcsfs`` on every node).
    None: ``<output>.baselines`` next to the store for ``inprocess`` and ``process``; nothing
    on disk for ``ray``, whose baselines travel between nodes as object references (a restarted
    audit then retrains the baselines of its unfinished trials). On Ray a local path must be
    absolute and mounted on every node.
    stack: train up to this many trials of one baseline group together, as one stacked model
    (the sequential models: :func:`recaudit.models.sequential.fit_stack`; each trial keeps its
    own data, seeds, generators, optimiser state and early stopping, and its numbers are those
    it gets alone, bit for bit on the CPU). Many trials per GPU from one process; 1: one trial
    at a time. A stack is one job of the executor: ``workers`` stacks run at once.
    keep_fits: keep each finished fit of a sequential model in ``<output>.fits.d`` (its final
    state: about three copies of its parameters), so that a later trial of this or another
    audit on the store that trains the same (model, parameters, device, seed, training log,
    and stack) takes it instead of training: e.g. a perturbation and its ``+inputs`` twin,
    which differ only in the test queries they rank. ``recaudit status`` lists the kept fits;
    delete the folder when no run is running to free the disk. Not on Ray (an error).
    """

    kind: Literal["inprocess", "process", "ray"] = "inprocess"
    workers: int = 1
    threads_per_worker: int = 1
    address: str | None = None
    devices: tuple[str, ...] = ()
    gpus_per_trial: float = 0.0
    retries: int = 3
    cache_uri: str | None = None
    stack: int = 1
    keep_fits: bool = False

    def __post_init__(self) -> None:
        from recaudit.errors import ConfigError

        if isinstance(self.devices, str):
            raise ConfigError('executor.devices must be a list of device names, e.g. '
                              '["cuda:0"]', key="devices")
        super().__post_init__()

    def validate(self) -> None:
        from recaudit._torch import check_device
        from recaudit.errors import ConfigError

        if self.workers < 1:
            raise self.invalid("workers", f"must be >= 1, got {self.workers}")
        cpus = os.cpu_count() or 1
        if self.kind != "inprocess" and not self.address \
                and self.workers * self.threads_per_worker > cpus:
            warnings.warn(f"executor: {self.workers} workers x {self.threads_per_worker} "
                          f"threads exceed this machine's {cpus} CPUs; trials will compete for "
                          "them (results are unchanged, only slower)", RecauditWarning,
                          stacklevel=4)
        if not isinstance(self.stack, int) or isinstance(self.stack, bool) or self.stack < 1:
            raise self.invalid("stack", f"must be an integer >= 1, got {self.stack!r}")
        if self.threads_per_worker < 1:
            raise self.invalid("threads_per_worker",
                               f"must be >= 1, got {self.threads_per_worker}")
        for d in self.devices:
            try:
                check_device(d)
            except ConfigError as exc:
                raise self.invalid("devices", exc.message) from None
        if self.devices and self.kind == "ray":
            raise self.invalid("devices", "executor.devices is for kind = 'process' (and "
                                          "'inprocess'); Ray places trials on GPUs itself: "
                                          "set gpus_per_trial")
        if self.keep_fits and self.kind == "ray":
            raise self.invalid("keep_fits", "keeps fits beside the store, on the driver's disk, "
                                            "which Ray's workers may not share: use kind = "
                                            "'process' (or leave keep_fits out on Ray)")
        if self.kind == "inprocess" and len(self.devices) > 1:
            raise self.invalid("devices", "executor.kind = 'inprocess' runs on one device; use "
                                          "kind = 'process' with workers >= 2 for several")
        self._validate_cluster()

    def _validate_cluster(self) -> None:
        g = self.gpus_per_trial
        if not g >= 0:  # also NaN
            raise self.invalid("gpus_per_trial", f"must be >= 0, got {g}")
        if g and self.kind != "ray":
            raise self.invalid("gpus_per_trial", "is for kind = 'ray'; the process pool takes "
                                                 "executor.devices")
        if g > 1 and g != int(g):
            raise self.invalid("gpus_per_trial", f"must be a fraction <= 1 or a whole number "
                                                 f"(Ray's num_gpus), got {g}")
        if self.retries < 0:
            raise self.invalid("retries", f"must be >= 0, got {self.retries}")
        if self.cache_uri is not None:
            from recaudit.experiment._cache import check_uri

            try:
                local = check_uri(self.cache_uri)
            except ValueError as exc:
                raise self.invalid("cache_uri", str(exc)) from None
            if local is not None and self.kind == "ray" and not os.path.isabs(local):
                raise self.invalid("cache_uri", f"{self.cache_uri!r} is relative; on Ray every "
                                                "node opens it: give an absolute path on a "
                                                "shared mount, or a URL such as s3://...")
