"""The report's tables as plain data (:class:`Table` of :class:`Cell`), no rendering.

- :func:`rls_tables` — RLS per model x perturbation, mean ± std over seeds, best and
  second best (lowest RLS, i.e. the most effective perturbation) marked per model
  (Oh et al. 2022 Table 3);
- :func:`accuracy_table` — next-item metrics without and with perturbation and their
  difference (Oh et al. 2022 Figure 3(b));
- :func:`position_table` — position removal: % change of the accuracy metrics and RLS at
  the largest ``n`` with significance marks (Betello et al. 2023 Table 3);
- :func:`user_group_table` — RLS per user group by baseline MRR (Oh et al. 2022 Figures 6, 7);
- :func:`count_table` — RLS versus the number of perturbations (Oh et al. 2022 Figure 8(a));
- :func:`method_test_table` — the most effective perturbation against each other one,
  Wilcoxon signed-rank paired by seed (Oh et al. 2022 §6.1, Table 4).

The audit's setup (configuration, data, versions, timings) is in :mod:`._setup`.

Each returns ``[]``/``None`` when the store lacks the data, so a section can be left out.
"""

from __future__ import annotations


import pandas as pd

from recaudit.report._data import ReportData
from recaudit.report._document import Cell, Table, _fmt, _mean_std, _num, _slug, _text

__all__ = ["rls_tables", "accuracy_table", "position_table",
           "user_group_table", "count_table", "method_test_table", "SIGNIFICANCE_ALPHA",
           "WILCOXON_ALPHA"]

#: Significance level of Betello et al. 2023 §4.3 (Shapiro–Wilk and the paired test).
SIGNIFICANCE_ALPHA = 1e-3
#: Significance level of Oh et al. 2022 §6.1 (Wilcoxon signed-rank over repetitions).
WILCOXON_ALPHA = 0.05



_RLS = (("rbo", "RBO"), ("frbo", "FRBO"), ("jaccard", "Jaccard"))


def rls_tables(data: ReportData) -> list[Table]:
    """Oh et al. 2022 Table 3, one table per (dataset, similarity): rows are the perturbations
    compared at one edit budget (:meth:`ReportData.main_perturbations`, then the reference
    rows), columns models, cells mean ± std over seeds. In each column the lowest and second
    lowest mean among the non-reference perturbations are marked ``best``/``second``
    (lower similarity = a more effective perturbation). Ties share a mark."""
    tables = []
    for dataset in data.datasets:
        agg = data.agg[data.agg.dataset == dataset]
        models = data.models(dataset)
        main = set(data.main_perturbations(dataset)) | {"none"}
        perts = [p for p in data.perturbations(dataset) if p in main]  # references last
        for metric, name in _RLS:
            name = name if metric == "rbo" else name + data.k_label
            pivot = agg.pivot_table(index="perturbation", columns="model_label",
                                    values=[f"{metric}_mean", f"{metric}_std"], aggfunc="first",
                                    dropna=False)
            if pivot[f"{metric}_mean"].isna().all().all():
                continue
            marks: dict[tuple[str, str], str] = {}
            for model in models:
                col = pivot[f"{metric}_mean"].get(model)
                if col is None:
                    continue
                ranked = col[[p for p in perts
                              if p in col.index and not data.infos[p].reference]].dropna()
                levels = sorted(set(ranked))
                for tag, level in zip(("best", "second"), levels[:2], strict=False):
                    for p in ranked.index[ranked == level]:
                        marks[(p, model)] = tag
            rows = []
            for p in perts:
                cells = [_text(p)]
                for model in models:
                    mean = pivot[f"{metric}_mean"].get(model, {}).get(p)
                    std = pivot[f"{metric}_std"].get(model, {}).get(p)
                    cells.append(_mean_std(mean, std, marks.get((p, model))))
                rows.append(tuple(cells))
            if not rows:
                continue
            n_seeds = sorted(set(agg.n_seeds))
            tables.append(Table(
                f"rls-{metric}-{_slug(dataset)}", f"{name} · {dataset}",
                ("perturbation", *models), tuple(rows),
                caption=f"Mean ± std over {'/'.join(map(str, n_seeds))} seeds."))
    return tables


