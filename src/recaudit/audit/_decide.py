"""Decisions on an audit store: intervals, paired comparisons, noise floors.

Every number here comes with its uncertainty over both sources of variation, training seeds
and test queries (:mod:`recaudit.stats`: the two-level interval; the papers' paired protocol,
Shapiro-Wilk then paired t or Wilcoxon, combined with it):

- :func:`summary` — one row per (dataset, model, perturbation): each measure ``M`` with its
  ``M_ci_low`` / ``M_ci_high`` (the accuracy changes ``mrr_change`` etc. are per-query
  ``pert - base``), and per noise floor ``F`` present a ``p_vs_<F>``: is the perturbation's
  similarity different from what the floor gives anyway? Floors: ``seed-only`` (another
  training seed on the same data; Betello et al. 2023 RQ1) and ``rerun`` (same data, same
  seed, fitted again: exactly 1 for a deterministic model, below 1 where training is not
  reproducible; ``none`` is its earlier name).
- :func:`compare_perturbations` — two perturbations of one model, paired per query.
- :func:`compare_models` — two models under one perturbation, paired per query: which one is
  more stable on this data.
- :func:`most_destabilising` — the perturbation with the lowest similarity, *decided* only
  when it is significantly below every other one (Holm over those comparisons).
- :func:`variance_shares` — where each perturbation's variation comes from: the shares of
  seed (a seed moving every query's value alike), draw, query (a query's value whatever the
  seed) and the residual (a query's own response to a seed or draw: the seed x query
  interaction, and noise) (:func:`recaudit.stats.variance_parts`), of one per-query value's
  variance and of the mean's sampling variance. For a deterministic model the seed and the
  residual are both the seed's doing: a seed-only floor whose shares are all residual has
  another seed change which queries' lists agree, not their average.

Pairing: two perturbations of one model share seeds and test queries. When both were run
with the same draws, (seed, draw, query) is the pair; otherwise (a floor, or any perturbation
that draws nothing at random, has one trial per seed) each side's draws are averaged within
the seed first and (seed, query) is the pair.

One draw: a perturbation that draws nothing at random (``needs.rng`` false: CASPER, TracIn,
position removal, the floors) gives the same edit on every draw, so it is read as one draw,
draw 0; the repeated draws a store written before audits planned it once may hold are left
out (they repeat draw 0 and would count one measurement as several replicates).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from recaudit.audit._store import AuditStore
from recaudit.audit._users import groups
from recaudit.experiment import Store
from recaudit.stats import Test, estimate_mean, holm, paired_test, variance_parts

__all__ = ["summary", "compare_perturbations", "compare_models", "most_destabilising",
           "variance_shares", "FLOORS", "MEASURES", "floor_of", "difference_range"]

#: Perturbation labels that are noise floors, and the floor each measures.
FLOORS = {"seed-only": "seed_only", "rerun": "rerun", "none": "rerun"}
_SIMILARITY = ("rbo", "average_overlap", "frbo", "jaccard")
_ACCURACY = ("mrr", "hit", "ndcg")
#: The range of a measure (similarities and accuracies in [0, 1], changes in [-1, 1]): the
#: intervals are clipped to it.
_RANGE = {False: (0.0, 1.0), True: (-1.0, 1.0)}


def difference_range(metric: str, metric_b: str | None = None) -> tuple[float, float]:
    """The feasible range of ``metric - metric_b`` (default the same measure): ``[lo_a -
    hi_b, hi_a - lo_b]`` — [-1, 1] for two similarities or accuracies in [0, 1], [-2, 2]
    for two changes. A difference's interval is clipped to it: the normal approximation
    can reach past it (a difference near 1 with few seeds: [+0.73, +1.10]), which no
    difference can."""
    lo_a, hi_a = _RANGE[metric.endswith("_change")]
    lo_b, hi_b = _RANGE[(metric_b or metric).endswith("_change")]
    return lo_a - hi_b, hi_a - lo_b
#: The measures of :func:`summary`, in column order.
MEASURES = _SIMILARITY + tuple(f"{m}_{t}" for m in _ACCURACY for t in ("base", "pert", "change"))


def floor_of(perturbation: str) -> str | None:
    """The floor a perturbation label measures (``seed_only``, ``rerun``) or ``None``."""
    return FLOORS.get(perturbation)


@contextlib.contextmanager
def _opened(store: Store | str | Path) -> Iterator[AuditStore]:
    if isinstance(store, Store):
        yield AuditStore.of(store)
        return
    with AuditStore(store, read_only=True) as s:
        yield s


def _groups(store: Store | str | Path, metrics: Sequence[str]
            ) -> Iterator[tuple[str, str, pd.DataFrame]]:
    """(dataset, model label, per-query values) of every model in the store. One dataset
    name filtered two ways (another ``min_user_interactions``, say) is two datasets: their
    rows are named ``dataset [<fingerprint>]`` (:func:`recaudit.audit._users.groups`)."""
    with _opened(store) as s:
        for g in groups(s):
            yield g.name, g.model, one_draw(s.query_values(metrics, g.dataset, g.model,
                                                           g.fingerprint))


def draws_at_random(label: str) -> bool:
    """Whether the perturbation stored under ``label`` (a name, or the canonical JSON of a
    table) draws from its generator (:attr:`recaudit.perturb.Needs.rng`); a label no
    registered family reads counts as random."""
    import json

    from recaudit.errors import ConfigError
    from recaudit.perturb import parse

    try:
        return parse(json.loads(label) if label.startswith("{") else label).needs.rng
    except (ConfigError, ValueError):
        return True


def one_draw(values: pd.DataFrame) -> pd.DataFrame:
    """``values`` (with ``perturbation`` and ``draw`` columns) without the draws >= 1 of the
    perturbations that draw nothing at random (module docstring)."""
    if values.empty or "draw" not in values or not (values["draw"] > 0).any():
        return values
    fixed = [p for p in values["perturbation"].unique() if not draws_at_random(str(p))]
    drop = values["perturbation"].isin(fixed) & (values["draw"] > 0)
    return values[~drop].reset_index(drop=True) if drop.any() else values


def _columns(metrics: Sequence[str]) -> list[str]:
    """The stored per-query columns ``metrics`` need (``mrr_change``: both MRRs)."""
    out: list[str] = []
    for m in metrics:
        out += [m.replace("_change", "_base"), m.replace("_change", "_pert")] \
            if m.endswith("_change") else [m]
    return list(dict.fromkeys(out))


def _values(g: pd.DataFrame, metric: str) -> np.ndarray:
    if metric.endswith("_change"):
        base = metric.replace("_change", "")
        return (g[f"{base}_pert"] - g[f"{base}_base"]).to_numpy(float)
    return g[metric].to_numpy(float)


def _replicates(g: pd.DataFrame) -> np.ndarray:
    return g["seed"].to_numpy(np.int64) * 1_000_003 + g["draw"].to_numpy(np.int64)


def _pair(ga: pd.DataFrame, gb: pd.DataFrame, metric_a: str, metric_b: str
          ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(a, b, replicates, units)`` of the pairs of two perturbations (module docstring)."""
    a = ga.assign(v=_values(ga, metric_a))[["seed", "draw", "query", "v"]]
    b = gb.assign(v=_values(gb, metric_b))[["seed", "draw", "query", "v"]]
    if set(zip(a.seed, a.draw)) == set(zip(b.seed, b.draw)):
        both = a.merge(b, on=["seed", "draw", "query"], suffixes=("_a", "_b"))
        reps = both["seed"].to_numpy(np.int64) * 1_000_003 + both["draw"].to_numpy(np.int64)
    else:
        a = a.groupby(["seed", "query"], as_index=False)["v"].mean()
        b = b.groupby(["seed", "query"], as_index=False)["v"].mean()
        both = a.merge(b, on=["seed", "query"], suffixes=("_a", "_b"))
        reps = both["seed"].to_numpy(np.int64)
    return (both["v_a"].to_numpy(float), both["v_b"].to_numpy(float), reps,
            both["query"].to_numpy(np.int64))


