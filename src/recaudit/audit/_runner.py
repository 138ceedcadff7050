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
- a stabilised model (``ModelSpec.stabilise``, :mod:`recaudit.stabilise`) faces exactly the
  edits chosen for its plain model (same draws; a perturbation that reads a model or the
  baseline's lists reads the plain model's), and a method that ``uses_anchor`` gets the
  unperturbed training data and seed of the trial (:class:`recaudit.stabilise.Anchor`).

A baseline is trained once per (dataset, split, model, seed) and shared by every perturbation
of it: its rank lists are cached (``<store>.baselines/<key>.npz`` or the executor's
``cache_uri``, written atomically, :class:`~recaudit.experiment.ArrayCache`, with the seconds
its training and ranking took) and read by the rest of its group, worker and re-run. In a
process pool, :func:`prime_baseline` makes it before a group of trials, which then all start at
once; on Ray, :func:`make_baseline` runs as a task of its own and its :class:`Baseline` reaches
each trial of the group as an object reference (:func:`run_trial`'s ``baseline``). Each
baseline's seconds are counted once, in the timings of the first trial of its group.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import platform
import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit import _progress as progress
from recaudit.audit._context import _fit, cache_key, close_context, perturb_context
from recaudit.audit._spec import TrialSpec, perturbation_label
from recaudit.data import Interactions, Queries, RankLists, Split
from recaudit.audit._store import QUERY_METRICS
from recaudit.experiment import ArrayCache, ModelSpec, canonical_json, prepare
from recaudit.models import checked_rank
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


def _local(cache: str | os.PathLike | None) -> Path | None:
    """``cache`` as a local directory, ``None`` when it is absent or a URL (``s3://...``)."""
    if cache is None or "://" in str(cache):
        return None
    return Path(cache)


def _anchor(trial: TrialSpec, split: Split, cache_dir: Path | None) -> Any:
    """What a stabilised model may read of the unperturbed model (``recaudit.stabilise``)."""
    if trial.model.stabilise is None:
        return None
    from recaudit.stabilise import Anchor

    return Anchor(split.train, trial.seed, cache_dir)


def _fit_rank(trial: TrialSpec, train: Interactions, split: Split, seed: int,
              cache_dir: Path | None = None, queries: Queries | None = None,
              phase: str = "perturbed") -> tuple[RankLists, float, float]:
    progress.report(phase=f"{phase} fit")
    model, fit_s = _fit(trial, train, seed, anchor=_anchor(trial, split, cache_dir))
    try:
        progress.report(phase=f"{phase} ranking")
        t1 = time.perf_counter()
        ranks = checked_rank(model, split.queries if queries is None else queries,
                             k=trial.metrics.depth)
    finally:
        if hasattr(model, "close"):  # models with files on disk (command models) remove them
            model.close()
    return ranks, fit_s, time.perf_counter() - t1


@dataclass(frozen=True)
class Baseline:
    """A baseline's rank lists (``items``, as cached), the seconds it took to train and rank
    (kept with the cached lists; 0 for an entry cached before they were kept) and whether this
    process trained it (``trained_here``; a baseline read from the cache or made by another job
    was not)."""

    items: np.ndarray
    fit_seconds: float = 0.0
    rank_seconds: float = 0.0
    trained_here: bool = False

    def counted(self, charge: bool) -> tuple[float, float, float]:
        """``(fit, rank, carried)`` seconds a trial counts for this baseline — the one rule:
        its seconds count in the trial that trained it, else in the trial charged with it
        (the first pending trial of its group), and a baseline made elsewhere is carried into
        that trial's total time too (``carried``); every other trial counts none."""
        if not (self.trained_here or charge):
            return 0.0, 0.0, 0.0
        carried = 0.0 if self.trained_here else self.fit_seconds + self.rank_seconds
        return self.fit_seconds, self.rank_seconds, carried


def train_baseline(trial: TrialSpec, split: Split, cache: str | os.PathLike | None = None
                   ) -> tuple[RankLists, float, float]:
    """Train the unperturbed model of ``trial`` and rank the test queries (the one place a
    baseline is trained); ``cache``: the audit's baseline cache (a stabilised model keeps what
    it derives there when it is a local directory)."""
    return _fit_rank(trial, split.train, split, trial.seed, _local(cache), phase="baseline")


def _baseline(trial: TrialSpec, log_: Interactions, split: Split,
              cache: str | os.PathLike | None, given: Baseline | None = None) -> Baseline:
    """The baseline of ``trial`` from its one source in order: ``given`` (made by another job:
    Ray's shared task), else the ``cache``, else trained here (and written to the cache)."""
    if given is not None:
        if len(given.items) != len(split.queries):
            raise ValueError(f"baseline has {len(given.items)} rank lists for "
                             f"{len(split.queries)} queries")
        return dataclasses.replace(given, trained_here=False)
    key = cache_key(trial, trial.baseline_key(log_.fingerprint()))
    store = None if cache is None else ArrayCache(cache)
    hit = None if store is None else _cached(store, key)
    if hit is not None:
        return hit
    with _training(_local(cache), key):   # one process trains it; the others wait and read
        hit = None if store is None else _cached(store, key)
        if hit is not None:
            return hit
        ranks, fit_s, rank_s = train_baseline(trial, split, cache)
        if store is not None:
            store.put(key, items=ranks.items, fit_seconds=np.asarray(fit_s),
                      rank_seconds=np.asarray(rank_s))
    return Baseline(ranks.items, fit_s, rank_s, trained_here=True)


def _cached(store: ArrayCache, key: str) -> Baseline | None:
    hit = store.get(key)
    if hit is None:
        return None
    fit, rank = (float(hit[name]) if name in hit else 0.0 for name in ("fit_seconds",
                                                                      "rank_seconds"))
    return Baseline(hit["items"], fit, rank)


@contextlib.contextmanager
def _training(folder: Path | None, key: str) -> Iterator[None]:
    """Hold the lock of baseline ``key`` in the local cache ``folder`` (``<key>.lock``, an
    ``flock``: released by the system when its holder dies) while the block trains it, so a
    trial that waits for a baseline another worker is training (a process pool's priming, see
    :func:`run_trial`) reads it instead of training it again; no lock without a local cache.
    The file is removed once the baseline is cached (whoever takes the lock then finds it)."""
    if folder is None:
        yield
        return
    import fcntl

    from recaudit._files import writing

    with writing(folder, action="create the folder"):
        folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{key}.lock"
    with writing(path):
        handle = open(path, "a")
    with handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            path.unlink(missing_ok=True)
            fcntl.flock(handle, fcntl.LOCK_UN)


def make_baseline(trial: TrialSpec, cache: str | os.PathLike | None = None) -> Baseline:
    """The baseline of ``trial``: read from ``cache`` (a directory or URL), else trained (and
    written there); its seconds are those of the training, kept with the cached lists."""
    data, split = prepare(trial.dataset, trial.split)
    return _baseline(trial, data, split, cache)


def prime_baseline(trial: TrialSpec, cache: str | os.PathLike) -> None:
    """Make sure ``cache`` holds the baseline of ``trial`` (trained and written if it does
    not; an entry already there is not read). The process pool runs it before a group of
    trials, which then all read the lists, the first of them counting their seconds."""
    data, split = prepare(trial.dataset, trial.split)
    if ArrayCache(cache).has(cache_key(trial, trial.baseline_key(data.fingerprint()))):
        return
    progress.report(label=f"{trial.model.label} · baseline · seed {trial.seed}",
                    phase="baseline fit")
    _baseline(trial, data, split, cache)


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
             stack: int = 1) -> TrialOutcome:
    """The trial's row, per-query results and record (``stack``: the size of the stack its
    model was trained in, recorded in ``versions`` when above 1)."""
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
           "total_seconds": time.perf_counter() - p.t0 + p.carried,
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
    if last and baseline is None and baseline_last(trial, spec, cache_dir):
        return _baseline_last(trial, spec, audit=audit, cache_dir=cache_dir,
                              charge_baseline=charge_baseline)
    p = _prepare(trial, spec, cache_dir=cache_dir, baseline=baseline,
                 charge_baseline=charge_baseline)
    pert, fit_s, rank_s = _fit_rank(trial, p.train, p.split, p.seed, _local(cache_dir),
                                    p.inputs)
    return _outcome(p, pert, fit_s, rank_s, audit)


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
    pert, fit_s, rank_s = _fit_rank(trial, train, split, seed, _local(cache_dir), inputs)
    progress.report(phase="waiting for the baseline")
    w0 = time.perf_counter()
    made = _baseline(trial, data, split, cache_dir)
    # waiting for a baseline trained elsewhere is not this trial's time; training it is
    waited = 0.0 if made.trained_here else time.perf_counter() - w0
    base_fit, base_rank, carried = made.counted(charge_baseline)
    p = _Prepared(trial, spec, split, fingerprint, RankLists(made.items), base_fit, base_rank,
                  carried, train, record, seed, inputs, perturb_s, started, t0 + waited)
    return _outcome(p, pert, fit_s, rank_s, audit)


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