_ACC = (("mrr", "MRR"), ("hit", "HR"), ("ndcg", "NDCG"))


def accuracy_table(data: ReportData) -> Table | None:
    """Oh et al. 2022 Figure 3(b) as a table: per (dataset, model) the accuracy of the model
    trained without perturbation (mean over seeds of the shared baselines), then for each
    perturbation the accuracy with it and the mean difference ``Δ = with − without``."""
    rows = []
    for dataset in data.datasets:
        perts = data.main_perturbations(dataset)
        for model in data.models(dataset):
            s = data.summary[(data.summary.dataset == dataset)
                             & (data.summary.model_label == model)]
            if s.empty:
                continue
            cells = [_text(dataset), _text(model), _text("without perturbation")]
            for m, _ in _ACC:
                base = _num(s.groupby("seed")[f"{m}_base"].first().mean())
                cells += [Cell(_fmt(base), base), Cell("")]
            rows.append(tuple(cells))
            for pert in perts:
                g = s[s.perturbation == pert]
                if g.empty:
                    continue
                cells = [_text(dataset), _text(model), _text(pert)]
                for m, _ in _ACC:
                    new = _num(g[f"{m}_pert"].mean())
                    diff = _num((g[f"{m}_pert"] - g[f"{m}_base"]).mean())
                    cells += [Cell(_fmt(new), new), Cell(_signed(diff), diff)]
                rows.append(tuple(cells))
    if not rows:
        return None
    k = data.k_label
    cols = ("dataset", "model", "perturbation", "MRR", "Δ MRR", f"HR{k}", f"Δ HR{k}",
            f"NDCG{k}", f"Δ NDCG{k}")
    return Table("accuracy", "Next-item accuracy without and with perturbation", cols,
                 tuple(rows), n_labels=3,
                 caption="Mean over seeds; Δ = with − without, averaged over seeds. A small Δ "
                         "next to a low RLS means equally accurate models that recommend "
                         "different lists (Oh et al. 2022 Figure 3(b)). Perturbations compared at one "
                         "edit; position removal has its own section.")


def _signed(v: float | None) -> str:
    if v is None:
        return "–"
    return f"{(0.0 if round(v, 4) == 0 else v):+.4f}"  # no "-0.0000"


def position_table(data: ReportData, alpha: float = SIGNIFICANCE_ALPHA) -> Table | None:
    """Betello et al. 2023 Table 3: for each position (beginning, middle, end) at the largest ``n``
    removed, the % change of HR@k, MRR and NDCG@k against the unperturbed model and the
    RLS (FRBO@k, Jaccard@k), per (dataset, model).

    † marks a significant result at ``alpha`` by the per-query paired test of
    :func:`recaudit.audit.paired_query_test` (Shapiro–Wilk, then paired t or
    Wilcoxon): for accuracy, metric with vs without removal; for RLS, the removal's
    similarity vs that of ``seed-only`` (a new training seed on the same data), when the
    audit has seed-only trials — a similarity is only meaningful relative to the
    instability a model has anyway. Without seed-only trials RLS cells carry no mark.
    """
    from recaudit.audit import paired_query_test

    pos = {p: i for p, i in data.infos.items() if i.position is not None}
    if not pos:
        return None
    has_seed_only = "seed-only" in data.infos
    memo: dict[tuple[str, ...], pd.DataFrame] = {}

    def test(*args: str) -> pd.DataFrame:
        if args not in memo:
            memo[args] = paired_query_test(data.path, args[0], args[1], args[2] or None,
                                           args[3], alpha=alpha)
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
                    cells.append(Cell(_fmt(v, 3) + ("†" if sig else ""), v, None, None, sig, p))
                rows.append(tuple(cells))
    if not rows:
        return None
    k = data.k_label
    return Table("position", "Position removal (largest n per position)",
                 ("dataset", "model", "removal", "n", f"HR{k} Δ%", "MRR Δ%", f"NDCG{k} Δ%",
                  f"FRBO{k}", f"Jaccard{k}"), tuple(rows), n_labels=3,
                 caption=f"% change against the model trained on all items; † = significant at "
                         f"{alpha:g} (per-query paired t-test after Shapiro–Wilk, Wilcoxon when "
                         "not normal; RLS tested against seed-only instability"
                         + ("" if has_seed_only else ", not run: the audit has no seed-only "
                                                     "trials") + ").")