def summary(store: Store | str | Path, *, level: float = 0.95, on: str = "rbo",
            measures: Sequence[str] = MEASURES, normality: float = 1e-3) -> pd.DataFrame:
    """One row per (dataset, model, perturbation) — see the module docstring.

    Columns: ``dataset``, ``model``, ``perturbation``, ``seeds``, ``draws``, ``queries``,
    ``identical`` (the share of rank lists the perturbation left unchanged: ``on`` = 1; for
    the ``rerun`` floor anything below 1 proves that training is not reproducible, whatever
    the interval), ``levels`` (what the intervals cover: ``seeds and queries``, or ``queries only`` for one
    seed), then ``M``, ``M_ci_low``, ``M_ci_high`` for every measure (the interval clipped to
    the measure's range: [0, 1], changes [-1, 1]), then ``p_vs_<F>`` for
    every floor present: the paired test of the measure ``on`` against the floor's,
    Holm-adjusted over the perturbations of the (dataset, model).
    """
    rows = []
    for dataset, model, q in _groups(store, _columns([*measures, on])):
        floors = {FLOORS[p]: p for p in dict.fromkeys(q.perturbation) if p in FLOORS}
        block = []
        for pert, g in q.groupby("perturbation", sort=False):
            reps, units = _replicates(g), g["query"].to_numpy(np.int64)
            row: dict = {"dataset": dataset, "model": model, "perturbation": pert,
                         "seeds": g.seed.nunique(), "draws": g.draw.nunique(),
                         "queries": g["query"].nunique(),
                         "identical": float(np.mean(g[on].to_numpy(float) == 1.0))}
            row["levels"] = "seeds and queries" if len(np.unique(reps)) > 1 \
                else "queries only"
            for m in measures:
                est = estimate_mean(_values(g, m), reps, units)
                low, high = np.clip(est.interval(level), *_RANGE[m.endswith("_change")])
                row.update({m: est.mean, f"{m}_ci_low": low, f"{m}_ci_high": high})
            for name, label in floors.items():
                if label != pert:
                    a, b, r, u = _pair(g, q[q.perturbation == label], on, on)
                    row[f"p_vs_{name}"] = paired_test(a, b, r, u, normality=normality).p
                else:
                    row[f"p_vs_{name}"] = np.nan
            block.append(row)
        for name in floors:
            adjusted = holm([item[f"p_vs_{name}"] for item in block])
            for item, p in zip(block, adjusted, strict=True):
                item[f"p_vs_{name}"] = p
        rows += block
    front = ["dataset", "model", "perturbation", "seeds", "draws", "queries", "identical",
             "levels"]
    out = pd.DataFrame(rows)
    if out.empty:
        return pd.DataFrame(columns=front + [c for m in measures
                                             for c in (m, f"{m}_ci_low", f"{m}_ci_high")])
    return out[front + [c for c in out.columns if c not in front]]


