"""Item exposure: which items a perturbation pushes into and out of users' top-k lists.

From both top-k lists of every test query (``query_results.top_base`` / ``top_pert``), per
trial: an item *entered* a list when it is in the perturbed list and not the baseline's, *left*
it in the opposite case. :func:`exposure` gives

- ``items``: per (dataset, model, perturbation, item): ``entered`` and ``left`` — the number of
  users whose top-k the item entered (left), averaged over the perturbation's trials (a user
  with several test queries counts once) — ``net = entered - left``, ``appearances_base`` and
  ``appearances_pert`` (the top-k lists holding the item, mean over trials) and the item's
  training ``popularity`` (its training interactions); only items that entered or left a list;
- ``summary``: per (dataset, model, perturbation): ``lists`` (test queries), ``changed`` (the
  share of lists whose top-k set changed), ``moved`` (items entered per list), the mean training
  popularity of the items that entered (``popularity_entered``) and left (``popularity_left``)
  a list, each per list first, and their per-list difference ``popularity_shift`` (> 0: the
  perturbation pushes lists toward popular items), with 95 % intervals over seeds (draws) and
  lists (:func:`recaudit.stats.estimate_mean`; the lists that changed, so a table with missing
  cells); and the Gini coefficient of top-k appearances over the catalogue,

      G = sum_i (2 i - n - 1) x_(i) / (n sum_i x_i)

  (``x_(i)`` the appearances of the ``i``-th least exposed of the ``n`` catalogue items, never
  shown ones included), of the baseline (``gini_base``) and the perturbed lists
  (``gini_pert``), and its per-trial change ``gini_change`` with an interval over the trials
  and the users (none with one trial).

**Intervals inside what is possible.** Each quantity has a range: a mean popularity lies
between the least and the most popular catalogue item's training interactions ``[p_min,
p_max]``, the shift in ``[-(p_max - p_min), p_max - p_min]``, a change of Gini in ``[-1, 1]``.
With two or three seeds the symmetric interval ``mean +- h`` (``h`` scaled by ``t(1) = 12.7``
at two) leaves that range (an entered popularity of 117 with ``[-395, 629]``); the intervals
are built on the logit scale of the position in the range and mapped back
(:meth:`recaudit.stats.Estimate.interval` with ``bounds``; on ``[-1, 1]`` Fisher's z), which
keeps them inside and skews them away from the nearer bound, as the sampling distribution of a
mean near a bound is skewed. For a mean popularity far below ``p_max`` this is the log scale: a
positive, right-skewed quantity whose seeds differ by a factor (simulated coverage 0.94-0.95
at two to five seeds where the symmetric interval gives 0.93, 0.93 against 0.85 for the
clipped one when seeds differ by a factor 2.2; ``tests/stats/test_coverage.py``).

**The users in Gini's change.** Every trial ranks the same test users, so the trials' changes
share the users' part of the variation, which their spread cannot show: an interval over the
trials alone covered 0.42 of simulated truths at five seeds when the seeds agreed
(``tests/audit/test_exposure.py``). The users' part is a grouped jackknife, as
:mod:`recaudit.stats` adds the queries' part to the seeds': the users are dealt into ``J =
min(20, users)`` groups (a fixed permutation, seed 0), ``theta_j`` is the mean over trials of
the change with group ``j``'s lists left out, and

    B = (J - 1) / J sum_j (theta_j - mean_j theta_j)^2      (df J - 1)

joins the trials' part ``var(change) / S`` (df ``S - 1``) in the interval of
:mod:`recaudit.stats` (each part scaled by its own t quantile), on Fisher's scale. The
estimand is the expected change for a test set of this many users (the Gini of a finite set
of lists depends on its size); simulated coverage 0.95-0.98 at two to five seeds.

The lists are read in batches of trials and compared as arrays of item codes (DuckDB parses the
JSON and maps the ids to codes; numpy does the rest), so a paper-size store answers in seconds.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from recaudit.audit._decide import _replicates
from recaudit.audit._store import AuditStore
from recaudit.audit._data import DataPaths, StoreData
from recaudit.audit._users import Group, groups, opened, own_ids
from recaudit.data import Interactions
from recaudit.errors import RecauditError
from recaudit.experiment import Store
from recaudit.stats import Estimate, estimate_mean

__all__ = ["Exposure", "exposure", "gini"]

#: Trials whose lists are compared at once (bounds memory: ``BATCH * queries * k * k`` bytes).
BATCH = 8
#: Groups of users the Gini's change is jackknifed over (module docstring).
GROUPS = 20
_KEYS = "_recaudit_item_keys"


@dataclass(frozen=True)
class Exposure:
    """:func:`exposure`'s two tables (module docstring)."""

    summary: pd.DataFrame
    items: pd.DataFrame


