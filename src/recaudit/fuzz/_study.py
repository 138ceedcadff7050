"""The fuzzing study of Shriver 2018 §4.2: models x heuristics x sizes x N modification sets.

A trial is ``(dataset, model, seed, k, heuristic spec, size, set index)``. It is a pure
function of that spec: the baseline model is trained on the whole ratings log with training
seed ``seed`` (as in the thesis, recommendations for every user), the modification set draws
from ``make_rng(seed, data fingerprint, spec name, set index)`` -- the same random sets for
every model -- the modified log is retrained with the *same* seed, and both models rank the
same users (queries built once from the original log). Each trial stores its time to generate
the set, the AOD / Jaccard / TopOut distances aggregated over users with ``f`` (avg default),
the default threshold ``δ = 100 M / |D|`` and the three verdicts (``stable = value < δ``), and
its record.

:class:`FuzzStudy` is a :class:`~recaudit.experiment.Study`: trial ids
(:func:`~recaudit.experiment.spec_id`), data loading, executors and the store (table
``fuzz_trials``, one transaction per trial; meta keys ``fuzz.study`` and ``fuzz.data``) come
from the experiment layer (:func:`~recaudit.experiment.run_study`). Re-running a study skips
the trials already stored; numbers do not depend on the worker count or order.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import pandas as pd

from recaudit.config import Config
from recaudit.data import Interactions, Queries, RankLists
from recaudit.errors import DataError, RecauditError
from recaudit.experiment import (ArrayCache, DatasetSpec, ExecutorSpec, ModelSpec, Store, Table,
                                 Trial,
                                 canonical_json, data_summary, identity, load_dataset,
                                 spec_id, trial_key)
from recaudit.experiment import run_study as run_study_
from recaudit.fuzz._oracles import AGGREGATES, DISTANCES, Aggregate, default_delta, distances
from recaudit.fuzz._schema import FUZZ_TRIALS, read_trials
from recaudit.fuzz._spec import FuzzSpec
from recaudit.perturb import Context
from recaudit.seeds import make_rng

__all__ = ["FuzzStudy", "FuzzTrial", "run_fuzz_trial", "run_study", "load_results"]

Progress = Callable[[int, int], None]


@dataclass(frozen=True)
class FuzzTrial:
    """One cell: ``spec`` (a :class:`FuzzSpec` name) on ``model``, modification set ``set_index``."""

    dataset: DatasetSpec
    model: ModelSpec
    spec: str
    set_index: int
    seed: int = 0
    k: int = 10
    f: str = "avg"

    def to_dict(self) -> dict[str, Any]:
        """The trial's identity (:func:`recaudit.experiment.identity`)."""
        return identity(self)

    @classmethod
    def from_identity(cls, d: dict[str, Any]) -> FuzzTrial:
        """The trial whose identity (:meth:`to_dict`) is ``d``."""
        return cls(DatasetSpec.from_dict(d["dataset"]), ModelSpec.from_dict(d["model"]),
                   d["spec"], int(d["set_index"]), int(d.get("seed", 0)), int(d.get("k", 10)),
                   d.get("f", "avg"))

    def trial_id(self, fingerprint: str) -> str:
        return trial_key(self, fingerprint)


# ---------------------------------------------------------------------------- one trial
def _ratings(dataset: DatasetSpec) -> Interactions:
    log = load_dataset(dataset)
    if log.rating is None:
        raise DataError("fuzzing modifies ratings; this dataset has none", source=dataset.label,
                        column="rating", hint="use a dataset with a rating column")
    return log


def _fit_rank(model: ModelSpec, train: Interactions, queries: Queries, seed: int, k: int
              ) -> tuple[RankLists, float]:
    from recaudit.models import checked_fit, checked_rank

    t0 = time.process_time()
    rec = checked_fit(model.create(), train, seed=seed)
    return checked_rank(rec, queries, k=k), time.process_time() - t0


#: the baselines this process read or trained last (key -> (queries, lists)), a few at most
_RECENT: dict[str, tuple[Queries, RankLists]] = {}


