"""Running one trial: train baseline and perturbed models, compare their rank lists.

A trial's result is a pure function of its :class:`TrialSpec`:

- the data comes from the dataset spec (loaded, filtered and split the same way everywhere,
  :func:`recaudit.experiment.prepare`);
- the baseline model is trained on the original training set with training seed ``seed``;
- the perturbation (any registered family, :func:`recaudit.perturb.parse`) draws from
  ``make_rng(seed, data fingerprint, perturbation)`` (``..., "draw", d)`` for the repeated draw
  ``d >= 1`` of :attr:`AuditConfig.draws`) and gets the inputs its ``needs``
  declares (:func:`perturb_context`); the perturbed model is trained with the *same* training
  seed (all training randomness fixed, Oh et al. 2022 §5), unless the perturbation asks for a
  reseed (``seed-only``: ``derive_seed(seed, "seed-only")``, Betello et al. 2023 RQ1);
- both models rank the same test queries, built once from the original data, unless the
  perturbation's ``needs.inputs`` asks for its edits to reach the test inputs too: then the
  perturbed model ranks the queries with the difference between the original and the perturbed
  training log applied to their contexts (:func:`edited_queries`);
- a perturbation whose ``needs.warm`` is set (``remove-last-<window>+warm``) replaces the
  baseline side with the perturbed (stale) model warm-started on the removed window
  (:mod:`recaudit.audit._warm`, where the comparison is written down);
- a stabilised model (``ModelSpec.stabilise``, :mod:`recaudit.stabilise`) faces exactly the
  edits chosen for its plain model (same draws; a perturbation that reads a model or the
  baseline's lists reads the plain model's), and a method that ``uses_anchor`` gets the
  unperturbed training data and seed of the trial (:class:`recaudit.stabilise.Anchor`).

A baseline is trained once per (dataset, split, model, seed) and shared by every perturbation
of it (:mod:`recaudit.audit._baselines`).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import platform
import socket
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from recaudit import _progress as progress
from recaudit.audit._baselines import (Baseline, _baseline, _fit_rank, _local, make_baseline,
                                       prime_baseline, train_baseline)
from recaudit.audit._context import _fit, close_context, perturb_context
from recaudit.audit._spec import TrialSpec, perturbation_label
from recaudit.data import Interactions, Queries, RankLists, Split
from recaudit.audit._store import QUERY_METRICS
from recaudit.audit._warm import warm_lists
from recaudit.experiment import ModelSpec, canonical_json, prepare
from recaudit.perturb import Perturbation, parse
from recaudit.seeds import derive_seed, make_rng

__all__ = ["run_trial", "TrialOutcome", "Baseline", "make_baseline", "prime_baseline",
           "train_baseline", "compare", "versions", "edited_queries", "baseline_last"]

log = logging.getLogger(__name__)


def versions(model: ModelSpec) -> dict[str, str]:
    """Library versions (:func:`recaudit._version.versions`) and, for a model that takes a
    ``device`` parameter (the torch models), the device it trained on: its ``device``
    resolved in this process (``"auto"``: the worker's GPU, else CUDA when present, else the
    CPU), e.g. ``"cuda:0 (NVIDIA H100)"`` or ``"cpu (x86_64)"``.

    A model without one (rating-based, a command, a user's class) records no device: recaudit
    does not place it, and torch is not imported for it. (Before, every trial recorded where a
    ``device="auto"`` model would have trained, a GPU for a rating-based model that never used
    one.)"""
    from recaudit._version import versions as library_versions

    device = _device_param(model)
    if device is None:
        return library_versions()
    import torch

    from recaudit.models import model_class, resolve_device

    placed = resolve_device(device)
    name = torch.cuda.get_device_name(placed) if placed.type == "cuda" else platform.machine()
    out = {**library_versions(), "device": f"{placed} ({name})"}
    describe = getattr(model_class(model.name), "implementation_of", None)
    if describe is not None:   # the version of the model's arithmetic (the sequential models)
        out["implementation"] = describe(model.params, placed)
    return out


def _device_param(model: ModelSpec) -> str | None:
    """``model``'s ``device`` parameter (given, else its class's default); ``None`` when its
    class declares none."""
    from recaudit.models import model_class

    if "device" in model.params:
        return str(model.params["device"])
    config = getattr(model_class(model.name), "Config", None)
    if config is None or not dataclasses.is_dataclass(config):
        return None
    default = {f.name: f.default for f in dataclasses.fields(config)}.get("device")
    return None if default in (None, dataclasses.MISSING) else str(default)


def compare(base: RankLists, pert: RankLists, split: Split, k: int, p: float) -> pd.DataFrame:
    """Per-query similarity of two rank lists and accuracy of both (one row per query):
    ``query``, ``user``, ``target`` and :data:`~recaudit.audit.QUERY_METRICS` — the panel of
    :func:`recaudit.metrics.similarity_panel` (RBO_ext, its bounds, the finite RBO sum, average
    overlap, FRBO@k, Jaccard@k) and :func:`recaudit.metrics.accuracy_panel` of the baseline
    (``_base``) and the perturbed (``_pert``) model, and the two top-k lists in the data's own
    item ids (``top_base``, ``top_pert``: JSON arrays)."""
    from recaudit.metrics import accuracy_panel, similarity_panel

    a, b = base.items, pert.items
    target = split.queries.target
    out: dict[str, Any] = {"query": np.arange(len(a)),
                           "user": split.queries.user.astype(np.int64),
                           "target": target.astype(np.int64),
                           **similarity_panel(a, b, k=k, p=p, n_items=split.queries.n_items)}
    for tag, items in (("base", a), ("pert", b)):
        for m, values in accuracy_panel(items, target, k=k).items():
            out[f"{m}_{tag}"] = values
    ids = split.train.item_ids
    for tag, items in (("base", a), ("pert", b)):
        out[f"top_{tag}"] = [json.dumps(ids[row].tolist()) for row in items[:, :k]]
    return pd.DataFrame(out)[["query", "user", "target", *QUERY_METRICS, "top_base",
                              "top_pert"]]


def edited_queries(queries: Queries, before: Interactions, after: Interactions) -> Queries:
    """``queries`` with the edits that turned training log ``before`` into ``after`` applied
    to their contexts (:meth:`recaudit.data.Queries.edited`). The edits are read from the two
    logs, not from a family's record, so every family gets the same treatment: a row of
    ``before`` whose ``(user, item, time)`` is not in ``after`` was removed (a replaced item
    counts as removed and its new item as added), a row of ``after`` not in ``before`` added.
    """
    def keys(log: Interactions) -> pd.MultiIndex:
        return pd.MultiIndex.from_arrays([log.user, log.item, log.timestamp])

    kb, ka = keys(before), keys(after)
    removed = before.take(np.flatnonzero(~np.asarray(kb.isin(ka))))
    added = after.take(np.flatnonzero(~np.asarray(ka.isin(kb))))
    return queries.edited(removed, added)


@dataclass
class TrialOutcome:
    """What a worker sends back: the trial row, per-query results and the record."""

    row: dict[str, Any]
    queries: pd.DataFrame
    record: dict[str, Any] | None


def run_trial(trial: TrialSpec, perturbation: Perturbation | None = None, *,
              audit: str = "audit", cache_dir: str | os.PathLike | None = None,
              baseline: Baseline | None = None, charge_baseline: bool = True,
              baseline_last: bool = False) -> TrialOutcome:
    """Run one trial from its spec (pure: same spec, same numbers).

    ``perturbation`` is ``trial.perturbation`` already parsed (the engine parses it once, in
    the process that read the config); ``cache_dir`` (a directory or an fsspec URL) holds the
    shared baselines. ``baseline``: the trial's baseline, made elsewhere
    (:func:`make_baseline`). A baseline made elsewhere — passed, or read from the cache —
    counts its seconds in this trial's timings (fit, rank and total) if ``charge_baseline`` (the
    engine charges the first trial of each baseline, so that every baseline is counted once);
    one trained here always counts. ``baseline_last``: train the perturbed model first and
    then take the baseline (from the cache, waiting while another worker trains it), where
    the perturbation allows it (:func:`baseline_last`; a process pool's priming then trains
    the baseline beside this trial's own fit).
    Models' temporary files (command models, RecBole's worker) go under the store's directory
    (the parent of a local ``cache_dir``) and are removed when the trial ends.
    """
    from recaudit.models import scratch_dir

    local = _local(cache_dir)
    with scratch_dir(None if local is None else local.parent):
        return _run_trial(trial, perturbation, audit=audit, cache_dir=cache_dir,
                          baseline=baseline, charge_baseline=charge_baseline,
                          last=baseline_last)


@dataclass
class _Prepared:
    """A trial up to its perturbed training log (what its fit needs, and what its row needs
    after it)."""

    trial: TrialSpec
    spec: Perturbation
    split: Split
    fingerprint: str
    base: RankLists
    base_fit: float
    base_rank: float
    carried: float
    train: Interactions
    record: Any
    seed: int
    inputs: Queries | None
    perturb_seconds: float
    started: float
    t0: float


def _prepare(trial: TrialSpec, perturbation: Perturbation | None, *,
             cache_dir: str | os.PathLike | None, baseline: Baseline | None,
             charge_baseline: bool) -> _Prepared:
    started = time.time()
    t0 = time.perf_counter()
    progress.report(label=trial.label, phase="loading data")
    data, split = prepare(trial.dataset, trial.split)
    fingerprint = data.fingerprint()
    made = _baseline(trial, data, split, cache_dir, baseline)
    base = RankLists(made.items)
    base_fit, base_rank, carried = made.counted(charge_baseline)
    spec = parse(trial.perturbation) if perturbation is None else perturbation
    p0 = time.perf_counter()
    plain_base = base  # a stabilised model faces the edits chosen for its plain model
    if trial.model.stabilise is not None and spec.needs.recommendations:
        plain_base = RankLists(_baseline(dataclasses.replace(trial, model=trial.model.base),
                                         data, split, cache_dir).items)
    train, record, seed, inputs = _perturbed(trial, spec, split, fingerprint, plain_base,
                                             cache_dir)
    return _Prepared(trial, spec, split, fingerprint, base, base_fit, base_rank, carried, train,
                     record, seed, inputs, time.perf_counter() - p0, started, t0)


def _perturbed(trial: TrialSpec, spec: Perturbation, split: Split, fingerprint: str,
               base: RankLists | None, cache_dir: str | os.PathLike | None
               ) -> tuple[Interactions, Any, int, Queries | None]:
    """The trial's perturbed training log and record (drawn from ``make_rng(seed, data
    fingerprint, perturbation[, "draw", d])``), its training seed and, when the edits reach
    the test inputs, the edited queries."""
    keys: tuple[Any, ...] = ("draw", trial.draw) if trial.draw else ()
    rng = make_rng(trial.seed, fingerprint, canonical_json(trial.perturbation), *keys)
    progress.report(phase="perturbing")
    context = perturb_context(spec, trial, split, base, cache_dir)
    try:
        train, record = spec.perturb(split.train, rng, context)
    finally:
        close_context(context)
    seed = derive_seed(trial.seed, "seed-only") if spec.needs.reseed else trial.seed
    inputs = edited_queries(split.queries, split.train, train) if spec.needs.inputs else None
    return train, record, seed, inputs


def _outcome(p: _Prepared, pert: RankLists, fit_s: float, rank_s: float, audit: str,
             stack: int = 1, before: float = 0.0) -> TrialOutcome:
    """The trial's row, per-query results and record (``stack``: the size of the stack its
    model was trained in, recorded in ``versions`` when above 1; ``before``: the seconds of
    ``fit_s`` spent before this process, which the total adds to the wall time, so that a
    trial's total is never below its fit's)."""
    trial, split = p.trial, p.split
    queries = compare(p.base, pert, split, trial.metrics.k, trial.metrics.p)
    used = versions(trial.model)
    if stack > 1:
        used["stack"] = str(stack)
    row = {"trial_id": trial.trial_id(p.fingerprint),
           "baseline_key": trial.baseline_key(p.fingerprint),
           "audit": audit, "dataset": trial.dataset.label, "model": trial.model.name,
           "model_label": trial.model.label, "perturbation": perturbation_label(trial.perturbation),
           **p.spec.describe().to_dict(),
           "seed": trial.seed, "draw": trial.draw, "spec": canonical_json(trial.to_dict()),
           "data_fingerprint": p.fingerprint, "n_queries": len(queries), "status": "done",
           "started": p.started, "finished": time.time(), "fit_seconds": fit_s + p.base_fit,
           "rank_seconds": rank_s + p.base_rank, "perturb_seconds": p.perturb_seconds,
           "total_seconds": time.perf_counter() - p.t0 + p.carried + before,
           "versions": canonical_json(used), "host": socket.gethostname()}
    log.info("trial %s: %s %s seed %d done in %.1f s", row["trial_id"], trial.model.label,
             row["perturbation"], trial.seed, row["total_seconds"])
    stored = None if p.record is None else p.record.to_dict()
    if stored is not None and (own := in_your_ids(stored, split.train)):
        stored["in_your_ids"] = own
    return TrialOutcome(row, queries, stored)


def baseline_last(trial: TrialSpec, spec: Perturbation,
                  cache: str | os.PathLike | None) -> bool:
    """Whether ``trial`` may train its perturbed model before it has its baseline, reading the
    baseline's lists only to compare: its perturbation reads neither the baseline's lists nor
    its model, its model is not stabilised (which reads the unperturbed model), and the
    baseline cache is a local folder (where :func:`_training` waits for a baseline another
    worker trains). A process pool of two workers or more starts such a trial with its
    group's priming (``run_trial(..., baseline_last=True)``); elsewhere the baseline comes
    first, so that an interrupted run keeps it for the rest of its group."""
    needs = spec.needs
    return (_local(cache) is not None and trial.model.stabilise is None
            and not needs.recommendations and not needs.model)


def _run_trial(trial: TrialSpec, perturbation: Perturbation | None, *, audit: str,
               cache_dir: str | os.PathLike | None, baseline: Baseline | None,
               charge_baseline: bool, last: bool = False) -> TrialOutcome:
    spec = parse(trial.perturbation) if perturbation is None else perturbation
    if spec.needs.warm:  # the baseline side is the stale model warm-started (._warm)

        return warm_trial(trial, spec, audit=audit, cache_dir=cache_dir)
    if last and baseline is None and baseline_last(trial, spec, cache_dir):
        return _baseline_last(trial, spec, audit=audit, cache_dir=cache_dir,
                              charge_baseline=charge_baseline)
    p = _prepare(trial, spec, cache_dir=cache_dir, baseline=baseline,
                 charge_baseline=charge_baseline)
    pert, fit_s, rank_s, before = _fit_rank(trial, p.train, p.split, p.seed,
                                            _local(cache_dir), p.inputs)
    return _outcome(p, pert, fit_s, rank_s, audit, before=before)


def _baseline_last(trial: TrialSpec, spec: Perturbation, *, audit: str,
                   cache_dir: str | os.PathLike | None, charge_baseline: bool) -> TrialOutcome:
    """A trial whose perturbed model does not depend on its baseline
    (:func:`baseline_last`): perturbed fit and lists first, then the baseline from the cache
    (waiting while another worker trains it, else training it here). The same numbers as the
    usual order: the perturbation draws from the same generator and reads nothing of the
    baseline. The seconds spent waiting are another worker's and not counted."""
    started = time.time()
    t0 = time.perf_counter()
    progress.report(label=trial.label, phase="loading data")
    data, split = prepare(trial.dataset, trial.split)
    fingerprint = data.fingerprint()
    p0 = time.perf_counter()
    train, record, seed, inputs = _perturbed(trial, spec, split, fingerprint, None, cache_dir)
    perturb_s = time.perf_counter() - p0
    pert, fit_s, rank_s, before = _fit_rank(trial, train, split, seed, _local(cache_dir),
                                            inputs)
    progress.report(phase="waiting for the baseline")
    w0 = time.perf_counter()
    made = _baseline(trial, data, split, cache_dir)
    # waiting for a baseline trained elsewhere is not this trial's time; training it is
    waited = 0.0 if made.trained_here else time.perf_counter() - w0
    base_fit, base_rank, carried = made.counted(charge_baseline)
    p = _Prepared(trial, spec, split, fingerprint, RankLists(made.items), base_fit, base_rank,
                  carried, train, record, seed, inputs, perturb_s, started, t0 + waited)
    return _outcome(p, pert, fit_s, rank_s, audit, before=before)


