"""Shriver 2018, Chapter 3: property templates next to precision/recall (Table 3.4) and their
robustness as the data evolves (Table 3.6), on ml-latest-small instead of MovieLens 20M.

Both tables are computed with :func:`recaudit.properties.property_table` /
:func:`~recaudit.properties.evolving_study` (k = 10, five folds on users, 80/20 per test user,
seed 0) for the five ``@shriver2018`` presets, one model at a time; each model's column is
kept in ``workdir`` as JSON, so an interrupted run resumes with the next model.

Readings (documented in :mod:`recaudit.reproduce._shriver2018_data` too):

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

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from recaudit.reproduce._shriver2018_data import (
    MODELS,
    column_measures,
    log_stats,
    normalise,
    prop_key,
    thesis_log,
)

__all__ = ["run_table34", "run_table36", "FRACTIONS"]

FRACTIONS = (0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def _factory(model: str):
    from recaudit.models import create

    return lambda: create(f"{model}@shriver2018")


def _cached(path: Path, compute) -> Any:
    """``compute()``'s JSON result, stored at ``path`` (atomically) and reused."""
    if path.exists():
        return json.loads(path.read_text())
    value = compute()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(value, indent=1))
    os.replace(tmp, path)
    return value


def run_table34(workdir: Path, scale: str, workers: int,
                models: tuple[str, ...] = MODELS) -> dict[str, float]:
    """Table 3.4 measures (``workers`` is unused: each column is one sequential study)."""
    from recaudit.properties import property_table, to_jsonable

    log, _ = thesis_log()
    stats = log_stats(log)
    out = {f"data/{k}": v for k, v in stats.items()}
    for m in models:
        col = _cached(workdir / f"table34-{m}.json", lambda m=m: to_jsonable(property_table(
            {m: _factory(m)}, log, k=10, seed=0, item_noun="movies"))[m])
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
    from recaudit.properties import evolving_study

    log, years = thesis_log()
    stats = _steps(log, years)
    out: dict[str, float] = {}
    for m in models:
        def compute(m=m):
            steps, _ = evolving_study({m: _factory(m)}, log, k=10, seed=0, item_years=years,
                                      fractions=FRACTIONS)
            return [{k: (None if isinstance(v, float) and not np.isfinite(v) else v)
                     for k, v in row.items()} for row in steps.to_dict(orient="records")]
        rows = sorted(_cached(workdir / f"table36-{m}.json", compute),
                      key=lambda r: r["fraction"])
        robust = 0
        for label in rows[0]:
            if label in ("model", "fraction"):
                continue
            key = prop_key(label)
            vals = [np.nan if r[label] is None else r[label] for r in rows]
            norm, raw = max_changes(vals, stats, key)
            out[f"{m}/{key}/max_change"], out[f"{m}/{key}/max_change_raw"] = norm, raw
            robust += int(norm < 5.0 and key not in ("Precision", "Recall"))
        out[f"{m}/robust_count"] = float(robust)
    return out