def gini(counts: np.ndarray) -> np.ndarray:
    """The Gini coefficient of each row of ``counts`` (module docstring; 0 for an all-zero
    row)."""
    x = np.sort(np.asarray(counts, dtype=np.float64), axis=-1)
    n = x.shape[-1]
    total = x.sum(axis=-1)
    weights = 2 * np.arange(1, n + 1) - n - 1
    with np.errstate(invalid="ignore", divide="ignore"):
        g = (x * weights).sum(axis=-1) / (n * total)
    return np.where(total > 0, g, 0.0)


def _keys(ids: np.ndarray) -> pa.Table:
    """Each item's id as DuckDB reads it from a stored JSON list, and its code."""
    text = [x if isinstance(x, str) else json.dumps(x) for x in ids.tolist()]
    return pa.table({"key": pa.array(text, pa.string()),
                     "code": pa.array(np.arange(len(text), dtype=np.int32))})


def _codes(s: AuditStore, trial_ids: list[str], side: str) -> dict[str, np.ndarray]:
    """The item codes of the ``side`` (base/pert) lists of ``trial_ids``: ``t`` (the trial's
    index in ``trial_ids``), ``q`` (query), ``pos`` (0-based rank) and ``code``."""
    got = s.con.execute(f"""
        WITH u AS (
            SELECT trial_id, query, unnest(l) AS key, generate_subscripts(l, 1) AS pos
            FROM (SELECT trial_id, query, from_json(top_{side}, '["VARCHAR"]') AS l
                  FROM query_results WHERE list_contains(?, trial_id)))
        SELECT (list_position(?, u.trial_id) - 1)::INTEGER AS t, u.query::INTEGER AS q,
               (u.pos - 1)::INTEGER AS pos, k.code
        FROM u JOIN {_KEYS} k USING (key)""", [trial_ids, trial_ids]).fetchnumpy()
    return {c: np.asarray(got[c]) for c in ("t", "q", "pos", "code")}


def _lists(s: AuditStore, trial_ids: list[str], n_queries: int
           ) -> tuple[np.ndarray, np.ndarray]:
    """``int32 [trials, queries, k]`` item codes of the baseline's and the perturbed lists of
    ``trial_ids`` (-1 past a list's end)."""
    sides = [_codes(s, trial_ids, side) for side in ("base", "pert")]
    k = max(int(c["pos"].max(initial=-1)) + 1 for c in sides)
    out = []
    for c in sides:
        a = np.full((len(trial_ids), n_queries, k), -1, dtype=np.int32)
        a[c["t"], c["q"], c["pos"]] = c["code"]
        out.append(a)
    return out[0], out[1]