def _test_row(dataset: str, model: str, a: str, b: str, metric: str, t: Test,
              mean_a: float, mean_b: float, level: float,
              bounds: tuple[float, float] = (-1.0, 1.0)) -> dict:
    low, high = np.clip(t.interval(level), *bounds)
    return {"dataset": dataset, "model": model, "a": a, "b": b, "metric": metric,
            "mean_a": mean_a, "mean_b": mean_b, "difference": t.difference, "ci_low": low,
            "ci_high": high, "p": t.p, "test": t.test, "p_protocol": t.p_protocol,
            "p_levels": t.p_levels, "shapiro_p": t.shapiro_p, "pairs": t.pairs,
            "levels": t.levels}


def compare_perturbations(store: Store | str | Path, a: str, b: str, *, metric: str = "rbo",
                          metric_b: str | None = None, level: float = 0.95,
                          normality: float = 1e-3) -> pd.DataFrame:
    """``metric`` of perturbation ``a`` against ``metric_b`` (default the same) of ``b``, per
    (dataset, model) holding both, paired per query (module docstring): the means, their
    difference ``a - b`` with its interval (clipped to the difference's feasible range,
    :func:`difference_range`: [-1, 1] for two similarities), the decision's p-value and the
    test that decided.
    ``a == b`` with two metrics compares within trials (``remove-end-10``, ``ndcg_pert``
    against ``ndcg_base``: did removal change NDCG?)."""
    metric_b = metric_b or metric
    rows = []
    for dataset, model, q in _groups(store, _columns([metric, metric_b])):
        ga, gb = q[q.perturbation == a], q[q.perturbation == b]
        if ga.empty or gb.empty:
            continue
        x, y, r, u = _pair(ga, gb, metric, metric_b)
        t = paired_test(x, y, r, u, normality=normality)
        rows.append(_test_row(dataset, model, a, b, metric if metric == metric_b
                              else f"{metric}-{metric_b}", t,
                              estimate_mean(x, r, u).mean, estimate_mean(y, r, u).mean, level,
                              difference_range(metric, metric_b)))
    return pd.DataFrame(rows)


