"""Assemble a report: sections of tables and figures, each only where the store has data."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recaudit.report import _figures as F
from recaudit.report import _setup as S
from recaudit.report import _tables as T
from recaudit.report._data import ReportData, load

__all__ = ["Report", "Section", "FigureItem", "build_report"]


@dataclass
class FigureItem:
    """A rendered figure: an inline ``<svg>`` element, its title and caption."""

    key: str
    title: str
    svg: str
    caption: str = ""


@dataclass
class Section:
    key: str
    title: str
    intro: str = ""
    tables: list[T.Table] = field(default_factory=list)
    figures: list[FigureItem] = field(default_factory=list)


@dataclass
class Report:
    """Everything a renderer needs: ``title``, ``facts`` (headline key/values) and
    ``sections``; ``tables`` lists every table in section order."""

    title: str
    facts: list[tuple[str, str]]
    sections: list[Section]
    data: ReportData

    @property
    def tables(self) -> list[T.Table]:
        return [t for s in self.sections for t in s.tables]


def build_report(store: str | Path | ReportData, *, figures: bool = True) -> Report:
    """Read ``store`` and build every section it has data for (``figures=False`` skips the
    matplotlib figures: tables only, for the markdown / LaTeX / CSV renderers)."""
    data = store if isinstance(store, ReportData) else load(store)
    sections: list[Section] = []

    def fig(key: str, title: str, make: Any, caption: str = "") -> list[FigureItem]:
        if not figures:
            return []
        with F.style():
            f = make()
            return [] if f is None else [FigureItem(key, title, F.to_svg(f, key), caption)]

    rls = Section("rls", "Rank-list sensitivity",
                  "Similarity of the rank lists of the model trained with and without each "
                  "perturbation (seed 000 Table 3 and Figure 3(a)). 1 = identical lists.",
                  tables=T.rls_tables(data))
    table = T.method_test_table(data)
    rls.tables += [table] if table else []
    for d in data.datasets:
        rls.figures += fig(f"dist-{T._slug(d)}", f"Per-query RLS distributions on {d}",
                           lambda d=d: F.rls_distribution_figure(data, d),
                           "Boxes: quartiles over all test queries and seeds; whiskers: 1.5 IQR; "
                           "◆: mean.")
    sections.append(rls)

    acc = Section("accuracy", "Next-item accuracy with and without perturbation",
                  "Dataset-level accuracy barely moves while the lists change (seed 000 "
                  "Figure 3(b)).")
    table = T.accuracy_table(data)
    acc.tables += [table] if table else []
    for d in data.datasets:
        acc.figures += fig(f"acc-{T._slug(d)}", f"Accuracy on {d}",
                           lambda d=d: F.accuracy_figure(data, d),
                           "Bars: mean over seeds; error bars: std over seeds.")
    if acc.tables:
        sections.append(acc)

    groups = Section("groups", "User groups by baseline MRR",
                     "Stability for the users the unperturbed model serves best (high), "
                     "typically (mid) and worst (low) (seed 000 Figures 6 and 7).")
    table = T.user_group_table(data)
    if table is not None:
        groups.tables.append(table)
        for d in data.datasets:
            for m in data.models(d):
                groups.figures += fig(f"grp-{T._slug(d + m)}", f"User groups: {m} on {d}",
                                      lambda d=d, m=m: F.user_group_figure(data, d, m))
        sections.append(groups)

    counts = Section("counts", "Number of perturbations",
                     "RLS as more interactions are perturbed (seed 000 Figure 8(a)).")
    table = T.count_table(data)
    counts.tables += [table] if table else []
    for d in data.datasets:
        counts.figures += fig(f"cnt-{T._slug(d)}", f"RLS vs number of perturbations on {d}",
                              lambda d=d: F.count_figure(data, d),
                              "Mean ± std over seeds.")
    runtime = fig("runtime", "CASPER runtime vs data size", lambda: F.runtime_figure(data),
                  "Log-log; dotted: linear scaling (seed 000 Figure 8(b)).")
    counts.figures += runtime
    if counts.figures or counts.tables:
        sections.append(counts)

    pos = Section("position", "Position removal",
                  "n items removed at the beginning, middle or end of every user's training "
                  "sequence (seed 003 Table 3 and Figures 1-3).")
    table = T.position_table(data)
    if table is not None:
        pos.tables.append(table)
        for d in data.datasets:
            for m in data.models(d):
                pos.figures += fig(f"pos-{T._slug(d + m)}", f"Position removal: {m} on {d}",
                                   lambda d=d, m=m: F.position_figure(data, d, m),
                                   "Dashed: mean over seeds vs n; solid: baseline.")
        sections.append(pos)

    setup = Section("setup", "Audit setup", "Configuration, data, versions and timings.")
    for make in (S.config_table, S.data_table, S.version_table, S.timing_table):
        t = make(data)
        if t is not None:
            setup.tables.append(t)
    sections.append(setup)
    return Report(_title(data), _facts(data), sections, data)


def _title(data: ReportData) -> str:
    name = data.config.get("name")
    return f"Stability audit: {name}" if name else f"Stability audit: {data.path.name}"


def _facts(data: ReportData) -> list[tuple[str, str]]:
    t = data.trials
    facts = [("store", str(data.path)), ("trials", f"{len(t)}"),
             ("datasets", ", ".join(data.datasets)), ("models", ", ".join(data.models())),
             ("perturbations", ", ".join(data.perturbations())),
             ("seeds", ", ".join(str(s) for s in sorted(set(data.summary.seed))))]
    metrics = data.config.get("metrics")
    if isinstance(metrics, dict):
        facts.append(("metrics", ", ".join(f"{k}={v}" for k, v in metrics.items())))
    if "started" in t and t.started.notna().any():
        start, end = t.started.min(), t.finished.max()
        facts.append(("ran", f"{_when(start)} → {_when(end)} UTC"))
        facts.append(("trial time", f"{t.total_seconds.sum():.1f} s in total"))
    return facts


def _when(ts: float) -> str:
    return _dt.datetime.fromtimestamp(float(ts), _dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
