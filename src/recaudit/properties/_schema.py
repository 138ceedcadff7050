"""How a results store keeps the property-template study (Shriver 2018 §3.4-3.5): its tables
(``property_trials``, ``property_values``), how a value is written and read back, and
:data:`STUDY`, the study as the readers of a store see it (``recaudit status / results``):
they need none of what runs it (models, data loading, the templates).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pandas as pd

from recaudit.experiment import Store, StudyInfo, Table, columns, register

__all__ = ["PROPERTY_TRIALS", "PROPERTY_VALUES", "STUDY", "read_values"]

PROPERTY_TRIALS = Table("property_trials", columns(
    "trial_id VARCHAR, dataset VARCHAR, model VARCHAR, fraction DOUBLE, years BOOLEAN, "
    "k BIGINT, seed BIGINT, folds BIGINT, accuracy BOOLEAN, n_ratings BIGINT, n_users BIGINT, "
    "seconds DOUBLE, spec JSON, data_fingerprint VARCHAR, finished DOUBLE", {
        "trial_id": "hash of the trial's spec and the data fingerprint",
        "dataset": "the dataset's label: its name, or `name:path` for a file",
        "model": "the model's label, `name(k=v,...)` with its parameters",
        "fraction": "the step: the earliest share of the ratings the model was trained on, "
                    "in (0, 1]",
        "years": "true when the step's items were restricted to those released by its last "
                 "rating",
        "k": "length of the top-k lists the properties read",
        "seed": "training and cross-validation fold seed",
        "folds": "cross-validation folds of precision and recall",
        "accuracy": "true when precision and recall were computed",
        "n_ratings": "ratings in the step's log",
        "n_users": "users with at least one rating in the step's log",
        "seconds": "wall-clock seconds of the whole trial (loading, training, every property)",
        "spec": "the trial's canonical spec as JSON",
        "data_fingerprint": "SHA-256 of the whole ratings log (before the step's cut)",
        "finished": "when the trial finished, in seconds since the Unix epoch"}),
    key=("trial_id",),
    doc="One property-template trial: a model trained on one step of the data.")
PROPERTY_VALUES = Table("property_values", columns(
    "trial_id VARCHAR, property VARCHAR, kind VARCHAR, value DOUBLE, items JSON", {
        "trial_id": "the trial (its row in `property_trials`)",
        "property": "the property's label, as in Shriver 2018 Table 3.4 (and `Precision`, "
                    "`Recall`)",
        "kind": "what the property's value is: `number`, `set` or `list`",
        "value": "the number, for `kind = 'number'` (NULL when not finite or not a number)",
        "items": "for `set` and `list`: a JSON array of item labels (a set sorted, a list in "
                 "its order); NULL for numbers"}),
    key=("trial_id", "property"),
    doc="The value of one property instantiated for one trial's model.")
register(PROPERTY_TRIALS, PROPERTY_VALUES)


def _encode(v: Any) -> tuple[str, float | None, str | None]:
    if isinstance(v, (frozenset, set)):
        return "set", None, json.dumps(sorted(map(str, v)))
    if isinstance(v, (tuple, list)):
        return "list", None, json.dumps([str(x) for x in v])
    x = float(v)
    return "number", (x if np.isfinite(x) else None), None


def _decode(kind: str, value: Any, items: Any) -> Any:
    if kind == "set":
        return frozenset(json.loads(items))
    if kind == "list":
        return tuple(json.loads(items))
    return float("nan") if value is None or pd.isna(value) else float(value)


def read_values(store: Store, trial_ids: set[str] | None = None) -> pd.DataFrame:
    """One row per (trial, property): the trial's dataset, model, fraction, years and the
    property's value as a Python value (number, frozenset or tuple), in stored order."""
    trials = store.read(PROPERTY_TRIALS)
    vals = store.read(PROPERTY_VALUES)
    if trial_ids is not None:
        trials = trials[trials["trial_id"].isin(trial_ids)]
    out = vals.merge(trials[["trial_id", "dataset", "model", "fraction", "years"]],
                     on="trial_id")
    out["value"] = [_decode(k, v, i) for k, v, i in zip(out["kind"], out["value"],
                                                        out["items"], strict=True)]
    return out.drop(columns=["kind", "items"])


def _summary(store: Store) -> pd.DataFrame:
    """One row per trial: its setup and every numeric property (sets as their sizes)."""
    values = read_values(store)
    values["value"] = [len(v) if isinstance(v, (frozenset, tuple)) else v
                       for v in values["value"]]
    wide = values.pivot_table(index="trial_id", columns="property", values="value",
                              aggfunc="first", sort=False)
    trials = store.read(PROPERTY_TRIALS).drop(columns=["spec"])
    return trials.merge(wide.reset_index(), on="trial_id", how="left")


#: The property study, as the readers of a store see it (``recaudit status / results``).
STUDY = StudyInfo("properties", "property templates", (PROPERTY_TRIALS, PROPERTY_VALUES),
                  breakdown=("model", "fraction"), summary=_summary)
