"""Analysis of an audit store, returned as tidy DataFrames (rendering is elsewhere).

- :func:`trial_summary` — per trial, the mean over test queries of every similarity (RLS) and
  of both models' accuracy;
- :func:`user_groups` — RLS by user group, users ranked by the *baseline* model's per-user MRR:
  top 20 %, middle 60 %, bottom 20 % (Oh et al. 2022 §7.3);
- :func:`query_distribution` — box-plot statistics of per-query similarities.

Means with intervals, paired comparisons and noise floors are in :mod:`._decide`.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from recaudit.audit._store import QUERY_METRICS, AuditStore
from recaudit.experiment import Store

__all__ = ["trial_summary", "user_groups", "METRICS", "query_distribution"]

#: Per-query columns averaged into a trial's figures (the store's ``query_results``).
METRICS = list(QUERY_METRICS)
_KEYS = ["dataset", "model", "model_label", "perturbation"]
#: The perturbation's description stored with each trial (see ``recaudit.perturb``).
DESCRIPTION = ["family", "edit", "count", "position", "reference"]


@contextlib.contextmanager
def _opened(store: Store | str | Path) -> Iterator[AuditStore]:
    """``store`` itself (as an :class:`AuditStore`), or the file at that path opened
    read-only for the block."""
    if isinstance(store, Store):
        yield AuditStore.of(store)
        return
    with AuditStore(store, read_only=True) as s:
        yield s


def trial_summary(store: Store | str | Path) -> pd.DataFrame:
    """One row per trial: its labels, the perturbation's description, seed, draw, timings and
    the mean of each per-query metric (:data:`QUERY_METRICS`)."""
    with _opened(store) as s:
        means = s.trial_means()
        trials = s.trials()
    cols = ["trial_id", *_KEYS, *[c for c in DESCRIPTION if c in trials], "seed", "draw",
            "n_queries", "fit_seconds", "total_seconds"]
    trials = trials[cols]
    out = trials.merge(means, on="trial_id", how="left")
    return out.sort_values([*_KEYS, "seed", "draw"]).reset_index(drop=True)


def user_groups(store: Store | str | Path, metric: str = "rbo", *,
                top: float = 0.2, bottom: float = 0.2, users: bool = False) -> pd.DataFrame:
    """Mean ``metric`` per trial and user group (``high``, ``mid``, ``low``); ``users=True``:
    one row per trial and user instead (``user``, ``group``, ``mrr_base``, ``metric``).

    Users are ordered by the baseline model's MRR over their test queries in that trial;
    the best ``top`` fraction (rounded down, at least one user) is ``high``, the worst
    ``bottom`` fraction ``low``, the rest ``mid``. Ties in MRR are broken by user code, so
    groups are deterministic.
    """
    with _opened(store) as s:
        q = s.per_query("mrr_base", metric)
        trials = s.trials()[["trial_id", *_KEYS, "seed"]]
    per_user = q.groupby(["trial_id", "user"], sort=True).agg(
        mrr=("mrr_base", "mean"), value=(metric, "mean")).reset_index()
    parts = []
    for _, g in per_user.groupby("trial_id", sort=False):
        g = g.sort_values(["mrr", "user"], ascending=[False, True], kind="stable")
        n = len(g)
        n_top = max(1, int(np.floor(top * n)))
        n_bot = max(1, int(np.floor(bottom * n)))
        label = np.array(["mid"] * n, dtype=object)
        label[:n_top] = "high"
        label[n - n_bot:] = "low"
        parts.append(g.assign(group=label))
    grouped = pd.concat(parts) if parts else per_user.assign(group=[])
    if users:
        rows = grouped.rename(columns={"value": metric, "mrr": "mrr_base"})
        return trials.merge(rows, on="trial_id").sort_values(
            [*_KEYS, "seed", "user"]).reset_index(drop=True)
    out = grouped.groupby(["trial_id", "group"]).agg(
        **{metric: ("value", "mean"), "mrr_base": ("mrr", "mean"), "users": ("user", "size")}
    ).reset_index()
    return trials.merge(out, on="trial_id").sort_values([*_KEYS, "seed", "group"]) \
        .reset_index(drop=True)


def query_distribution(store: Store | str | Path,
                       metrics: tuple[str, ...] = ("rbo", "frbo", "jaccard")) -> pd.DataFrame:
    """Box-plot statistics of per-query ``metrics`` per (dataset, model, perturbation).

    Computed inside DuckDB, so memory stays bounded however many queries the store holds.
    Columns: ``metric``, ``n``, ``mean``, ``q1``, ``median``, ``q3`` (linear-interpolated
    quantiles over all queries of all seeds) and the Tukey whiskers ``whislo``/``whishi``:
    the most extreme values within 1.5 IQR of the quartiles.
    """
    with _opened(store) as s:
        parts = [s.metric_distribution(m) for m in metrics]
    out = pd.concat(parts, ignore_index=True)
    return out.sort_values(["metric", *_KEYS]).reset_index(drop=True)
