"""Assemble a report: sections of tables and figures, each only where the store has data."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recaudit.report import _figures as F
from recaudit.report import _setup as S
from recaudit.report import _stabilise as ST
from recaudit.report import _studies as R
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
    matplotlib figures: tables only, for the markdown / LaTeX / CSV renderers).

    Sections, each only where the file has its data: the stability audit (RLS, accuracy,
    user groups, counts, position removal, stabilisation), property templates, fuzzing,
    MIRROR, setup."""
    data = store if isinstance(store, ReportData) else load(store)

    def fig(key: str, title: str, make: Any, caption: str = "") -> list[FigureItem]:
        if not figures:
            return []
        with F.style():
            f = make()
            return [] if f is None else [FigureItem(key, title, F.to_svg(f, key), caption)]

    sections = _audit_sections(data, fig) if data.has_audit else []
    sections += _study_sections(data, fig)
    setup = Section("setup", "Setup", "Configuration, data, versions and timings.")
    for make in (S.config_table, S.data_table, S.version_table, S.fuzz_setup_table):
        t = make(data)
        if t is not None:
            setup.tables.append(t)
    if data.has_audit:
        setup.tables.append(S.timing_table(data))
    if setup.tables:
        sections.append(setup)
    return Report(_title(data), _facts(data), sections, data)


def _audit_sections(data: ReportData, fig: Any) -> list[Section]:
    """The stability audit's sections (Oh et al. 2022, Betello et al. 2023)."""
    sections: list[Section] = []
    rls = Section("rls", "Rank-list sensitivity",
                  "Similarity of the rank lists of the model trained with and without each "
                  "perturbation (Oh et al. 2022 Table 3 and Figure 3(a)). 1 = identical lists.",
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
                  "Dataset-level accuracy barely moves while the lists change (Oh et al. 2022 "
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
                     "typically (mid) and worst (low) (Oh et al. 2022 Figures 6 and 7).")
    table = T.user_group_table(data)
    if table is not None:
        groups.tables.append(table)
        for d in data.datasets:
            for m in data.models(d):
                groups.figures += fig(f"grp-{T._slug(d + m)}", f"User groups: {m} on {d}",
                                      lambda d=d, m=m: F.user_group_figure(data, d, m))
        sections.append(groups)

    counts = Section("counts", "Number of perturbations",
                     "RLS as more interactions are perturbed (Oh et al. 2022 Figure 8(a)).")
    table = T.count_table(data)
    counts.tables += [table] if table else []
    for d in data.datasets:
        counts.figures += fig(f"cnt-{T._slug(d)}", f"RLS vs number of perturbations on {d}",
                              lambda d=d: F.count_figure(data, d),
                              "Mean ± std over seeds.")
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
                pos.figures += fig(f"pos-{T._slug(d + m)}", f"Position removal: {m} on {d}",
                                   lambda d=d, m=m: F.position_figure(data, d, m),
                                   "Dashed: mean over seeds vs n; solid: baseline.")
        sections.append(pos)

    tables = ST.stabilisation_tables(data)
    if tables:
        sections.append(Section("stabilisation", "Stabilisation", ST.INTRO, tables=tables))
    return sections


