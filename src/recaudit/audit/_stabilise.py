"""Stabilised models against their plain models, as tidy DataFrames (rendering is elsewhere).

A store may hold the same model spec plain and stabilised (``stabilise = {...}`` in its
``[[models]]`` table, :mod:`recaudit.stabilise`); their trials share dataset, perturbation and
seed, and face the same edits. :func:`stabilised_pairs` pairs them trial by trial and
:func:`stabilisation_summary` compares them per (dataset, model, method, perturbation):

- RLS of the perturbation (``rbo``, ``frbo``, ``jaccard``) and next-item accuracy of the
  unperturbed model (``mrr``, ``ndcg``: reciprocal rank and NDCG@k), plain and stabilised,
  mean over seeds, and the relative change;
- a paired test of each metric: pairs are the same test query of the same seed
  (:func:`recaudit.stats.paired_test`: Shapiro–Wilk on the differences at ``alpha``, then the
  paired t-test or Wilcoxon's signed-rank test, the rule of Betello et al. 2023 §4.3; with
  several seeds the interval over seeds and queries must agree), with the 95 % interval of
  the change ``stab - plain``;
- the training cost: seconds per fit of each model over all its trials (each trial's perturbed
  fit plus its baseline's fit where that trial trained it, over trials plus baselines),
  stabilised over plain. A baseline trained by a trial that was interrupted before it was
  stored is not counted (its lists come from the cache afterwards).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.experiment import ModelSpec, Store
from recaudit.stats import paired_test

__all__ = ["stabilised_pairs", "stabilisation_summary", "STABILITY", "ACCURACY"]

#: Per-query similarity columns compared (RBO, FRBO@k, Jaccard@k).
STABILITY = ("rbo", "frbo", "jaccard")
#: Accuracy of the unperturbed model: report name -> per-query column.
ACCURACY = {"mrr": "mrr_base", "ndcg": "ndcg_base"}


def _model(spec: Any) -> dict[str, Any]:
    spec = json.loads(spec) if isinstance(spec, str) else spec
    return spec["model"] if isinstance(spec, dict) and "model" in spec else {}


def stabilised_pairs(trials: pd.DataFrame) -> pd.DataFrame:
    """One row per stabilised trial that has a plain twin: ``dataset``, ``model`` (the plain
    model's label), ``stabilised`` (the stabilised model's label), ``method``,
    ``perturbation``, ``seed``, ``trial_plain``, ``trial_stab``, ``fit_plain``, ``fit_stab``
    (fit seconds) and the baseline keys ``base_plain``, ``base_stab``."""
    cols = ["dataset", "model", "stabilised", "method", "perturbation", "seed", "trial_plain",
            "trial_stab", "fit_plain", "fit_stab", "base_plain", "base_stab"]
    if trials.empty or "spec" not in trials:
        return pd.DataFrame(columns=cols)
    t = trials.assign(_m=trials["spec"].map(_model))
    t = t.assign(_stab=t._m.map(lambda m: m.get("stabilise")),
                 _plain=t._m.map(lambda m: ModelSpec.label_of({"name": m["name"],
                                                               "params": m.get("params", {})})
                                 if m else None))
    # pair on the plain model's name and parameters, not on its displayed label: a plain
    # model with a `label` is still the twin of its stabilised variants
    keys = ["dataset", "perturbation", "seed", "_plain"]
    plain = t[t._stab.isna()][[*keys, "model_label", "trial_id", "fit_seconds",
                               "baseline_key"]]
    plain = plain.rename(columns={"model_label": "model", "trial_id": "trial_plain",
                                  "fit_seconds": "fit_plain", "baseline_key": "base_plain"})
    stab = t[t._stab.notna()]
    stab = stab.assign(method=stab._stab.map(lambda s: s.get("method")))
    stab = stab.rename(columns={"model_label": "stabilised", "trial_id": "trial_stab",
                                "fit_seconds": "fit_stab", "baseline_key": "base_stab"})
    out = stab[[*keys, "stabilised", "method", "trial_stab", "fit_stab", "base_stab"]] \
        .merge(plain, on=keys, how="inner")
    return out[cols].sort_values(["dataset", "model", "stabilised", "perturbation", "seed"]) \
        .reset_index(drop=True)


def _per_fit(trials: pd.DataFrame) -> pd.Series:
    """Seconds per model fit of each (dataset, model_label): the trials' fit seconds (each a
    perturbed fit, plus its baseline's fit where that trial trained it) over the number of
    fits (trials plus distinct baselines)."""
    g = trials.groupby(["dataset", "model_label"])
    return g.fit_seconds.sum() / (g.size() + g.baseline_key.nunique())


def stabilisation_summary(store: Store | str | Path, *, alpha: float = 1e-3) -> pd.DataFrame:
    """Per (dataset, model, stabilised, method, perturbation): ``n_seeds``, ``n_pairs`` (query
    pairs), for every metric of :data:`STABILITY` and :data:`ACCURACY` ``<m>_plain``,
    ``<m>_stab`` (means over seeds), ``<m>_change`` (relative, ``stab / plain - 1``),
    ``<m>_diff_ci_low`` / ``<m>_diff_ci_high`` (95 % interval of ``stab - plain``), ``<m>_p``
    and ``<m>_test``; the training cost ``fit_plain``, ``fit_stab`` (seconds per
    fit over all trials of each model in the dataset) and ``cost`` (their ratio)."""
    from recaudit.audit._analysis import _opened

    with _opened(store) as s:
        trials = s.trials()
        pairs = stabilised_pairs(trials)
        groups = []
        for key, g in pairs.groupby(["dataset", "model", "stabilised", "method",
                                     "perturbation"], sort=False):
            groups.append((key, g, s.query_results([*g.trial_plain, *g.trial_stab])))
    per_fit = _per_fit(trials) if len(pairs) else pd.Series(dtype=float)
    rows = []
    for (dataset, model, stabilised, method, pert), g, q in groups:
        row: dict[str, Any] = {"dataset": dataset, "model": model, "stabilised": stabilised,
                               "method": method, "perturbation": pert,
                               "n_seeds": g.seed.nunique()}
        seed_of = {**dict(zip(g.trial_plain, g.seed)), **dict(zip(g.trial_stab, g.seed))}
        q = q.assign(seed=q.trial_id.map(seed_of))
        both = q[q.trial_id.isin(set(g.trial_plain))].merge(
            q[q.trial_id.isin(set(g.trial_stab))], on=["seed", "query"], suffixes=("_a", "_b"))
        row["n_pairs"] = len(both)
        for name, col in [*((m, m) for m in STABILITY), *ACCURACY.items()]:
            ok = both[f"{col}_a"].notna() & both[f"{col}_b"].notna()
            x, y = both.loc[ok, f"{col}_a"].to_numpy(float), both.loc[ok, f"{col}_b"].to_numpy(
                float)
            seeds, queries = both.loc[ok, "seed"].to_numpy(), both.loc[ok, "query"].to_numpy()
            means = both[ok].groupby("seed")[[f"{col}_a", f"{col}_b"]].mean().mean()
            mx, my = float(means.iloc[0]), float(means.iloc[1])
            t = paired_test(y, x, seeds, queries, normality=alpha)
            low, high = t.interval()
            row.update({f"{name}_plain": mx, f"{name}_stab": my,
                        f"{name}_change": my / mx - 1.0 if mx else np.nan,
                        f"{name}_diff_ci_low": low, f"{name}_diff_ci_high": high,
                        f"{name}_p": t.p, f"{name}_test": t.test})
        row["fit_plain"] = float(per_fit.get((dataset, model), np.nan))
        row["fit_stab"] = float(per_fit.get((dataset, stabilised), np.nan))
        row["cost"] = row["fit_stab"] / row["fit_plain"] if row["fit_plain"] else np.nan
        rows.append(row)
    return pd.DataFrame(rows)
