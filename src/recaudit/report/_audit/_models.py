"""Which model is more stable: the audit's models compared under each perturbation, paired per
test query (:func:`recaudit.audit.compare_models`), as a table and its reading in words."""

from __future__ import annotations

import pandas as pd

from recaudit.report._data import ReportData
from recaudit.report._document import Cell, Table, _fmt, _mean_ci, _num, _text

__all__ = ["model_comparison", "model_table", "model_lines"]


def model_comparison(data: ReportData) -> pd.DataFrame | None:
    """:func:`recaudit.audit.compare_models` on RBO (computed once), or ``None`` when no
    dataset has two models."""
    from recaudit.audit import compare_models

    if "models" not in data._cache:
        several = any(len(data.models(d)) > 1 for d in data.datasets)
        data._cache["models"] = compare_models(data.source) if several else None
    return data._cache["models"]


def model_table(data: ReportData) -> Table | None:
    """Per dataset, perturbation and pair of models: each model's mean RBO, the difference
    with its 95 % interval, the Holm-adjusted p and the more stable model."""
    frame = model_comparison(data)
    if frame is None or frame.empty:
        return None
    rows = []
    for r in frame.itertuples():
        p = _num(r.p_holm)
        rows.append((_text(r.dataset), _text(r.perturbation), _text(r.a), _text(r.b),
                     Cell(_fmt(r.mean_a), _num(r.mean_a)), Cell(_fmt(r.mean_b), _num(r.mean_b)),
                     _mean_ci(r.difference, r.ci_low, r.ci_high, signed=True),
                     Cell("–" if p is None else f"{p:.3g}", p),
                     _text(r.more_stable or "not told apart")))
    return Table("rls-models", "Which model is more stable?",
                 ("dataset", "perturbation", "model a", "model b", "RBO a", "RBO b", "a − b",
                  "p (Holm)", "more stable"), tuple(rows), n_labels=4,
                 caption="Each pair of models under each perturbation both were audited with, "
                         "paired per test query (the seeds both ran; their seed-to-seed "
                         "variation counted): the mean RBO of each, the difference a − b with "
                         "its 95 % interval over seeds and test queries, the paired test "
                         "Holm-adjusted over the dataset's comparisons; more stable: the "
                         "model with the higher RBO where p < 0.05.")


def model_lines(data: ReportData) -> list[str]:
    """The comparison in words (:func:`recaudit.audit.model_reading`)."""
    from recaudit.audit import model_reading

    return model_reading(model_comparison(data))