def _moved(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Where ``a`` holds an item that ``b``'s list (same trial and query) does not."""
    return (a >= 0) & ~(a[..., :, None] == b[..., None, :]).any(axis=-1)


def _user_groups(user: np.ndarray) -> np.ndarray:
    """The jackknife group of each query: its user's place in a fixed permutation of the
    users with a query, modulo :data:`GROUPS` (module docstring)."""
    present, code = np.unique(user, return_inverse=True)
    n = min(GROUPS, len(present))
    return (np.random.default_rng(0).permutation(len(present)) % n)[code.ravel()]


def _appearances(codes: np.ndarray, group: np.ndarray, n_items: int
                ) -> tuple[np.ndarray, np.ndarray]:
    """Of ``int [trials, queries, k]`` item codes (-1: none): the top-k appearances per trial
    and item, ``[trials, items]``, and the Gini of each trial's appearances with each user
    group's lists left out, ``[trials, groups]`` (``group``: each query's group)."""
    n_t, n_g = codes.shape[0], int(group.max()) + 1
    ok = codes >= 0
    t = np.broadcast_to(np.arange(n_t)[:, None, None], codes.shape)[ok]
    g = np.broadcast_to(group[None, :, None], codes.shape)[ok]
    counts = np.bincount((t * n_g + g) * n_items + codes[ok], minlength=n_t * n_g * n_items) \
        .reshape(n_t, n_g, n_items)
    total = counts.sum(axis=1)
    without = np.stack([gini(total[i][None, :] - counts[i]) for i in range(n_t)]) \
        if n_t else np.zeros((0, n_g))
    return total, without


def _gini_change(change: np.ndarray, without_base: np.ndarray, without_pert: np.ndarray,
                replicates: np.ndarray, level: float) -> tuple[float, float, float]:
    """The mean over trials of Gini's change and its interval over the trials and the users
    (module docstring): ``change`` per trial, ``without_*`` ``[trials, groups]`` from
    :func:`_appearances`; no interval with one trial."""
    est = estimate_mean(change, replicates)
    if est.n < 2:
        return est.mean, np.nan, np.nan
    theta = (without_pert - without_base).mean(axis=0)
    j = len(theta)
    parts = est.parts
    if j > 1:
        parts = (*parts, ((j - 1) / j * float(((theta - theta.mean()) ** 2).sum()), j - 1))
    low, high = Estimate(est.mean, parts, est.n, est.replicates, j, est.design) \
        .interval(level, bounds=(-1.0, 1.0))
    return est.mean, low, high


def _batch(base: np.ndarray, pert: np.ndarray, user: np.ndarray, group: np.ndarray,
           pop: np.ndarray, n_items: int) -> dict[str, np.ndarray]:
    """Per trial of a batch: users entered/left and appearances per item, per-list
    popularity of the entered and left items, whether the list changed, the Gini with each
    user group left out."""
    n_t, n_users = base.shape[0], int(user.max()) + 1
    out: dict[str, np.ndarray] = {}
    for name, a, b in (("entered", pert, base), ("left", base, pert)):
        moved = _moved(a, b)
        t, q, _ = np.nonzero(moved)
        key = np.sort((t.astype(np.int64) * n_users + user[q]) * n_items + a[moved])
        key = key[np.r_[True, key[1:] != key[:-1]]] if len(key) else key  # distinct
        item, t_of = key % n_items, key // n_items // n_users
        out[name] = np.bincount(t_of * n_items + item, minlength=n_t * n_items) \
            .reshape(n_t, n_items)
        with np.errstate(invalid="ignore"):
            out[f"pop_{name}"] = (np.where(moved, pop[np.maximum(a, 0)], 0.0).sum(-1)
                                  / moved.sum(-1))
        if name == "entered":
            out["changed"] = np.asarray(moved.any(-1))
            out["moved"] = moved.sum(-1)
    for side, a in (("base", base), ("pert", pert)):
        out[f"appearances_{side}"], out[f"without_{side}"] = _appearances(a, group, n_items)
    return out


def _interval(values: np.ndarray, reps: np.ndarray, units: np.ndarray | None, level: float,
              bounds: tuple[float, float]) -> tuple[float, float, float]:
    est = estimate_mean(values, reps, units)
    if est.n < 2:  # one value: no interval
        return est.mean, np.nan, np.nan
    low, high = est.interval(level, bounds=bounds if bounds[0] < bounds[1] else None)
    return est.mean, low, high


def _group(s: AuditStore, g: Group, data: Interactions, train: Interactions, level: float
           ) -> tuple[list[dict], list[pd.DataFrame]]:
    """The summary rows and item tables of one (dataset, model), its item ids registered."""
    fp = "" if g.fingerprint is None else "AND data_fingerprint = ?"
    draw = "coalesce(draw, 0)" if "draw" in s._present("trials") else "0"
    trials = s.sql(f"""SELECT trial_id, perturbation, seed, {draw} AS draw FROM trials
                       WHERE dataset = ? AND model_label = ? AND status = 'done' {fp}
                       ORDER BY perturbation, seed, draw""",
                   [g.dataset, g.model] + ([] if g.fingerprint is None else [g.fingerprint]))
    shape = s.sql("""SELECT max(query) + 1 AS q, count(*) FILTER (WHERE top_base IS NULL
                                                                 OR top_pert IS NULL) AS missing
                      FROM query_results WHERE list_contains(?, trial_id)""",
                  [trials.trial_id.tolist()])
    if int(shape.missing[0]):
        raise RecauditError(f"{s.path} was written before the top-k lists were kept "
                            "(query_results.top_base is empty): exposure needs them; run the "
                            "audit again with this version")
    n_q = int(shape.q[0])
    users = s.sql("""SELECT query, any_value("user") AS u FROM query_results
                      WHERE trial_id = ? GROUP BY query""", [trials.trial_id.iloc[0]])
    user = np.zeros(n_q, dtype=np.int64)
    user[users["query"].to_numpy(np.int64)] = users["u"].to_numpy(np.int64)
    n_items = data.n_items
    pop = np.bincount(train.item, minlength=n_items).astype(np.float64)
    span = float(pop.max() - pop.min())
    group = _user_groups(user)
    summary, items = [], []
    for pert, tr in trials.groupby("perturbation", sort=False):
        parts: dict[str, list[np.ndarray]] = {}
        ids = tr.trial_id.tolist()
        for lo in range(0, len(ids), BATCH):
            got = _batch(*_lists(s, ids[lo:lo + BATCH], n_q), user, group, pop, n_items)
            for name, v in got.items():
                parts.setdefault(name, []).append(v)
        a = {name: np.concatenate(v) for name, v in parts.items()}
        reps = _replicates(tr)
        rep_q = np.repeat(reps, n_q)
        unit_q = np.tile(np.arange(n_q), len(tr))
        row = {"dataset": g.name, "model": g.model, "perturbation": pert,
               "seeds": tr.seed.nunique(), "draws": tr.draw.nunique(), "lists": n_q,
               "changed": float(a["changed"].mean()), "moved": float(a["moved"].mean())}
        pe, pl = a["pop_entered"].ravel(), a["pop_left"].ravel()
        for name, v, bounds in (("popularity_entered", pe, (pop.min(), pop.max())),
                                ("popularity_left", pl, (pop.min(), pop.max())),
                                ("popularity_shift", pe - pl, (-span, span))):
            m, low, high = _interval(v, rep_q, unit_q, level, bounds)
            row.update({name: m, f"{name}_ci_low": low, f"{name}_ci_high": high})
        g_base, g_pert = gini(a["appearances_base"]), gini(a["appearances_pert"])
        row.update({"gini_base": float(g_base.mean()), "gini_pert": float(g_pert.mean())})
        m, low, high = _gini_change(g_pert - g_base, a["without_base"], a["without_pert"], reps,
                                   level)
        row.update({"gini_change": m, "gini_change_ci_low": low, "gini_change_ci_high": high})
        summary.append(row)
        means = {name: a[name].mean(axis=0) for name in
                 ("entered", "left", "appearances_base", "appearances_pert")}
        hit = np.flatnonzero((means["entered"] > 0) | (means["left"] > 0))
        items.append(pd.DataFrame({
            "dataset": g.name, "model": g.model, "perturbation": pert,
            "item": own_ids(data.item_ids, hit), "entered": means["entered"][hit],
            "left": means["left"][hit], "net": (means["entered"] - means["left"])[hit],
            "appearances_base": means["appearances_base"][hit],
            "appearances_pert": means["appearances_pert"][hit], "popularity": pop[hit]}))
    return summary, items


def exposure(store: Store | str | Path, *, level: float = 0.95,
             data: DataPaths = None) -> Exposure:
    """Item exposure under each perturbation (module docstring): per (dataset, model,
    perturbation) a ``summary`` row, and the ``items`` that entered or left a list, most moved
    (largest ``|net|``, then ``entered + left``) first. ``data``: the audit's file(s) where
    they are now, for a store that keeps no copy of its data (:mod:`recaudit.audit._data`)."""
    summary, items = [], []
    with opened(store) as s:
        s.con.register(_KEYS, pa.table({"key": pa.array([], pa.string()),
                                         "code": pa.array([], pa.int32())}))
        try:
            found = StoreData(s, data, groups(s))
            for g in groups(s):
                log, split = found(g)
                s.con.register(_KEYS, _keys(log.item_ids))
                rows, frames = _group(s, g, log, split.train, level)
                summary += rows
                items += frames
        finally:
            s.con.unregister(_KEYS)
    out = pd.concat(items, ignore_index=True) if items else pd.DataFrame(
        columns=["dataset", "model", "perturbation", "item", "entered", "left", "net",
                 "appearances_base", "appearances_pert", "popularity"])
    if len(out):
        out = out.assign(_abs=out.net.abs(), _sum=out.entered + out.left) \
            .sort_values(["dataset", "model", "perturbation", "_abs", "_sum"],
                         ascending=[True, True, True, False, False], kind="stable") \
            .drop(columns=["_abs", "_sum"]).reset_index(drop=True)
    return Exposure(pd.DataFrame(summary), out)