def in_your_ids(record: dict[str, Any], train: Interactions) -> dict[str, Any]:
    """The edits of a perturbation record in the data's own ids and timestamps (the record's
    ``rows``, ``deleted``, ``inserted``, ``replaced`` and ``users`` are internal row and code
    numbers): ``deleted`` / ``selected`` as ``{user, item, timestamp}``, ``inserted`` as
    ``{user, item, timestamp, before}``, ``replaced`` as ``{user, item, timestamp,
    new_item}``, ``users`` as ids."""
    def ids(codes, table) -> list:
        return [table[int(c)].item() if hasattr(table[int(c)], "item") else table[int(c)]
                for c in codes]

    def rows(idx) -> list[dict[str, Any]]:
        idx = np.asarray(list(idx), dtype=np.int64)
        if not len(idx):
            return []
        users = ids(train.user[idx], train.user_ids)
        items = ids(train.item[idx], train.item_ids)
        return [{"user": u, "item": i, "timestamp": t.item()}
                for u, i, t in zip(users, items, train.timestamp[idx])]

    out: dict[str, Any] = {}
    if record.get("kind") not in ("delete", "insert", "replace") or not all(
            isinstance(r, int) for r in (*record.get("rows", ()), *record.get("deleted", ()))):
        return out  # another family's record: kept as it is
    if record.get("deleted"):
        out["deleted"] = rows(record["deleted"])
    elif record.get("rows"):
        out["selected"] = rows(record["rows"])
    if record.get("inserted"):
        out["inserted"] = [{"user": ids([u], train.user_ids)[0],
                            "item": ids([i], train.item_ids)[0],
                            "timestamp": t, "before": rows([b])[0] if b < len(train) else None}
                           for b, u, i, t, _ in record["inserted"]]
    if record.get("replaced"):
        out["replaced"] = [{**rows([r])[0], "new_item": ids([new], train.item_ids)[0]}
                           for r, _, new in record["replaced"]]
    if record.get("users"):
        out["users"] = ids(record["users"], train.user_ids)
    return out


