"""Shriver 2018, Chapter 4: influence-guided fuzzing on MovieLens-100k (Tables 4.5-4.9).

Each experiment is a :class:`recaudit.fuzz.FuzzStudy` over the four ``@shriver2018`` presets
of §4.2.1.1 (User-User, Item-Item, FunkSVD, LightFM), top-10 lists for every user, TopOut
averaged over users, ``δ = 100 M / |D|`` (0.001, 0.01, 0.1), Welch's t-test against the random
baseline of the same modification type (p < 0.05). All experiments of one scale share a store
(``<root>/shriver2018-ml-100k-<scale>.duckdb``), which resumes trial by trial; a trial is a
pure function of (model, heuristic, size, set index), so ARAND's sets serve Tables 4.6 and 4.9.

Measure keys: ``<model>/<heuristic>/<M>/topout`` (mean over sets; ``aod``, ``jaccard`` beside
it), ``.../mark`` (+1: greater than the baseline, the thesis' bold; -1: lower, italic; 0:
neither or no test), ``.../exceeds`` (1 when the mean reaches δ, the asterisk), ``.../n``;
``time/<heuristic>/<M>/mean`` and ``/var`` (seconds to generate a set, Table 4.5, over all
models), ``time/fit/mean`` (retraining and ranking); ``<model>/influential_rating`` (the rating
value AMR found most influential, §4.2.2.3).

Differences from the thesis: our models retrain deterministically from the same seed, so ZERO
is exactly 0 (the thesis' LightFM drifted: 0.007); the lists are recaudit's full top-10 rows
(an unscorable user gets the damped item-mean fallback); the thesis used 100 sets.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from recaudit.reproduce._experiment import Measures

__all__ = ["SCALES", "FUZZ_MODELS", "run_fuzz", "fuzz_measures"]

FUZZ_MODELS = ("user-user", "item-item", "funksvd", "lightfm")
DATASET = "ml-100k"

#: sets per configuration (ZERO separately: retraining is deterministic, so its sets agree).
SCALES: dict[str, dict[str, Any]] = {
    "small": {"sets": 5, "zero_sets": 2,
              "note": "5 modification sets per configuration (paper: 100), 2 for ZERO; all "
                      "four models and sizes 1, 10, 100"},
    "paper": {"sets": 100, "zero_sets": 2,
              "note": "the thesis' settings: 100 modification sets per configuration, sizes "
                      "1, 10, 100, all four models (about 2 s per trial on one core: "
                      "use --workers); ZERO 2 sets (retraining is deterministic, so its "
                      "sets agree)"},
}


def _store(workdir: Path) -> Path:
    """``<root>/shriver2018-ml-100k-<scale>.duckdb`` (``workdir`` = ``<root>/<exp>/<scale>``)."""
    return workdir.parent.parent / f"shriver2018-{DATASET}-{workdir.name}.duckdb"


def _studies(store: Path, scale: str, heuristics: tuple[str, ...], sizes: tuple[int, ...],
             workers: int, models: tuple[str, ...], sets: int | None = None,
             extend: bool = False):
    from recaudit.experiment import DatasetSpec, ModelSpec
    from recaudit.fuzz import FuzzStudy

    s = dict(SCALES[scale])
    if sets is not None:  # fewer sets than the scale's (a run's --draws), or more (extend)
        s["sets"], s["zero_sets"] = (sets if extend else min(sets, s["sets"]),
                                     min(sets, s["zero_sets"]))
    common: dict[str, Any] = dict(models=tuple(ModelSpec(f"{m}@shriver2018") for m in models), sizes=sizes,
                  dataset=DatasetSpec(DATASET, min_user_interactions=0), seed=0, k=10,
                  output=str(store), workers=workers)
    out = []
    if "ZERO" in heuristics:
        out.append(FuzzStudy(heuristics=("ZERO",), sets=s["zero_sets"], **common))
    rest = tuple(h for h in heuristics if h != "ZERO")
    if rest:
        out.append(FuzzStudy(heuristics=rest, sets=s["sets"], **common))
    return out


def run_fuzz(workdir: Path, scale: str, workers: int, heuristics: tuple[str, ...],
             sizes: tuple[int, ...], models: tuple[str, ...] = FUZZ_MODELS, scope=None):
    """Run (or resume) the studies; returns their trials (a DataFrame). ``scope`` (a
    :class:`~recaudit.reproduce.Scope`): ``--draws N`` runs the first N modification sets of
    each configuration (a set is a draw of the heuristic; the set index is part of a trial's
    id, so a later run with more sets extends the store), ``--models`` some of the four models,
    ``--no-train`` reads what the store holds."""
    import pandas as pd

    from recaudit.errors import ConfigError
    from recaudit.fuzz import load_results, run_study

    sets, extend = None, False
    if scope is not None:
        if scope.seeds is not None or scope.perturbations is not None:
            raise ConfigError("Shriver 2018's fuzzing experiments take --draws (modification "
                              "sets per configuration), --models and --no-train, not --seeds "
                              "or --perturbations")
        sets, extend = scope.draws, scope.extend
        if scope.models is not None:
            models = scope.pick(models, FUZZ_MODELS)
    store = _store(workdir)
    store.parent.mkdir(parents=True, exist_ok=True)
    frames = []
    train = scope is None or scope.train
    for study in _studies(store, scale, heuristics, sizes, workers, models, sets, extend):
        if not train:
            if store.exists():
                frames.append(load_results(store, study))
            continue
        run_study(study)
        frames.append(load_results(store, study))
    if not frames:
        raise ConfigError(f"{store} holds no trials to record (--no-train)")
    return pd.concat(frames, ignore_index=True)


def _model(label: str) -> str:
    return label.split("@", 1)[0]


def fuzz_measures(results) -> Measures:
    """Flat measures of a set of trials (see the module docstring), with each cell's TopOut
    per modification set as samples (units distinct per heuristic: the sets are independent,
    so two heuristics are compared with Welch's test, as the thesis does)."""
    import pandas as pd

    from recaudit.fuzz import significance

    out = Measures()
    for (model, h, size), g in results.groupby(["model", "heuristic", "size"], sort=False):
        g = g.sort_values("set_index", kind="stable")  # set i is the i-th replicate
        out.samples[f"{_model(model)}/{h}/{int(size)}/topout"] = pd.DataFrame(
            {"replicate": "0", "unit": [f"{h}:{int(i)}" for i in g["set_index"]],
             "value": g["topout"].astype(float).to_numpy()})
    sig = significance(results, metric="topout")
    for _, r in sig.iterrows():
        k = f"{_model(r['model'])}/{r['heuristic']}/{int(r['size'])}"
        out[f"{k}/topout"] = float(r["mean"])
        out[f"{k}/mark"] = {"bold": 1.0, "italic": -1.0}.get(r["mark"], 0.0)
        out[f"{k}/exceeds"] = float(bool(r["exceeds"]))
        out[f"{k}/n"] = float(r["n"])
    for (model, h, size), g in results.groupby(["model", "heuristic", "size"]):
        for metric in ("aod", "jaccard"):
            out[f"{_model(model)}/{h}/{int(size)}/{metric}"] = float(g[metric].mean())
    for (h, size), g in results.groupby(["heuristic", "size"]):
        out[f"time/{h}/{int(size)}/mean"] = float(g["gen_seconds"].mean())
        out[f"time/{h}/{int(size)}/var"] = float(g["gen_seconds"].var(ddof=1)) \
            if len(g) > 1 else float("nan")
    out["time/fit/mean"] = float(results["fit_seconds"].mean())
    amr = results[results["heuristic"] == "AMR"]
    for model, g in amr.groupby("model"):
        ratings = [json.loads(r)["info"].get("rating") for r in g["record"]]
        ratings = [x for x in ratings if x is not None]
        if ratings:  # the same baseline lists every set; ties may differ: the most frequent
            vals, counts = np.unique(ratings, return_counts=True)
            out[f"{_model(model)}/influential_rating"] = float(vals[counts.argmax()])
    return out
