"""The "Who is affected" section: stability by user slice, item exposure and the lists of the
users whose lists moved most (:func:`recaudit.audit.slices`, :func:`~recaudit.audit.exposure`,
:func:`~recaudit.audit.most_changed`, :func:`~recaudit.audit.changes`).

The section needs both top-k lists of every query (stores written since they are kept); the
slices by activity, popularity and recency, the exposure and the users' ids also need the
audit's data, read again: where it cannot be, the section says so and shows the slices by
accuracy alone.
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from recaudit.audit import AuditStore, floor_of
from recaudit.errors import RecauditError, RecauditWarning
from recaudit.report._data import ReportData
from recaudit.report._document import (Cell, Section, Table, _fmt, _mean_ci, _num, _slug, _text,
                                       interval_text)
from recaudit.report._plots import _colors, _figure, _legend, _wrap

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["section", "KINDS"]

#: The slices the section shows, and how their axes are named.
KINDS = {"accuracy": "baseline RR of the user's test items", "activity": "training interactions",
         "popularity": "mean training popularity of the user's items",
         "recency": "time since the user's last training interaction"}
#: Users listed per (dataset, model) in the most-changed table.
SHOWN_USERS = 5
_FLOOR_COLOR = "#9ca3af"


def _has_lists(data: ReportData) -> bool:
    with data.kept_open():
        s = AuditStore.of(data.source)
        if not {"top_base", "top_pert"} <= s._present("query_results"):
            return False        # a store written before the lists were kept
        got = s.sql("SELECT count(*) AS n FROM (SELECT 1 FROM query_results "
                    "WHERE top_base IS NOT NULL AND top_pert IS NOT NULL LIMIT 1)")
    return bool(got.n.iloc[0])


def _slices(data: ReportData) -> tuple[pd.DataFrame, str]:
    """:func:`recaudit.audit.slices` by every kind (by accuracy alone where the data cannot
    be read), and why the data is missing ('' when it is not)."""
    from recaudit.audit import slices

    if "who:slices" not in data._cache:
        try:
            data._cache["who:slices"] = (slices(data.source, list(KINDS)), "")
        except RecauditError as exc:
            data._cache["who:slices"] = (slices(data.source, "accuracy"), exc.one_line())
    return data._cache["who:slices"]


def _shown(data: ReportData, frame: pd.DataFrame, dataset: str) -> list[str]:
    """The perturbations to show: those compared at one edit budget, the seed-only floor
    last."""
    present = set(frame.perturbation)
    return [p for p in data.main_perturbations(dataset) if p in present]


def _overall(data: ReportData, dataset: str, model: str) -> dict[str, Cell]:
    """Per perturbation, every query's RBO with its interval (:func:`recaudit.audit.summary`,
    as the report's first table gives it)."""
    a = data.agg[(data.agg.dataset == dataset) & (data.agg.model_label == model)]
    return {str(r.perturbation): _mean_ci(r.rbo, r.rbo_ci_low, r.rbo_ci_high)
            for r in a.itertuples()}


def slice_tables(data: ReportData, frame: pd.DataFrame, alpha: float = 0.05) -> list[Table]:
    """Per (dataset, model): a row per slice of users (by each kind), a column per
    perturbation; each cell the slice's RBO minus all users' RBO under that perturbation
    (``rbo_vs_all``, with its interval: each perturbation on its own scale), marked where the
    slice differs from the other users (``p_vs_rest`` below ``alpha``, Holm-adjusted). The
    first row holds all users' RBO."""
    tables = []
    for (dataset, model), g in frame.groupby(["dataset", "model"], sort=False):
        perts = _shown(data, g, dataset)
        if not perts:
            continue
        overall = _overall(data, dataset, model)
        users = int(g[g.perturbation == perts[0]].groupby("by").users.sum().max())
        rows = [(_text("all users"), _text(""), Cell(str(users), float(users)),
                 *(overall.get(p, _text("–")) for p in perts))]
        for by in [k for k in KINDS if k in set(g.by)] + sorted(set(g.by) - set(KINDS)):
            part = g[g.by == by]
            for index in sorted(part.slice_index.unique()):
                cells = part[part.slice_index == index].set_index("perturbation")
                first = cells.iloc[0]
                row = [_text(by), _text(first.slice), Cell(str(first.users), first.users)]
                for p in perts:
                    if p not in cells.index:
                        row.append(_text("–"))
                        continue
                    r = cells.loc[p]
                    cell = _mean_ci(r.rbo_vs_all, r.rbo_vs_all_ci_low, r.rbo_vs_all_ci_high,
                                    signed=True)
                    p_rest = _num(r.p_vs_rest)
                    row.append(Cell(cell.text, cell.value, significant=p_rest is not None
                                    and p_rest < alpha, p_value=p_rest, low=cell.low,
                                    high=cell.high))
                rows.append(tuple(row))
        tables.append(Table(
            f"who-slices-{_slug(dataset + model)}", f"RBO by slice of users · {model} on "
            f"{dataset}", ("by", "slice", "users", *perts), tuple(rows), n_labels=2,
            caption="First row: all users' RBO under each perturbation. Then each slice's "
                    "RBO minus all users' (0: the slice moves like everyone; below 0: its "
                    "lists move more), with its 95 % interval, each perturbation on its own "
                    "scale. Bold: the slice differs from the other users (Welch on per-query "
                    f"means, Holm over the slices, p < {alpha:g}; the p-value on hover). "
                    "Slices: equal-count bins of the users with a test query, labelled by "
                    "their smallest and largest value. `recaudit slices STORE --by KIND` "
                    "gives every measure and the tests against the floors."))
    return tables