def _baseline(trial: FuzzTrial, cache: str | None = None) -> tuple[Queries, RankLists]:
    """The queries (one per user of the whole log) and the baseline's top-k lists of
    ``trial``: the model trained on the whole log with the trial's seed. Kept in ``cache``
    (an :class:`~recaudit.experiment.ArrayCache`, ``<store>.baselines`` for a study: every
    worker and every later run reads it instead of training it again) under the key of
    ``(dataset, model, seed, k)`` and the data, and in this process for the next trials."""
    log = _ratings(trial.dataset)
    key = spec_id({"dataset": identity(trial.dataset), "model": identity(trial.model),
                   "seed": trial.seed, "k": trial.k}, log.fingerprint())
    if key in _RECENT:
        return _RECENT[key]
    queries = Queries.next_item(log)
    store = None if cache is None else ArrayCache(cache)
    hit = None if store is None else store.get(key)
    if hit is not None:
        lists = RankLists(hit["items"])
    else:
        lists, _ = _fit_rank(trial.model, log, queries, trial.seed, trial.k)
        if store is not None:
            store.put(key, items=lists.items)
    if len(_RECENT) >= 4:
        _RECENT.pop(next(iter(_RECENT)))
    _RECENT[key] = (queries, lists)
    return queries, lists


@dataclass(frozen=True)
class FuzzJob:
    """What a worker receives: the trial and where the study keeps its baselines."""

    trial: FuzzTrial
    cache: str | None = None


def _run(job: FuzzJob) -> dict[str, Any]:
    return run_fuzz_trial(job.trial, cache=job.cache)


def run_fuzz_trial(trial: FuzzTrial, cache: str | None = None) -> dict[str, Any]:
    """Run one trial (pure: same trial, same numbers); returns its ``fuzz_trials`` row.
    ``cache``: where baselines are kept (see :func:`_baseline`)."""
    log = _ratings(trial.dataset)
    fp = log.fingerprint()
    queries, base = _baseline(trial, cache)
    spec = FuzzSpec.parse(trial.spec)
    rng = make_rng(trial.seed, fp, spec.name, trial.set_index)
    # CPU seconds of this process, not wall time: a paused or shared machine (a background
    # run beside other work) does not inflate them, and a one-thread worker's CPU time is
    # its wall time on an idle machine, which is what Shriver 2018 Table 4.5 reports.
    t0 = time.process_time()
    modified, record = spec.perturb(log, rng, Context(queries=queries, baseline=base,
                                                      k=trial.k))
    gen_s = time.process_time() - t0
    after, fit_s = _fit_rank(trial.model, modified, queries, trial.seed, trial.k)
    b, a = base.items, after.items
    if a.shape != b.shape:
        raise RecauditError(f"{trial.model.label}: rank lists changed shape {b.shape} -> "
                            f"{a.shape}; the study needs models that rank k items per user")
    delta = default_delta(spec.size, len(log))
    row: dict[str, Any] = {
        "trial_id": trial.trial_id(fp), "dataset": trial.dataset.label,
        "model": trial.model.label, "heuristic": spec.heuristic, "spec": spec.name,
        "kind": spec.kind or "none", "size": spec.size, "set_index": trial.set_index,
        "seed": trial.seed, "k": trial.k, "n_modifications": len(record),
        "n_ratings": len(log), "n_users": len(b), "gen_seconds": gen_s, "fit_seconds": fit_s,
        "f": trial.f}
    agg = AGGREGATES[trial.f]
    for metric in DISTANCES:
        row[metric] = float(agg(distances(b, a, metric, trial.k))) if len(b) else 0.0
    row["delta"] = delta
    for metric in DISTANCES:
        row[f"stable_{metric}"] = bool(row[metric] < delta)
    row.update(record=json.dumps(record.to_dict()), trial=canonical_json(trial.to_dict()),
               data_fingerprint=fp, finished=time.time())
    return row


