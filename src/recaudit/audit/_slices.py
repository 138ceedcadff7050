"""Stability by user slice: whose lists move (Oh et al. 2022 §7.3 split users by accuracy).

:func:`slices` splits the test queries by a property of their user and gives, per (dataset,
model, perturbation, slice), every similarity with its interval and tests:

- ``by``: ``activity`` (the user's training interactions), ``popularity`` (the mean training
  popularity of the user's items), ``recency`` (time from the user's last training interaction
  to the end of the training log), ``accuracy`` (the baseline's reciprocal rank of the user's
  test items, averaged over the user's test queries and the model's seeds: a property of the
  user under that model, the same in every trial) or ``column:NAME`` (a user attribute, from a
  table of users or the data's own file; :mod:`._users`).
- Bins: ``bins`` equal-count bins of the users who have a test query (users ordered by value;
  a user at rank ``r`` of ``n`` goes to bin ``floor(r_0 * bins / n)``, ``r_0`` the rank of the
  first user with the same value, so that tied users share a bin and ties may leave fewer
  bins), labelled ``[low, high]`` by the smallest and largest value in them (a recency of a
  log whose times are dates as durations, ``[3.2 h, 20.4 d]``: :mod:`recaudit.data._time`;
  ``low`` and ``high`` stay seconds); ``edges`` gives
  the cut points instead (``[a, b)`` bins); a non-numeric attribute makes one slice per value.
  Users without a value (no training interaction, not in the users table) form the slice
  ``no value``, so the slices always partition the queries.
- ``window``: a retrain's own slices (``remove-last-<window>``, :mod:`recaudit.perturb.
  _retrain`): the users ``active`` in the removed window (an interaction in it, as the
  trial's record names them) and those ``inactive`` in it, per retrain perturbation (each
  window has its own members; other perturbations and the floors get no rows of their own).
  Inactive users' change above the floor is churn nobody asked for; active users' change,
  with ``mrr_change`` (per query the stale model's reciprocal rank minus the fresh one's: the
  value of the fresh data on their test items, negative when the window helped), is
  plasticity (Lavoura et al. 2025). Besides every measure, a window row has the floor's own
  value on the slice's queries, ``<on>_<floor>`` with its interval (the band a figure draws).
- Intervals: :func:`recaudit.stats.estimate_mean` over seeds (and draws) and the slice's
  queries, exactly as :func:`recaudit.audit.summary`. Every query of a slice is in every
  replicate, so the grand means partition: ``sum_s queries_s * M_s / queries`` is the overall
  mean ``M`` of :func:`~recaudit.audit.summary` (for a measure without NaN).
- ``p_vs_<floor>``: per slice, the paired test (:func:`recaudit.stats.paired_test`, pairs as in
  :mod:`._decide`) of the measure ``on`` against the noise floor on the slice's queries,
  Holm-adjusted over every (perturbation, slice) of the (dataset, model).
- ``p_vs_rest``: do the slices differ? Per slice, Welch's test (:func:`recaudit.stats.
  welch_test`) of the slice's queries against all other queries, each query's measure averaged
  over the replicates first (the queries are the independent units; the seeds, shared by every
  slice, cancel in the difference), Holm-adjusted over the slices of the perturbation: the
  slices differ when any adjusted value is below the level.
- ``<on>_vs_all``: the slice's ``on`` minus every query's, ``(1 - w) (slice - rest)`` with ``w``
  the slice's share of the queries (the overall mean is ``w slice + (1 - w) rest``), so its
  interval is Welch's interval of ``p_vs_rest`` scaled by ``1 - w``: how far the slice lies
  from the perturbation's own overall value, on that perturbation's scale (a CASPER slice at
  0.944 beside an overall 0.950 reads -0.006, however far seed-only lies); 0 for a slice that
  holds every query.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from recaudit.audit._data import DataPaths, StoreData
from recaudit.audit._decide import _RANGE, FLOORS, _pair, _replicates
from recaudit.audit._store import AuditStore
from recaudit.audit._windows import WINDOW, WINDOW_SLICES, _retrains
from recaudit.audit._users import (FEATURES, Group, groups, own_ids, opened, user_column,
                                   user_feature)
from recaudit.data import duration_text, epoch_seconds
from recaudit.errors import ConfigError, did_you_mean
from recaudit.experiment import Store
from recaudit.stats import estimate_mean, holm, paired_test, welch_test

__all__ = ["SLICE_KINDS", "slices", "user_values", "slice_kind"]

#: What :func:`slices` can split users by (and ``column:NAME``, and :data:`WINDOW`).
SLICE_KINDS = ("activity", "popularity", "accuracy", "recency")
#: The label of the slice of users without a value.
NO_VALUE = "no value"


def slice_kind(by: str) -> tuple[str, str | None]:
    """``(kind, column name)`` of a ``by`` value, or a :class:`ConfigError` that says what
    is valid."""
    if by.startswith("column:") and by[7:]:
        return "column", by[7:]
    if by in SLICE_KINDS or by == WINDOW:
        return by, None
    raise ConfigError(f"cannot slice by {by!r}: use one of {', '.join(SLICE_KINDS)}, "
                      f"{WINDOW} or column:NAME." + did_you_mean(by, [*SLICE_KINDS, WINDOW]))


def _query_users(s: AuditStore, g: Group) -> pd.DataFrame:
    """``query`` and ``user`` (code) of every test query of the group, by query."""
    fp = "" if g.fingerprint is None else "AND t.data_fingerprint = ?"
    return s.sql(f"""
        SELECT r.query, any_value(r."user") AS "user"
        FROM query_results r JOIN trials t USING (trial_id)
        WHERE t.dataset = ? AND t.model_label = ? AND t.status = 'done' {fp}
        GROUP BY r.query ORDER BY r.query""",
        [g.dataset, g.model] + ([] if g.fingerprint is None else [g.fingerprint]))


def _accuracy(s: AuditStore, g: Group, n_users: int) -> np.ndarray:
    """Per user code, the baseline's reciprocal rank of the user's test items: the mean over
    the user's queries of each query's mean over seeds (a seed's baseline is shared by all its
    trials, so each seed counts once)."""
    fp = "" if g.fingerprint is None else "AND t.data_fingerprint = ?"
    per = s.sql(f"""
        WITH q AS (
            SELECT t.seed, r.query, any_value(r."user") AS u, avg(r.{s._raw("mrr_base")}) AS m
            FROM query_results r JOIN trials t USING (trial_id)
            WHERE t.dataset = ? AND t.model_label = ? AND t.status = 'done' {fp}
            GROUP BY t.seed, r.query),
        by_query AS (SELECT query, any_value(u) AS u, avg(m) AS m FROM q GROUP BY query)
        SELECT u AS "user", avg(m) AS value FROM by_query GROUP BY u""",
        [g.dataset, g.model] + ([] if g.fingerprint is None else [g.fingerprint]))
    codes = per["user"].to_numpy(np.int64)
    out = np.full(max(n_users, int(codes.max(initial=-1)) + 1), np.nan)
    out[codes] = per["value"].to_numpy(float)
    return out


def _values(s: AuditStore, g: Group, by: str, users: pd.DataFrame | str | os.PathLike | None,
            found: StoreData, size: int) -> np.ndarray:
    """Per user code (at least ``size`` of them), the value of ``by``; only ``accuracy``
    needs no data."""
    kind, column = slice_kind(by)
    if kind == WINDOW:
        raise ConfigError("the window slices are a retrain's own (one pair per window), not "
                          "a value of each user: slices(store, by='window') gives them")
    if kind == "accuracy":
        return _accuracy(s, g, size)
    _, split = found(g)
    if kind in FEATURES:
        return user_feature(split.train, kind)
    return user_column(s, g, split.train, str(column), users, found.data)


def _bound(x: float) -> str:
    return str(int(x)) if float(x).is_integer() and abs(x) < 1e15 else f"{x:.4g}"


def _bins(values: np.ndarray, bins: int, edges: Sequence[float] | None,
          bound: Callable[[float], str] = _bound
          ) -> tuple[np.ndarray, list[str], list[float], list[float]]:
    """Slice index of every value, and each slice's label (its bounds written by ``bound``),
    low and high (module docstring)."""
    n = len(values)
    numeric = values.dtype.kind in "fiub"
    missing = np.isnan(values) if numeric else np.array([v is None or v != v for v in values],
                                                        dtype=bool)
    idx = np.full(n, -1, dtype=np.int64)
    labels: list[str] = []
    lows: list[float] = []
    highs: list[float] = []
    ok = np.flatnonzero(~missing)
    if not numeric:
        cats, codes = np.unique(values[ok].astype(str), return_inverse=True)
        idx[ok] = codes
        labels, lows, highs = list(cats), [np.nan] * len(cats), [np.nan] * len(cats)
    elif edges is not None:
        cut = np.asarray(edges, dtype=float)
        raw = np.searchsorted(cut, values[ok], side="right")
        bounds = [-np.inf, *cut, np.inf]
        used = np.unique(raw)
        idx[ok] = np.searchsorted(used, raw)
        for b in used:
            lo, hi = bounds[b], bounds[b + 1]
            labels.append(f"< {bound(hi)}" if lo == -np.inf else f">= {bound(lo)}"
                          if hi == np.inf else f"[{bound(lo)}, {bound(hi)})")
            lows.append(lo)
            highs.append(hi)
    elif len(ok):
        v = values[ok].astype(float)
        ranked = np.sort(v)
        first = np.searchsorted(ranked, v, side="left")
        raw = first * bins // len(v)
        used = np.unique(raw)
        idx[ok] = np.searchsorted(used, raw)
        for j in range(len(used)):
            inside = v[idx[ok] == j]
            lo, hi = float(inside.min()), float(inside.max())
            labels.append(f"[{bound(lo)}, {bound(hi)}]")
            lows.append(lo)
            highs.append(hi)
    if missing.any():
        idx[missing] = len(labels)
        labels.append(NO_VALUE)
        lows.append(np.nan)
        highs.append(np.nan)
    return idx, labels, lows, highs


def _bound_of(g: Group, by: str, found: StoreData) -> Callable[[float], str]:
    """How a slice's bounds are written: a recency of a log whose times are dates as a
    duration (``20.4 d``, :func:`recaudit.data.duration_text`), anything else as a number."""
    if by != "recency":
        return _bound
    _, split = found(g)
    return duration_text if epoch_seconds(split.train.timestamp) else _bound


def _check(bins: int, edges: Sequence[float] | None) -> None:
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ConfigError(f"bins must be an integer >= 1, got {bins!r}")
    if edges is not None:
        cut = np.asarray(edges, dtype=float)
        if cut.ndim != 1 or not len(cut) or not np.all(np.isfinite(cut)) \
                or np.any(np.diff(cut) <= 0):
            raise ConfigError(f"edges must be increasing finite numbers, got {list(edges)}")


def user_values(store: Store | str | Path, by: str = "activity", *,
                users: pd.DataFrame | str | os.PathLike | None = None,
                data: DataPaths = None) -> pd.DataFrame:
    """Per (dataset, model) and user with a test query: ``user`` (the data's own id),
    ``user_code``, ``queries`` (the user's test queries) and ``value`` of ``by`` (module
    docstring). ``data``: the audit's file(s) where they are now, for a store that keeps no
    copy of its data (:mod:`recaudit.audit._data`)."""
    slice_kind(by)
    parts: list[pd.DataFrame] = []
    with opened(store) as s:
        found = StoreData(s, data, groups(s))
        for g in groups(s):
            qu = _query_users(s, g)
            log, _ = found(g)
            values, ids = _values(s, g, by, users, found, log.n_users), log.user_ids
            codes, counts = np.unique(qu["user"].to_numpy(np.int64), return_counts=True)
            parts.append(pd.DataFrame({"dataset": g.name, "model": g.model,
                                       "user": own_ids(ids, codes), "user_code": codes,
                                       "queries": counts, "value": values[codes]}))
    cols = ["dataset", "model", "user", "user_code", "queries", "value"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def _vs_all(on: str, test: Any, inside: int, outside: int, level: float) -> dict[str, float]:
    """The slice's ``on`` minus every query's (module docstring): ``(1 - w)`` times the
    slice-against-the-rest difference of ``test`` and its interval, ``w`` the slice's share of
    the queries."""
    names = (f"{on}_vs_all", f"{on}_vs_all_ci_low", f"{on}_vs_all_ci_high")
    if test is None or test.estimate.design == "empty":
        return dict.fromkeys(names, 0.0 if test is None else np.nan)
    scale = outside / (inside + outside)
    low, high = test.interval(level)
    return dict(zip(names, (scale * test.difference, scale * low, scale * high)))


def _rows(q: pd.DataFrame, query_slice: np.ndarray, info: dict, measures: Sequence[str],
          on: str, level: float, normality: float, adjust: bool = True) -> list[dict]:
    """The rows of one (dataset, model): every perturbation x slice (``adjust``: the
    ``p_vs_<floor>`` Holm-adjusted over them; else left raw for the caller to adjust)."""
    by_pert = dict(iter(q.groupby("perturbation", sort=False)))
    floors = {FLOORS[p]: p for p in by_pert if p in FLOORS}
    n_slices = len(info["labels"])
    rows = []
    for pert, g in by_pert.items():
        reps, units = _replicates(g), g["query"].to_numpy(np.int64)
        where = query_slice[units]
        paired = {name: _pair(g, by_pert[label], on, on)
                  for name, label in floors.items() if label != pert}
        # per query, the measure `on` averaged over the replicates (for p_vs_rest)
        size = int(units.max()) + 1
        v = g[on].to_numpy(float)
        ok = ~np.isnan(v)
        sums = np.bincount(units[ok], weights=v[ok], minlength=size)
        seen = np.bincount(units[ok], minlength=size)
        with np.errstate(invalid="ignore"):
            per_query = sums / seen
        has = seen > 0
        # every slice holds every replicate of the perturbation: count them once
        queries = np.bincount(query_slice[:size][np.bincount(units, minlength=size) > 0],
                              minlength=n_slices)
        shared = {"seeds": int(g.seed.nunique()), "draws": int(g.draw.nunique()),
                  "levels": "seeds and queries" if len(np.unique(reps)) > 1
                  else "queries only"}
        block = []
        for k in range(n_slices):
            mask = where == k
            if not mask.any():
                continue
            row = {"perturbation": pert, "slice": info["labels"][k], "slice_index": k,
                   "low": info["lows"][k], "high": info["highs"][k],
                   "users": info["users"][k], "queries": int(queries[k]), **shared}
            for m in measures:
                est = estimate_mean(_measure(g, m)[mask], reps[mask], units[mask])
                low, high = np.clip(est.interval(level), *_RANGE[m.endswith("_change")])
                row.update({m: est.mean, f"{m}_ci_low": low, f"{m}_ci_high": high})
            for name in floors:
                if name not in paired:
                    row[f"p_vs_{name}"] = np.nan
                    continue
                a, b, r, u = paired[name]
                inside = query_slice[u] == k
                row[f"p_vs_{name}"] = paired_test(a[inside], b[inside], r[inside], u[inside],
                                                  normality=normality).p
            mine = has & (query_slice[:size] == k)
            rest = has & (query_slice[:size] != k)
            with warnings.catch_warnings():  # scipy's precision note on near-equal samples
                warnings.simplefilter("ignore", RuntimeWarning)
                test = welch_test(per_query[mine], per_query[rest]) if rest.any() else None
            row["p_vs_rest"] = test.p if test is not None else np.nan
            row.update(_vs_all(on, test, int(mine.sum()), int(rest.sum()), level))
            block.append(row)
        for item, p in zip(block, holm([r["p_vs_rest"] for r in block]), strict=True):
            item["p_vs_rest"] = p
        rows += block
    if adjust:
        _holm_floors(rows, list(floors))
    return rows


def _holm_floors(rows: list[dict], floors: Sequence[str]) -> None:
    for name in floors:
        for item, p in zip(rows, holm([r.get(f"p_vs_{name}", np.nan) for r in rows]),
                           strict=True):
            item[f"p_vs_{name}"] = p


def _measure(g: pd.DataFrame, m: str) -> np.ndarray:
    """Per row, measure ``m`` (``<acc>_change``: the perturbed model's minus the baseline's)."""
    if m.endswith("_change") and m not in g:
        acc = m.removesuffix("_change")
        return (g[f"{acc}_pert"] - g[f"{acc}_base"]).to_numpy(float)
    return g[m].to_numpy(float)


def _stored(measures: Sequence[str]) -> list[str]:
    """The stored columns ``measures`` read (``mrr_change``: both MRRs)."""
    out: list[str] = []
    for m in measures:
        acc = m.removesuffix("_change")
        out += [f"{acc}_base", f"{acc}_pert"] if m.endswith("_change") else [m]
    return list(dict.fromkeys(out))


def _window_rows(s: AuditStore, g: Group, q: pd.DataFrame, qu: pd.DataFrame,
                 measures: Sequence[str], on: str, level: float, normality: float
                 ) -> list[dict]:
    """The window slices of every retrain perturbation of the group (module docstring),
    ``p_vs_<floor>`` Holm-adjusted over all of them."""
    records = _retrains(s, g)
    present = set(q["perturbation"])
    floors = {FLOORS[p]: p for p in present if p in FLOORS}
    users = qu["user"].to_numpy(np.int64)
    query_slice = np.full(int(qu["query"].max()) + 1, -1, dtype=np.int64)
    queried = np.unique(users)
    out: list[dict] = []
    for label, record in records.items():
        active = np.zeros(max(int(users.max()), max(record["users"], default=0)) + 1, bool)
        active[np.asarray(record["users"], dtype=np.int64)] = True
        query_slice[qu["query"].to_numpy(np.int64)] = np.where(active[users], 0, 1)
        info = {"labels": list(WINDOW_SLICES), "lows": [np.nan] * 2, "highs": [np.nan] * 2,
                "users": [int(active[queried].sum()), int((~active[queried]).sum())]}
        sub = q[q["perturbation"].isin([label, *floors.values()])]
        rows = [r for r in _rows(sub, query_slice, info, measures, on, level, normality,
                                 adjust=False) if r["perturbation"] == label]
        for name, floor in floors.items():
            f = q[q["perturbation"] == floor]
            units = f["query"].to_numpy(np.int64)
            for r in rows:
                mask = query_slice[units] == r["slice_index"]
                est = estimate_mean(f[on].to_numpy(float)[mask], _replicates(f)[mask],
                                    units[mask])
                low, high = np.clip(est.interval(level), *_RANGE[False])
                r.update({f"{on}_{name}": est.mean, f"{on}_{name}_ci_low": low,
                          f"{on}_{name}_ci_high": high})
        for r in rows:
            r.update(window=record["window"], removed=int(record["removed"]),
                     warm=bool(record.get("warm", False)))
        out += rows
    _holm_floors(out, list(floors))
    return out


def slices(store: Store | str | Path, by: str | Sequence[str] = "activity", *, bins: int = 4,
           edges: Sequence[float] | None = None,
           users: pd.DataFrame | str | os.PathLike | None = None, on: str = "rbo",
           measures: Sequence[str] = ("rbo", "jaccard", "frbo"), level: float = 0.95,
           normality: float = 1e-3, data: DataPaths = None) -> pd.DataFrame:
    """One row per (dataset, model, ``by``, perturbation, slice): the module docstring's
    figures; ``by`` is one kind or several (each slices the queries on its own; the store is
    read once).

    Columns: ``dataset``, ``model``, ``perturbation``, ``by``, ``slice`` (its label, with its
    bounds), ``slice_index`` (0, 1, ... in order of value), ``low``, ``high`` (the bounds;
    NaN for a category), ``users``, ``queries``, ``seeds``, ``draws``, ``levels``, then
    ``M``, ``M_ci_low``, ``M_ci_high`` for every measure (``measures`` may name the accuracy
    changes ``mrr_change``, ``hit_change``, ``ndcg_change``), ``p_vs_<floor>`` for every noise
    floor in the store, ``p_vs_rest`` and ``<on>_vs_all`` with its ``_ci_low``/``_ci_high``
    (the slice minus every query). ``by="window"`` rows add ``window``, ``removed`` (rows),
    ``warm`` and per floor ``<on>_<floor>`` with its interval (module docstring).

    ``users``: a table of user attributes (frame or CSV/TSV/Parquet file with a ``user``
    column) for ``by="column:NAME"``. Per-user properties other than ``accuracy`` read the
    audit's data: the store's copy of it, else its file (``data``: where the file is now,
    for a store written before copies were kept), checked against the fingerprint of the data
    the trials ran on (:mod:`recaudit.audit._data`).
    """
    kinds = [by] if isinstance(by, str) else list(by)
    for b in kinds:
        slice_kind(b)
    _check(bins, edges)
    # the window slices always carry the accuracy change (plasticity)
    window_extra = ["mrr_change"] if WINDOW in kinds and "mrr_change" not in measures else []
    out: list[dict] = []
    with opened(store) as s:
        found = StoreData(s, data, groups(s))
        for g in groups(s):
            qu = _query_users(s, g)
            codes = np.unique(qu["user"].to_numpy(np.int64))
            q = s.query_values(_stored([*measures, *window_extra, on]), g.dataset, g.model,
                               g.fingerprint)
            for b in kinds:
                if b == WINDOW:
                    for row in _window_rows(s, g, q, qu, [*measures, *window_extra], on,
                                            level, normality):
                        out.append({"dataset": g.name, "model": g.model, "by": b, **row})
                    continue
                values = _values(s, g, b, users, found, int(codes.max()) + 1)
                idx, labels, lows, highs = _bins(values[codes], bins, edges,
                                                 _bound_of(g, b, found))
                slice_of_user = np.full(len(values), -1, dtype=np.int64)
                slice_of_user[codes] = idx
                query_slice = np.full(int(qu["query"].max()) + 1, -1, dtype=np.int64)
                query_slice[qu["query"].to_numpy(np.int64)] = \
                    slice_of_user[qu["user"].to_numpy(np.int64)]
                info = {"labels": labels, "lows": lows, "highs": highs,
                        "users": np.bincount(idx, minlength=len(labels)).tolist()}
                for row in _rows(q, query_slice, info, measures, on, level, normality):
                    out.append({"dataset": g.name, "model": g.model, "by": b, **row})
    front = ["dataset", "model", "perturbation", "by", "slice", "slice_index", "low", "high",
             "users", "queries", "seeds", "draws", "levels"]
    if not out:
        return pd.DataFrame(columns=front + [c for m in measures
                                             for c in (m, f"{m}_ci_low", f"{m}_ci_high")])
    frame = pd.DataFrame(out)
    return frame[front + [c for c in frame.columns if c not in front]]
