"""The property-template study on the experiment layer (Shriver 2018 §3.4-3.5).

A :class:`PropertyStudy` is a :class:`~recaudit.experiment.Study`: one trial per (model, step)
where a step is the earliest ``fraction`` of the ratings (1.0: Table 3.4; 0.5, 0.6, ..., 1.0
with ``years``: Table 3.6, items restricted to those released by the step's last rating). A
trial trains the model on the step's log, instantiates every property of
:data:`~recaudit.properties.STUDY_PROPERTIES` (and precision/recall by cross-validation with
``accuracy``) and stores one row per property in ``property_values`` (numbers in ``value``;
sets and ordered lists of item labels in ``items``), its setup in ``property_trials``. Runs
resume, run on any executor, and ``recaudit status/results/report`` read them like any study.

:func:`property_frame` and :func:`evolving_frames` rebuild Table 3.4 and Table 3.6 from a
store (the same frames :func:`~recaudit.properties.property_table` and
:func:`~recaudit.properties.evolving_study` compute in memory).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pandas as pd

from recaudit.config import Config
from recaudit.errors import DataError
from recaudit.experiment import (DatasetSpec, ExecutorSpec, ModelSpec, Store, Table, Trial,
                                 canonical_json, data_summary, load_dataset, run_study, spec_id)
from recaudit.properties._schema import PROPERTY_TRIALS, PROPERTY_VALUES, _encode
from recaudit.properties._tables import STUDY_PROPERTIES, change_summary, property_table, step

__all__ = ["PropertyStudy", "PropertyTrial", "run_property_trial", "property_frame",
           "evolving_frames", "release_years"]

def release_years(spec: DatasetSpec, log: Any) -> np.ndarray:
    """Release year per item code of a MovieLens dataset (NaN where unknown), from the movie
    file next to its ratings (:func:`recaudit.data.read_release_years`)."""
    from recaudit.data import datasets, read_release_years

    source = Path(spec.path) if spec.path is not None else Path(datasets.fetch(spec.name))
    return read_release_years(source, log.item_ids)


@dataclass(frozen=True)
class PropertyTrial:
    """One cell: ``model`` on the earliest ``fraction`` of ``dataset`` (items restricted to
    those released by then with ``years``)."""

    dataset: DatasetSpec
    model: ModelSpec
    fraction: float = 1.0
    years: bool = False
    k: int = 10
    seed: int = 0
    folds: int = 5
    accuracy: bool = True

    def to_dict(self) -> dict[str, Any]:
        return json.loads(canonical_json(self))


def run_property_trial(trial: PropertyTrial) -> dict[str, Any]:
    """Run one trial (pure: same trial, same values); returns its rows."""
    from recaudit.models import create

    t0 = time.perf_counter()
    log = load_dataset(trial.dataset)
    if log.rating is None:
        raise DataError("property templates need ratings; this dataset has none",
                        source=trial.dataset.label, column="rating",
                        hint="use a ratings dataset")
    years = release_years(trial.dataset, log) if trial.years else None
    sub, candidates = step(log, trial.fraction, years)
    label = trial.model.label
    noun = "movies" if trial.dataset.name.startswith("ml-") else "items"
    table = property_table({label: lambda: create(trial.model.name, **trial.model.params)},
                           sub, k=trial.k, seed=trial.seed, accuracy=trial.accuracy,
                           folds=trial.folds, candidates=candidates, item_noun=noun)
    return {"trial": trial, "fingerprint": log.fingerprint(), "n_ratings": len(sub),
            "n_users": int(np.count_nonzero(sub.user_counts())),
            "values": {str(p): table[label][p] for p in table.index},
            "seconds": time.perf_counter() - t0}


@dataclass(frozen=True)
class PropertyStudy(Config):
    """Properties next to precision/recall for several models (Shriver 2018 §3.4), at one or
    several steps of the data (§3.5: ``fractions`` 0.5 .. 1.0 with ``years``).

    dataset: a ratings dataset. models: the models. fractions: the earliest shares of the
    ratings (in (0, 1]). years: restrict each step's items to those released by its last
    rating (MovieLens titles). k: length of the top-k lists. seed: training and fold seed.
    folds: cross-validation folds. accuracy: compute precision/recall. output: the results
    store. workers: processes (1: in this process).
    """

    models: tuple[ModelSpec, ...]
    dataset: DatasetSpec = field(default_factory=lambda: DatasetSpec(
        "ml-latest-small", min_user_interactions=0))
    fractions: tuple[float, ...] = (1.0,)
    years: bool = False
    k: int = 10
    seed: int = 0
    folds: int = 5
    accuracy: bool = True
    output: str = "properties.duckdb"
    workers: int = 1

    kind: ClassVar[str] = "properties"
    tables: ClassVar[tuple[Table, ...]] = (PROPERTY_TRIALS, PROPERTY_VALUES)
    run: ClassVar[Callable[..., Any]] = staticmethod(run_property_trial)
    share: ClassVar[Callable[..., Any] | None] = None
    prime: ClassVar[Callable[..., Any] | None] = None

    def validate(self) -> None:
        if not self.models:
            raise self.invalid("models", "a property study needs at least one model")
        if not self.fractions or any(not 0 < f <= 1 for f in self.fractions):
            raise self.invalid("fractions", f"fractions must lie in (0, 1], got "
                                            f"{list(self.fractions)}")
        for key in ("k", "workers"):
            if getattr(self, key) < 1:
                raise self.invalid(key, f"must be >= 1, got {getattr(self, key)}")
        if self.folds < 2:
            raise self.invalid("folds", f"folds must be >= 2, got {self.folds}")

    @property
    def executor(self) -> ExecutorSpec:
        return ExecutorSpec("process" if self.workers > 1 else "inprocess", self.workers)

    def trials(self) -> list[PropertyTrial]:
        """Grid order: model, fraction."""
        return [PropertyTrial(self.dataset, m, float(f), self.years, self.k, self.seed,
                              self.folds, self.accuracy)
                for m in self.models for f in self.fractions]

    def plan(self) -> list[Trial]:
        fp = load_dataset(self.dataset).fingerprint()
        return [Trial(spec_id(t.to_dict(), fp), t, datasets=(t.dataset,),
                      label=f"{t.model.label} · fraction {t.fraction:g}")
                for t in self.trials()]

    def facts(self) -> dict[str, Any]:
        return {"properties.study": self.to_dict(),
                "properties.data": {"dataset": self.dataset.label,
                                    **data_summary(load_dataset(self.dataset))}}

    def write(self, store: Store, outcome: dict[str, Any]) -> str:
        t: PropertyTrial = outcome["trial"]
        tid = spec_id(t.to_dict(), outcome["fingerprint"])
        rows = []
        for prop, v in outcome["values"].items():
            kind, value, items = _encode(v)
            rows.append({"trial_id": tid, "property": prop, "kind": kind, "value": value,
                         "items": items})
        with store.transaction():
            store.delete(PROPERTY_VALUES, trial_id=tid)
            store.insert(PROPERTY_VALUES, rows)
            store.insert(PROPERTY_TRIALS, [{
                "trial_id": tid, "dataset": t.dataset.label, "model": t.model.label,
                "fraction": t.fraction, "years": t.years, "k": t.k, "seed": t.seed,
                "folds": t.folds, "accuracy": t.accuracy, "n_ratings": outcome["n_ratings"],
                "n_users": outcome["n_users"], "seconds": outcome["seconds"],
                "spec": canonical_json(t.to_dict()), "data_fingerprint": outcome["fingerprint"],
                "finished": time.time()}], replace=True)
        return tid

    def run_all(self, *, progress: Callable[[int, int], None] | None = None) -> Path:
        """Run (or resume) the study; returns the store path."""
        return run_study(self, progress=None if progress is None else
                         (lambda tid, done, total: progress(done, total)))


def property_frame(values: pd.DataFrame, fraction: float = 1.0, years: bool = False
                   ) -> pd.DataFrame:
    """Table 3.4 from :func:`read_values`: properties x models at one step."""
    sub = values[(values["fraction"] == fraction) & (values["years"] == years)]
    order = list(dict.fromkeys(sub["property"]))
    models = list(dict.fromkeys(sub["model"]))
    cols = {m: sub[sub["model"] == m].set_index("property")["value"].reindex(order)
            for m in models}
    return pd.DataFrame(cols, index=order)


def evolving_frames(values: pd.DataFrame, threshold: float = 5.0
                    ) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Table 3.6 from :func:`read_values` of one evolving study's trials (read them by the
    study's trial ids): ``(steps, summary)`` as :func:`~recaudit.properties.evolving_study`
    returns them (numeric properties only)."""
    numeric = {"Precision", "Recall"} | {p.label for p in STUDY_PROPERTIES if p.numeric}
    sub = values[values["property"].isin(numeric)]
    steps = sub.pivot_table(index=["model", "fraction"], columns="property", values="value",
                            aggfunc="first", sort=False).reset_index()
    labels = [p for p in ["Precision", "Recall", *(q.label for q in STUDY_PROPERTIES)]
              if p in steps.columns]
    steps = steps[["model", "fraction", *labels]]
    return steps, change_summary(steps, labels, threshold)
