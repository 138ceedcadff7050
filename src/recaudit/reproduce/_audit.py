"""Experiments that are stability audits: run a config, read our measures from its store.

Experiments of one paper and scale share a store (``<root>/<paper>-<dataset>-<scale>.duckdb``):
a trial is identified by its spec, so a trial two experiments need (e.g. LatentCross with
random deletion, seed 0) runs once and both read it. Measures are read only from the trials
the experiment's own config plans.

Measure keys are ``"<model>/<perturbation>/<metric>"`` (model without its ``@preset``), means
over seeds of the per-trial means over test queries, under the names the store keeps
(:data:`recaudit.audit.QUERY_METRICS`): ``average_overlap`` (over the full lists: what Oh et
al. 2022 call RBO), ``rbo`` (RBO_ext, p from the config), ``jaccard``, ``frbo`` (@k),
``mrr_base`` / ``mrr_pert``, ``hit_base`` / ``hit_pert`` (HR@k = Recall@k with one relevant
item per query), ``ndcg_base`` / ``ndcg_pert`` (@k), plus ``.../n_seeds``.

Their samples (:class:`recaudit.reproduce.Measures`): the per-query values of every trial,
with ``replicate`` = ``"<seed>:<draw>"`` and ``unit`` = the test query, so that two
perturbations of one model are compared query by query.

Planning (``recaudit reproduce run --dry-run``): inside :func:`planning`, :func:`audit_trials`
trains nothing and returns no trials; it collects the configs the experiment's runner hands
it, so the plan is made from the very configs a run would use (nothing to keep in step).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path

import pandas as pd

__all__ = ["audit_trials", "group_measures", "on_device", "planning", "rls_measures", "stacked",
           "rls_samples", "shared_store"]

_PLANNED: ContextVar[list | None] = ContextVar("recaudit_reproduce_planned", default=None)
_DEVICE: ContextVar[str | None] = ContextVar("recaudit_reproduce_device", default=None)
_STACK: ContextVar[int] = ContextVar("recaudit_reproduce_stack", default=1)
_TRAINED_ON: ContextVar[dict | None] = ContextVar("recaudit_reproduce_trained_on", default=None)

#: The measure that sums the trials' own time (``trials.total_seconds``: the first trial of a
#: baseline's group carries the baseline's fit), so a record made with ``--no-train`` or over
#: many invocations still says what its numbers cost to train.
TRIAL_SECONDS = "trial_seconds"
_METRICS = ("rbo", "average_overlap", "jaccard", "frbo", "mrr_base", "mrr_pert", "hit_base",
            "hit_pert", "ndcg_base", "ndcg_pert")


def shared_store(workdir: Path, stem: str) -> Path:
    """The store shared by a paper's experiments at one scale: ``workdir/../../<stem>.duckdb``
    (``workdir`` is ``<root>/<experiment>/<scale>``)."""
    return workdir.parent.parent / f"{stem}-{workdir.name}.duckdb"


_EMPTY = pd.DataFrame(columns=["trial_id", "dataset", "model", "model_label", "perturbation",
                               "seed"])


@contextmanager
def planning() -> Iterator[list]:
    """Within this block :func:`audit_trials` trains nothing and returns no trials: it appends
    each config it is given (with its workers) to the list this yields."""
    configs: list = []
    token = _PLANNED.set(configs)
    try:
        yield configs
    finally:
        _PLANNED.reset(token)


@contextmanager
def stacked(stack: int) -> Iterator[None]:
    """Within this block :func:`audit_trials` trains up to ``stack`` trials of one baseline
    together (``executor.stack``; numbers and trial ids unchanged)."""
    token = _STACK.set(stack)
    try:
        yield
    finally:
        _STACK.reset(token)


@contextmanager
def on_device(device: str | None) -> Iterator[None]:
    """Within this block :func:`audit_trials` trains every model that has a ``device``
    parameter on ``device`` (e.g. ``"cuda:0"``): the model's ``device`` becomes ``"auto"`` and
    the trials run in a process pool whose workers all train on ``device``, so ``workers``
    trials share one GPU. Trial ids do not change (the device is not part of them), so a
    store filled on a GPU is resumed, read and recorded on a CPU machine and vice versa.
    ``None`` or ``"cpu"``: the experiments' own settings (the CPU)."""
    token = _DEVICE.set(None if device in (None, "cpu") else device)
    try:
        yield
    finally:
        _DEVICE.reset(token)


def _placed(config, workers: int, device: str):
    """``config`` with its models that take a ``device`` on ``device`` (see :func:`on_device`)."""
    from dataclasses import replace

    from recaudit.models import parameters

    models = tuple(replace(m, params={**m.params, "device": "auto"})
                   if any(p == "device" for p, _, _ in parameters(m.name)) else m
                   for m in config.models)
    return replace(config, models=models, executor=replace(
        config.executor, kind="process", workers=workers, devices=(device,)))


@contextmanager
def trained_on() -> Iterator[dict[str, list[str]]]:
    """Within this block :func:`audit_trials` notes, per model (without its ``@preset``), the
    devices its trials were trained on, as the store recorded them (``versions.device``, e.g.
    ``"cuda:0 (NVIDIA H200)"``): a record made on one machine from trials trained on another
    says so."""
    seen: dict[str, list[str]] = {}
    token = _TRAINED_ON.set(seen)
    try:
        yield seen
    finally:
        _TRAINED_ON.reset(token)


