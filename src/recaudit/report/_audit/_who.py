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
from recaudit.report._document import Cell, Section, Table, _fmt, _mean_ci, _num, _slug, _text
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


def slice_table(data: ReportData, frame: pd.DataFrame) -> Table | None:
    """RBO and Jaccard@k per slice of users, with intervals and tests."""
    floors = [c for c in frame.columns if c.startswith("p_vs_") and c != "p_vs_rest"
              and frame[c].notna().any()]
    rows = []
    for (dataset, model), g in frame.groupby(["dataset", "model"], sort=False):
        for by in g.by.unique():
            for pert in _shown(data, g, dataset):
                for r in g[(g.by == by) & (g.perturbation == pert)].itertuples():
                    cells = [_text(dataset), _text(model), _text(by), _text(pert),
                             _text(r.slice), Cell(str(r.users), float(r.users)),
                             _mean_ci(r.rbo, r.rbo_ci_low, r.rbo_ci_high),
                             _mean_ci(r.jaccard, r.jaccard_ci_low, r.jaccard_ci_high)]
                    for c in (*floors, "p_vs_rest"):
                        p = _num(getattr(r, c))
                        cells.append(Cell("–" if p is None else f"{p:.3g}", p))
                    rows.append(tuple(cells))
    if not rows:
        return None
    cols = ("dataset", "model", "by", "perturbation", "slice", "users", "RBO",
            f"Jaccard{data.k_label}", *(f"p vs {c[5:].replace('_', '-')}" for c in floors),
            "p vs rest")
    return Table("who-slices", "Stability by slice of users", cols, tuple(rows), n_labels=5,
                 caption="Equal-count bins of the users with a test query, labelled by the "
                         "smallest and largest value in them; mean ± half-width of the 95 % "
                         "interval over seeds and the slice's queries. p vs floor: paired "
                         "test on the slice's queries (Holm over every perturbation and "
                         "slice); p vs rest: the slice against the other users' queries "
                         "(Welch on per-query means, Holm over the slices).")


def slice_figure(data: ReportData, frame: pd.DataFrame, dataset: str, model: str
                 ) -> Figure | None:
    """RBO per slice, one panel per kind, one series per perturbation (the seed-only floor
    in grey), error bars the 95 % intervals."""
    g = frame[(frame.dataset == dataset) & (frame.model == model)]
    perts = _shown(data, g, dataset)
    kinds = [k for k in KINDS if k in set(g.by)]
    if g.empty or not perts or not kinds:
        return None
    colors = _colors([p for p in perts if not floor_of(p)])
    colors.update({p: _FLOOR_COLOR for p in perts if floor_of(p)})
    fig, axes = _figure(1, len(kinds), min(12.0, 3.2 * len(kinds) + 0.8), 3.2)
    width = 0.7 / len(perts)
    for ax, kind in zip(axes[0], kinds, strict=True):
        part = g[g.by == kind]
        labels = part.drop_duplicates("slice_index").sort_values("slice_index")
        for j, pert in enumerate(perts):
            r = part[part.perturbation == pert].sort_values("slice_index")
            if r.empty:
                continue
            err = np.vstack([np.nan_to_num(r.rbo - r.rbo_ci_low),
                             np.nan_to_num(r.rbo_ci_high - r.rbo)])
            ax.errorbar(r.slice_index + (j - (len(perts) - 1) / 2) * width, r.rbo, yerr=err,
                        color=colors[pert], marker="o", markersize=3.5, linestyle="none",
                        elinewidth=1.0, capsize=2)
        ax.set_xticks(labels.slice_index, [_wrap(s, 12) for s in labels.slice], fontsize=7)
        ax.set_xlabel(_wrap(KINDS[kind], 30))
        ax.set_title(f"RBO by {kind}")
        ax.set_ylim(min(0.0, ax.get_ylim()[0]), 1.02)
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
                f"{v:.1f} [{low:.1f}, {high:.1f}]"
            cells.append(Cell(text, v, low=_num(low), high=_num(high)))
        cells += [Cell(_fmt(r.gini_base), r.gini_base), Cell(_fmt(r.gini_pert), r.gini_pert),
                  _mean_ci(r.gini_change, r.gini_change_ci_low, r.gini_change_ci_high)]
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
                         "[ ] and ± = 95 % intervals over seeds (and lists).")


def _list_text(items: tuple, marked: tuple, sign: str) -> str:
    moved = set(marked)
    return ", ".join(f"{sign}{i}" if i in moved else str(i) for i in items)


def changed_users_table(data: ReportData) -> Table | None:
    """The lists of the :data:`SHOWN_USERS` users whose lists moved most under the most
    destabilising perturbation of each (dataset, model) (the lowest mean RBO, floors
    aside): each user's list that moved most, before and after."""
    from recaudit.audit import changes, most_changed

    rows = []
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
            for r in top.itertuples():
                found = changes(data.source, r.user, perturbation=pert, seed=int(r.seed),
                                draw=int(r.draw), model=model, dataset=dataset)
                c = next(x for x in found if x.query == r.query)
                rows.append((_text(dataset), _text(model), _text(pert), _text(c.user),
                             Cell(str(c.seed)), Cell(_fmt(c.rbo), c.rbo),
                             _text(_list_text(c.baseline, c.left, "−")),
                             _text(_list_text(c.perturbed, c.entered, "+"))))
    if not rows:
        return None
    cols = ("dataset", "model", "perturbation", "user", "seed", "RBO", "baseline top-k",
            "perturbed top-k")
    return Table("who-users", f"The {SHOWN_USERS} users whose lists moved most", cols,
                 tuple(rows), n_labels=4,
                 caption="Per model, under its most destabilising perturbation: the users "
                         "with the lowest mean RBO over their test queries and seeds, and "
                         "their list that moved most (ids as in the data; + entered, − left). "
                         "`recaudit changes STORE --user ID` shows the edit behind it.")


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
    table = slice_table(data, frame)
    who.tables += [table] if table is not None else []
    for (dataset, model), _ in frame.groupby(["dataset", "model"], sort=False):
        who.figures += fig(f"who-{_slug(dataset + model)}", f"RBO by slice of users: {model} "
                           f"on {dataset}",
                           lambda d=dataset, m=model: slice_figure(data, frame, d, m),
                           "Markers: mean RBO per slice; bars: 95 % intervals over seeds and "
                           "the slice's queries; grey: the seed-only floor.")
    if missing:
        who.intro += (" The audit's data could not be read again, so only the slices by "
                      f"accuracy are shown ({missing}).")
        warnings.warn(f"{data.path}: the report's 'Who is affected' section shows the slices "
                      f"by accuracy only: {missing}", RecauditWarning, stacklevel=2)
    else:
        for make in (exposure_table, changed_users_table):
            table = make(data)
            who.tables += [table] if table is not None else []
    return who
