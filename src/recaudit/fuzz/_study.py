"""The fuzzing study of seed 004 §4.2: models x heuristics x sizes x N modification sets.

A trial is ``(dataset, model, seed, k, heuristic spec, size, set index)``. It is a pure
function of that spec: the baseline model is trained on the whole ratings log with training
seed ``seed`` (as in the thesis, recommendations for every user), the modification set draws
from ``make_rng(seed, data fingerprint, spec name, set index)`` -- the same random sets for
every model -- the modified log is retrained with the *same* seed, and both models rank the
same users (queries built once from the original log). Each trial stores its time to generate
the set, the AOD / Jaccard / TopOut distances aggregated over users with ``f`` (avg default), the default threshold
``δ = 100 M / |D|`` and the three verdicts (``stable = value < δ``), and its record.

Results go to a DuckDB file (table ``fuzz_trials``, one transaction per trial); re-running a
study skips the trials already stored. ``workers > 1`` runs trials in a spawned process pool;
numbers do not depend on the worker count or order.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.audit._spec import DatasetSpec, ModelSpec, canonical_json
from recaudit.data import Interactions, Queries
from recaudit.errors import ConfigError
from recaudit.fuzz._influence import Recommendations
from recaudit.fuzz._oracles import AGGREGATES, DISTANCES, default_delta, distances
from recaudit.fuzz._spec import FuzzSpec
from recaudit.seeds import make_rng

__all__ = ["FuzzStudy", "FuzzTrial", "run_fuzz_trial", "run_study", "load_results"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS fuzz_trials (
    trial_id VARCHAR PRIMARY KEY,
    dataset VARCHAR, model VARCHAR, heuristic VARCHAR, spec VARCHAR, kind VARCHAR,
    size BIGINT, set_index BIGINT, seed BIGINT, k BIGINT, n_modifications BIGINT,
    n_ratings BIGINT, n_users BIGINT, gen_seconds DOUBLE, fit_seconds DOUBLE,
    f VARCHAR, aod DOUBLE, jaccard DOUBLE, topout DOUBLE, delta DOUBLE,
    stable_aod BOOLEAN, stable_jaccard BOOLEAN, stable_topout BOOLEAN,
    record JSON, trial JSON, data_fingerprint VARCHAR, finished DOUBLE
);
CREATE TABLE IF NOT EXISTS fuzz_meta (key VARCHAR PRIMARY KEY, value JSON);
"""

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
        return json.loads(canonical_json(asdict(self)))

    def trial_id(self, fingerprint: str) -> str:
        import hashlib

        return hashlib.sha256((canonical_json(self.to_dict()) + fingerprint).encode()
                              ).hexdigest()[:20]


@dataclass(frozen=True)
class FuzzStudy:
    """The study grid (thesis: 100 sets, sizes 1, 10, 100, top-10, TopOut reported)."""

    models: tuple[ModelSpec, ...]
    heuristics: tuple[str, ...] = ("ZERO", "ARAND", "AMU", "ALI", "AMR", "AMA")
    sizes: tuple[int, ...] = (1, 10, 100)
    sets: int = 100
    dataset: DatasetSpec = field(default_factory=lambda: DatasetSpec(
        "ml-latest-small", min_user_interactions=0))
    seed: int = 0
    k: int = 10
    f: str = "avg"
    epsilon: float = 0.05
    portfolio: tuple[str, ...] = ("AMU", "ALI", "AMR", "AMA")
    output: str = "fuzz.duckdb"
    workers: int = 1

    def __post_init__(self) -> None:
        models = tuple(m if isinstance(m, ModelSpec) else ModelSpec(str(m)) for m in self.models)
        object.__setattr__(self, "models", models)
        for key in ("heuristics", "sizes", "portfolio"):
            object.__setattr__(self, key, tuple(getattr(self, key)))
        if not models or not self.heuristics or not self.sizes:
            raise ConfigError("a fuzz study needs at least one model, heuristic and size")
        if any(isinstance(s, bool) or int(s) != s or s < 1 for s in self.sizes):
            raise ConfigError(f"sizes must be integers >= 1, got {list(self.sizes)}")
        if self.sets < 1 or self.k < 1 or self.workers < 1:
            raise ConfigError("sets, k and workers must be >= 1")
        if self.f not in AGGREGATES:
            raise ConfigError(f"aggregate f={self.f!r} is not one of {sorted(AGGREGATES)}")
        self.specs()  # validates heuristic names and parameters

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


# ---------------------------------------------------------------------------- one trial
@lru_cache(maxsize=2)
def _data(dataset_json: str) -> Interactions:
    from recaudit.audit import load_dataset

    log = load_dataset(DatasetSpec(**json.loads(dataset_json)))
    if log.rating is None:
        raise ConfigError(f"dataset {log.name!r} has no ratings; fuzzing modifies ratings")
    return log


def _fit_rank(model: ModelSpec, train: Interactions, queries: Queries, seed: int, k: int
              ) -> tuple[np.ndarray, float]:
    from recaudit.models import create

    t0 = time.perf_counter()
    rec = create(model.name, **model.params).fit(train, seed=seed)
    items = rec.rank(queries, k=k).items
    return np.asarray(items), time.perf_counter() - t0


@lru_cache(maxsize=4)
def _baseline(dataset_json: str, model_json: str, seed: int, k: int
              ) -> tuple[Queries, np.ndarray]:
    log = _data(dataset_json)
    queries = Queries.next_item(log)
    items, _ = _fit_rank(ModelSpec(**json.loads(model_json)), log, queries, seed, k)
    return queries, items


