"""Running trials: prepare data, train baseline and perturbed models, compare rank lists.

A trial's result is a pure function of its :class:`TrialSpec`:

- the data comes from the dataset spec (loaded, filtered and split the same way everywhere);
- the baseline model is trained on the original training set with training seed ``seed``;
- the perturbation draws from ``make_rng(seed, data fingerprint, perturbation)`` and the
  perturbed model is trained with the *same* training seed (all training randomness fixed,
  seed 000 §5), except ``seed-only`` which keeps the data and changes the training seed to
  ``derive_seed(seed, "seed-only")`` (seed 003 RQ1);
- both models rank the same test queries, built once from the original data.

Baseline rank lists are cached on disk (``<store>.baselines/<key>.npz``, written atomically)
so a baseline is trained once per (dataset, split, model, seed) and shared by every
perturbation, worker and re-run.
"""

from __future__ import annotations

import os
import platform
import socket
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.audit._spec import DatasetSpec, SplitSpec, TrialSpec, canonical_json
from recaudit.data import Interactions, RankLists, Split
from recaudit.seeds import derive_seed, make_rng

__all__ = ["load_dataset", "prepare", "run_trial", "TrialOutcome", "compare", "versions"]


def load_dataset(spec: DatasetSpec) -> Interactions:
    """Load (or generate) the dataset of ``spec``, then apply its filters."""
    from recaudit.data import filter_min_interactions, k_core, synthetic

    opts = dict(spec.options)
    if spec.path is not None:
        from recaudit.data import read

        log = read(spec.path, **opts)
    elif spec.name == "synthetic":
        seed = int(opts.pop("seed", 0))
        log = synthetic(seed=seed, **opts)
    else:
        from recaudit.data.datasets import load

        log = load(spec.name, **opts)
    if spec.k_core is not None:
        log = k_core(log, spec.k_core)
    elif spec.min_user_interactions > 0:
        log = filter_min_interactions(log, spec.min_user_interactions)
    if spec.sample_users is not None:
        from recaudit.data import sample_users

        log = sample_users(log, spec.sample_users)
    return log


@lru_cache(maxsize=4)
def _prepare_cached(dataset_json: str, split_json: str) -> tuple[Interactions, Split]:
    import json

    from recaudit.data import split as do_split

    d, s = json.loads(dataset_json), json.loads(split_json)
    dspec = DatasetSpec(**d)
    sspec = SplitSpec(**s)
    log = load_dataset(dspec)
    return log, do_split(log, sspec.method, **sspec.options())


def prepare(dataset: DatasetSpec, split: SplitSpec) -> tuple[Interactions, Split]:
    """The filtered log and its split (memoised per process)."""
    from dataclasses import asdict

    return _prepare_cached(canonical_json(asdict(dataset)), canonical_json(asdict(split)))


def versions() -> dict[str, str]:
    import duckdb
    import numba
    import scipy
    import torch

    import recaudit

    from recaudit.models import resolve_device

    device = resolve_device("auto")  # where this process trains models with device="auto"
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.machine()
    return {"recaudit": recaudit.__version__, "python": platform.python_version(),
            "numpy": np.__version__, "pandas": pd.__version__, "torch": torch.__version__,
            "scipy": scipy.__version__, "numba": numba.__version__, "duckdb": duckdb.__version__,
            "device": f"{device} ({name})"}


def _fit_rank(trial: TrialSpec, train: Interactions, split: Split, seed: int,
              depth: int | None) -> tuple[RankLists, float, float]:
    from recaudit.models import create

    model = create(trial.model.name, **trial.model.params)
    t0 = time.perf_counter()
    model.fit(train, seed=seed)
    t1 = time.perf_counter()
    ranks = model.rank(split.queries, k=depth)
    return ranks, t1 - t0, time.perf_counter() - t1


def _baseline(trial: TrialSpec, log: Interactions, split: Split, cache_dir: Path | None
              ) -> tuple[RankLists, float, float]:
    key = trial.baseline_key(log.fingerprint())
    path = None if cache_dir is None else cache_dir / f"{key}.npz"
    if path is not None and path.exists():
        with np.load(path) as z:
            return RankLists(z["items"]), 0.0, 0.0
    ranks, fit_s, rank_s = _fit_rank(trial, split.train, split, trial.seed, trial.metrics.depth)
    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp.npz")
        np.savez(tmp, items=ranks.items)
        os.replace(tmp, path)
    return ranks, fit_s, rank_s


def compare(base: RankLists, pert: RankLists, split: Split, k: int, p: float) -> pd.DataFrame:
    """Per-query similarity of two rank lists and accuracy of both (one row per query).

    Columns: ``rbo`` (RBO_ext, Webber et al. eq. 32), ``rbo_min``/``rbo_max`` (its bounds),
    ``rbo_trunc`` (seed 000's finite sum over the compared depth), ``average_overlap`` (what
    CASPER's released code reports as "RBO": p = 1, over the compared depth), ``frbo``
    (FRBO@k, seed 003), ``jaccard`` (top-k), and reciprocal rank (over the compared depth; 0
    when the target is not in the list), hit@k and NDCG@k of the baseline (``_base``) and the
    perturbed (``_pert``) model.
    """
    from recaudit import metrics as M

    a, b = base.items, pert.items
    target = split.queries.target
    n_items = split.queries.n_items
    out = {"query": np.arange(len(a)), "user": split.queries.user.astype(np.int64),
           "target": target.astype(np.int64),
           "rbo": M.rbo_batch(a, b, p=p, variant="ext"),
           "rbo_min": M.rbo_batch(a, b, p=p, variant="min"),
           "rbo_max": M.rbo_batch(a, b, p=p, variant="max"),
           "rbo_trunc": M.rbo_batch(a, b, p=p, variant="trunc"),
           "average_overlap": M.average_overlap_batch(a, b),
           "frbo": M.frbo_batch(a, b, k=k, p=p, n_items=n_items),
           "jaccard": M.jaccard_batch(a, b, k=k)}
    for tag, items in (("base", a), ("pert", b)):
        out[f"rr_{tag}"] = M.mrr_batch(items, target)
        out[f"hit_{tag}"] = M.hit_rate_at_k_batch(items, target, k)
        out[f"ndcg_{tag}"] = M.ndcg_at_k_batch(items, target, k)
    return pd.DataFrame(out)