def _p(result: pd.DataFrame, dataset: str, model: str) -> float | None:
    if result.empty:
        return None
    r = result[(result.dataset == dataset) & (result.model == model)]
    return None if r.empty else _num(r.p_value.iloc[0])


def _pct(v: float, p: float | None, alpha: float) -> Cell:
    val = _num(v)
    sig = p is not None and p < alpha
    text = "–" if val is None else f"{val:+.2f}%"
    return Cell(text + ("†" if sig else ""), val, None, None, sig, p)


def user_group_table(data: ReportData) -> Table | None:
    """Mean over seeds of RBO and Jaccard@k per user group (users ranked by the baseline
    model's MRR: high = top 20 %, low = bottom 20 %; Oh et al. 2022 §7.3)."""
    parts = []
    for metric in ("rbo", "jaccard"):
        g = data.user_groups(metric)
        g = g[~g.perturbation.eq("none")]
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
    8(a)): per (dataset, model, family, count) RBO and Jaccard@k, mean ± std over seeds."""
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
                                 _mean_std(a.rbo_mean, a.rbo_std),
                                 _mean_std(a.jaccard_mean, a.jaccard_std)))
    if not rows:
        return None
    return Table("counts", "RLS vs number of perturbations",
                 ("dataset", "model", "perturbation", "count", "RBO",
                  f"Jaccard{data.k_label}"), tuple(rows), n_labels=3,
                 caption="Mean ± std over seeds (Oh et al. 2022 §7.4, Figure 8(a)).")


def method_test_table(data: ReportData, metric: str = "rbo",
                      alpha: float = WILCOXON_ALPHA) -> Table | None:
    """Oh et al. 2022 §6.1: per (dataset, model), the perturbation with the lowest mean ``metric``
    against every other perturbation compared at one edit, by the Wilcoxon signed-rank test
    on the per-seed values paired by seed (:func:`recaudit.audit.compare_methods`).

    Shown only when every pair has at least 6 common seeds: with n pairs the smallest
    two-sided exact p-value is 2 / 2^n, so below 6 seeds (p >= 0.0625) no difference could
    ever be significant at 0.05 and the table would only suggest otherwise.
    """
    from recaudit.audit import compare_methods

    rows = []
    for dataset in data.datasets:
        perts = [p for p in data.main_perturbations(dataset) if not data.infos[p].reference]
        agg = data.agg[data.agg.dataset == dataset]
        s = data.summary[data.summary.dataset == dataset]
        for model in data.models(dataset):
            a = agg[(agg.model_label == model) & agg.perturbation.isin(perts)]
            if len(a) < 2 or a[f"{metric}_mean"].isna().all():
                continue
            best = a.loc[a[f"{metric}_mean"].idxmin(), "perturbation"]
            for other in perts:
                if other == best or other not in set(a.perturbation):
                    continue
                r = compare_methods(s[s.model_label == model], metric, best, other,
                                    test="wilcoxon")
                if r.empty or r.n.iloc[0] < 6:
                    return None
                r = r.iloc[0]
                p = _num(r.p_value)
                sig = p is not None and p < alpha
                rows.append((_text(dataset), _text(model), _text(best), _text(other),
                             Cell(str(int(r.n)), float(r.n)),
                             Cell(_fmt(_num(r.mean_a)), _num(r.mean_a)),
                             Cell(_fmt(_num(r.mean_b)), _num(r.mean_b)),
                             Cell(("–" if p is None else f"{p:.3g}") + ("†" if sig else ""),
                                  p, None, None, sig, p)))
    if not rows:
        return None
    name = {"rbo": "RBO", "frbo": f"FRBO{data.k_label}",
            "jaccard": f"Jaccard{data.k_label}"}.get(metric, metric)
    return Table("method-tests", f"Most effective perturbation vs the others ({name})",
                 ("dataset", "model", "best", "vs", "seeds", f"{name} best",
                  f"{name} other", "p"), tuple(rows), n_labels=4,
                 caption=f"Wilcoxon signed-rank test paired by seed (Oh et al. 2022 §6.1); † = p < "
                         f"{alpha:g}.")


