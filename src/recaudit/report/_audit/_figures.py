"""The stability audit's figures (:mod:`recaudit.report._plots` makes and renders them).

- :func:`rls_distribution_figure` — per-query RLS by model and perturbation (Oh et al. 2022
  Figure 3(a)), box plots from quantiles computed in DuckDB;
- :func:`accuracy_figure` — accuracy with and without perturbation (Figure 3(b));
- :func:`user_group_figure` — RLS by MRR user group per perturbation (Figures 6, 7);
- :func:`count_figure` — RLS versus number of perturbations (Figure 8(a));
- :func:`runtime_figure` — CASPER runtime versus data size (Figure 8(b));
- :func:`position_figure` — metrics and RLS versus n removed at the beginning, middle or
  end, with the baseline as a solid line (Betello et al. 2023 Figures 1-3).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from recaudit.audit import floor_of
from recaudit.report._data import ReportData
from recaudit.report._plots import _colors, _figure, _legend, _wrap

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["rls_distribution_figure", "accuracy_figure", "user_group_figure", "count_figure",
           "runtime_figure", "position_figure", "runtime_points"]


_RLS = (("rbo", "RBO"), ("frbo", "FRBO"), ("jaccard", "Jaccard"))


def _errors(rows, col: str):
    """Error bars from the 95 % intervals of ``col`` (``[below, above]``; 0 where none)."""
    low = np.nan_to_num(np.asarray(rows[col] - rows[f"{col}_ci_low"], dtype=float))
    high = np.nan_to_num(np.asarray(rows[f"{col}_ci_high"] - rows[col], dtype=float))
    return np.vstack([np.atleast_1d(low), np.atleast_1d(high)])


def rls_distribution_figure(data: ReportData, dataset: str) -> Figure | None:
    """Oh et al. 2022 Figure 3(a): per-query RLS, one panel per similarity, boxes grouped by
    model and coloured by perturbation (Tukey whiskers, outliers not drawn, ◆ = mean)."""
    dist = data.distribution
    dist = dist[(dist.dataset == dataset) & (dist.perturbation.map(floor_of) != "rerun")]
    if dist.empty:
        return None
    models = data.models(dataset)
    perts = [p for p in data.main_perturbations(dataset) if p in set(dist.perturbation)]
    if not perts:
        return None
    colors = _colors(perts)
    if "seed-only" in colors:
        colors["seed-only"] = "#9ca3af"
    metrics = [(m, n) for m, n in _RLS if m in set(dist.metric)]
    n_boxes = len(models) * len(perts)
    if n_boxes <= 12:  # panels side by side
        fig, axes = _figure(1, len(metrics), 11.0, 3.4)
        axes = axes[0]
    else:  # one wide panel per similarity
        width = min(12.0, 3.0 + 0.3 * n_boxes + 0.4 * len(models))
        fig, axes = _figure(len(metrics), 1, max(width, 7.0), 2.4 * len(metrics) + 0.6)
        axes = axes[:, 0]
    step = len(perts) + 1
    for ax, (metric, name) in zip(axes, metrics, strict=True):
        d = dist[dist.metric == metric].set_index(["model_label", "perturbation"])
        for i, model in enumerate(models):
            for j, pert in enumerate(perts):
                if (model, pert) not in d.index:
                    continue
                r = d.loc[(model, pert)]
                stats = {"med": r["median"], "q1": r.q1, "q3": r.q3, "whislo": r.whislo,
                         "whishi": r.whishi, "mean": r["mean"], "label": ""}
                box = ax.bxp([stats], positions=[i * step + j], widths=0.7, showfliers=False,
                             showmeans=True, patch_artist=True,
                             meanprops={"marker": "D", "markersize": 3,
                                        "markerfacecolor": "white", "markeredgecolor": "#111"},
                             medianprops={"color": "#111", "linewidth": 1.1})
                for patch in box["boxes"]:
                    patch.set_facecolor(colors[pert])
                    patch.set_alpha(0.85)
        ax.set_xticks([i * step + (len(perts) - 1) / 2 for i in range(len(models))],
                      [_wrap(m, 20 if n_boxes <= 12 else 26) for m in models])
        k = "" if metric == "rbo" else data.k_label
        ax.set_title(f"{name}{k} per query")
        ax.set_ylim(min(0.0, ax.get_ylim()[0]), 1.02)
    _legend(fig, perts, colors)
    return fig



_ACC = (("mrr", "MRR"), ("hit", "HR"), ("ndcg", "NDCG"))


def accuracy_figure(data: ReportData, dataset: str) -> Figure | None:
    """Oh et al. 2022 Figure 3(b): accuracy of the unperturbed model and of each perturbed model
    (bars: means; error bars: 95 % intervals over seeds and test queries)."""
    s = data.agg[(data.agg.dataset == dataset) & (data.agg.perturbation.map(floor_of) != "rerun")]
    if s.empty:
        return None
    models = data.models(dataset)
    perts = [p for p in data.main_perturbations(dataset) if p in set(s.perturbation)]
    series = ["without perturbation", *perts]
    colors = _colors(perts)
    colors["without perturbation"] = "#374151"
    if "seed-only" in colors:
        colors["seed-only"] = "#9ca3af"
    fig, axes = _figure(1, 3, max(7.5, min(12.0, 2.0 + 0.25 * len(models) * len(series) * 3)),
                        3.0)
    width = 0.8 / len(series)
    for ax, (m, name) in zip(axes[0], _ACC, strict=True):
        for i, model in enumerate(models):
            g = s[s.model_label == model]
            # the baseline of a seed is shared by all perturbations: the first row's
            rows = [(g.iloc[0], f"{m}_base")] + [(g[g.perturbation == p].iloc[0], f"{m}_pert")
                                                  for p in perts if (g.perturbation == p).any()]
            for j, (lab, (r, col)) in enumerate(zip(series, rows, strict=False)):
                err = _errors(r, col)
                ax.bar(i + (j - (len(series) - 1) / 2) * width, r[col], width * 0.92,
                       yerr=err, color=colors[lab], error_kw={"elinewidth": 0.8, "capsize": 1.5})
        ax.set_xticks(range(len(models)), [_wrap(x, 16) for x in models])
        ax.set_title(name if m == "mrr" else f"{name}{data.k_label}")
    _legend(fig, series, colors)
    return fig


def user_group_figure(data: ReportData, dataset: str, model: str) -> Figure | None:
    """Oh et al. 2022 Figures 6 and 7: RBO and Jaccard@k for high-, mid- and low-MRR users per
    perturbation (mean over seeds)."""
    groups = ("high", "mid", "low")
    colors = {"high": "#0072B2", "mid": "#56B4E9", "low": "#D55E00"}
    frames = []
    for metric in ("rbo", "jaccard"):
        g = data.user_groups(metric)
        g = g[(g.dataset == dataset) & (g.model_label == model)
              & (g.perturbation.map(floor_of) != "rerun")]
        frames.append(g.groupby(["perturbation", "group"])[metric].mean())
    if any(f.empty for f in frames):
        return None
    perts = [p for p in data.main_perturbations(dataset)
             if p in frames[0].index.get_level_values(0)]
    if not perts:
        return None
    fig, axes = _figure(1, 2, max(7.5, min(12.0, 1.5 + 0.9 * len(perts) * 2)), 3.0)
    width = 0.8 / len(groups)
    for ax, frame, name in zip(axes[0], frames, ("RBO", f"Jaccard{data.k_label}"), strict=True):
        for j, grp in enumerate(groups):
            vals = [frame.get((p, grp), np.nan) for p in perts]
            ax.bar(np.arange(len(perts)) + (j - 1) * width, vals, width * 0.92,
                   color=colors[grp], label=f"{grp}-MRR users")
        ax.set_xticks(range(len(perts)), [_wrap(p, 18) for p in perts],
                      rotation=30 if len(perts) > 3 else 0, ha="right" if len(perts) > 3
                      else "center")
        ax.set_title(name)
        ax.set_ylim(0, 1.02)
    _legend(fig, [f"{g}-MRR users" for g in groups],
            {f"{g}-MRR users": c for g, c in colors.items()})
    return fig


def count_figure(data: ReportData, dataset: str) -> Figure | None:
    """Oh et al. 2022 Figure 8(a): RLS versus the number of perturbed interactions, one line per
    (model, perturbation family) that the audit ran at two or more counts (error bars: 95 %
    intervals)."""
    counts = data.counts(dataset)
    if counts.empty:
        return None
    s = data.agg[data.agg.dataset == dataset].merge(counts, on="perturbation")
    lines = [(key, g.sort_values("count")) for key, g in s.groupby(["model_label", "family"],
                                                                     sort=False)
             if g["count"].nunique() >= 2]
    if not lines:
        return None
    labels = [f"{m} · {f}" if s.model_label.nunique() > 1 else f for (m, f), _ in lines]
    colors = _colors(labels)
    fig, axes = _figure(1, 2, 8.0, 3.0)
    for ax, (metric, name) in zip(axes[0], (("rbo", "RBO"), ("jaccard", "Jaccard")),
                                  strict=True):
        for lab, (_, g) in zip(labels, lines, strict=True):
            ax.errorbar(g["count"].to_numpy(dtype=float), g[metric], yerr=_errors(g, metric),
                        color=colors[lab], marker="o", markersize=3.5, linewidth=1.4,
                        capsize=2)
        ax.set_xlabel("number of perturbations")
        ax.set_title(name if metric == "rbo" else f"{name}{data.k_label}")
        ax.xaxis.get_major_locator().set_params(integer=True)
    _legend(fig, labels, colors, kind="line")
    return fig


def runtime_points(data: ReportData) -> pd.DataFrame:
    """CASPER runtime points ``(label, interactions, seconds)``.

    From the store's meta key ``casper_runtime`` (a list of ``{"interactions": int,
    "seconds": float, "label": str}``, written by a benchmark) when present; otherwise from
    the audit itself — the mean ``perturb_seconds`` of CASPER trials per dataset against
    its number of interactions (meta ``data``), when two or more datasets have them.
    """
    bench = data.meta.get("casper_runtime")
    if isinstance(bench, list) and bench:
        df = pd.DataFrame([b for b in bench if isinstance(b, dict)])
        if {"interactions", "seconds"} <= set(df.columns):
            if "label" not in df:
                df["label"] = "CASPER"
            return df[["label", "interactions", "seconds"]].astype(
                {"label": str, "interactions": float, "seconds": float})
    sizes = data.meta.get("data")
    t = data.trials
    if not isinstance(sizes, dict) or "perturb_seconds" not in t:
        return pd.DataFrame(columns=["label", "interactions", "seconds"])
    t = t[t.family.fillna("").str.startswith("casper-")] if "family" in t else t.iloc[0:0]
    rows = [{"label": "CASPER (audit trials)", "interactions": float(sizes[d]["interactions"]),
             "seconds": float(g.perturb_seconds.mean())}
            for d, g in t.groupby("dataset")
            if isinstance(sizes.get(d), dict) and "interactions" in sizes[d]]
    out = pd.DataFrame(rows, columns=["label", "interactions", "seconds"])
    return out if out.interactions.nunique() >= 2 else out.iloc[0:0]


def runtime_figure(data: ReportData) -> Figure | None:
    """Oh et al. 2022 Figure 8(b): CASPER runtime against the number of interactions (log-log),
    with a dotted line of slope 1 (linear scaling) through the smallest point."""
    pts = runtime_points(data)
    if pts.empty:
        return None
    labels = list(dict.fromkeys(pts.label))
    colors = _colors(labels)
    fig, axes = _figure(1, 1, 5.5, 3.2)
    ax = axes[0, 0]
    for lab in labels:
        g = pts[pts.label == lab].sort_values("interactions")
        ax.plot(g.interactions, g.seconds, marker="o", color=colors[lab], label=_wrap(lab, 40))
    first = pts.sort_values("interactions").iloc[0]
    xs = np.array([pts.interactions.min(), pts.interactions.max()])
    ax.plot(xs, first.seconds * xs / first.interactions, ":", color="#6b7280",
            label="linear scaling")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("interactions")
    ax.set_ylabel("seconds")
    ax.legend(loc="upper left")
    return fig


_POS = ("beginning", "middle", "end")
_POS_COLORS = {"beginning": "#0072B2", "middle": "#009E73", "end": "#D55E00"}


def position_figure(data: ReportData, dataset: str, model: str) -> Figure | None:
    """Betello et al. 2023 Figures 1-3: NDCG@k, MRR, HR@k, FRBO@k and Jaccard@k versus n items removed
    at the beginning, middle or end (dashed, means with 95 % intervals). The solid line is the
    baseline: the unperturbed model for accuracy; for RLS the seed-only level (another
    training seed on the same data) when the audit ran it."""
    s = data.agg[(data.agg.dataset == dataset) & (data.agg.model_label == model)]
    pos = s[s.perturbation.map(lambda p: data.infos[p].position is not None)].copy()
    if pos.empty:
        return None
    pos["position"] = pos.perturbation.map(lambda p: data.infos[p].position)
    pos["n"] = pos.perturbation.map(lambda p: data.infos[p].count)
    seed_only = s[s.perturbation == "seed-only"]
    k = data.k_label
    panels = [("ndcg", f"NDCG{k}"), ("mrr", "MRR"), ("hit", f"HR{k}"), ("frbo", f"FRBO{k}"),
              ("jaccard", f"Jaccard{k}")]
    fig, axes = _figure(2, 3, 10.5, 5.6)
    for ax, (m, name) in zip(axes.flat, panels, strict=False):
        col = f"{m}_pert" if m in ("ndcg", "mrr", "hit") else m
        if m in ("ndcg", "mrr", "hit"):
            base = s[f"{m}_base"].iloc[0]
        else:
            base = seed_only[m].iloc[0] if len(seed_only) else None
        if base is not None and not np.isnan(base):
            ax.axhline(base, color="#111827", linewidth=1.4, label="baseline")
        for p in _POS:
            g = pos[pos.position == p].sort_values("n")
            if g.empty:
                continue
            ax.errorbar(g.n.to_numpy(dtype=float), g[col],
                        yerr=_errors(g, col), color=_POS_COLORS[p], linestyle="--",
                        marker="o", markersize=3.5, linewidth=1.3, capsize=2, label=p)
        ax.set_title(name)
        ax.set_xlabel("items removed (n)")
        ax.xaxis.get_major_locator().set_params(integer=True)
    legend_ax = axes.flat[5]
    legend_ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    notes = ["RLS baseline: seed-only" if len(seed_only) else "RLS: no seed-only trials"]
    legend_ax.legend(handles, labels, loc="center", title=notes[0], fontsize=9)
    return fig

