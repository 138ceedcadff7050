"""Churn over staleness: a retrain's figures in one table (:func:`staleness`).

An audit of ``remove-last-<window>`` perturbations (:mod:`recaudit.perturb._retrain`) compares,
per window ``D``, the *stale* model (trained before the training log's last ``D``) with today's
retrain from scratch (the baseline, trained on all of it), both asked today's test queries.
``1 - RBO`` is the churn a retrain after ``D`` of new data brings; the ``seed-only`` floor is the
churn a retrain brings with no new data at all (another training seed), so only the part above
the floor is explained by the data. The ``+warm`` variant compares the same stale model with
itself fine-tuned on the window: ``compare_perturbations("remove-last-D+warm",
"remove-last-D")`` decides whether fine-tuning churns less than retraining from scratch.

:func:`staleness` gives, per (dataset, model, retrain) and slice — ``all`` users, and the users
``active`` and ``inactive`` in the window (:func:`recaudit.audit.slices` ``by="window"``) — the
similarity ``on`` with its interval, the floor's on the same queries, the paired test against the
floor (Holm-adjusted as in :func:`~recaudit.audit.summary` and :func:`~recaudit.audit.slices`),
and ``mrr_change`` (stale minus fresh: negative where the fresh data helped) with its interval.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from recaudit.audit._decide import summary
from recaudit.audit._slices import slices
from recaudit.audit._windows import WINDOW
from recaudit.experiment import Store

__all__ = ["staleness"]

_COLUMNS = ["dataset", "model", "perturbation", "window", "seconds", "percent", "warm",
            "warm_epochs", "warm_lr", "removed", "slice", "users", "queries", "seeds"]


def _window(label: str) -> dict[str, object]:
    """The window (canonical name, seconds, percent) and the warm start's settings (epochs,
    lr; NaN for a retrain from scratch) of a retrain's label (a name or a table's JSON)."""
    from recaudit.perturb import parse, parse_window

    spec = parse(json.loads(label) if label.startswith("{") else label)
    w = parse_window(spec.window)  # type: ignore[attr-defined]
    warm = bool(spec.warm)  # type: ignore[attr-defined]
    return {"window": w.name, "seconds": w.seconds, "percent": w.percent, "warm": warm,
            "warm_epochs": spec.warm_epochs if warm else np.nan,  # type: ignore[attr-defined]
            "warm_lr": (spec.warm_lr or np.nan) if warm else np.nan}  # type: ignore


def staleness(store: Store | str | Path, *, on: str = "rbo", level: float = 0.95
              ) -> pd.DataFrame:
    """One row per (dataset, model, retrain perturbation, slice ``all`` / ``active`` /
    ``inactive``), ordered by window (module docstring).

    Columns: ``dataset``, ``model``, ``perturbation``, ``window`` (``7d``, ``5%``),
    ``seconds`` / ``percent`` (its size; one is NaN), ``warm``, ``warm_epochs`` and
    ``warm_lr`` (a warm start's settings, NaN for a retrain from scratch and ``warm_lr`` NaN
    for the model's own), ``removed`` (rows),
    ``slice``, ``users`` (with a test query; NaN for ``all``), ``queries``, ``seeds``, then
    ``<on>`` with ``_ci_low`` / ``_ci_high``, ``churn`` (``1 - <on>``), ``p_vs_<floor>``, the
    floor's ``<on>_<floor>`` with its interval, and ``mrr_change`` with its interval."""
    sl = slices(store, WINDOW, on=on, measures=(on, "mrr_change"), level=level)
    if sl.empty:
        return pd.DataFrame(columns=_COLUMNS + [on, f"{on}_ci_low", f"{on}_ci_high", "churn"])
    every = summary(store, on=on, level=level,
                    measures=(on, "mrr_base", "mrr_pert", "mrr_change"))
    floors = [c for c in sl.columns if c.startswith("p_vs_") and c != "p_vs_rest"]
    rows = []
    for (dataset, model, pert), g in sl.groupby(["dataset", "model", "perturbation"],
                                                sort=False):
        base = {"dataset": dataset, "model": model, "perturbation": pert, **_window(str(pert)),
                "removed": int(g["removed"].iloc[0])}
        whole = every[(every.dataset == dataset) & (every.model == model)
                      & (every.perturbation == pert)]
        if len(whole):
            w = whole.iloc[0]
            row = {**base, "slice": "all", "users": np.nan, "queries": int(w["queries"]),
                   "seeds": int(w["seeds"])}
            for c in (on, f"{on}_ci_low", f"{on}_ci_high", "mrr_change", "mrr_change_ci_low",
                      "mrr_change_ci_high", *floors):
                row[c] = w.get(c, np.nan)
            for name_ in (f[5:] for f in floors):
                fl = every[(every.dataset == dataset) & (every.model == model)
                           & (every.perturbation.map(_floor_name) == name_)]
                for suffix in ("", "_ci_low", "_ci_high"):
                    row[f"{on}_{name_}{suffix}"] = fl[f"{on}{suffix}"].iloc[0] if len(fl) \
                        else np.nan
            rows.append(row)
        for r in g.to_dict("records"):
            rows.append({**base, **{k: v for k, v in r.items() if k not in base
                                    and k not in ("by", "slice_index", "low", "high", "draws",
                                                  "levels", "p_vs_rest")
                                    and not k.startswith(f"{on}_vs_all")}})
    out = pd.DataFrame(rows)
    out["churn"] = 1.0 - out[on]
    out["_order"] = out["slice"].map({"all": 0, "active": 1, "inactive": 2})
    out["_size"] = out["seconds"].fillna(out["percent"])
    out = out.sort_values(["dataset", "model", "warm", "warm_epochs", "warm_lr", "_size",
                           "_order"], kind="stable", na_position="first")
    front = _COLUMNS + [on, f"{on}_ci_low", f"{on}_ci_high", "churn"]
    rest = [c for c in out.columns if c not in front and not c.startswith("_")]
    return out[front + rest].reset_index(drop=True)


def _floor_name(label: str) -> str | None:
    from recaudit.audit._decide import FLOORS

    return FLOORS.get(label)
