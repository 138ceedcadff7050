"""The "Stabilisation" section: stabilised models against their plain models.

Numbers from :func:`recaudit.audit.stabilisation_summary` (FINEST, Oh et al. 2024; seed
ensembles, Francomano et al. 2024; :mod:`recaudit.stabilise`):

- :func:`stability_table` — per (dataset, model, method, perturbation) RBO, FRBO@k and
  Jaccard@k of the plain and the stabilised model and the relative change, † where the
  per-query paired test is significant;
- :func:`accuracy_cost_table` — per (dataset, model, method) MRR and NDCG@k of the
  unperturbed models, plain and stabilised, and the training time per fit of both.
"""

from __future__ import annotations

import math
from typing import Any

import pandas as pd

from recaudit.report._data import ReportData
from recaudit.report._audit._tables import SIGNIFICANCE_ALPHA
from recaudit.report._document import Cell, Table, _fmt, _num, _text

__all__ = ["stabilisation_tables", "stability_table", "accuracy_cost_table", "INTRO"]

INTRO = ("The same perturbations, seeds and test queries measure each stabilised model beside "
         "its plain model: FINEST fine-tunes the trained model under simulated perturbations "
         "with a loss that keeps its top-k lists (Oh, Ustun, McAuley & Kumar 2024); a seed "
         "ensemble averages the scores of models trained with several seeds (Francomano, "
         "Siciliano & Silvestri 2024). Higher RLS = more stable lists.")


def _summary(data: ReportData) -> pd.DataFrame:
    if "stabilisation" not in data._cache:
        from recaudit.audit import stabilisation_summary

        data._cache["stabilisation"] = stabilisation_summary(data.source,
                                                             alpha=SIGNIFICANCE_ALPHA)
    return data._cache["stabilisation"]


def _method(row: Any) -> str:
    label, model = str(row.stabilised), str(row.model)
    return label[len(model):].lstrip("+") if label.startswith(model) else label


def _pair(plain: Any, stab: Any) -> Cell:
    a, b = _num(plain), _num(stab)
    return Cell(f"{_fmt(a, 3)} → {_fmt(b, 3)}", b)


def _change(row: Any, metric: str) -> Cell:
    v, p = _num(row[f"{metric}_change"]), _num(row[f"{metric}_p"])
    sig = p is not None and p < SIGNIFICANCE_ALPHA
    text = "–" if v is None else f"{100 * v:+.1f}%"
    return Cell(text + ("†" if sig else ""), None if v is None else 100 * v, None, sig, p)


def stability_table(data: ReportData) -> Table | None:
    s = _summary(data)
    if s.empty:
        return None
    order = {p: i for i, p in enumerate(data.perturbations())}
    s = s.assign(_o=s.perturbation.map(order)).sort_values(
        ["dataset", "model", "stabilised", "_o"], kind="stable")
    rows = []
    for r in s.itertuples():
        row = r._asdict()
        cells = [_text(r.dataset), _text(r.model), _text(_method(r)), _text(r.perturbation),
                 Cell(str(r.n_seeds), float(r.n_seeds))]
        for m in ("rbo", "frbo", "jaccard"):
            cells += [_pair(row[f"{m}_plain"], row[f"{m}_stab"]), _change(row, m)]
        rows.append(tuple(cells))
    k = data.k_label
    return Table("stabilisation-rls", "Rank-list stability: plain → stabilised",
                 ("dataset", "model", "method", "perturbation", "seeds", "RBO", "Δ RBO",
                  f"FRBO{k}", f"Δ FRBO{k}", f"Jaccard{k}", f"Δ Jaccard{k}"), tuple(rows),
                 n_labels=4,
                 caption=f"Means over seeds; Δ = stabilised / plain − 1. † = p < "
                         f"{SIGNIFICANCE_ALPHA:g} in a per-query paired test (the same test "
                         "query and seed; Shapiro–Wilk on the differences, then the paired "
                         "t-test, or Wilcoxon's signed-rank test when not normal; Betello et al. "
                         "2023 §4.3).")


def accuracy_cost_table(data: ReportData) -> Table | None:
    s = _summary(data)
    if s.empty:
        return None
    rows = []
    for _, g in s.groupby(["dataset", "model", "stabilised"], sort=False):
        r = g.iloc[0]
        cells = [_text(r.dataset), _text(r.model), _text(_method(r))]
        for m in ("mrr", "ndcg"):
            cells += [_pair(r[f"{m}_plain"], r[f"{m}_stab"]), _change(r, m)]
        fp, fs, cost = _num(r.fit_plain), _num(r.fit_stab), _num(r.cost)
        cells += [Cell(_fmt(fp, 1), fp), Cell(_fmt(fs, 1), fs),
                  Cell("–" if cost is None or math.isinf(cost) else f"×{cost:.2f}", cost)]
        rows.append(tuple(cells))
    k = data.k_label
    return Table("stabilisation-accuracy", "Accuracy and training cost: plain → stabilised",
                 ("dataset", "model", "method", "MRR", "Δ MRR", f"NDCG{k}", f"Δ NDCG{k}",
                  "s/fit plain", "s/fit stabilised", "cost"), tuple(rows), n_labels=3,
                 caption="Accuracy of the models trained without perturbation, means over "
                         "seeds; † as above. Cost: wall seconds per model fit over all the "
                         "model's trials (for FINEST: pre-training, reference lists and "
                         "fine-tuning; for an ensemble: every member), and their ratio.")


def stabilisation_tables(data: ReportData) -> list[Table]:
    """The section's tables (none when the store has no stabilised model with a plain twin)."""
    return [t for t in (stability_table(data), accuracy_cost_table(data)) if t is not None]
