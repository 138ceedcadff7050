"""MIRROR figures (Zhu et al. 2023 Figures 7, 8 and 10) as matplotlib Figure objects, never pyplot.

- :func:`mirror_mix_figure` — CTR, FCTR (and ManiScore) against the mix ratio α, one line per
  algorithm, the initial strategies (oracles) as dashed lines (Figure 7);
- :func:`mirror_trajectory_figure` — CTR against FCTR, one trajectory per algorithm with
  arrows from low to high α, oracles as stars (Figure 8);
- :func:`mirror_rounds_figure` — CTR and Preference Shift per interaction round for the
  oracles and every algorithm at the smallest and the largest α (Figure 10), for scenarios
  with rounds.

Each takes the summary of the result rows (:func:`recaudit.simulate.summarise`: means and
standard deviations over seeds). :func:`write_mirror_figures` writes them as files (what
``recaudit simulate mirror --figure`` does).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from recaudit.report._data import ReportData
from recaudit.report._document import Cell, Section, Table, _mean_ci, _slug, _text
from recaudit.report._plots import PALETTE, _figure, _wrap, legend_columns, style

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["mirror_mix_figure", "mirror_trajectory_figure", "mirror_rounds_figure",
           "write_mirror_figures"]

_ORACLE_COLORS = ("#374151", "#9ca3af", "#6b7280", "#111827")


MIRROR_METRICS = (("ctr", "CTR"), ("fctr", "FCTR"), ("mani_score", "ManiScore"),
                  ("ps", "PS"), ("ndcg", "NDCG"), ("auc", "AUC"))


# ------------------------------------------------------------------------ property templates

def mirror_summary(data: ReportData) -> pd.DataFrame:
    """:func:`recaudit.simulate.summarise` of the stored MIRROR rows (mean, std, count and
    95 % interval over seeds per scenario, algorithm, mix, round and metric)."""
    if data.mirror is None or data.mirror.empty:
        return pd.DataFrame()
    if "mirror" not in data._cache:
        from recaudit.simulate import summarise

        rows = data.mirror.astype({"round": "float64"}).to_dict(orient="records")
        for r in rows:
            for key in ("mix", "round"):
                if r[key] is not None and isinstance(r[key], float) and math.isnan(r[key]):
                    r[key] = None
        data._cache["mirror"] = summarise(rows)
    return data._cache["mirror"]


def mirror_tables(data: ReportData) -> list[Table]:
    """One table per scenario: oracles (the initial strategies) first, then every algorithm
    by mix ratio α; metrics over the whole evaluation (not per round), mean and 95 % interval
    over seeds."""
    s = mirror_summary(data)
    if s.empty:
        return []
    s = s[s["round"].isna()]
    out = []
    for scenario, g in s.groupby("scenario", sort=False):
        metrics = [(m, n) for m, n in MIRROR_METRICS if m in set(g.metric)]
        keys = g[["algorithm", "mix"]].drop_duplicates()
        algos = list(dict.fromkeys(keys.algorithm))
        keys = keys.assign(_o=keys.mix.notna(), _a=keys.algorithm.map(algos.index)) \
            .sort_values(["_o", "_a", "mix"], kind="stable")  # oracles first
        rows = []
        for _, key in keys.iterrows():
            same = g.mix.isna() if pd.isna(key.mix) else g.mix == key.mix
            sub = g[(g.algorithm == key.algorithm) & same].set_index("metric")
            cells = [_text(key.algorithm),
                     Cell("oracle") if pd.isna(key.mix) else Cell(f"{key.mix:g}", key.mix)]
            for m, _ in metrics:
                cells.append(_mean_ci(sub["mean"].get(m), sub["ci_low"].get(m),
                                      sub["ci_high"].get(m)) if m in sub.index else Cell("–"))
            rows.append(tuple(cells))
        seeds = sorted(set(g["count"].astype(int)))
        out.append(Table(
            f"mirror-{_slug(scenario)}", f"MIRROR · {scenario}",
            ("algorithm", "mix α", *(n for _, n in metrics)), tuple(rows), n_labels=1,
            caption=f"Mean [95 % interval] over {'/'.join(map(str, seeds))} "
                    f"seed{'' if seeds == [1] else 's'} (Student's t). "
                    "α = share of training data "
                    "collected by the manipulative oracle; oracles are the initial strategies. "
                    "CTR: click-through rate; FCTR: share of the chosen documents that are favourites; ManiScore "
                    "in [1, e²], 1 = unbiased; PS: Preference Shift = 1 − RBO of the initial "
                    "and final preference lists (Zhu et al. 2023 Defs. 4.1-4.6)."))
    return out


def _split(s: pd.DataFrame, scenario: str, rounds: bool = False
           ) -> tuple[pd.DataFrame, pd.DataFrame]:
    if s.empty:
        return s, s
    s = s[(s.scenario == scenario) & (s["round"].notna() if rounds else s["round"].isna())]
    return s[s.mix.isna()], s[s.mix.notna()]


def _colors(names: list[str]) -> dict[str, str]:
    return {n: PALETTE[i % len(PALETTE)] for i, n in enumerate(names)}


def mirror_mix_figure(summary: pd.DataFrame, scenario: str) -> Figure | None:
    """Zhu et al. 2023 Figure 7: each metric against α (means with 95 % intervals over seeds)."""
    oracles, algos = _split(summary, scenario)
    if algos.empty or algos.mix.nunique() < 2:
        return None
    metrics = [(m, n) for m, n in (("ctr", "CTR"), ("fctr", "FCTR"), ("mani_score", "ManiScore"))
               if m in set(algos.metric)]
    names = list(dict.fromkeys(algos.algorithm))
    colors = _colors(names)
    fig, axes = _figure(1, len(metrics), 3.6 * len(metrics) + 0.6, 3.2)
    for ax, (m, title) in zip(axes[0], metrics, strict=True):
        for name in names:
            g = algos[(algos.algorithm == name) & (algos.metric == m)].sort_values("mix")
            err = np.nan_to_num(np.vstack([g["mean"] - g["ci_low"], g["ci_high"] - g["mean"]]))
            ax.errorbar(g.mix.to_numpy(dtype=float), g["mean"], yerr=err,
                        color=colors[name], marker="o", markersize=3.5, linewidth=1.4,
                        capsize=2, label=_wrap(name, 30))
        for j, (name, o) in enumerate(oracles[oracles.metric == m].groupby("algorithm",
                                                                          sort=False)):
            ax.axhline(float(o["mean"].iloc[0]), color=_ORACLE_COLORS[j % 4], linestyle="--",
                       linewidth=1.1, label=_wrap(name, 30))
        ax.set_xlabel("mix ratio α")
        ax.set_title(title)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center",
               ncols=legend_columns(labels, fig.get_figwidth()))
    return fig


def mirror_trajectory_figure(summary: pd.DataFrame, scenario: str) -> Figure | None:
    """Zhu et al. 2023 Figure 8: CTR (x) against FCTR (y) over α; arrows point to higher α."""
    oracles, algos = _split(summary, scenario)
    if algos.empty or not {"ctr", "fctr"} <= set(algos.metric):
        return None
    names = list(dict.fromkeys(algos.algorithm))
    colors = _colors(names)
    fig, axes = _figure(1, 1, 6.2, 4.2)
    ax = axes[0, 0]
    for name in names:
        piv = algos[algos.algorithm == name].pivot_table(index="mix", columns="metric",
                                                          values="mean").sort_index()
        if not {"ctr", "fctr"} <= set(piv.columns):
            continue
        x, y = piv["ctr"].to_numpy(), piv["fctr"].to_numpy()
        ax.plot(x, y, "-o", color=colors[name], markersize=3.5, linewidth=1.2,
                label=_wrap(name, 30))
        for i in range(len(x) - 1):
            ax.annotate("", (x[i + 1], y[i + 1]), (x[i], y[i]),
                        arrowprops={"arrowstyle": "->", "color": colors[name], "lw": 1.2})
        for mix, xi, yi in zip(piv.index, x, y, strict=True):
            ax.annotate(f"{mix:g}", (xi, yi), fontsize=7, xytext=(3, 3),
                        textcoords="offset points", color="#4b5563")
    for j, (name, o) in enumerate(oracles.groupby("algorithm", sort=False)):
        m = o.set_index("metric")["mean"]
        if {"ctr", "fctr"} <= set(m.index):
            ax.plot([m["ctr"]], [m["fctr"]], marker="*", markersize=11, linestyle="none",
                    color=_ORACLE_COLORS[j % 4], label=_wrap(name, 30))
    ax.set_xlabel("CTR")
    ax.set_ylabel("FCTR")
    ax.grid(True, axis="both")
    ax.legend(loc="best")
    return fig


def mirror_rounds_figure(summary: pd.DataFrame, scenario: str) -> Figure | None:
    """Zhu et al. 2023 Figure 10: CTR and PS per round. Oracles dashed; each algorithm at the
    smallest α (dotted) and the largest α (solid)."""
    oracles, algos = _split(summary, scenario, rounds=True)
    if oracles.empty and algos.empty:
        return None
    panels = [(m, n) for m, n in (("ctr", "CTR"), ("ps", "Preference Shift"))
              if m in set(oracles.metric) | set(algos.metric)]
    names = list(dict.fromkeys(algos.algorithm))
    colors = _colors(names)
    mixes = sorted(set(algos.mix))
    ends = [mixes[0], mixes[-1]] if len(mixes) > 1 else mixes
    fig, axes = _figure(1, len(panels), 4.6 * len(panels) + 0.6, 3.2)
    for ax, (m, title) in zip(axes[0], panels, strict=True):
        for j, (name, o) in enumerate(oracles[oracles.metric == m].groupby("algorithm",
                                                                          sort=False)):
            o = o.sort_values("round")
            ax.plot(o["round"].to_numpy(dtype=float), o["mean"], color=_ORACLE_COLORS[j % 4],
                    linestyle="--", linewidth=1.3, label=_wrap(name, 30))
        for name in names:
            for mix in ends:
                g = algos[(algos.algorithm == name) & (algos.metric == m)
                          & np.isclose(algos.mix, mix)].sort_values("round")
                if g.empty:
                    continue
                style = "-" if mix == ends[-1] else ":"
                ax.plot(g["round"].to_numpy(dtype=float), g["mean"], color=colors[name],
                        linestyle=style, linewidth=1.4, label=f"{_wrap(name, 24)} α={mix:g}")
        ax.set_xlabel("round")
        ax.set_title(f"{title} per round")
        ax.xaxis.get_major_locator().set_params(integer=True)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside upper center",
               ncols=legend_columns(labels, fig.get_figwidth()))
    return fig


def write_mirror_figures(rows: Sequence[dict], path: str | Path) -> list[Path]:
    """Write the figures of MIRROR result ``rows`` (format from the suffix: png, pdf, svg):
    ``path`` the CTR/FCTR trajectories (Figure 8); ``<stem>-mix<suffix>`` the metrics against
    the mix ratio (Figure 7, with two or more ratios); ``<stem>-rounds<suffix>`` CTR and PS per
    round (Figure 10, for scenarios with rounds). Returns the paths written."""
    from recaudit.simulate import summarise

    path = Path(path)
    summary = summarise(rows)
    scenario = str(summary["scenario"].iloc[0])
    out = []
    for make, target in ((mirror_trajectory_figure, path),
                         (mirror_mix_figure, path.with_name(f"{path.stem}-mix{path.suffix}")),
                         (mirror_rounds_figure,
                          path.with_name(f"{path.stem}-rounds{path.suffix}"))):
        with style():
            fig = make(summary, scenario)
            if fig is not None:
                fig.savefig(target)
                out.append(target)
    return out



def sections(data: ReportData, fig: Any) -> list[Section]:
    """The MIRROR section, where the store holds MIRROR results."""
    sections: list[Section] = []
    mirror = Section("mirror", "MIRROR: manipulation benchmark",
                     "Do online gains come from understanding users or from exploiting their "
                     "bounded rationality? Algorithms trained on data mixed from an unbiased and "
                     "a manipulative strategy at ratio α (Zhu et al. 2023 §4-5).")
    mirror.tables += mirror_tables(data)
    if mirror.tables:
        summary = mirror_summary(data)
        for scenario in dict.fromkeys(summary["scenario"]):
            slug = _slug(scenario)
            mirror.figures += fig(f"mix-{slug}", f"Online metrics vs mix ratio · {scenario}",
                                  lambda s=scenario: mirror_mix_figure(summary, s),
                                  "Means with 95 % intervals over seeds; dashed: the initial "
                                  "strategies "
                                  "(Zhu et al. 2023 Figure 7).")
            mirror.figures += fig(f"traj-{slug}", f"CTR vs FCTR over mix ratios · {scenario}",
                                  lambda s=scenario: mirror_trajectory_figure(summary, s),
                                  "Means over seeds, labelled by α; arrows point from low to "
                                  "high α; ★: initial strategies (Zhu et al. 2023 Figure 8).")
            mirror.figures += fig(f"rounds-{slug}", f"CTR and PS per round · {scenario}",
                                  lambda s=scenario: mirror_rounds_figure(summary, s),
                                  "Means over seeds; dashed: oracles; dotted / solid: each "
                                  "algorithm trained at the smallest / largest α (Zhu et al. 2023 "
                                  "Figure 10).")
        sections.append(mirror)
    return sections


def facts(data: ReportData) -> list[tuple[str, str]]:
    """The MIRROR results in one line (the report's header)."""
    m = data.mirror
    if m is None or not len(m):
        return []
    return [("MIRROR", f"{', '.join(dict.fromkeys(m.scenario))} · "
             f"{', '.join(dict.fromkeys(m.algorithm))} · {m.seed.nunique()} seed(s)")]