def compare_models(store: Store | str | Path, a: str | None = None, b: str | None = None, *,
                   metric: str = "rbo", perturbations: Sequence[str] | None = None,
                   alpha: float = 0.05, level: float = 0.95,
                   normality: float = 1e-3) -> pd.DataFrame:
    """Which model is more stable: ``metric`` (a similarity: higher is more stable) of model
    ``a`` against model ``b`` under each perturbation both were audited with, per dataset
    (one filtered log: both models answered the same test queries), paired per test query.

    The pairs are those of :func:`compare_perturbations`: (seed, draw, query) when both ran
    the same draws, else (seed, query) over draw means; only the seeds both models ran. Two
    models' seeds are independent, so pairing seed ``s`` of one with seed ``s`` of the other
    is an arbitrary but valid pairing: the replicate level of the difference carries both
    models' seed-to-seed variation, and :func:`recaudit.stats.paired_test` (replicates: the
    seeds and draws, units: the queries) counts it, so a difference that another seed could
    undo is not called one. ``a``/``b`` None: every pair of models of the dataset, in the
    store's order. ``perturbations`` None: every one both hold but the ``rerun`` floor (it
    says whether training is reproducible, not how stable the lists are; the ``seed-only``
    floor is kept: which model another seed moves less).

    Columns: ``dataset``, ``perturbation``, ``a``, ``b``, ``metric``, ``mean_a``, ``mean_b``,
    ``difference`` (``a - b``), ``ci_low``, ``ci_high`` (clipped to [-1, 1], where a
    difference of two similarities lies: :func:`difference_range`), ``p`` (the decision's
    p-value),
    ``p_holm`` (Holm-adjusted over the comparisons of the dataset), ``test``, ``pairs``,
    ``seeds`` (shared), ``levels``, ``more_stable`` (the model with the higher ``metric``
    where ``p_holm < alpha``, else empty: not told apart).
    """
    if metric not in _SIMILARITY:
        raise ValueError(f"compare_models reads a similarity ({', '.join(_SIMILARITY)}): "
                         f"higher is more stable; got {metric!r}")
    by_data: dict[str, dict[str, pd.DataFrame]] = {}
    for dataset, model, q in _groups(store, [metric]):
        by_data.setdefault(dataset, {})[model] = q
    rows = []
    for dataset, models in by_data.items():
        pairs = [(x, y) for i, x in enumerate(models) for y in list(models)[i + 1:]] \
            if a is None and b is None else [(a, b)]
        block = []
        for ma, mb in pairs:
            if ma not in models or mb not in models:
                continue
            qa, qb = models[ma], models[mb]
            shared = [p for p in dict.fromkeys(qa.perturbation) if p in set(qb.perturbation)
                      and (p in perturbations if perturbations is not None
                           else floor_of(p) != "rerun")]
            for pert in shared:
                ga, gb = qa[qa.perturbation == pert], qb[qb.perturbation == pert]
                x, y, r, u = _pair(ga, gb, metric, metric)
                if not len(x):
                    continue
                t = paired_test(x, y, r, u, normality=normality)
                row = _test_row(dataset, "", ma, mb, metric, t, estimate_mean(x, r, u).mean,
                                estimate_mean(y, r, u).mean, level)
                del row["model"]
                row.update(perturbation=pert, seeds=len(set(ga.seed) & set(gb.seed)))
                block.append(row)
        for row, p in zip(block, holm([r["p"] for r in block]), strict=True):
            row["p_holm"] = p
            row["more_stable"] = ("" if not p < alpha else
                                  row["a"] if row["difference"] > 0 else row["b"])
        rows += block
    columns = ["dataset", "perturbation", "a", "b", "metric", "mean_a", "mean_b", "difference",
               "ci_low", "ci_high", "p", "p_holm", "test", "pairs", "seeds", "levels",
               "more_stable"]
    return pd.DataFrame(rows, columns=columns)


