"""The report's tables as plain data (:class:`Table` of :class:`Cell`), no rendering.

- :func:`rls_tables` — RLS per model x perturbation, mean and 95 % interval over seeds and
  queries; the lowest marked ``best`` (the most destabilising perturbation) only when it is
  significantly below every other one (Oh et al. 2022 Table 3);
- :func:`accuracy_table` — next-item metrics without and with perturbation and their
  difference (Oh et al. 2022 Figure 3(b));
- :func:`position_table` — position removal: % change of the accuracy metrics and RLS at
  the largest ``n`` with significance marks (Betello et al. 2023 Table 3);
- :func:`user_group_table` — RLS per user group by baseline MRR (Oh et al. 2022 Figures 6, 7);
- :func:`count_table` — RLS versus the number of perturbations (Oh et al. 2022 Figure 8(a));
- :func:`method_test_table` — the most effective perturbation against each other one, paired
  per query, Holm-adjusted (Oh et al. 2022 §6.1, Table 4).

Intervals and tests are :mod:`recaudit.audit`'s (:func:`~recaudit.audit.summary`,
:func:`~recaudit.audit.compare_perturbations`): over seeds and test queries, the papers'
paired protocol (Shapiro–Wilk, paired t or Wilcoxon) together with the two-level interval.

The audit's setup (configuration, data, versions, timings) is in :mod:`._setup`.

Each returns ``[]``/``None`` when the store lacks the data, so a section can be left out.
"""

from __future__ import annotations


import pandas as pd

from recaudit.report._data import ReportData
from recaudit.audit import floor_of
from recaudit.report._document import Cell, Table, _fmt, _mean_ci, _num, _slug, _text

__all__ = ["rls_tables", "accuracy_table", "position_table",
           "user_group_table", "count_table", "method_test_table", "SIGNIFICANCE_ALPHA",
           "WILCOXON_ALPHA"]

#: Significance level of Betello et al. 2023 §4.3 (Shapiro–Wilk and the paired test).
SIGNIFICANCE_ALPHA = 1e-3
#: Significance level of Oh et al. 2022 §6.1 (Wilcoxon signed-rank over repetitions).
WILCOXON_ALPHA = 0.05


def _levels(rows) -> str:
    levels = set(rows)
    return ("over seeds and test queries" if levels == {"seeds and queries"} else
            "over test queries only (one seed: seed-to-seed variation not measured)"
            if levels == {"queries only"} else "over seeds and test queries where several "
            "seeds were run, test queries only where one was")



_RLS = (("rbo", "RBO"), ("frbo", "FRBO"), ("jaccard", "Jaccard"))


def rls_tables(data: ReportData, alpha: float = WILCOXON_ALPHA) -> list[Table]:
    """Oh et al. 2022 Table 3, one table per (dataset, similarity): rows are the perturbations
    compared at one edit budget (:meth:`ReportData.main_perturbations`, then the floors),
    columns models, cells the mean and its 95 % interval. In each column the lowest
    perturbation is marked ``best`` (lower similarity = a more effective perturbation) only
    when the paired test puts it below every other one at ``alpha`` (Holm over those
    comparisons, :func:`recaudit.audit.most_destabilising`); otherwise no cell is marked and
    the caption names the perturbations that cannot be told apart."""
    tables = []
    for dataset in data.datasets:
        agg = data.agg[data.agg.dataset == dataset]
        models = data.models(dataset)
        main = set(data.main_perturbations(dataset)) | {
            p for p in data.perturbations(dataset) if floor_of(p) == "rerun"}
        perts = [p for p in data.perturbations(dataset) if p in main]  # floors last
        for metric, name in _RLS:
            name = name if metric == "rbo" else name + data.k_label
            cols = [metric, f"{metric}_ci_low", f"{metric}_ci_high"]
            pivot = agg.pivot_table(index="perturbation", columns="model_label", values=cols,
                                    aggfunc="first", dropna=False)
            if pivot[metric].isna().all().all():
                continue
            marks: dict[tuple[str, str], str] = {}
            undecided = []
            most = data.most_destabilising(metric, dataset)
            for r in most.itertuples():
                if r.decided and r.p < alpha:
                    marks[(r.lowest, r.model)] = "best"
                else:
                    undecided.append(f"{r.model}: {r.lowest} vs {r.runner_up} (p = "
                                     f"{r.p:.2g})")
            rows = []
            for p in perts:
                cells = [_text(p)]
                for model in models:
                    got = [pivot[c].get(model, {}).get(p) for c in cols]
                    cells.append(_mean_ci(got[0], got[1], got[2], marks.get((p, model))))
                rows.append(tuple(cells))
            if not rows:
                continue
            caption = (f"Mean [95 % interval] "
                       f"{_levels(agg.levels)}. Marked: the most destabilising perturbation, "
                       f"significantly below every other one (paired per query, Holm, "
                       f"{alpha:g}).")
            if undecided:
                caption += " Not decided: " + "; ".join(undecided) + "."
            tables.append(Table(f"rls-{metric}-{_slug(dataset)}", f"{name} · {dataset}",
                                ("perturbation", *models), tuple(rows), caption=caption))
    return tables