def slice_figure(data: ReportData, frame: pd.DataFrame, dataset: str, model: str
                 ) -> Figure | None:
    """Per perturbation (a row of panels, each on its own scale) and slice kind (a column):
    each slice's RBO minus all users' RBO, error bars the 95 % intervals, a line at 0."""
    g = frame[(frame.dataset == dataset) & (frame.model == model)]
    perts = _shown(data, g, dataset)
    kinds = [k for k in KINDS if k in set(g.by)]
    if g.empty or not perts or not kinds:
        return None
    colors = _colors([p for p in perts if not floor_of(p)])
    colors.update({p: _FLOOR_COLOR for p in perts if floor_of(p)})
    fig, axes = _figure(len(perts), len(kinds), min(12.0, 3.0 * len(kinds) + 0.8),
                        1.9 * len(perts) + 0.6)
    for i, pert in enumerate(perts):
        for j, kind in enumerate(kinds):
            ax = axes[i][j]
            r = g[(g.by == kind) & (g.perturbation == pert)].sort_values("slice_index")
            if r.empty:
                ax.set_visible(False)
                continue
            err = np.vstack([np.nan_to_num(r.rbo_vs_all - r.rbo_vs_all_ci_low),
                             np.nan_to_num(r.rbo_vs_all_ci_high - r.rbo_vs_all)])
            ax.axhline(0.0, color="#6b7280", linewidth=0.8)
            ax.errorbar(r.slice_index, r.rbo_vs_all, yerr=err, color=colors[pert], marker="o",
                        markersize=3.5, linestyle="none", elinewidth=1.0, capsize=2)
            ax.set_xticks(r.slice_index, [_wrap(x, 12) for x in r.slice] if i == len(perts) - 1
                          else [""] * len(r), fontsize=7)
            ax.tick_params(axis="y", labelsize=7)
            if i == 0:
                ax.set_title(f"by {kind}", fontsize=9)
            if i == len(perts) - 1:
                ax.set_xlabel(_wrap(KINDS[kind], 30), fontsize=8)
            if j == 0:
                ax.set_ylabel(_wrap(f"Δ RBO, {pert}", 18), fontsize=8)
    _legend(fig, perts, colors, kind="line")
    return fig


def exposure_table(data: ReportData) -> Table | None:
    """Per perturbation: the share of lists that changed, the popularity of the items that
    entered and left, and the change in the Gini coefficient of top-k appearances."""
    from recaudit.audit import exposure

    result = exposure(data.source).summary
    rows = []
    for r in result.itertuples():
        if floor_of(r.perturbation) == "rerun":
            continue
        cells = [_text(r.dataset), _text(r.model), _text(r.perturbation),
                 Cell(_fmt(r.changed, 3), r.changed)]
        for m in ("popularity_entered", "popularity_left", "popularity_shift"):
            mean, low, high = (getattr(r, m), getattr(r, f"{m}_ci_low"),
                               getattr(r, f"{m}_ci_high"))
            v = _num(mean)
            text = "–" if v is None else f"{v:.1f}" if _num(low) is None else \
                f"{v:.1f} {interval_text(f'{low:.1f}', f'{high:.1f}')}"
            cells.append(Cell(text, v, low=_num(low), high=_num(high)))
        cells += [Cell(_fmt(r.gini_base), r.gini_base), Cell(_fmt(r.gini_pert), r.gini_pert),
                  _mean_ci(r.gini_change, r.gini_change_ci_low, r.gini_change_ci_high,
                           signed=True)]
        rows.append(tuple(cells))
    if not rows:
        return None
    cols = ("dataset", "model", "perturbation", "lists changed", "popularity entered",
            "popularity left", "popularity shift", "Gini base", "Gini perturbed", "ΔGini")
    return Table("who-exposure", "Item exposure", cols, tuple(rows), n_labels=3,
                 caption="Lists changed: share of top-k lists whose items changed. Popularity: "
                         "mean training interactions of the items that entered (left) a "
                         "user's top-k, per list; shift > 0: the perturbation pushes lists "
                         "toward popular items. Gini of top-k appearances over the catalogue; "
                         "[ ] = 95 % intervals over seeds (and lists).")


