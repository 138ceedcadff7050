"""The study of Shriver 2018 §3.4: properties next to precision/recall, and an evolving dataset.

- :func:`cross_validate` — precision and recall at ``k`` with five-fold cross-validation
  partitioned on users: the users are split into 5 folds; a test user keeps a random 80 % of
  their ratings in training and the other 20 % (at least one) are their relevant items; every
  other user's ratings train the model. Per user (§3.4.1.3)

      precision = #(TopK ∩ Relevant) / #TopK,    recall = #(TopK ∩ Relevant) / #Relevant,

  averaged over all users. ``#TopK`` is the number of items actually ranked (a user without
  any scorable item has precision 0); computed here rather than with
  :mod:`recaudit.metrics` because those forms divide by ``k`` and reject partial lists.
- :func:`property_table` — the Table 3.4 rows (properties instantiated on a model trained on
  the full dataset) plus precision and recall, for several models.
- :func:`evolving_study` — Table 3.6: the earliest 50, 60, ..., 100 % of ratings by time, items
  restricted to those released in or before the year of the latest rating (when release
  years are known), the property values per step and the maximum absolute percentage change
  ``100 |v_{t+1} - v_t| / |v_t|`` between consecutive steps (0 when both are 0, ``inf`` when
  only ``v_t`` is), flagged as robust when under 5 %.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from recaudit.data import Interactions
from recaudit.models import checked_rank
from recaudit.properties._templates import instantiate
from recaudit.properties._universe import Universe
from recaudit.seeds import make_rng

__all__ = ["STUDY_PROPERTIES", "StudyProperty", "cross_validate", "evolving_study",
           "percent_change", "property_table", "recommend_all", "step"]


@dataclass(frozen=True)
class StudyProperty:
    """A row of Table 3.4: a template with its fixed parameters (``k`` is added)."""

    template: str
    params: tuple[tuple[str, Any], ...] = ()

    @property
    def label(self) -> str:
        p = dict(self.params)
        if "f" in p:
            return f"{self.template} ({p['f']}, {p['rel']})"
        return self.template

    @property
    def numeric(self) -> bool:
        return self.template not in ("IANR", "IANRLCMP")


def _sp(name: str, f: str | None = None, rel: str | None = None) -> StudyProperty:
    return StudyProperty(name, (("f", f), ("rel", rel)) if f else ())


#: The rows of Shriver 2018's Table 3.4, in order.
STUDY_PROPERTIES: tuple[StudyProperty, ...] = (
    _sp("NRANKS", "min", ">="), _sp("NRI"), _sp("NTRI"), _sp("NRLMU"), _sp("NRL"), _sp("NRS"),
    _sp("NUPRL", "max", "<="), _sp("NUIR", "max", ">="), _sp("IANRLCMP"),
    _sp("ARTK", "min", "<="), _sp("ARTK", "median", "="), _sp("ARTK", "max", ">="),
    _sp("IANR"), _sp("NRTK", "min", "<="), _sp("NRTK", "median", "="), _sp("NRTK", "max", ">="),
)

ModelFactory = Callable[[], Any]


def recommend_all(model: Any, users: np.ndarray, k: int, n_items: int,
                  candidates: np.ndarray | None = None) -> np.ndarray:
    """``[len(users), k]`` top-k item codes of a fitted model, ``-1`` where nothing is ranked.

    Uses the model's partial ``recommend`` when it has one, else its protocol ``rank`` (then
    ``candidates`` cannot be honoured and must be None).
    """
    users = np.asarray(users, dtype=np.int64)
    if hasattr(model, "recommend"):
        return model.recommend(users, k, candidates=candidates)[0]
    if candidates is not None:
        raise ValueError("candidates need a model with recommend(users, k, candidates=...)")
    from recaudit.data import Queries

    q = Queries(users, np.zeros(len(users) + 1, dtype=np.int64), np.zeros(0, np.int32),
                np.zeros(0), np.full(len(users), -1), np.zeros(len(users)), n_items,
                int(users.max(initial=-1)) + 1)
    items = checked_rank(model, q, k=k).items
    out = np.full((len(users), k), -1, dtype=np.int32)
    out[:, :items.shape[1]] = items
    return out


def _hits(ranked: np.ndarray, rel_indptr: np.ndarray, rel_items: np.ndarray) -> np.ndarray:
    """Per-row ``#(ranked ∩ relevant)`` without a Python loop over users."""
    n, k = ranked.shape
    counts = np.diff(rel_indptr)
    if n == 0 or counts.max(initial=0) == 0:
        return np.zeros(n, dtype=np.int64)
    rel = np.full((n, int(counts.max())), -2, dtype=np.int64)
    pos = np.arange(len(rel_items)) - np.repeat(rel_indptr[:-1], counts)
    rel[np.repeat(np.arange(n), counts), pos] = rel_items
    return (ranked[:, :, None] == rel[:, None, :]).any(axis=2).sum(axis=1)


