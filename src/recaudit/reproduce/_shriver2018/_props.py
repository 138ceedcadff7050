"""Shriver 2018, Chapter 3: property templates next to precision/recall (Table 3.4) and their
robustness as the data evolves (Table 3.6): on MovieLens 20M, the thesis' data, at the paper's
scale; on ml-latest-small, which stands in for it, at the small one (``DATASETS``).

Both tables are a :class:`recaudit.properties.PropertyStudy` (k = 10, five folds on users,
80/20 per test user, seed 0) of the five ``@shriver2018`` presets on the thesis' universe
(:func:`~recaudit.reproduce._shriver2018._data.thesis_dataset`): Table 3.4 one step (all
ratings), Table 3.6 six steps with release years. The trials live in the paper's store for the
dataset and scale (``shriver2018-<dataset>-<scale>.duckdb`` beside the experiment folders), so
an interrupted run resumes with the next trial, on as many workers as given.

Readings (documented in :mod:`recaudit.reproduce._shriver2018._data` too):

- Table 3.4's counts grow with the data (ML-20M has 138,493 users, ours 671): they are shown
  next to the thesis' as shares (users, recommendable movies, largest rating count of a movie;
  ML-20M: 138,493 users, 27,278 movies, 67,310 ratings of its most rated movie), the printed
  count in the label. Ratings (ARTK), NRANKS and NRTK(min) are compared as they are.
- Table 3.6 "normalized the values for our properties" (§3.5.2) without saying how. Normalising
  counts as above reproduces the table's invariants (Item-Item NRL 0 %: one list per user at
  every step; NRTK(max) 0 % for Item-Item and FunkSVD: the most rated movie is recommended at
  every step; the identical 13.05 % of NRTK(min) for four models: 1 rating over a growing
  maximum), raw counts cannot. ``max_change`` is that reading, ``max_change_raw`` the raw one.
- Table 3.6 labels NRANKS "(min, ≤)" and NUPRL "(max, ≥)", Table 3.4 "(min, ≥)" and
  "(max, ≤)"; the relation does not change the solved value, so they are the same rows.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from recaudit.reproduce._audit import shared_store
from recaudit.reproduce._shriver2018._data import (
    DATASETS,
    MODELS,
    column_measures,
    log_stats,
    normalise,
    prop_key,
    thesis_dataset,
    thesis_log,
)

__all__ = ["run_table34", "run_table36", "FRACTIONS"]

FRACTIONS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _study(workdir: Path, scale: str, models: tuple[str, ...], workers: int, **steps: Any
           ) -> Any:
    """Run (or resume) the property study of ``models`` on the scale's dataset; its values
    as a frame."""
    from recaudit.experiment import ModelSpec, Store
    from recaudit.properties import PropertyStudy, read_values

    name = DATASETS[scale]
    study = PropertyStudy(models=tuple(ModelSpec(f"{m}@shriver2018") for m in models),
                          dataset=thesis_dataset(name), k=10, seed=0, workers=workers,
                          output=str(shared_store(workdir, f"shriver2018-{name}")), **steps)
    study.run_all()
    ids = {t.id for t in study.plan()}
    with Store(study.output, read_only=True) as store:
        return read_values(store, ids)


def _jsonable(v: Any) -> Any:
    if isinstance(v, frozenset):
        return sorted(v)
    if isinstance(v, tuple):
        return list(v)
    return None if isinstance(v, float) and not np.isfinite(v) else v


def run_table34(workdir: Path, scale: str, workers: int,
                models: tuple[str, ...] = MODELS) -> dict[str, float]:
    """Table 3.4 measures."""
    from recaudit.properties import property_frame

    log, _ = thesis_log(DATASETS[scale])
    stats = log_stats(log)
    out = {f"data/{k}": v for k, v in stats.items()}
    frame = property_frame(_study(workdir, scale, models, workers))
    for m in models:
        col = {p: _jsonable(v) for p, v in frame[f"{m}@shriver2018"].items()}
        out.update(column_measures(m, col, stats))
    return out


def _steps(log: Any, years: np.ndarray) -> list[dict[str, float]]:
    """Normalisers of every step: the earliest ``f`` of the ratings, movies released by then."""
    import pandas as pd

    n, out = len(log), []
    for frac in FRACTIONS:
        sub = log.take(np.arange(int(np.ceil(frac * n))))
        last = pd.Timestamp(int(sub.timestamp.max()), unit="s").year
        out.append(log_stats(sub, ~(years > last)))
    return out


def max_changes(values: list[float], stats: list[dict[str, float]], key: str
                ) -> tuple[float, float]:
    """``(normalised, raw)`` maximum absolute percentage change between consecutive steps."""
    from recaudit.properties import percent_change

    raw = np.asarray(values, dtype=np.float64)
    normed = [normalise(key, v, s) for v, s in zip(raw, stats, strict=True)]
    norm = raw if normed[0] is None else np.asarray(normed, dtype=np.float64)
    return float(np.max(percent_change(norm.tolist()))), float(np.max(percent_change(raw.tolist())))


def run_table36(workdir: Path, scale: str, workers: int,
                models: tuple[str, ...] = MODELS) -> dict[str, float]:
    """Table 3.6 measures: ``<model>/<property>/max_change`` (%, normalised counts),
    ``.../max_change_raw`` and ``<model>/robust_count`` (properties under 5 %)."""
    from recaudit.properties import evolving_frames

    log, years = thesis_log(DATASETS[scale])
    stats = _steps(log, years)
    steps, _ = evolving_frames(_study(workdir, scale, models, workers, fractions=FRACTIONS,
                                      years=True))
    out: dict[str, float] = {}
    for m in models:
        rows = steps[steps["model"] == f"{m}@shriver2018"].sort_values("fraction")
        robust = 0
        for label in rows.columns:
            if label in ("model", "fraction"):
                continue
            key = prop_key(label)
            norm, raw = max_changes(rows[label].astype(float).tolist(), stats, key)
            out[f"{m}/{key}/max_change"], out[f"{m}/{key}/max_change_raw"] = norm, raw
            robust += int(norm < 5.0 and key not in ("Precision", "Recall"))
        out[f"{m}/robust_count"] = float(robust)
    return out