def _study_sections(data: ReportData, fig: Any) -> list[Section]:
    """Property templates, fuzzing and MIRROR (seeds 004 and 002), where present."""
    sections = []
    props = Section("properties", "Property templates",
                    "Recommenders characterised beyond accuracy by instantiated property "
                    "templates (Shriver 2018 Chapter 3).")
    table = R.property_table(data)
    props.tables += [table] if table else []
    props.tables += R.evolving_tables(data)
    if props.tables:
        sections.append(props)

    fuzz = Section("fuzz", "Fuzzing: stability under training-data modifications",
                   "Modification sets of size M generated by influence-guided heuristics and "
                   "random baselines; each model is retrained and its top-k lists compared "
                   f"with the original ones ({R.FUZZ_METRIC}; Shriver 2018 Chapter 4).")
    fuzz.tables += R.fuzz_time_table(data) + R.fuzz_instability_tables(data) \
        + R.fuzz_portfolio_table(data)
    if fuzz.tables:
        sections.append(fuzz)

    mirror = Section("mirror", "MIRROR: manipulation benchmark",
                     "Do online gains come from understanding users or from exploiting their "
                     "bounded rationality? Algorithms trained on data mixed from an unbiased and "
                     "a manipulative strategy at ratio α (Zhu et al. 2023 §4-5).")
    mirror.tables += R.mirror_tables(data)
    if mirror.tables:
        from recaudit.report import _mirror_figures as MF

        summary = R.mirror_summary(data)
        for scenario in dict.fromkeys(summary["scenario"]):
            slug = T._slug(scenario)
            mirror.figures += fig(f"mix-{slug}", f"Online metrics vs mix ratio · {scenario}",
                                  lambda s=scenario: MF.mirror_mix_figure(summary, s),
                                  "Mean ± std over seeds; dashed: the initial strategies "
                                  "(Zhu et al. 2023 Figure 7).")
            mirror.figures += fig(f"traj-{slug}", f"CTR vs FCTR over mix ratios · {scenario}",
                                  lambda s=scenario: MF.mirror_trajectory_figure(summary, s),
                                  "Means over seeds, labelled by α; arrows point from low to "
                                  "high α; ★: initial strategies (Zhu et al. 2023 Figure 8).")
            mirror.figures += fig(f"rounds-{slug}", f"CTR and PS per round · {scenario}",
                                  lambda s=scenario: MF.mirror_rounds_figure(summary, s),
                                  "Means over seeds; dashed: oracles; dotted / solid: each "
                                  "algorithm trained at the smallest / largest α (Zhu et al. 2023 "
                                  "Figure 10).")
        sections.append(mirror)
    return sections


def _title(data: ReportData) -> str:
    name = data.config.get("name") if data.has_audit else None
    if data.has_audit:
        kind = "Stability audit" if len(data.kinds) == 1 else "Audit report"
        return f"{kind}: {name or data.path.name}"
    kinds = {"property": "Property study", "evolving": "Property study",
             "fuzzing": "Fuzzing study", "MIRROR": "MIRROR benchmark"}
    found = list(dict.fromkeys(v for k, v in kinds.items()
                               if any(x.startswith(k) for x in data.kinds)))
    return f"{' · '.join(found) or 'Results'}: {data.path.name}"


def _facts(data: ReportData) -> list[tuple[str, str]]:
    facts = [("file", str(data.path)), ("holds", "; ".join(data.kinds))]
    if data.has_audit:
        facts += _audit_facts(data)
    if data.fuzz is not None and len(data.fuzz):
        f = data.fuzz
        facts += [("fuzzing", f"{', '.join(dict.fromkeys(f.dataset))} · models "
                   f"{', '.join(dict.fromkeys(f.model))} · M = "
                   f"{', '.join(str(m) for m in sorted(set(f['size'])))} · "
                   f"{f.groupby(['model', 'heuristic', 'size']).size().max()} sets per cell")]
    if data.mirror is not None and len(data.mirror):
        m = data.mirror
        facts += [("MIRROR", f"{', '.join(dict.fromkeys(m.scenario))} · "
                   f"{', '.join(dict.fromkeys(m.algorithm))} · "
                   f"{m.seed.nunique()} seed(s)")]
    for key, entry in data.properties.items():
        name = "Table 3.4" if key == "table" else "Table 3.6"
        facts.append((f"properties ({name})", f"{entry.get('dataset')} · k = "
                       f"{entry.get('k')} · seed {entry.get('seed')}"))
    return facts


def _audit_facts(data: ReportData) -> list[tuple[str, str]]:
    t = data.trials
    facts = [("trials", f"{len(t)}"),
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