def cross_validate(make_model: ModelFactory, log: Interactions, *, k: int = 10, folds: int = 5,
                   test_frac: float = 0.2, seed: int = 0,
                   candidates: np.ndarray | None = None) -> tuple[float, float]:
    """Mean precision@k and recall@k over all users (see the module docstring)."""
    if folds < 2:
        raise ValueError(f"folds must be >= 2, got {folds}")
    if not 0 < test_frac < 1:
        raise ValueError(f"test_frac must be in (0, 1), got {test_frac}")
    rng = make_rng("properties-cv", seed)
    users = np.unique(log.user)
    fold_of = np.empty(log.n_users, dtype=np.int64)
    fold_of[rng.permutation(users)] = np.arange(len(users)) % folds
    # random 20 % of every user's rows: rank rows by a random key within the user
    key = rng.random(len(log))
    order = np.lexsort((key, log.user))
    counts = log.user_counts()
    start = np.concatenate([[0], np.cumsum(counts)])[:-1]
    within = np.empty(len(log), dtype=np.int64)
    within[order] = np.arange(len(log)) - np.repeat(start, counts)
    n_test = np.maximum(1, np.round(counts * test_frac)).astype(np.int64)
    is_test_row = within < n_test[log.user]
    precisions, recalls = [], []
    for f in range(folds):
        test_user = np.zeros(log.n_users, dtype=bool)
        test_user[users[fold_of[users] == f]] = True
        held = is_test_row & test_user[log.user]
        train = log.take(~held)
        model = make_model().fit(train, seed=seed + f)
        tu = np.flatnonzero(test_user)
        ranked = recommend_all(model, tu, k, log.n_items, candidates)
        rows = np.flatnonzero(held)
        rows = rows[np.argsort(log.user[rows], kind="stable")]
        rel_counts = np.bincount(log.user[rows], minlength=log.n_users)[tu]
        indptr = np.concatenate([[0], np.cumsum(rel_counts)])
        hits = _hits(ranked.astype(np.int64), indptr, log.item[rows].astype(np.int64))
        n_ranked = (ranked >= 0).sum(axis=1)
        precisions.append(np.divide(hits, n_ranked, out=np.zeros(len(tu)), where=n_ranked > 0))
        recalls.append(hits / np.maximum(rel_counts, 1))
    return float(np.concatenate(precisions).mean()), float(np.concatenate(recalls).mean())


def _value_of(prop: StudyProperty, universe: Universe, k: int) -> Any:
    return instantiate(prop.template, universe, k=k, **dict(prop.params)).value


