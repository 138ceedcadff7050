"""The property study's tables (Shriver 2018 Chapter 3): Table 3.4 (properties next to
precision and recall) and Table 3.6 (their change as the data evolves), from a store's
``property_values`` (or the ``meta`` entries of stores written before the property study was a
study of its own)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pandas as pd

from recaudit.report._data import ReportData
from recaudit.report._document import Cell, Section, Table, _num, _text

ROBUST_PERCENT = 5.0
#: Shriver 2018 reports TopOut instability in Tables 4.6-4.9.

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


def _legend(labels) -> str:
    """The acronyms among ``labels`` spelled out (the templates' titles)."""
    from recaudit.properties import TEMPLATES

    names = list(dict.fromkeys(str(lab).split(" (", 1)[0] for lab in labels))
    spelled = [f"{n} = {TEMPLATES[n].title}" for n in names if n in TEMPLATES]
    return (" Legend: " + "; ".join(spelled) + ".") if spelled else ""


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
                         f"user's ratings). Seed {entry.get('seed')}." + _legend(labels))


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
                         "property); 0 % = invariant; ∞ = the property left 0."
                         + _legend(labels))]
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


def sections(data: ReportData, fig: Any) -> list[Section]:
    """The property-template section, where the store holds a property study."""
    sections: list[Section] = []
    props = Section("properties", "Property templates",
                    "Recommenders characterised beyond accuracy by instantiated property "
                    "templates (Shriver 2018 Chapter 3).")
    table = property_table(data)
    props.tables += [table] if table else []
    props.tables += evolving_tables(data)
    if props.tables:
        sections.append(props)

    return sections
