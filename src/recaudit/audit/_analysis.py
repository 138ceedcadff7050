"""Analysis of an audit store, returned as tidy DataFrames (rendering is elsewhere).

- :func:`trial_summary` — per trial, the mean over test queries of every similarity (RLS) and
  of both models' accuracy;
- :func:`seed_summary` — mean and standard deviation over seeds (Oh et al. 2022 Table 3);
- :func:`user_groups` — RLS by user group, users ranked by the *baseline* model's per-user MRR:
  top 20 %, middle 60 %, bottom 20 % (Oh et al. 2022 §7.3);
- :func:`compare_methods` — significance of the difference between two perturbations,
  paired by seed: Wilcoxon signed-rank (Oh et al. 2022 §6.1), paired t-test after a Shapiro–Wilk
  normality check at alpha = 1e-3 (Betello et al. 2023 §4.3), or Welch's unpaired t-test (Shriver 2018
  §4.2.2).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

from recaudit.audit._store import QUERY_METRICS, AuditStore
from recaudit.experiment import Store

__all__ = ["trial_summary", "seed_summary", "user_groups", "compare_methods", "METRICS",
           "query_distribution", "paired_query_test"]

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


def seed_summary(summary: pd.DataFrame, metrics: list[str] | None = None) -> pd.DataFrame:
    """Mean and std over seeds of ``metrics`` per (dataset, model, perturbation).

    Columns ``<metric>_mean``, ``<metric>_std`` (sample std, ``ddof=1``; NaN for one seed)
    and ``n_seeds``.
    """
    metrics = metrics or ["rbo", "frbo", "jaccard", "mrr_base", "mrr_pert"]
    g = summary.groupby(_KEYS, sort=False)[metrics]
    out = g.mean().add_suffix("_mean").join(g.std(ddof=1).add_suffix("_std"))
    out["n_seeds"] = summary.groupby(_KEYS, sort=False)["seed"].nunique()
    return out.reset_index()


def user_groups(store: Store | str | Path, metric: str = "rbo", *,
                top: float = 0.2, bottom: float = 0.2) -> pd.DataFrame:
    """Mean ``metric`` per trial and user group (``high``, ``mid``, ``low``).

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
    out = grouped.groupby(["trial_id", "group"]).agg(
        **{metric: ("value", "mean"), "mrr_base": ("mrr", "mean"), "users": ("user", "size")}
    ).reset_index()
    return trials.merge(out, on="trial_id").sort_values([*_KEYS, "seed", "group"]) \
        .reset_index(drop=True)


def compare_methods(summary: pd.DataFrame, metric: str, a: str, b: str, *,
                    test: str = "wilcoxon", alpha: float = 1e-3) -> pd.DataFrame:
    """Significance of ``metric`` between perturbations ``a`` and ``b`` per (dataset, model).

    ``test``: ``"wilcoxon"`` (paired by seed), ``"paired-t"`` (paired by seed; the
    Shapiro–Wilk p-value of the differences is reported and, when it is below ``alpha``,
    the Wilcoxon test is used instead, as Betello et al. 2023 prescribes), or ``"welch"`` (unpaired).
    Returns one row per (dataset, model) with the means, the statistic, the p-value and the
    test actually used.
    """
    from scipy import stats

    if test not in ("wilcoxon", "paired-t", "welch"):
        raise ValueError(f"test must be wilcoxon, paired-t or welch, got {test!r}")
    rows = []
    for (dataset, model), g in summary.groupby(["dataset", "model_label"], sort=False):
        xa = g[g.perturbation == a].set_index("seed")[metric]
        xb = g[g.perturbation == b].set_index("seed")[metric]
        if test != "welch":
            common = xa.index.intersection(xb.index)
            xa, xb = xa.loc[common], xb.loc[common]
        row = {"dataset": dataset, "model": model, "a": a, "b": b, "metric": metric,
               "mean_a": xa.mean(), "mean_b": xb.mean(), "n": len(xa), "shapiro_p": np.nan}
        used = test
        if test == "paired-t" and len(xa) >= 3:
            row["shapiro_p"] = stats.shapiro(xa.to_numpy() - xb.to_numpy()).pvalue
            if row["shapiro_p"] < alpha:
                used = "wilcoxon"
        if len(xa) < 2 or len(xb) < 2:
            stat, p = np.nan, np.nan
        elif used == "wilcoxon":
            diff = xa.to_numpy() - xb.to_numpy()
            stat, p = (np.nan, 1.0) if np.all(diff == 0) else stats.wilcoxon(diff)
        elif used == "paired-t":
            stat, p = stats.ttest_rel(xa, xb)
        else:
            stat, p = stats.ttest_ind(xa, xb, equal_var=False)
        rows.append({**row, "test": used, "statistic": float(stat), "p_value": float(p)})
    return pd.DataFrame(rows)


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


def paired_query_test(store: Store | str | Path, a: str, metric_a: str,
                      b: str | None = None, metric_b: str | None = None, *,
                      test: str = "paired-t", alpha: float = 1e-3) -> pd.DataFrame:
    """Per-query paired test of ``metric_a`` of perturbation ``a`` against ``metric_b`` of
    perturbation ``b`` (default: the same trials), per (dataset, model).

    Pairs are the same test query of the same seed, pooled over seeds. This is the test of
    Betello et al. 2023 Table 3, which compares each user's metric with and without removal in one run
    (one training seed), so the pairing unit is the user/query, not the seed: e.g.
    ``paired_query_test(store, "remove-end-10", "ndcg_pert", metric_b="ndcg_base")`` asks
    whether removal changed NDCG, and ``paired_query_test(store, "remove-end-10", "frbo",
    "seed-only", "frbo")`` whether removal moved the rankings more than a new seed does.
    The test is :func:`compare_methods`'s (Shapiro–Wilk on the differences at ``alpha``,
    then paired t or, for non-normal differences, Wilcoxon). Columns as
    :func:`compare_methods`, with ``a``/``b`` naming ``perturbation:metric``.
    """
    import warnings

    b = a if b is None else b
    metric_b = metric_a if metric_b is None else metric_b
    for m in (metric_a, metric_b):
        if m not in METRICS:
            raise ValueError(f"unknown per-query metric {m!r}; use one of {METRICS}")
    with _opened(store) as s:
        frames = []
        for tag, pert, m in (("A", a, metric_a), ("B", b, metric_b)):
            v = s.paired_values(pert, m)
            frames.append(v.assign(perturbation=tag, seed=v["seed"].astype(str) + ":"
                                   + v["query"].astype(str))[["dataset", "model_label",
                                                            "perturbation", "seed", "value"]])
    long = pd.concat(frames, ignore_index=True)
    with warnings.catch_warnings():
        # Shapiro-Wilk warns that its p-value is approximate above 5000 pairs and when all
        # differences are equal; both cases are handled by the fallback rule and NaN checks.
        warnings.simplefilter("ignore", UserWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        out = compare_methods(long, "value", "A", "B", test=test, alpha=alpha)
    if out.empty:
        return out
    return out.assign(a=f"{a}:{metric_a}", b=f"{b}:{metric_b}",
                      metric=metric_a if metric_a == metric_b else f"{metric_a}-{metric_b}")