def property_table(models: dict[str, ModelFactory], log: Interactions, *, k: int = 10,
                   seed: int = 0, properties: Sequence[StudyProperty] = STUDY_PROPERTIES,
                   accuracy: bool = True, folds: int = 5, item_noun: str = "items",
                   candidates: np.ndarray | None = None) -> pd.DataFrame:
    """Table 3.4: rows Precision, Recall and the property values; one column per model.

    The universe's users are the users with at least one rating in ``log``.
    """
    rows: dict[str, dict[str, Any]] = {}
    for name, make in models.items():
        col: dict[str, Any] = {}
        if accuracy:
            col["Precision"], col["Recall"] = cross_validate(make, log, k=k, folds=folds,
                                                             seed=seed, candidates=candidates)
        model = make().fit(log, seed=seed)
        active = np.flatnonzero(log.user_counts() > 0)
        u = Universe.from_log(log, recommend_all(model, active, k, log.n_items, candidates),
                              users=active, item_noun=item_noun)
        for prop in properties:
            col[prop.label] = _value_of(prop, u, k)
        rows[name] = col
    return pd.DataFrame(rows)


def percent_change(values: Sequence[float]) -> np.ndarray:
    """``100 |v_{t+1} - v_t| / |v_t|`` for consecutive pairs (0 for 0 -> 0, inf for 0 -> x)."""
    v = np.asarray(values, dtype=np.float64)
    a, b = v[:-1], v[1:]
    diff = np.abs(b - a)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(a == 0, np.where(diff == 0, 0.0, np.inf), 100.0 * diff / np.abs(a))
    return out


def step(log: Interactions, fraction: float, item_years: np.ndarray | None = None
         ) -> tuple[Interactions, np.ndarray | None]:
    """One step of the evolving dataset: the earliest ``ceil(fraction * n)`` ratings by time,
    and (with ``item_years``) the candidate items: those released in or before the year of
    the step's latest rating (Unix seconds; unknown years are never excluded)."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fractions must lie in (0, 1], got {fraction}")
    sub = log.take(np.arange(int(np.ceil(fraction * len(log)))))
    if item_years is None:
        return sub, None
    last_year = pd.Timestamp(int(sub.timestamp.max()), unit="s").year
    return sub, ~(np.asarray(item_years, dtype=np.float64) > last_year)


def evolving_study(models: dict[str, ModelFactory], log: Interactions, *, k: int = 10,
                   seed: int = 0, fractions: Sequence[float] = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0),
                   item_years: np.ndarray | None = None, accuracy: bool = True, folds: int = 5,
                   threshold: float = 5.0) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3.6. Returns ``(steps, summary)``.

    ``steps``: one row per (model, fraction) with every numeric property (and precision/recall).
    ``summary``: rows properties, columns models, the maximum absolute percentage change between
    consecutive steps; ``summary.attrs["robust"]`` is the boolean frame ``summary < threshold``.
    ``item_years``: release year per item code (``NaN`` = unknown, never excluded); the year
    of the latest rating is read from the timestamps as Unix seconds (MovieLens).
    """
    props = [p for p in STUDY_PROPERTIES if p.numeric]
    records = []
    for frac in fractions:
        sub, cand = step(log, frac, item_years)
        table = property_table(models, sub, k=k, seed=seed, properties=props, accuracy=accuracy,
                               folds=folds, candidates=cand)
        for name in table.columns:
            records.append({"model": name, "fraction": frac, **table[name].to_dict()})
    steps = pd.DataFrame(records)
    labels = (["Precision", "Recall"] if accuracy else []) + [p.label for p in props]
    return steps, change_summary(steps, labels, threshold)


def change_summary(steps: pd.DataFrame, labels: Sequence[str], threshold: float) -> pd.DataFrame:
    """Table 3.6's summary of ``steps`` (one row per model and fraction): per model and
    property, the largest percent change between consecutive steps; ``attrs["robust"]`` marks
    those below ``threshold``."""
    summary = pd.DataFrame({
        name: {lab: float(np.max(percent_change(g.sort_values("fraction")[lab].astype(float))))
               for lab in labels}
        for name, g in steps.groupby("model", sort=False)})
    summary.attrs["robust"] = summary < threshold
    return summary