_ACC = (("mrr", "MRR"), ("hit", "HR"), ("ndcg", "NDCG"))


def accuracy_table(data: ReportData) -> Table | None:
    """Oh et al. 2022 Figure 3(b) as a table: per (dataset, model) the accuracy of the model
    trained without perturbation (the shared baselines), then for each perturbation the
    accuracy with it and the per-query difference ``Δ = with − without``, each with its
    95 % interval."""
    rows = []
    for dataset in data.datasets:
        perts = data.main_perturbations(dataset)
        for model in data.models(dataset):
            a = data.agg[(data.agg.dataset == dataset) & (data.agg.model_label == model)]
            if a.empty:
                continue
            first = a.iloc[0]
            cells = [_text(dataset), _text(model), _text("without perturbation")]
            for m, _ in _ACC:
                cells += [_mean_ci(*(first[f"{m}_base{x}"] for x in ("", "_ci_low",
                                                                      "_ci_high"))), Cell("")]
            rows.append(tuple(cells))
            for pert in perts:
                g = a[a.perturbation == pert]
                if g.empty:
                    continue
                r = g.iloc[0]
                cells = [_text(dataset), _text(model), _text(pert)]
                for m, _ in _ACC:
                    cells += [_mean_ci(*(r[f"{m}_pert{x}"] for x in ("", "_ci_low",
                                                                      "_ci_high"))),
                              _mean_ci(*(r[f"{m}_change{x}"] for x in ("", "_ci_low",
                                                                        "_ci_high")),
                                       signed=True)]
                rows.append(tuple(cells))
    if not rows:
        return None
    k = data.k_label
    cols = ("dataset", "model", "perturbation", "MRR", "Δ MRR", f"HR{k}", f"Δ HR{k}",
            f"NDCG{k}", f"Δ NDCG{k}")
    return Table("accuracy", "Next-item accuracy without and with perturbation", cols,
                 tuple(rows), n_labels=3,
                 caption=f"Mean [95 % interval] {_levels(data.agg.levels)}; "
                         "Δ = with − without per test query. A Δ whose interval holds 0 next "
                         "to a low RLS means equally accurate models that recommend different "
                         "lists (Oh et al. 2022 Figure 3(b)). Perturbations compared at one "
                         "edit; position removal has its own section.")