def warm_trial(trial: TrialSpec, spec: Perturbation, *, audit: str,
               cache_dir: str | os.PathLike | None) -> Any:
    """Run a ``+warm`` trial (:mod:`recaudit.audit._warm`): the stale fit, its lists (the perturbed
    side), the warm start and its lists (the baseline side)."""
    from recaudit.models import checked_rank

    started = time.time()
    t0 = time.perf_counter()
    progress.report(label=trial.label, phase="loading data")
    data, split = prepare(trial.dataset, trial.split)
    fingerprint = data.fingerprint()
    p0 = time.perf_counter()
    train, record, seed, inputs = _perturbed(trial, spec, split, fingerprint, None, cache_dir)
    perturb_s = time.perf_counter() - p0
    progress.report(phase="perturbed fit")
    stale, fit_s, before = _fit(trial, train, seed)
    try:
        progress.report(phase="perturbed ranking")
        t1 = time.perf_counter()
        pert = checked_rank(stale, split.queries, k=trial.metrics.depth)
        rank_s = time.perf_counter() - t1
        base, warm_fit, warm_rank = warm_lists(trial, spec, split, stale, record, seed)
    finally:
        if hasattr(stale, "close"):
            stale.close()
    p = _Prepared(trial, spec, split, fingerprint, base, warm_fit, warm_rank, 0.0, train,
                  record, seed, inputs, perturb_s, started, t0)
    return _outcome(p, pert, fit_s, rank_s, audit, before=before)