def run_fuzz_trial(trial: FuzzTrial) -> dict[str, Any]:
    """Run one trial (pure: same trial, same numbers); returns its ``fuzz_trials`` row."""
    dj, mj = canonical_json(asdict(trial.dataset)), canonical_json(asdict(trial.model))
    log = _data(dj)
    fp = log.fingerprint()
    queries, base = _baseline(dj, mj, trial.seed, trial.k)
    spec = FuzzSpec.parse(trial.spec)
    rng = make_rng(trial.seed, fp, spec.name, trial.set_index)
    t0 = time.perf_counter()
    recs = Recommendations(queries.user, base) if spec.needs_recommendations else None
    modified, record = spec.apply(log, rng, recommendations=recs)
    gen_s = time.perf_counter() - t0
    after, fit_s = _fit_rank(trial.model, modified, queries, trial.seed, trial.k)
    if after.shape != base.shape:
        raise ConfigError(f"{trial.model.label}: rank lists changed shape {base.shape} -> "
                          f"{after.shape}; the study needs models that rank k items per user")
    delta = default_delta(spec.size, len(log))
    row: dict[str, Any] = {
        "trial_id": trial.trial_id(fp), "dataset": trial.dataset.label,
        "model": trial.model.label, "heuristic": spec.heuristic, "spec": spec.name,
        "kind": spec.kind or "none", "size": spec.size, "set_index": trial.set_index,
        "seed": trial.seed, "k": trial.k, "n_modifications": len(record),
        "n_ratings": len(log), "n_users": len(base), "gen_seconds": gen_s, "fit_seconds": fit_s,
        "f": trial.f}
    agg = AGGREGATES[trial.f]
    for metric in DISTANCES:
        row[metric] = float(agg(distances(base, after, metric, trial.k))) if len(base) else 0.0
    row["delta"] = delta
    for metric in DISTANCES:
        row[f"stable_{metric}"] = bool(row[metric] < delta)
    row.update(record=json.dumps(record.to_dict()), trial=canonical_json(trial.to_dict()),
               data_fingerprint=fp, finished=time.time())
    return row


# ---------------------------------------------------------------------------- the study
def _open(path: Path):
    from recaudit.audit import Store

    store = Store(path)  # lock handling and directory creation as for audits
    store.con.execute(_SCHEMA)
    return store


def _write(con: Any, row: dict[str, Any]) -> None:
    cols = list(row)
    con.execute("BEGIN TRANSACTION")
    try:
        con.execute(f"INSERT OR REPLACE INTO fuzz_trials ({', '.join(cols)}) VALUES "
                    f"({', '.join('?' for _ in cols)})", [row[c] for c in cols])
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _execute(jobs: list[FuzzTrial], workers: int) -> Iterator[dict[str, Any]]:
    if workers == 1 or len(jobs) <= 1:
        for trial in jobs:
            yield run_fuzz_trial(trial)
        return
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed

    ctx = mp.get_context("spawn")
    with ProcessPoolExecutor(workers, mp_context=ctx) as pool:
        for fut in as_completed([pool.submit(run_fuzz_trial, t) for t in jobs]):
            yield fut.result()


def run_study(study: FuzzStudy, *, progress: Progress | None = None) -> Path:
    """Run every trial of ``study`` not yet in ``study.output``; returns the store path."""
    out = Path(study.output)
    log = _data(canonical_json(asdict(study.dataset)))
    fp = log.fingerprint()
    trials = study.trials()
    store = _open(out)
    try:
        store.con.execute("INSERT OR REPLACE INTO fuzz_meta VALUES (?, ?)",
                          ["data", json.dumps({"dataset": study.dataset.label, "ratings": len(log),
                                               "users": log.n_users, "items": log.n_items,
                                               "fingerprint": fp})])
        store.con.execute("INSERT OR REPLACE INTO fuzz_meta VALUES (?, ?)",
                          ["study", canonical_json(asdict(study))])
        done = {r[0] for r in store.con.execute("SELECT trial_id FROM fuzz_trials").fetchall()}
        jobs = [t for t in trials if t.trial_id(fp) not in done]
        n_done = len(trials) - len(jobs)
        if progress:
            progress(n_done, len(trials))
        for row in _execute(jobs, study.workers):
            _write(store.con, row)
            n_done += 1
            if progress:
                progress(n_done, len(trials))
    finally:
        store.close()
    return out


def load_results(path: str | Path, study: FuzzStudy | None = None) -> pd.DataFrame:
    """Stored trials of a fuzz store (only ``study``'s when given), sorted (model, heuristic,
    size, set)."""
    from recaudit.audit import Store

    with Store(path, read_only=True) as store:
        tables = {r[0] for r in store.con.execute("SHOW TABLES").fetchall()}
        if "fuzz_trials" not in tables:
            raise ConfigError(f"{path} holds no fuzzing results; run `recaudit fuzz` first")
        df = store.con.execute("SELECT * FROM fuzz_trials ORDER BY model, heuristic, size, "
                               "set_index").df()
    if study is not None:
        fp = _data(canonical_json(asdict(study.dataset))).fingerprint()
        ids = {t.trial_id(fp) for t in study.trials()}
        df = df[df["trial_id"].isin(ids)].reset_index(drop=True)
    return df