def _signed(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{(0.0 if round(v, 4) == 0 else v):+.4f}"  # no "-0.0000"


def position_table(data: ReportData, alpha: float = SIGNIFICANCE_ALPHA) -> Table | None:
    """Betello et al. 2023 Table 3: for each position (beginning, middle, end) at the largest ``n``
    removed, the % change of HR@k, MRR and NDCG@k against the unperturbed model and the
    RLS (FRBO@k, Jaccard@k), per (dataset, model).

    † marks a significant result at ``alpha`` by the paired test of
    :func:`recaudit.audit.compare_perturbations` (Shapiro–Wilk, then paired t or
    Wilcoxon, with the two-level interval): for accuracy, metric with vs without removal;
    for RLS, the removal's
    similarity vs that of ``seed-only`` (a new training seed on the same data), when the
    audit has seed-only trials — a similarity is only meaningful relative to the
    instability a model has anyway. Without seed-only trials RLS cells carry no mark.
    """
    from recaudit.audit import compare_perturbations

    pos = {p: i for p, i in data.infos.items() if i.position is not None}
    if not pos:
        return None
    has_seed_only = "seed-only" in data.infos
    memo: dict[tuple[str, ...], pd.DataFrame] = {}

    def test(*args: str) -> pd.DataFrame:
        if args not in memo:
            a, metric_a, b, metric_b = args
            memo[args] = compare_perturbations(data.source, a, b or a, metric=metric_a,
                                               metric_b=metric_b, normality=alpha)
        return memo[args]

    rows = []
    order = {"beginning": 0, "middle": 1, "end": 2}
    for dataset in data.datasets:
        for model in data.models(dataset):
            s = data.summary[(data.summary.dataset == dataset)
                             & (data.summary.model_label == model)]
            present = [p for p in pos if p in set(s.perturbation)]
            for position in sorted({str(pos[p].position) for p in present},
                                   key=lambda w: order.get(w, 3)):
                label = max((p for p in present if pos[p].position == position),
                            key=lambda p: pos[p].count or 0)
                g = s[s.perturbation == label]
                cells = [_text(dataset), _text(model), _text(position),
                         Cell(str(pos[label].count), float(pos[label].count or 0))]
                for m in ("hit", "mrr", "ndcg"):
                    base, new = g[f"{m}_base"].mean(), g[f"{m}_pert"].mean()
                    change = 100.0 * (new - base) / base if base else float("nan")
                    p = _p(test(label, f"{m}_pert", "", f"{m}_base"), dataset, model)
                    cells.append(_pct(change, p, alpha))
                for m in ("frbo", "jaccard"):
                    p = _p(test(label, m, "seed-only", m), dataset, model) \
                        if has_seed_only else None
                    v = _num(g[m].mean())
                    sig = p is not None and p < alpha
                    cells.append(Cell(_fmt(v, 3) + ("†" if sig else ""), v, None, sig, p))
                rows.append(tuple(cells))
    if not rows:
        return None
    k = data.k_label
    return Table("position", "Position removal (largest n per position)",
                 ("dataset", "model", "removal", "n", f"HR{k} Δ%", "MRR Δ%", f"NDCG{k} Δ%",
                  f"FRBO{k}", f"Jaccard{k}"), tuple(rows), n_labels=3,
                 caption=f"% change against the model trained on all items; † = significant at "
                         f"{alpha:g} (per-query paired t-test after Shapiro–Wilk, Wilcoxon when "
                         "not normal, with the interval over seeds where several were run; RLS "
                         "tested against seed-only instability"
                         + ("" if has_seed_only else ", not run: the audit has no seed-only "
                                                     "trials") + ").")


def _p(result: pd.DataFrame, dataset: str, model: str) -> float | None:
    if result.empty:
        return None
    r = result[(result.dataset == dataset) & (result.model == model)]
    return None if r.empty else _num(r.p.iloc[0])


def _pct(v: float, p: float | None, alpha: float) -> Cell:
    val = _num(v)
    sig = p is not None and p < alpha
    text = "–" if val is None else f"{val:+.2f}%"
    return Cell(text + ("†" if sig else ""), val, None, sig, p)


def user_group_table(data: ReportData) -> Table | None:
    """Mean over seeds of RBO and Jaccard@k per user group (users ranked by the baseline
    model's MRR: high = top 20 %, low = bottom 20 %; Oh et al. 2022 §7.3)."""
    parts = []
    for metric in ("rbo", "jaccard"):
        g = data.user_groups(metric)
        g = g[g.perturbation.map(floor_of) != "rerun"]
        if g.empty:
            return None
        parts.append(g.groupby(["dataset", "model_label", "perturbation", "group"], sort=False)
                     [metric].mean())
    both = pd.concat(parts, axis=1)
    rows = []
    groups = ("high", "mid", "low")
    for dataset in data.datasets:
        for model in data.models(dataset):
            for pert in data.main_perturbations(dataset):
                if (dataset, model, pert) not in both.index.droplevel(3):
                    continue
                g = both.loc[(dataset, model, pert)]
                cells = [_text(dataset), _text(model), _text(pert)]
                for metric in ("rbo", "jaccard"):
                    for grp in groups:
                        v = _num(g[metric].get(grp)) if grp in g.index else None
                        cells.append(Cell(_fmt(v), v))
                rows.append(tuple(cells))
    if not rows:
        return None
    k = data.k_label
    cols = ("dataset", "model", "perturbation", *(f"RBO {x}" for x in groups),
            *(f"Jaccard{k} {x}" for x in groups))
    return Table("user-groups", "RLS by user group (baseline MRR)", cols, tuple(rows),
                 n_labels=3, caption="Users ranked by the unperturbed model's MRR: high = top "
                 "20 %, mid = middle 60 %, low = bottom 20 % (Oh et al. 2022 §7.3); mean over seeds.")


def count_table(data: ReportData) -> Table | None:
    """RLS versus the number of perturbed interactions (the numbers of Oh et al. 2022 Figure
    8(a)): per (dataset, model, family, count) RBO and Jaccard@k with their 95 % intervals."""
    rows = []
    for dataset in data.datasets:
        counts = data.counts(dataset)
        if counts.empty:
            continue
        agg = data.agg[data.agg.dataset == dataset].set_index(["model_label", "perturbation"])
        for model in data.models(dataset):
            for family, g in counts.groupby("family", sort=False):
                for _, r in g.sort_values("count").iterrows():
                    if (model, r.perturbation) not in agg.index:
                        continue
                    a = agg.loc[(model, r.perturbation)]
                    rows.append((_text(dataset), _text(model), _text(family),
                                 Cell(str(r["count"]), float(r["count"])),
                                 _mean_ci(a.rbo, a.rbo_ci_low, a.rbo_ci_high),
                                 _mean_ci(a.jaccard, a.jaccard_ci_low, a.jaccard_ci_high)))
    if not rows:
        return None
    return Table("counts", "RLS vs number of perturbations",
                 ("dataset", "model", "perturbation", "count", "RBO",
                  f"Jaccard{data.k_label}"), tuple(rows), n_labels=3,
                 caption=f"Mean [95 % interval] {_levels(data.agg.levels)} "
                         "(Oh et al. 2022 §7.4, Figure 8(a)).")


def method_test_table(data: ReportData, metric: str = "rbo",
                      alpha: float = WILCOXON_ALPHA) -> Table | None:
    """Oh et al. 2022 §6.1: per (dataset, model), the perturbation with the lowest mean
    ``metric`` against every other perturbation compared at one edit, paired per test query
    (:func:`recaudit.audit.compare_perturbations`: Shapiro–Wilk, then paired t or Wilcoxon,
    with the two-level interval where several seeds were run), Holm-adjusted over the
    comparisons of the model."""
    from recaudit.audit import compare_perturbations
    from recaudit.stats import holm

    rows = []
    for dataset in data.datasets:
        most = data.most_destabilising(metric, dataset)
        for r in most.itertuples():
            perts = [p for p in data.main_perturbations(dataset)
                     if not floor_of(p) and p != r.lowest]
            tests = []
            for other in perts:
                t = compare_perturbations(data.source, r.lowest, other, metric=metric)
                t = t[(t.dataset == dataset) & (t.model == r.model)]
                if len(t):
                    tests.append(t.iloc[0])
            adjusted = holm([t.p for t in tests])
            for t, p in zip(tests, adjusted, strict=True):
                sig = bool(p < alpha)
                rows.append((_text(dataset), _text(r.model), _text(r.lowest), _text(t.b),
                             Cell(f"{int(t.pairs)}", float(t.pairs)),
                             Cell(_fmt(_num(t.mean_a)), _num(t.mean_a)),
                             Cell(_fmt(_num(t.mean_b)), _num(t.mean_b)),
                             _mean_ci(t.difference, t.ci_low, t.ci_high),
                             Cell(f"{p:.3g}" + ("†" if sig else "") + f" ({t.test})", _num(p),
                                  None, sig, _num(p))))
    if not rows:
        return None
    name = {"rbo": "RBO", "frbo": f"FRBO{data.k_label}",
            "jaccard": f"Jaccard{data.k_label}"}.get(metric, metric)
    return Table("method-tests", f"Most effective perturbation vs the others ({name})",
                 ("dataset", "model", "lowest", "vs", "pairs", f"{name} lowest",
                  f"{name} other", "difference", "p (Holm)"), tuple(rows), n_labels=4,
                 caption="Paired per test query (Shapiro–Wilk, then paired t or Wilcoxon; with "
                         "several seeds the interval over seeds and queries must also exclude "
                         f"0), Holm-adjusted over the model's comparisons; † = p < {alpha:g}; "
                         "difference = lowest − other with its 95 % interval.")