def _list_text(items: tuple, marked: tuple, sign: str) -> str:
    moved = set(marked)
    return ", ".join(f"{sign}{i}" if i in moved else str(i) for i in items)


def changed_users_tables(data: ReportData) -> list[Table]:
    """Per (dataset, model), the lists of the :data:`SHOWN_USERS` users whose lists moved
    most under its most destabilising perturbation (the lowest mean RBO, floors aside): each
    user's list that moved most, before and after (the lists wrap: every column shows)."""
    from recaudit.audit import changes, most_changed

    tables = []
    agg = data.agg
    for dataset in data.datasets:
        for model in data.models(dataset):
            a = agg[(agg.dataset == dataset) & (agg.model_label == model)
                    & agg.perturbation.map(lambda p: floor_of(p) is None)]
            if a.empty:
                continue
            pert = str(a.sort_values("rbo").perturbation.iloc[0])
            top = most_changed(data.source, SHOWN_USERS, perturbation=pert, by=())
            top = top[(top.dataset == dataset) & (top.model == model)]
            rows = []
            for r in top.itertuples():
                found = changes(data.source, r.user, perturbation=pert, seed=int(r.seed),
                                draw=int(r.draw), model=model, dataset=dataset)
                c = next(x for x in found if x.query == r.query)
                rows.append((_text(c.user), Cell(str(c.seed)), Cell(_fmt(c.rbo), c.rbo),
                             _text(_list_text(c.baseline, c.left, "−")),
                             _text(_list_text(c.perturbed, c.entered, "+"))))
            if rows:
                tables.append(Table(
                    f"who-users-{_slug(dataset + model)}", f"The {len(rows)} users whose "
                    f"lists moved most under {pert} · {model} on {dataset}",
                    ("user", "seed", "RBO", "baseline top-k", "perturbed top-k"),
                    tuple(rows), n_labels=1,
                    caption="The users with the lowest mean RBO over their test queries and "
                            "seeds, and their list that moved most (ids as in the data; + "
                            "entered, − left). `recaudit changes STORE --user ID` shows the "
                            "edit behind it."))
    return tables


def section(data: ReportData, fig: Any) -> Section | None:
    """The section, or ``None`` when the store holds no top-k lists."""
    if not _has_lists(data):
        return None
    frame, missing = _slices(data)
    who = Section("who", "Who is affected",
                  "Whose lists move, and which items win or lose exposure: stability by "
                  "slice of users (Oh et al. 2022 split users by accuracy, Figures 6-7), the "
                  "popularity and concentration of the items that entered and left the "
                  "lists, and the lists of the users whose lists moved most.")
    who.tables += slice_tables(data, frame)
    for (dataset, model), _ in frame.groupby(["dataset", "model"], sort=False):
        who.figures += fig(f"who-{_slug(dataset + model)}", f"RBO by slice of users: {model} "
                           f"on {dataset}",
                           lambda d=dataset, m=model: slice_figure(data, frame, d, m),
                           "Each slice's RBO minus all users' RBO under the perturbation "
                           "(a row of panels each, on its own scale); bars: 95 % intervals; "
                           "grey: the seed-only floor.")
    if missing:
        who.intro += (" The audit's data could not be read again, so only the slices by "
                      f"accuracy are shown ({missing}).")
        warnings.warn(f"{data.path}: the report's 'Who is affected' section shows the slices "
                      f"by accuracy only: {missing}", RecauditWarning, stacklevel=2)
    else:
        table = exposure_table(data)
        who.tables += [table] if table is not None else []
        who.tables += changed_users_tables(data)
    return who