@dataclass
class TrialOutcome:
    """What a worker sends back: the trial row, per-query results and the record."""

    row: dict[str, Any]
    queries: pd.DataFrame
    record: dict[str, Any] | None


def run_trial(trial: TrialSpec, *, audit: str = "audit", cache_dir: str | Path | None = None,
              threads: int | None = None) -> TrialOutcome:
    """Run one trial from its spec (pure: same spec, same numbers).

    ``threads`` sets torch's intra-op thread count of this process (workers only; models fix
    their own training threads through their ``num_threads`` parameter).
    """
    if threads is not None:
        import torch

        torch.set_num_threads(threads)
    started = time.time()
    t0 = time.perf_counter()
    log, split = prepare(trial.dataset, trial.split)
    fingerprint = log.fingerprint()
    base, base_fit, base_rank = _baseline(trial, log, split,
                                          None if cache_dir is None else Path(cache_dir))
    spec = perturbation_spec(trial.perturbation)
    p0 = time.perf_counter()
    rng = make_rng(trial.seed, fingerprint, canonical_json(trial.perturbation))
    context = _perturb_context(spec, trial, split, base)
    train, record = spec.apply(split.train, rng, **context)
    perturb_s = time.perf_counter() - p0
    seed = derive_seed(trial.seed, "seed-only") if getattr(spec, "reseed", False) \
        else trial.seed
    pert, fit_s, rank_s = _fit_rank(trial, train, split, seed, trial.metrics.depth)
    queries = compare(base, pert, split, trial.metrics.k, trial.metrics.p)
    row = {"trial_id": trial.trial_id(fingerprint), "baseline_key": trial.baseline_key(fingerprint),
           "audit": audit, "dataset": trial.dataset.label, "model": trial.model.name,
           "model_label": trial.model.label, "perturbation": _label(trial.perturbation),
           "seed": trial.seed, "spec": canonical_json(trial.to_dict()),
           "data_fingerprint": fingerprint, "n_queries": len(queries), "status": "done",
           "started": started, "finished": time.time(), "fit_seconds": fit_s + base_fit,
           "rank_seconds": rank_s + base_rank, "perturb_seconds": perturb_s,
           "total_seconds": time.perf_counter() - t0,
           "versions": canonical_json(versions()), "host": socket.gethostname()}
    rec = record.to_dict() if record is not None and hasattr(record, "to_dict") else None
    return TrialOutcome(row, queries, rec)


def perturbation_spec(perturbation: Any):
    """A perturbation spec from a name or a mapping.

    Names are :func:`recaudit.perturb.parse` names, or ``fuzz:<HEURISTIC>:<M>`` for the
    rating-level fuzzing heuristics of :mod:`recaudit.fuzz` (seed 004 Chapter 4). A mapping
    either has ``name`` (parsed, other keys override fields, e.g.
    ``{name = "casper-delete", max_len = 50}``) or the spec's fields themselves.
    """
    from recaudit.perturb import PerturbationSpec, parse

    if isinstance(perturbation, str):
        if perturbation.startswith("fuzz:"):
            from recaudit.fuzz import FuzzSpec

            return FuzzSpec.parse(perturbation)
        return parse(perturbation)
    if isinstance(perturbation, dict):
        fields = dict(perturbation)
        if "name" in fields:
            return parse(fields.pop("name"), **fields)
        return PerturbationSpec.from_dict(fields)
    from recaudit.errors import ConfigError

    raise ConfigError(f"a perturbation is a name or a table, got {type(perturbation).__name__}")


def _perturb_context(spec: Any, trial: TrialSpec, split: Split, base: RankLists
                     ) -> dict[str, Any]:
    """Extra inputs some perturbations need: TracIn the fitted baseline model and the test
    queries; influence-guided fuzzing the baseline top-k lists and the test pairs (never
    modified)."""
    if getattr(spec, "selector", None) == "tracin":
        return _tracin_context(trial, split)
    if getattr(spec, "needs_recommendations", False):
        from recaudit.fuzz import audit_inputs

        return audit_inputs(split, base.items, trial.metrics.k)
    return {}


def _tracin_context(trial: TrialSpec, split: Split) -> dict[str, Any]:
    """TracIn needs the baseline model with checkpoints: refit it (deterministic, so the same
    model as the cached baseline; checkpointing does not change training)."""
    from recaudit.models import create

    params = dict(trial.model.params)
    params.setdefault("checkpoint_every", 1)
    model = create(trial.model.name, **params).fit(split.train, seed=trial.seed)
    return {"model": model, "queries": split.queries}


def _label(perturbation: Any) -> str:
    return perturbation if isinstance(perturbation, str) else canonical_json(perturbation)