@dataclass(frozen=True)
class FuzzStudy(Config):
    """The study grid (thesis: 100 sets, sizes 1, 10, 100, top-10, TopOut reported).

    models: rating models to fuzz. heuristics: Table 4.4 names (and APORTFOLIO). sizes:
    modification set sizes ``M``. sets: modification sets per (model, heuristic, size).
    dataset: a ratings dataset. seed: training and fuzzing seed. k: length of the top-k lists.
    f: aggregate of the per-user distances (avg, min, max, median). epsilon: the rating window
    of AMR. portfolio: APORTFOLIO's members. output: the results store. workers: processes
    (1: in this process).
    """

    models: tuple[ModelSpec, ...]
    heuristics: tuple[str, ...] = ("ZERO", "ARAND", "AMU", "ALI", "AMR", "AMA")
    sizes: tuple[int, ...] = (1, 10, 100)
    sets: int = 100
    dataset: DatasetSpec = field(default_factory=lambda: DatasetSpec(
        "ml-latest-small", min_user_interactions=0))
    seed: int = 0
    k: int = 10
    f: Aggregate = "avg"
    epsilon: float = 0.05
    portfolio: tuple[str, ...] = ("AMU", "ALI", "AMR", "AMA")
    output: str = "fuzz.duckdb"
    workers: int = 1

    def validate(self) -> None:
        for key in ("models", "heuristics", "sizes"):
            if not getattr(self, key):
                raise self.invalid(key, "a fuzz study needs at least one model, heuristic and "
                                        "size")
        if any(s < 1 for s in self.sizes):
            raise self.invalid("sizes", f"sizes must be integers >= 1, got {list(self.sizes)}")
        for key in ("sets", "k", "workers"):
            if getattr(self, key) < 1:
                raise self.invalid(key, f"must be >= 1, got {getattr(self, key)}")
        for i, m in enumerate(self.models):
            if m.stabilise is not None:
                raise self.invalid(f"models[{i}].stabilise", "fuzzing compares a model with "
                                   "itself retrained on modified ratings; a stabilised model "
                                   "is audited with recaudit audit (leave stabilise out here)")
        self.specs()  # validates heuristic names and parameters

    # the study protocol (recaudit.experiment.Study)
    kind: ClassVar[str] = "fuzz"
    tables: ClassVar[tuple[Table, ...]] = (FUZZ_TRIALS,)
    run: ClassVar[Callable[..., Any]] = staticmethod(_run)
    share: ClassVar[Callable[..., Any] | None] = None
    prime: ClassVar[Callable[..., Any] | None] = None

    def plan(self) -> list[Trial]:
        fp = _ratings(self.dataset).fingerprint()
        output = Path(self.output)
        cache = str(output.with_name(output.name + ".baselines"))
        return [Trial(t.trial_id(fp), FuzzJob(t, cache), datasets=(t.dataset,),
                      label=f"{t.model.label} · {t.spec} · set {t.set_index}")
                for t in self.trials()]

    def facts(self) -> dict[str, Any]:
        log = _ratings(self.dataset)
        return {"fuzz.data": {"dataset": self.dataset.label, **data_summary(log)},
                "fuzz.study": self.to_dict()}

    def reidentify(self, row: dict[str, Any]) -> tuple[str, dict[str, str]]:
        """A stored trial's id under the current identity rules (from its ``trial`` JSON and
        ``data_fingerprint``; :func:`recaudit.experiment.migrate_ids`)."""
        trial = FuzzTrial.from_identity(json.loads(row["trial"]))
        return (trial.trial_id(str(row["data_fingerprint"])),
                {"trial": canonical_json(trial.to_dict())})

    def write(self, store: Store, row: dict[str, Any]) -> str:
        store.insert(FUZZ_TRIALS, [row], replace=True)
        return str(row["trial_id"])

    @property
    def executor(self) -> ExecutorSpec:
        return ExecutorSpec("process" if self.workers > 1 else "inprocess", self.workers)

    def specs(self) -> list[FuzzSpec]:
        out = []
        for h in self.heuristics:
            for m in self.sizes:
                params: dict[str, Any] = {}
                if h.upper() in ("AMR", "APORTFOLIO") and self.epsilon != 0.05:
                    params["epsilon"] = self.epsilon
                if h.upper() == "APORTFOLIO":
                    params["portfolio"] = self.portfolio
                out.append(FuzzSpec(h, int(m), params))
        return out

    def trials(self) -> list[FuzzTrial]:
        """Grid order: model, heuristic, size, set."""
        return [FuzzTrial(self.dataset, m, s.name, j, self.seed, self.k, self.f)
                for m in self.models for s in self.specs() for j in range(self.sets)]


# ---------------------------------------------------------------------------- the study
def run_study(study: FuzzStudy, *, progress: Progress | None = None) -> Path:
    """Run every trial of ``study`` not yet in ``study.output``; returns the store path."""
    return run_study_(study, progress=None if progress is None else
                      (lambda tid, done, total: progress(done, total)))


def load_results(path: str | Path, study: FuzzStudy | None = None) -> pd.DataFrame:
    """Stored trials of a fuzz store (only ``study``'s when given), sorted (model, heuristic,
    size, set)."""
    with Store(path, read_only=True) as store:
        df = read_trials(store)
    if df.empty:
        raise RecauditError(f"{path} holds no fuzzing results; run `recaudit fuzz` first")
    if study is not None:
        fp = _ratings(study.dataset).fingerprint()
        ids = {t.trial_id(fp) for t in study.trials()}
        df = df[df["trial_id"].isin(ids)].reset_index(drop=True)
    return df
