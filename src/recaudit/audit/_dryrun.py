"""Power before compute: what an audit would train, how long it would take, what it could detect.

:func:`dry_run` plans a config without running it:

- **fits**: per (dataset, model), the baselines (one per seed, shared by that seed's
  perturbations and draws) and the perturbed fits (one per trial; ``none`` fits nothing; a
  perturbation that draws nothing at random has one trial per baseline whatever ``draws``
  says: :meth:`AuditConfig.draws_of`), and how many of each the store (and the baseline
  cache) already holds;
- **time**: from the store when it holds finished trials of the model — the median of their
  own times (``trials.total_seconds``: fit, ranking and perturbation; the median, because the
  first trial of a group also carries its baseline's fit), per remaining fit — which is what
  a resumed paper-scale run needs, and costs no training; otherwise a one-epoch calibration on
  this machine — the model trained for one epoch on the first seed's training split, then
  ranking the test queries — extrapolated as ``epochs x s/epoch + rank s`` per fit (a model
  without epochs is calibrated with one whole fit); ``remaining fits x s/fit / workers``;
- **stacks** (``executor.stack = K > 1``): the perturbed fits of a baseline group train K at a
  time as one stacked model (:func:`recaudit.models.sequential.fit_stack`); with a
  calibration, one epoch of a stack of ``min(K, perturbed fits per group)`` models (seeds
  ``s, s+1, ...``) is timed too, and the stack's speed-up — ``members x s/epoch / stack
  s/epoch`` — divides the perturbed fits' time (baselines train alone); a model that cannot
  stack (not sequential, stabilised) gets 1. ``trials_per_hour``: the remaining trials over
  the estimated wall time;
- **power**: the smallest difference in mean RBO between two perturbations that a paired test
  at 0.05 detects with 80 % power, ``(z_0.975 + z_0.8) sd / sqrt(queries)``, with ``sd`` the
  spread of per-query RBO differences. It is read from the store when it holds two finished
  perturbations of the model; otherwise from the calibration — the one-epoch model against a
  second one-epoch model with the next seed, a pessimistic stand-in (seed-to-seed variation
  is the largest a perturbation meets, and one epoch is far from converged). With several
  seeds the test also carries the seed-to-seed variance, which a plan cannot know; the
  figure is the query-level bound.
"""

from __future__ import annotations

import dataclasses
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from recaudit.audit._context import cache_key
from recaudit.audit._spec import AuditConfig, TrialSpec, build_model, perturbation_label
from recaudit.experiment import ArrayCache, prepare
from recaudit.models import checked_rank

__all__ = ["DryRun", "dry_run"]


@dataclass(frozen=True)
class DryRun:
    """The plan of an audit (module docstring). ``fits``: one row per (dataset, model) with
    ``baselines``, ``perturbed``, ``stored_baselines``, ``stored_trials``, ``remaining``
    (fits: baselines and perturbed), ``remaining_baselines``,
    ``epochs``, ``s_per_epoch``, ``rank_s`` (the calibration's; NaN when timed from the
    store), ``s_per_fit``, ``time_basis`` (``store``, ``calibration`` or ``none``), ``hours``
    (serial), ``stack_speedup`` (the stack's calibrated speed-up; 1 without a stack);
    ``workers``, ``stack``;
    ``detectable``: one row per (dataset, model) with ``queries``, ``sd``, ``basis``
    (``store`` or ``calibration``) and ``rbo_difference``."""

    fits: pd.DataFrame
    detectable: pd.DataFrame
    workers: int
    stack: int = 1

    @property
    def trials_per_hour(self) -> float:
        """Remaining trials (perturbed fits; their baselines' time included) per hour of wall
        time (NaN when nothing is timed)."""
        hours = self.hours
        timed = self.fits[self.fits["hours"].notna()]
        todo = float((timed["remaining"] - timed["remaining_baselines"]).sum())
        return todo / hours if hours > 0 else float("nan")

    @property
    def hours(self) -> float:
        """Estimated wall time of what remains, in hours, over the executor's workers."""
        return float(self.fits["hours"].sum()) / max(1, self.workers)


def _mde(sd: float, n: int, alpha: float = 0.05, power: float = 0.8) -> float:
    if n < 2 or not np.isfinite(sd):
        return float("nan")
    return float((stats.norm.ppf(1 - alpha / 2) + stats.norm.ppf(power)) * sd / np.sqrt(n))


def _one_epoch(trial: TrialSpec, seed: int):
    """Train ``trial``'s model for one epoch (or whole, without epochs) and rank: (rank
    lists, seconds per epoch, rank seconds, epochs of the real fit)."""
    data, split = prepare(trial.dataset, trial.split)
    probe = build_model(trial.model)
    params = probe.get_params() if hasattr(probe, "get_params") else {}
    epochs = params.get("epochs")
    spec = trial.model
    if isinstance(epochs, int) and epochs > 1:
        spec = dataclasses.replace(spec, params={**dict(spec.params), "epochs": 1})
    model = build_model(spec)
    t0 = time.perf_counter()
    model.fit(split.train, seed=seed)
    fit_s = time.perf_counter() - t0
    t1 = time.perf_counter()
    ranks = checked_rank(model, split.queries, k=trial.metrics.depth)
    rank_s = time.perf_counter() - t1
    if hasattr(model, "close"):
        model.close()
    return ranks, fit_s, rank_s, (epochs if isinstance(epochs, int) and epochs > 1 else 1)


