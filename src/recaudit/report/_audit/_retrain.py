"""The "Stability across retrains" section: churn over staleness, for the users active and
inactive in the removed window, against the seed-only floor (:func:`recaudit.audit.staleness`,
the ``remove-last-<window>`` perturbations; a ``+warm`` variant drawn beside its from-scratch
twin)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from recaudit.data import duration_text
from recaudit.report._data import ReportData
from recaudit.report._document import Cell, Section, Table, _mean_ci, _num, _slug, _text

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["section", "staleness_figure", "staleness_table"]

INTRO = ("A retrain as a perturbation: the model trained before the training log's last "
         "window (stale) against today's retrain on all of it, both asked today's test "
         "queries. Churn = 1 − RBO. The grey band is the seed-only floor: what a retrain "
         "changes with no new data at all (another training seed). Users inactive in the "
         "window did nothing new: their churn above the floor is churn nobody asked for; "
         "active users' change, with the accuracy it buys, is plasticity (Lavoura et al. "
         "2025). ‘+warm’: the stale model fine-tuned on the window instead of retrained from "
         "scratch, against the same stale lists.")
_SLICES = {"all": "#111827", "active": "#D55E00", "inactive": "#0072B2"}
_FLOOR = "#d1d5db"


def _frame(data: ReportData) -> pd.DataFrame:
    from recaudit.audit import staleness

    if "retrain" not in data._cache:
        data._cache["retrain"] = staleness(data.source)
    return data._cache["retrain"]


def _size(row: Any) -> str:
    return f"{row.percent:g} % of rows" if row.seconds != row.seconds or row.seconds is None \
        else duration_text(float(row.seconds))


def staleness_table(data: ReportData, alpha: float = 0.05) -> Table | None:
    """One row per (dataset, model, retrain, slice): churn with its interval (bold: decided
    against the seed-only floor), the floor's churn on the same queries, and the MRR of the
    stale model minus the updated one's."""
    frame = _frame(data)
    if frame.empty:
        return None
    rows = []
    for r in frame.itertuples():
        churn = _mean_ci(1 - r.rbo, 1 - r.rbo_ci_high, 1 - r.rbo_ci_low)
        p = _num(getattr(r, "p_vs_seed_only", np.nan))
        floor = _mean_ci(1 - getattr(r, "rbo_seed_only", np.nan),
                         1 - getattr(r, "rbo_seed_only_ci_high", np.nan),
                         1 - getattr(r, "rbo_seed_only_ci_low", np.nan))
        users = "" if r.users != r.users else str(int(r.users))
        rows.append((_text(r.dataset), _text(r.model), _text(r.perturbation),
                     _text(_size(r)), _text(r.slice), Cell(users, _num(r.users)),
                     Cell(churn.text, churn.value, significant=p is not None and p < alpha,
                          p_value=p, low=churn.low, high=churn.high), floor,
                     _mean_ci(r.mrr_change, r.mrr_change_ci_low, r.mrr_change_ci_high,
                              signed=True)))
    return Table("retrain-staleness", "Churn over staleness",
                 ("dataset", "model", "retrain", "window", "users", "n", "churn",
                  "seed-only churn", "MRR stale − updated"), tuple(rows), n_labels=5,
                 caption="Churn = 1 − RBO of the stale model's lists against the updated "
                         "model's (today's retrain from scratch; with +warm, the stale model "
                         "fine-tuned on the window), with its 95 % interval over seeds and "
                         "the slice's test queries. Bold: different from the seed-only floor "
                         f"(paired test, Holm over every retrain and slice, p < {alpha:g}). "
                         "Active: users with an interaction in the window; inactive: the "
                         "others. MRR stale − updated < 0: the new data helped their test "
                         "items. `recaudit slices STORE --by window` gives every measure.")


def staleness_figure(data: ReportData, dataset: str, model: str) -> Figure | None:
    """Churn (1 − RBO) against the window, one line per slice (all, active, inactive; dashed:
    ``+warm``), error bars the 95 % intervals, the seed-only floor's churn as a band."""
    frame = _frame(data)
    g = frame[(frame.dataset == dataset) & (frame.model == model)]
    if g.empty:
        return None
    from recaudit.report._plots import _figure

    shares = g.seconds.isna()
    fig, axes = _figure(1, 1, 6.4, 3.6)
    ax = axes[0][0]
    x_of = (g.percent if shares.all() else g.seconds / 86400.0).astype(float)
    floor = g[g.slice == "all"]
    if "rbo_seed_only" in g and floor.rbo_seed_only.notna().any():
        f = floor.iloc[0]
        ax.axhspan(1 - f.rbo_seed_only_ci_high, 1 - f.rbo_seed_only_ci_low, color=_FLOOR,
                   alpha=0.6, linewidth=0, label="seed-only floor (95 %)")
        ax.axhline(1 - f.rbo_seed_only, color="#9ca3af", linewidth=1.0)
    variants = list(dict.fromkeys(zip(g.warm, g.warm_epochs.fillna(0), g.warm_lr.fillna(0),
                                      strict=True)))
    for variant in variants:
        warm, epochs, lr = variant
        for name, color in _SLICES.items():
            r = g[(g.slice == name) & (g.warm == warm) & (g.warm_epochs.fillna(0) == epochs)
                  & (g.warm_lr.fillna(0) == lr)]
            if r.empty:
                continue
            label = name if not warm else \
                f"{name} (+warm, {epochs:g} ep{'' if not lr else f', lr {lr:g}'})"
            xs = x_of[r.index].to_numpy()
            churn = 1 - r.rbo.to_numpy(float)
            err = np.vstack([np.nan_to_num(r.rbo_ci_high.to_numpy(float) - r.rbo.to_numpy(float)),
                             np.nan_to_num(r.rbo.to_numpy(float) - r.rbo_ci_low.to_numpy(float))])
            ax.errorbar(xs, churn, yerr=err, color=color, marker="o" if not warm else "s",
                        markersize=3.5, linestyle="--" if warm else "-", linewidth=1.3,
                        capsize=2, label=label)
    if not shares.any() and x_of.min() > 0 and x_of.max() / x_of.min() >= 10:
        ax.set_xscale("log")
        ax.minorticks_off()
    ticks = g.drop_duplicates("window")
    ax.set_xticks(x_of[ticks.index].to_numpy(), list(ticks.window))
    ax.set_xlabel("share of rows removed" if shares.all() else "staleness (the window removed)")
    ax.set_ylabel("churn (1 − RBO)")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="best")
    return fig


def section(data: ReportData, fig: Any) -> Section | None:
    """The section, or ``None`` when the store holds no retrain."""
    table = staleness_table(data)
    if table is None:
        return None
    out = Section("retrain", "Stability across retrains", INTRO, tables=[table])
    frame = _frame(data)
    for (dataset, model), _ in frame.groupby(["dataset", "model"], sort=False):
        out.figures += fig(f"retrain-{_slug(dataset + model)}",
                           f"Churn over staleness: {model} on {dataset}",
                           lambda d=dataset, m=model: staleness_figure(data, d, m),
                           "Solid: retrained from scratch; dashed: warm-started. Error bars: "
                           "95 % intervals over seeds and test queries; grey band: the "
                           "seed-only floor's churn.")
    return out
