"""Tables of the other studies a results file may hold (plain :class:`Table` data).

- :func:`property_table` — Shriver 2018 Table 3.4: precision, recall and the instantiated property
  values, properties x algorithms (``meta["properties.table"]``);
- :func:`evolving_tables` — Shriver 2018 Table 3.6: the maximum absolute percentage change of each
  property between consecutive steps of the evolving dataset, values under
  :data:`ROBUST_PERCENT` highlighted, and the values per step (``meta["properties.evolving"]``);
- :func:`fuzz_time_table` — Shriver 2018 Table 4.5: time to generate a modification set;
- :func:`fuzz_instability_tables` — Tables 4.6-4.8: mean instability per (model, M) and
  heuristic, **bold** / *italic* = significantly greater / lower than the random baseline of
  the same modification type (Welch, :func:`recaudit.fuzz.significance`), ``*`` = mean >= δ;
- :func:`fuzz_portfolio_table` — Table 4.9: ARAND, the best single add heuristic, APORTFOLIO;
- :func:`mirror_tables` — MIRROR (Zhu et al. 2023): CTR, FCTR, ManiScore, Preference Shift, NDCG and
  AUC per algorithm and mix ratio, mean ± std over seeds.

The fuzzing tables take their layout and numbers from :mod:`recaudit.fuzz` (no second
implementation of the tests); this module only turns them into cells with marks.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd

from recaudit.report._data import ReportData
from recaudit.report._tables import Cell, Table, _mean_std, _num, _slug, _text

__all__ = ["ROBUST_PERCENT", "FUZZ_METRIC", "FUZZ_ALPHA", "property_table", "evolving_tables",
           "fuzz_time_table", "fuzz_instability_tables", "fuzz_portfolio_table",
           "fuzz_significance", "mirror_tables", "MIRROR_METRICS"]

#: Shriver 2018 §3.5.2: a property whose maximum change stays under 5 % is robust.
ROBUST_PERCENT = 5.0
#: Shriver 2018 reports TopOut instability in Tables 4.6-4.9.
FUZZ_METRIC = "topout"
#: Welch's t-test level of Shriver 2018 §4.2.
FUZZ_ALPHA = 0.05
#: MIRROR metrics in table order, with their display names.
MIRROR_METRICS = (("ctr", "CTR"), ("fctr", "FCTR"), ("mani_score", "ManiScore"),
                  ("ps", "PS"), ("ndcg", "NDCG"), ("auc", "AUC"))


# ------------------------------------------------------------------------ property templates
def _category(label: str) -> str:
    if label in ("Precision", "Recall"):
        return "Accuracy"
    from recaudit.properties import TEMPLATES

    t = TEMPLATES.get(label.split(" (", 1)[0])
    return t.category if t is not None else ""


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _row(values: list[Any], template: str = "") -> list[Cell]:
    """The cells of one property row: integers as integers when every number of the row is
    one (counts), otherwise every number with four decimals (averages, precision)."""
    nums = [float(v) for v in values if _is_number(v) and math.isfinite(float(v))]
    ints = all(x.is_integer() and abs(x) < 1e15 for x in nums)
    return [_value(v, template, ints) for v in values]


def _value(v: Any, template: str = "", ints: bool = False) -> Cell:
    """A property value: numbers as numbers, attribute sets as ``{a, b}`` (IANR) and
    attribute orders as ``a, b, c`` (IANRLCMP, most recommended first)."""
    if isinstance(v, bool):
        return _text(v)
    if _is_number(v):
        x = float(v)
        if not math.isfinite(x):
            return Cell("–")
        text = f"{int(x):,}" if ints else (f"{x:.2e}" if 0 < abs(x) < 1e-3 else f"{x:.4f}")
        return Cell(text, x)
    if v is None:
        return Cell("–")
    if isinstance(v, (list, tuple, set, frozenset)):
        items = [str(x) for x in v]
        shown = items[:6] + ([f"… (+{len(items) - 6})"] if len(items) > 6 else [])
        if template == "IANRLCMP":
            return _text(", ".join(shown) if items else "–")
        return _text("{" + ", ".join(shown) + "}" if items else "∅")
    return _text(v)


def property_table(data: ReportData) -> Table | None:
    """Shriver 2018 Table 3.4 from ``meta["properties.table"]``: one row per property (precision
    and recall first), one column per algorithm."""
    entry = data.properties.get("table")
    values = entry.get("values") if entry else None
    if not isinstance(values, dict) or not values:
        return None
    models = list(values)
    labels = list(dict.fromkeys(lab for m in models for lab in values[m]))
    rows = tuple((_text(_category(lab)), _text(lab),
                  *_row([values[m].get(lab) for m in models], lab.split(" (", 1)[0]))
                 for lab in labels)
    assert entry is not None  # values came from it
    k = entry.get("k")
    return Table("properties", f"Precision, recall and property values · {entry.get('dataset')}"
                 + (f" (k = {k})" if k is not None else ""), ("category", "property", *models),
                 rows, n_labels=2,
                 caption="Properties instantiated on each algorithm trained on the whole "
                         "dataset, top-k lists (Shriver 2018 Table 3.4); precision and recall@k by "
                         "cross-validation partitioned on users (80/20 split of each test "
                         f"user's ratings). Seed {entry.get('seed')}.")


def evolving_tables(data: ReportData) -> list[Table]:
    """Shriver 2018 Table 3.6 from ``meta["properties.evolving"]`` and the values per step.

    The stored maximum change is ``None`` where it is not finite; it is recomputed from the
    step values with :func:`recaudit.properties.percent_change` to tell ``∞`` (a property
    leaving 0) from a missing value.
    """
    from recaudit.properties import percent_change

    entry = data.properties.get("evolving")
    if not entry or not isinstance(entry.get("steps"), list) or not entry["steps"]:
        return []
    steps = pd.DataFrame(entry["steps"])
    changes = entry.get("max_abs_percent_change") or {}
    models = list(dict.fromkeys(steps["model"]))
    labels = [c for c in steps.columns if c not in ("model", "fraction")]
    fractions = sorted(set(steps["fraction"]))

    def change(model: str, label: str) -> Cell:
        v = _num(changes.get(model, {}).get(label))
        if v is None:
            vals = steps[steps.model == model].sort_values("fraction")[label]
            vals = pd.to_numeric(vals, errors="coerce").to_numpy(dtype=float)
            pc = percent_change(vals) if len(vals) > 1 else np.array([np.nan])
            return Cell("∞" if np.isinf(pc).any() and not np.isnan(pc).any() else "–")
        robust = v < ROBUST_PERCENT
        return Cell(f"{v:.2f}%", v, mark="highlight" if robust else None)

    summary = tuple((_text(_category(lab)), _text(lab), *(change(m, lab) for m in models))
                    for lab in labels)
    dataset = entry.get("dataset")
    out = [Table("evolving", f"Maximum absolute % change as the dataset evolves · {dataset}",
                 ("category", "property", *models), summary, n_labels=2,
                 caption="Maximum over consecutive steps (earliest "
                         + ", ".join(f"{f:.0%}" for f in fractions)
                         + " of the ratings by time) of 100 |v(t+1) − v(t)| / |v(t)| (Shriver 2018 "
                         f"Table 3.6). Highlighted: under {ROBUST_PERCENT:g} % (a robust "
                         "property); 0 % = invariant; ∞ = the property left 0.")]
    rows = []
    for m in models:
        g = steps[steps.model == m].set_index("fraction")
        for lab in labels:
            rows.append((_text(m), _text(lab),
                         *_row([g[lab].get(f) if f in g.index else None for f in fractions]),
                         change(m, lab)))
    out.append(Table("evolving-steps", f"Property values per step · {dataset}",
                     ("algorithm", "property", *(f"{f:.0%}" for f in fractions), "max Δ%"),
                     tuple(rows), n_labels=2,
                     caption="Values on the earliest share of the ratings (columns); last "
                             "column as in the table above."))
    return out


# ------------------------------------------------------------------------------------ fuzzing
def fuzz_significance(data: ReportData) -> dict[str, pd.DataFrame]:
    """:func:`recaudit.fuzz.significance` per dataset of the fuzzing trials (cached)."""
    from recaudit.fuzz import significance

    if data.fuzz is None or data.fuzz.empty:
        return {}
    if "fuzz_sig" not in data._cache:
        data._cache["fuzz_sig"] = {d: significance(g, metric=FUZZ_METRIC, alpha=FUZZ_ALPHA)
                                   for d, g in data.fuzz.groupby("dataset", sort=False)}
    return data._cache["fuzz_sig"]


def _fuzz_title(base: str, dataset: str, n: int) -> str:
    return base if n == 1 else f"{base} · {dataset}"


def fuzz_time_table(data: ReportData) -> list[Table]:
    """Table 4.5: mean and variance of the seconds to generate one modification set, per
    heuristic (rows, grouped by modification type) and size M (columns)."""
    from recaudit.fuzz import KIND_OF, TABLES, time_table

    if data.fuzz is None or data.fuzz.empty:
        return []
    out = []
    datasets = list(dict.fromkeys(data.fuzz.dataset))
    for dataset, res in data.fuzz.groupby("dataset", sort=False):
        t = time_table(res, kind=None)
        if t.empty:
            continue
        sizes = sorted({s for s, _ in t.columns})
        order = [h for kind in TABLES.values() for h in kind]
        kinds = res.groupby("heuristic")["kind"].first().to_dict()
        ranks = {k: i for i, k in enumerate(("none", "add", "remove", "change"))}
        heur = sorted(t.index, key=lambda h: (ranks.get(str(kinds.get(h) or KIND_OF.get(h)), 9),
                                              order.index(h) if h in order else len(order), h))
        rows = []
        for h in heur:
            cells = [_text(kinds.get(h) or KIND_OF.get(h) or ""), _text(h)]
            for s in sizes:
                for stat in ("mean", "variance"):
                    v = _num(t.loc[h, (s, stat)])
                    cells.append(Cell("–" if v is None else f"{v:.3g}", v))
            rows.append(tuple(cells))
        cols = ("type", "heuristic", *(f"M={s} {x}" for s in sizes for x in ("mean s", "var")))
        out.append(Table(f"fuzz-time-{_slug(dataset)}",
                         _fuzz_title("Time to generate a modification set", dataset,
                                     len(datasets)), cols, tuple(rows), n_labels=2,
                         caption="Seconds per set over all models and sets: mean and variance "
                                 "(Shriver 2018 Table 4.5)."))
    return out


def _fuzz_cell(r: pd.Series | None) -> Cell:
    if r is None:
        return Cell("")
    mean = _num(r["mean"])
    mark = r["mark"] or None
    p = _num(r["p_greater"] if mark == "bold" else r["p_less"] if mark == "italic"
             else min(r["p_greater"], r["p_less"]))
    text = ("*" if r["exceeds"] else "") + ("–" if mean is None else f"{mean:.4f}")
    return Cell(text, mean, None, mark, mark is not None, p)


def _split_config(config: str) -> tuple[str, str]:
    model, size = str(config).rsplit(",", 1)
    return model, size


def fuzz_instability_tables(data: ReportData) -> list[Table]:
    """Tables 4.6 (add), 4.7 (remove), 4.8 (change): rows (model, M), columns heuristics
    (the layout of :func:`recaudit.fuzz.instability_table`), cells the mean instability."""
    from recaudit.fuzz import instability_table

    out = []
    sigs = fuzz_significance(data)
    names = {"add": "4.6", "remove": "4.7", "change": "4.8"}
    for dataset, sig in sigs.items():
        idx = sig.set_index(["model", "size", "heuristic"])
        for kind, num in names.items():
            layout = instability_table(sig, kind, style="plain")
            if layout.empty:
                continue
            rows = []
            for config in layout.index:
                model, size = _split_config(config)
                cells = [_text(model), Cell(size, float(size))]
                for h in layout.columns:
                    key = (model, int(size), h)
                    cells.append(_fuzz_cell(idx.loc[key] if key in idx.index else None))
                rows.append(tuple(cells))
            out.append(Table(
                f"fuzz-{kind}-{_slug(dataset)}",
                _fuzz_title(f"Mean {FUZZ_METRIC} instability, {kind} modifications", dataset,
                            len(sigs)),
                ("model", "M", *layout.columns), tuple(rows), n_labels=1,
                caption=f"Mean over the modification sets (Shriver 2018 Table {num}). Bold: greater "
                        f"than the random baseline of the same type, italic: lower (Welch's "
                        f"t-test, p < {FUZZ_ALPHA:g}); * = mean ≥ δ = 100 M / |D|."))
    return out


def fuzz_portfolio_table(data: ReportData) -> list[Table]:
    """Table 4.9: ARAND, the best single add heuristic (named) and APORTFOLIO per (model,
    M), from :func:`recaudit.fuzz.portfolio_table`."""
    from recaudit.fuzz import portfolio_table

    out = []
    sigs = fuzz_significance(data)
    for dataset, sig in sigs.items():
        layout = portfolio_table(sig, style="plain")
        if layout.empty:
            continue
        idx = sig.set_index(["model", "size", "heuristic"])
        rows = []
        for config, r in layout.iterrows():
            model, size = _split_config(config)
            best = re.search(r"\((\w+)\)$", str(r["Best Heuristic"]))

            def cell(h: str | None) -> Cell:
                key = (model, int(size), h)
                return _fuzz_cell(idx.loc[key] if h and key in idx.index else None)

            name = best.group(1) if best else None
            top = cell(name)
            rows.append((_text(model), Cell(size, float(size)), cell("ARAND"),
                         replace(top, text=f"{top.text} ({name})") if name else Cell(""),
                         cell("APORTFOLIO")))
        out.append(Table(
            f"fuzz-portfolio-{_slug(dataset)}",
            _fuzz_title(f"APORTFOLIO: mean {FUZZ_METRIC} instability", dataset, len(sigs)),
            ("model", "M", "ARAND", "best heuristic", "APORTFOLIO"), tuple(rows),
            caption="Round-robin portfolio of add heuristics against the random baseline and "
                    "the best single add heuristic of the row (Shriver 2018 Table 4.9); marks as "
                    "above."))
    return out


# ------------------------------------------------------------------------------------- MIRROR
def mirror_summary(data: ReportData) -> pd.DataFrame:
    """:func:`recaudit.simulate.summarise` of the stored MIRROR rows (mean, std, count over
    seeds per scenario, algorithm, mix, round and metric)."""
    if data.mirror is None or data.mirror.empty:
        return pd.DataFrame()
    if "mirror" not in data._cache:
        from recaudit.simulate import summarise

        rows = data.mirror.astype({"round": "float64"}).to_dict(orient="records")
        for r in rows:
            for key in ("mix", "round"):
                if r[key] is not None and isinstance(r[key], float) and math.isnan(r[key]):
                    r[key] = None
        data._cache["mirror"] = summarise(rows)
    return data._cache["mirror"]


def mirror_tables(data: ReportData) -> list[Table]:
    """One table per scenario: oracles (the initial strategies) first, then every algorithm
    by mix ratio α; metrics over the whole evaluation (not per round), mean ± std over seeds."""
    s = mirror_summary(data)
    if s.empty:
        return []
    s = s[s["round"].isna()]
    out = []
    for scenario, g in s.groupby("scenario", sort=False):
        metrics = [(m, n) for m, n in MIRROR_METRICS if m in set(g.metric)]
        keys = g[["algorithm", "mix"]].drop_duplicates()
        algos = list(dict.fromkeys(keys.algorithm))
        keys = keys.assign(_o=keys.mix.notna(), _a=keys.algorithm.map(algos.index)) \
            .sort_values(["_o", "_a", "mix"], kind="stable")  # oracles first
        rows = []
        for _, key in keys.iterrows():
            same = g.mix.isna() if pd.isna(key.mix) else g.mix == key.mix
            sub = g[(g.algorithm == key.algorithm) & same].set_index("metric")
            cells = [_text(key.algorithm),
                     Cell("oracle") if pd.isna(key.mix) else Cell(f"{key.mix:g}", key.mix)]
            for m, _ in metrics:
                cells.append(_mean_std(sub["mean"].get(m), sub["std"].get(m))
                             if m in sub.index else Cell("–"))
            rows.append(tuple(cells))
        seeds = sorted(set(g["count"].astype(int)))
        out.append(Table(
            f"mirror-{_slug(scenario)}", f"MIRROR · {scenario}",
            ("algorithm", "mix α", *(n for _, n in metrics)), tuple(rows), n_labels=1,
            caption=f"Mean ± std over {'/'.join(map(str, seeds))} "
                    f"seed{'' if seeds == [1] else 's'}. "
                    "α = share of training data "
                    "collected by the manipulative oracle; oracles are the initial strategies. "
                    "CTR: click-through rate; FCTR: share of the chosen documents that are favourites; ManiScore "
                    "in [1, e²], 1 = unbiased; PS: Preference Shift = 1 − RBO of the initial "
                    "and final preference lists (Zhu et al. 2023 Defs. 4.1-4.6)."))
    return out