def _stack_speedup(trial: TrialSpec, members: int, s_per_epoch: float) -> float:
    """``members x s/epoch / s per stacked epoch``: one epoch of ``members`` models of
    ``trial`` trained as one stack (seeds ``seed, seed + 1, ...``); 1 for a model that cannot
    stack."""
    from recaudit.models.sequential import SequentialRecommender, fit_stack

    if members < 2 or trial.model.stabilise is not None:
        return 1.0
    spec = trial.model
    if isinstance(build_model(spec), SequentialRecommender):
        spec = dataclasses.replace(spec, params={**dict(spec.params), "epochs": 1})
    models = [build_model(spec) for _ in range(members)]
    if not all(isinstance(m, SequentialRecommender) for m in models):
        return 1.0
    _, split = prepare(trial.dataset, trial.split)
    t0 = time.perf_counter()
    fit_stack(models, [split.train] * members, [trial.seed + i for i in range(members)])
    return members * s_per_epoch / (time.perf_counter() - t0)


def _store_sd(output: Path, dataset: str, label: str) -> float | None:
    """Spread of per-query RBO differences between the two first finished perturbations of
    (``dataset``, ``label``) in the store, paired by (seed, draw, query); None if fewer."""
    from recaudit.audit._store import AuditStore

    if not output.exists():
        return None
    with AuditStore(output, read_only=True) as store:
        q = store.query_values(("rbo",), dataset, label)
    perts = list(dict.fromkeys(q["perturbation"]))
    if len(perts) < 2:
        return None
    a, b = (q[q.perturbation == p].set_index(["seed", "draw", "query"])["rbo"]
            for p in perts[:2])
    d = (a - b).dropna()
    return float(d.std(ddof=1)) if len(d) > 1 else None


def _store_seconds(output: Path, ids: set[str]) -> float | None:
    """Median own time of the finished trials ``ids`` in the store (None if none)."""
    from recaudit.audit._analysis import trial_summary

    if not ids or not output.exists():
        return None
    s = trial_summary(output)
    t = s.loc[s["trial_id"].isin(ids), "total_seconds"].dropna()
    return float(t.median()) if len(t) else None


def dry_run(config: AuditConfig, *, calibrate: bool = True) -> DryRun:
    """Plan ``config`` (module docstring); ``calibrate=False`` skips the one-epoch fits (no
    time estimate, power only from the store)."""
    from recaudit.audit._study import _cache, plan
    from recaudit.audit._store import AuditStore
    from recaudit.metrics import rbo_batch

    planned = plan(config)
    output = Path(config.output)
    done: set[str] = set()
    if output.exists():
        with AuditStore(output, read_only=True) as store:
            done = store.finished()
    cache_uri = _cache(config)
    cache = ArrayCache(cache_uri) if cache_uri is not None else None
    rows, power = [], []
    stack = config.executor.stack
    groups: dict[tuple[str, str], list] = {}
    for trial, tid, key in planned:
        groups.setdefault((trial.dataset.label, trial.model.label), []).append(
            (trial, tid, key))
    for (dataset, label), items in groups.items():
        keys = list(dict.fromkeys(k for _, _, k in items))
        open_keys = {k for _, tid, k in items if tid not in done}
        cached = sum(1 for k in keys if cache is not None
                     and cache.has(cache_key(items[0][0], k)))
        perturbed = sum(1 for t, _, _ in items if perturbation_label(t.perturbation) != "none")
        stored = sum(1 for _, tid, _ in items if tid in done)
        remaining_pert = sum(1 for t, tid, _ in items
                             if tid not in done and perturbation_label(t.perturbation) != "none")
        remaining_base = sum(1 for k in open_keys if cache is None or not cache.has(k))
        remaining = remaining_base + remaining_pert
        trial = items[0][0]
        n_queries = len(prepare(trial.dataset, trial.split)[1].queries)
        row = {"dataset": dataset, "model": label, "baselines": len(keys),
               "perturbed": perturbed, "stored_baselines": cached, "stored_trials": stored,
               "remaining": remaining, "remaining_baselines": remaining_base,
               "epochs": np.nan,
               "s_per_epoch": np.nan, "rank_s": np.nan, "s_per_fit": np.nan,
               "time_basis": "none", "hours": np.nan, "stack_speedup": 1.0}
        sd, basis = _store_sd(output, dataset, label), "store"
        timed = _store_seconds(output, {tid for _, tid, _ in items if tid in done})
        if timed is not None:
            row.update(s_per_fit=timed, time_basis="store",
                       hours=remaining * timed / 3600)
        if calibrate and (timed is None or sd is None):
            ranks, fit_s, rank_s, epochs = _one_epoch(trial, trial.seed)
            if timed is None:
                per_fit = epochs * fit_s + rank_s
                group = max(Counter(k for t, tid, k in items if tid not in done and
                                    perturbation_label(t.perturbation) != "none").values(),
                            default=0)
                speedup = (_stack_speedup(trial, min(stack, group), fit_s) if stack > 1
                           else 1.0)
                fit_hours = (remaining_base + remaining_pert / speedup) * epochs * fit_s
                row.update(epochs=epochs, s_per_epoch=fit_s, rank_s=rank_s, s_per_fit=per_fit,
                           time_basis="calibration", stack_speedup=speedup,
                           hours=(fit_hours + remaining * rank_s) / 3600)
            if sd is None:
                other, *_ = _one_epoch(trial, trial.seed + 1)
                sd = float(np.std(rbo_batch(ranks.items, other.items, p=config.metrics.p),
                                  ddof=1))
                basis = "calibration"
        rows.append(row)
        power.append({"dataset": dataset, "model": label, "queries": n_queries,
                      "sd": np.nan if sd is None else sd,
                      "basis": basis if sd is not None else "none",
                      "rbo_difference": _mde(np.nan if sd is None else sd, n_queries)})
    return DryRun(pd.DataFrame(rows), pd.DataFrame(power), config.executor.workers, stack)