def _note_devices(output: str, ids: set[str]) -> None:
    seen = _TRAINED_ON.get()
    if seen is None or not ids:
        return
    from recaudit.experiment import Store

    with Store(output, read_only=True) as store:
        rows = store.sql("SELECT trial_id, model, json_extract_string(versions, '$.device') "
                         "AS device FROM trials")
    rows = rows[rows["trial_id"].isin(ids) & rows["device"].notna()]
    for (model, device), _ in rows.groupby(["model", "device"], sort=True):
        devices = seen.setdefault(_model_key(model), [])
        if device not in devices:
            devices.append(device)


def is_planning() -> bool:
    """Whether a :func:`planning` block is active (a runner's work beside its audits, e.g. a
    timing, is skipped then)."""
    return _PLANNED.get() is not None


def audit_trials(config, workers: int = 1, train: bool = True) -> pd.DataFrame:
    """Run ``config`` (resuming its store) and return the summary of its own trials;
    ``train=False``: only read the trials the store already holds (a partial run)."""
    from dataclasses import replace

    from recaudit.audit import run_audit, trial_summary
    from recaudit.audit import plan

    device = _DEVICE.get()
    if device is not None:
        config = _placed(config, workers, device)
    elif workers > 1:
        config = replace(config, executor=replace(config.executor, kind="process",
                                                  workers=workers))
    if _STACK.get() > 1:
        config = replace(config, executor=replace(config.executor, stack=_STACK.get()))
    planned = _PLANNED.get()
    if planned is not None:        # planning: collect the config, train and read nothing
        planned.append(config)
        return _EMPTY.copy()
    Path(config.output).parent.mkdir(parents=True, exist_ok=True)
    if train:
        run_audit(config)
    elif not Path(config.output).exists():
        return _EMPTY.copy()
    ids = {tid for _, tid, _ in plan(config)}
    summary = trial_summary(config.output)
    mine = summary[summary["trial_id"].isin(ids)].reset_index(drop=True)
    _note_devices(config.output, set(mine["trial_id"]))
    return mine


def _model_key(name: str) -> str:
    return name.split("@", 1)[0]


def rls_measures(summary: pd.DataFrame, *, by_dataset: bool = False) -> dict[str, float]:
    """Means over seeds per (model, perturbation[, dataset]) as flat measure keys."""
    out: dict[str, float] = {}
    keys = ["dataset", "model", "perturbation"] if by_dataset else ["model", "perturbation"]
    for key, g in summary.groupby(keys, sort=False):
        key = (key,) if isinstance(key, str) else key
        parts = list(key)
        parts[keys.index("model")] = _model_key(parts[keys.index("model")])
        prefix = "/".join(str(p) for p in parts)
        for m in _METRICS:
            if m in g:
                out[f"{prefix}/{m}"] = float(g[m].mean())
        out[f"{prefix}/n_seeds"] = float(g["seed"].nunique())
        if "total_seconds" in g:  # what the trials cost, whichever run trained them: at
            # least their fits' (a trial whose fit resumed from a kept state, stored before
            # its total added the fit's earlier seconds, has a total below its fit's)
            spent = g[[c for c in ("total_seconds", "fit_seconds") if c in g]].max(axis=1)
            out[f"{prefix}/{TRIAL_SECONDS}"] = float(spent.sum())
    return out


def _samples(frame: pd.DataFrame, value: str, unit: str) -> pd.DataFrame:
    return pd.DataFrame({"replicate": frame["seed"].astype(str) + ":"
                         + frame["draw"].astype(str) if "draw" in frame else
                         frame["seed"].astype(str),
                         "unit": frame[unit].astype(str),
                         "value": frame[value].astype(float)}).reset_index(drop=True)


def rls_samples(config, summary: pd.DataFrame, rename=lambda p: p) -> dict[str, pd.DataFrame]:
    """Per-query values of ``summary``'s trials, by the keys :func:`rls_measures` gives
    (``rename``: the perturbation's key from its store label)."""
    from recaudit.audit import AuditStore

    ids = set(summary["trial_id"])
    out: dict[str, pd.DataFrame] = {}
    with AuditStore(config.output, read_only=True) as store:
        for (dataset, label), _ in summary.groupby(["dataset", "model_label"], sort=False):
            q = store.query_values(_METRICS, dataset, label)
            q = q[q["trial_id"].isin(ids)]
            model = _model_key(str(summary.loc[summary.model_label == label, "model"].iloc[0]))
            for pert, g in q.groupby("perturbation", sort=False):
                for m in _METRICS:
                    out[f"{model}/{rename(pert)}/{m}"] = _samples(g, m, "query")
    return out


def group_measures(config, summary: pd.DataFrame, metric: str = "jaccard",
                   rename=lambda p: p) -> tuple[dict[str, float], dict[str, pd.DataFrame]]:
    """``<model>/<perturbation>/<metric>_<high|mid|low>``: mean over seeds of each MRR user
    group's mean (Oh et al. 2022 §7.3: top 20 %, middle, bottom 20 % by baseline MRR), and the
    per-user samples (unit: the user)."""
    from recaudit.audit import user_groups

    users = user_groups(config.output, metric, users=True)
    users = users[users["trial_id"].isin(set(summary["trial_id"]))]
    means: dict[str, float] = {}
    samples: dict[str, pd.DataFrame] = {}
    for (model, pert, group), g in users.groupby(["model", "perturbation", "group"]):
        key = f"{_model_key(model)}/{rename(pert)}/{metric}_{group}"
        means[key] = float(g.groupby("seed")[metric].mean().mean())
        samples[key] = _samples(g.assign(draw=0), metric, "user")
    return means, samples