def most_destabilising(store: Store | str | Path, *, metric: str = "rbo", alpha: float = 0.05,
                       perturbations: Sequence[str] | None = None,
                       normality: float = 1e-3) -> pd.DataFrame:
    """Per (dataset, model): the perturbation with the lowest mean ``metric`` (floors aside;
    only ``perturbations`` when given) and the paired test against each other one, Holm-
    adjusted over those comparisons. ``decided`` is true when every adjusted p-value is below
    ``alpha``; otherwise ``runner_up`` is the one it cannot be told apart from (the largest
    adjusted p-value). Columns: ``dataset``, ``model``, ``lowest``, ``mean``, ``runner_up``,
    ``difference`` (lowest minus runner-up), ``p`` (adjusted, against the runner-up),
    ``decided``, ``compared``."""
    rows = []
    for dataset, model, q in _groups(store, [metric]):
        q = q[~q.perturbation.isin(list(FLOORS))]
        if perturbations is not None:
            q = q[q.perturbation.isin(list(perturbations))]
        means = {p: estimate_mean(_values(g, metric), _replicates(g), g["query"]).mean
                 for p, g in q.groupby("perturbation", sort=False)}
        means = {p: v for p, v in means.items() if np.isfinite(v)}
        if len(means) < 2:
            continue
        lowest = min(means, key=means.__getitem__)
        others = [p for p in means if p != lowest]
        tests = [paired_test(*_pair(q[q.perturbation == lowest], q[q.perturbation == o],
                                    metric, metric), normality=normality) for o in others]
        adj = holm([t.p for t in tests])
        worst = int(np.nanargmax(adj)) if np.isfinite(adj).any() else 0
        rows.append({"dataset": dataset, "model": model, "lowest": lowest,
                     "mean": means[lowest], "runner_up": others[worst],
                     "difference": tests[worst].difference, "p": float(adj[worst]),
                     "decided": bool(np.all(adj < alpha)), "compared": len(others)})
    return pd.DataFrame(rows)


#: The sources of :func:`variance_shares`, in column order.
SOURCES = ("seed", "draw", "query", "residual")


def variance_shares(store: Store | str | Path, *, on: str = "rbo") -> pd.DataFrame:
    """One row per (dataset, model, perturbation): ``seeds``, ``draws``, ``queries`` (those
    read: the queries every trial holds) and, for each source ``X`` of :data:`SOURCES`
    (``residual``: the seed x query interaction and noise; module docstring),
    ``var_X`` (its variance component of ``on``), ``share_X`` (its share of the variance of
    one per-query value, one query in one trial) and ``mean_share_X`` (its share of the
    sampling variance of the mean over every trial and query at these counts: what more
    seeds or draws would shrink). Draws count only for a
    perturbation that draws at random (module docstring)."""
    rows = []
    for dataset, model, q in _groups(store, [on]):
        for pert, g in q.groupby("perturbation", sort=False):
            v = variance_parts(_values(g, on), g["seed"].to_numpy(), g["draw"].to_numpy(),
                               g["query"].to_numpy())
            row = {"dataset": dataset, "model": model, "perturbation": pert,
                   "seeds": v.seeds, "draws": v.draws, "queries": v.queries}
            row.update({f"var_{k}": getattr(v, k) for k in SOURCES})
            row.update({f"share_{k}": x for k, x in v.shares().items()})
            row.update({f"mean_share_{k}": x for k, x in v.mean_shares().items()})
            rows.append(row)
    cols = ["dataset", "model", "perturbation", "seeds", "draws", "queries",
            *(f"{p}_{k}" for p in ("var", "share", "mean_share") for k in SOURCES)]
    return pd.DataFrame(rows, columns=cols)
