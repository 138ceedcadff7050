"""The audit's setup as tables: configuration, data summary, versions and timings."""

from __future__ import annotations

import json
from typing import Any

from recaudit.report._data import ReportData
from recaudit.report._document import Cell, Table, _flatten, _fmt, _num, _text

__all__ = ["config_table", "data_table", "version_table", "timing_table"]


def timing_table(data: ReportData) -> Table:
    """Mean seconds per trial by (model, perturbation), and trial counts."""
    t = data.trials
    cols = [c for c in ("fit_seconds", "rank_seconds", "perturb_seconds", "total_seconds")
            if c in t]
    rows = []
    order = {p: i for i, p in enumerate(data.perturbations())}
    t = t.assign(_o=t.perturbation.map(order)).sort_values(["model_label", "_o"], kind="stable")
    for (model, pert), g in t.groupby(["model_label", "perturbation"], sort=False):
        cells = [_text(model), _text(pert), Cell(str(len(g)), float(len(g)))]
        for c in cols:
            v = _num(g[c].mean())
            cells.append(Cell(_fmt(v, 2), v))
        rows.append(tuple(cells))
    names = {"fit_seconds": "fit s", "rank_seconds": "rank s", "perturb_seconds": "perturb s",
             "total_seconds": "total s"}
    return Table("timings", "Timings (mean per trial)",
                 ("model", "perturbation", "trials", *(names[c] for c in cols)), tuple(rows),
                 n_labels=2, caption="Fit and rank times include the baseline model when this "
                 "trial trained it (baselines are cached and shared).")


def data_table(data: ReportData) -> Table | None:
    """The data summary of every dataset (store meta ``data``): one row per fact, one column
    per dataset, so that the dozen facts of a summary make the table long, not too wide for
    the page."""
    info = data.meta.get("data")
    if not isinstance(info, dict) or not info:
        return None
    sets = {name: v for name, v in info.items() if isinstance(v, dict)}
    keys = list(dict.fromkeys(k for v in sets.values() for k in v))
    rows = [tuple([_text(k)] + [_value_cell(v.get(k)) for v in sets.values()]) for k in keys]
    return Table("data", "Data", ("", *sets), tuple(rows))


def _value_cell(v: Any) -> Cell:
    if isinstance(v, bool) or v is None:
        return _text("" if v is None else v)
    if isinstance(v, int):
        return Cell(f"{v:,}", float(v))
    if isinstance(v, float):
        return Cell(f"{v:.4g}", v)
    return _text(v if isinstance(v, str) else json.dumps(v, sort_keys=True))


def version_table(data: ReportData) -> Table | None:
    """Library versions and hosts recorded with the trials (several values if they differ)."""
    t = data.trials
    if "versions" not in t or t.versions.isna().all():
        return None
    seen: dict[str, list[str]] = {}
    for v in t.versions.dropna():
        for lib, ver in (v.items() if isinstance(v, dict) else ()):
            seen.setdefault(lib, [])
            if str(ver) not in seen[lib]:
                seen[lib].append(str(ver))
    if "host" in t:
        seen["host"] = [str(h) for h in dict.fromkeys(t.host.dropna())]
    rows = tuple((_text(lib), _text(", ".join(vers))) for lib, vers in seen.items())
    return Table("versions", "Versions", ("component", "version"), rows, n_labels=2) \
        if rows else None


def config_table(data: ReportData) -> Table | None:
    """The audit configuration, flattened to dotted keys (store meta ``config``)."""
    if not data.config:
        return None
    rows = tuple((_text(k), _text("null (the full ranking)" if k == "metrics.depth"
                                   and v == "null" else v)) for k, v in _flatten(data.config))
    return Table("config", "Configuration", ("key", "value"), rows, n_labels=2)
