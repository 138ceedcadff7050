"""The stability audit's sections (Oh et al. 2022, Betello et al. 2023): rank-list sensitivity,
accuracy, user groups, who is affected, stability across retrains, number of perturbations,
position removal, stabilisation; its facts and setup tables."""

from __future__ import annotations

import datetime as _dt
from typing import Any

from recaudit.report._audit import _figures as F
from recaudit.report._audit import _models as M
from recaudit.report._audit import _retrain as R
from recaudit.report._audit import _setup as S
from recaudit.report._audit import _stabilise as ST
from recaudit.report._audit import _tables as T
from recaudit.report._audit import _variance as V
from recaudit.report._audit import _who as W
from recaudit.report._data import ReportData
from recaudit.report._document import Section, Table, _slug

__all__ = ["sections", "facts", "setup_tables"]


def _reading(data: ReportData) -> list[str]:
    """The plain-language reading ``recaudit audit`` prints (:func:`recaudit.audit.reading`)."""
    from recaudit.audit import most_destabilising, reading

    if data.agg is None or not len(data.agg):
        return []
    return reading(data.agg.rename(columns={"model_label": "model"}),
                   most_destabilising(data.source))


def sections(data: ReportData, fig: Any) -> list[Section]:
    """The stability audit's sections (Oh et al. 2022, Betello et al. 2023)."""
    sections: list[Section] = []
    rls = Section("rls", "Rank-list sensitivity",
                  "Similarity of the rank lists of the model trained with and without each "
                  "perturbation (Oh et al. 2022 Table 3 and Figure 3(a)). 1 = identical lists.",
                  tables=T.rls_tables(data))
    table = T.method_test_table(data)
    rls.tables += [table] if table else []
    for table in (M.model_table(data), V.rounds_table(data), V.variance_table(data)):
        rls.tables += [table] if table else []
    rls.reading = _reading(data) + M.model_lines(data)
    for d in data.datasets:
        rls.figures += fig(f"dist-{_slug(d)}", f"Per-query RLS distributions on {d}",
                           lambda d=d: F.rls_distribution_figure(data, d),
                           "Boxes: quartiles over all test queries and seeds; whiskers: 1.5 IQR; "
                           "◆: mean.")
    sections.append(rls)

    acc = Section("accuracy", "Next-item accuracy with and without perturbation",
                  "Dataset-level accuracy barely moves while the lists change (Oh et al. 2022 "
                  "Figure 3(b)).")
    table = T.accuracy_table(data)
    acc.tables += [table] if table else []
    for d in data.datasets:
        acc.figures += fig(f"acc-{_slug(d)}", f"Accuracy on {d}",
                           lambda d=d: F.accuracy_figure(data, d),
                           "Bars: means; error bars: 95 % intervals over seeds and test "
                           "queries.")
    if acc.tables:
        sections.append(acc)

    groups = Section("groups", "User groups by baseline MRR",
                     "Stability for the users the unperturbed model serves best (high), "
                     "typically (mid) and worst (low) (Oh et al. 2022 Figures 6 and 7).")
    table = T.user_group_table(data)
    if table is not None:
        groups.tables.append(table)
        for d in data.datasets:
            for m in data.models(d):
                groups.figures += fig(f"grp-{_slug(d + m)}", f"User groups: {m} on {d}",
                                      lambda d=d, m=m: F.user_group_figure(data, d, m))
        sections.append(groups)
    who = W.section(data, fig)
    if who is not None:
        sections.append(who)
    retrain = R.section(data, fig)
    if retrain is not None:
        sections.append(retrain)

    counts = Section("counts", "Number of perturbations",
                     "RLS as more interactions are perturbed (Oh et al. 2022 Figure 8(a)).")
    table = T.count_table(data)
    counts.tables += [table] if table else []
    for d in data.datasets:
        counts.figures += fig(f"cnt-{_slug(d)}", f"RLS vs number of perturbations on {d}",
                              lambda d=d: F.count_figure(data, d),
                              "Means with 95 % intervals over seeds and test queries.")
    runtime = fig("runtime", "CASPER runtime vs data size", lambda: F.runtime_figure(data),
                  "Log-log; dotted: linear scaling (Oh et al. 2022 Figure 8(b)).")
    counts.figures += runtime
    if counts.figures or counts.tables:
        sections.append(counts)

    pos = Section("position", "Position removal",
                  "n items removed at the beginning, middle or end of every user's training "
                  "sequence (Betello et al. 2023 Table 3 and Figures 1-3).")
    table = T.position_table(data)
    if table is not None:
        pos.tables.append(table)
        for d in data.datasets:
            for m in data.models(d):
                pos.figures += fig(f"pos-{_slug(d + m)}", f"Position removal: {m} on {d}",
                                   lambda d=d, m=m: F.position_figure(data, d, m),
                                   "Dashed: mean over seeds vs n; solid: baseline.")
        sections.append(pos)

    tables = ST.stabilisation_tables(data)
    if tables:
        sections.append(Section("stabilisation", "Stabilisation", ST.INTRO, tables=tables))
    return sections


def facts(data: ReportData) -> list[tuple[str, str]]:
    t = data.trials
    facts = [("trials", f"{len(t)}"),
             ("datasets", ", ".join(data.datasets)), ("models", ", ".join(data.models())),
             ("perturbations", ", ".join(data.perturbations())),
             ("seeds", ", ".join(str(s) for s in sorted(set(data.summary.seed))))]
    metrics = data.config.get("metrics")
    if isinstance(metrics, dict):
        facts.append(("metrics", _metrics(metrics)))
    if "started" in t and t.started.notna().any():
        start, end = t.started.min(), t.finished.max()
        facts.append(("ran", f"{_when(start)} → {_when(end)} UTC"))
        facts.append(("trial time", f"{t.total_seconds.sum():.1f} s in total"))
    return facts


def setup_tables(data: ReportData) -> list[Table]:
    """The audit's configuration, data, versions and timings."""
    out = [t for t in (S.config_table(data), S.data_table(data), S.version_table(data))
           if t is not None]
    return out + ([S.timing_table(data)] if data.has_audit else [])


def _metrics(metrics: dict[str, Any]) -> str:
    """The similarity settings in words: ``k = 10 (FRBO@k, Jaccard@k, accuracy@k), RBO
    persistence p = 0.9, rank lists compared over the full ranking`` (``depth`` None: the
    whole catalogue)."""
    depth = metrics.get("depth")
    parts = [f"k = {metrics['k']} (FRBO@k, Jaccard@k, accuracy@k)"] if "k" in metrics else []
    if "p" in metrics:
        parts.append(f"RBO persistence p = {metrics['p']}")
    parts.append("rank lists compared over the full ranking" if depth is None
                 else f"rank lists compared to depth {depth}")
    parts += [f"{k} = {v}" for k, v in metrics.items() if k not in ("k", "p", "depth")]
    return ", ".join(parts)


def _when(ts: float) -> str:
    return _dt.datetime.fromtimestamp(float(ts), _dt.UTC).strftime("%Y-%m-%d %H:%M:%S")
