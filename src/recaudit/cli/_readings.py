"""The audit's results on the terminal: the summary as tables (a block of rows per
perturbation, one row per measure: every number whole at 80 columns), the models compared,
the per-trial table, and the reading in words; or the same as CSV or JSON."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer
from rich.table import Table

from recaudit.cli._tables import add_columns, mean_and_interval, p_header, result_table

__all__ = ["decision_tables", "model_tables", "readings", "story", "trial_table"]


# the audit is imported when a command prints, not when the command line is parsed
def _p(*args, **kw):
    from recaudit.audit import p_text

    return p_text(*args, **kw)


def story(*args, **kw):
    from recaudit.audit import reading

    return reading(*args, **kw)


_SHOWN = (("rbo", "RBO"), ("frbo", "FRBO@k"), ("jaccard", "Jaccard@k"),
          ("mrr_change", "ΔMRR"))


_LEVELS = {"seeds and queries": "over seeds and test queries",
           "queries only": "over test queries only: one seed measures no seed-to-seed "
                           "variation"}


def _counts(r) -> list[str]:
    """What a perturbation's numbers rest on, one short line each, under its name."""
    out = [f"{r.seeds} seed{'s' if r.seeds != 1 else ''}"]
    if getattr(r, "draws", 1) > 1:
        out.append(f"{r.draws} draws")
    return out + [f"{r.queries} queries"]


def decision_tables(frame, title: str) -> list[Table]:
    """:func:`recaudit.audit.summary` as terminal tables, one per (dataset, model): per
    perturbation a block of rows, one per measure: its mean, its 95 % interval, and on the
    RBO row the p-values against the floors (an 80-column terminal shows every number)."""
    floors = [c for c in frame.columns if c.startswith("p_vs_")]
    tables = []
    for (dataset, model), g in frame.groupby(["dataset", "model"], sort=False):
        level = str(g.levels.iloc[0])
        shown = [c for c in floors if g[c].notna().any()]
        table = result_table(f"{title}: {model} on {dataset}", caption=(
            "[ ] = 95 % interval (" + _LEVELS.get(level, level) + "); "
            + ("p = paired test of RBO against the floor, Holm-adjusted; " if shown else "")
            + "ΔMRR = perturbed − original."))
        add_columns(table, "perturbation", "measure", "mean", "95 % interval",
                    *(p_header(c) for c in shown), left=2)
        for i, (_, r) in enumerate(g.iterrows()):
            labels = [str(r.perturbation), *_counts(r)]
            for j, (m, name) in enumerate(_SHOWN):
                mean, interval = mean_and_interval(r, m, m.endswith("_change"))
                ps = [_p(r[c]) if j == 0 else "" for c in shown]
                table.add_row(labels[j] if j < len(labels) else "", name, mean, interval, *ps,
                              end_section=j == len(_SHOWN) - 1 and i < len(g) - 1)
        tables.append(table)
    return tables


def model_tables(frame) -> list[Table]:
    """:func:`recaudit.audit.compare_models` as terminal tables, one per dataset: per
    perturbation and pair of models, each model's mean, the difference with its 95 %
    interval, the Holm-adjusted p and the more stable model (letters A, B, ... named in the
    caption; "–": not told apart)."""
    tables = []
    for dataset, g in frame.groupby("dataset", sort=False):
        models = list(dict.fromkeys([*g.a, *g.b]))
        letter = {m: chr(ord("A") + i) for i, m in enumerate(models)}
        metric = str(g.metric.iloc[0]).upper()
        table = result_table(
            f"Which model is more stable? {metric} on {dataset}, paired per test query",
            caption="; ".join(f"{letter[m]} = {m}" for m in models) + ". "
            + ("a, b: the pair's first and second model. " if len(models) > 2 else "")
            + "The difference: its mean and 95 % interval over seeds and test queries; p: paired "
            "test, Holm-adjusted over the comparisons; more stable: the model with the "
            "higher " + metric + " where p < 0.05 (–: not told apart).")
        pairs = len(models) > 2  # then a row per pair: a and b are its first and second
        a, b = ("a", "b") if pairs else ("A", "B")
        add_columns(table, "perturbation", *(("pair",) if pairs else ()), f"{metric} {a}",
                    f"{metric} {b}", f"{a} − {b}", "p", "more\nstable")
        for _, r in g.iterrows():
            low_high = f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]" if r.ci_low == r.ci_low else ""
            table.add_row(str(r.perturbation),
                          *((f"{letter[r.a]}, {letter[r.b]}",) if pairs else ()),
                          f"{r.mean_a:.4f}", f"{r.mean_b:.4f}",
                          f"{r.difference:+.4f}" + (f"\n{low_high}" if low_high else ""),
                          _p(r.p_holm), letter.get(r.more_stable, "–"))
        tables.append(table)
    return tables


def trial_table(store: Path, title: str) -> list[Table]:
    """One row per trial (``recaudit results STORE``), one table per (dataset, model): its
    seed, draw (when any is not 0) and the means over its test queries."""
    from recaudit.audit import trial_summary

    frame = trial_summary(store)
    cols = (("rbo", "RBO"), ("frbo", "FRBO@k"), ("jaccard", "Jaccard@k"),
            ("mrr_base", "MRR\nbase"), ("mrr_pert", "MRR\npert."))
    tables = []
    for (dataset, model), g in frame.groupby(["dataset", "model_label"], sort=False):
        draws = bool((g.draw != 0).any())
        table = result_table(f"{title}: {model} on {dataset}")
        add_columns(table, "perturbation", "seed", *(("draw",) if draws else ()),
                    *(n for _, n in cols))
        for r in g.itertuples():
            table.add_row(str(r.perturbation), str(r.seed), *((str(r.draw),) if draws else ()),
                          *(f"{getattr(r, c):.4f}" for c, _ in cols))
        tables.append(table)
    return tables


def readings(store: Path, title: str, console: Any, fmt: str = "table") -> None:
    """The audit's summary (:func:`recaudit.audit.summary`) as tables and its reading in
    words; with several models, which is more stable (:func:`recaudit.audit.compare_models`).
    ``fmt`` csv: the summary; json: ``{"summary", "models", "reading"}``."""
    import json
    import warnings

    from recaudit.audit import (FEW_QUERIES, compare_models, model_reading,
                                most_destabilising, summary)
    from recaudit.cli._tables import emit, records
    from recaudit.errors import RecauditWarning

    frame = summary(store)
    several = frame.groupby("dataset").model.nunique().gt(1).any() if len(frame) else False
    models = compare_models(store) if several else None
    lines = story(frame, most_destabilising(store)) + model_reading(models)
    if fmt == "json":
        typer.echo(json.dumps({"summary": records(frame),
                               "models": records(models) if models is not None else [],
                               "reading": lines}, indent=2, allow_nan=False))
    elif not emit(frame, fmt):
        for table in decision_tables(frame, title):
            console.print(table)
        for table in model_tables(models) if models is not None else []:
            console.print(table)
        for line in lines:
            console.print(line, markup=False)
    for (dataset, model), g in frame.groupby(["dataset", "model"], sort=False):
        if len(g) and g.queries.min() < FEW_QUERIES:
            warnings.warn(f"{model} on {dataset}: only {g.queries.min()} test queries: too "
                          f"few (under {FEW_QUERIES}) to trust its intervals and p-values; "
                          "audit more users (a lower --min-interactions, no --sample-users, "
                          "a larger dataset)", RecauditWarning, stacklevel=2)
