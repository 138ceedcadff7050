"""Figures of MIRROR results (seed 002, Figs. 7, 8 and 10), drawn with matplotlib (lazy import)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["plot_mirror"]


def plot_mirror(rows: Sequence[dict], path: str, *, rounds_mix: float = 0.5) -> None:
    """Write a PNG/PDF/SVG figure of result ``rows`` (from :func:`run_mirror`) to ``path``.

    Panel 1: CTR vs FCTR of every algorithm over mix ratios (a trajectory from low to high
    ``alpha``, means over seeds; oracles as dashed reference lines), as Figs. 7/8. For the
    sequential scenario, panels 2 and 3 show CTR and Preference Shift per round (Fig. 10) for the
    mix ratio closest to ``rounds_mix`` and the oracles.
    """
    import matplotlib
    import pandas as pd
    from matplotlib.figure import Figure  # no pyplot: no global backend or figure state

    df = pd.DataFrame(list(rows))
    if df.empty:
        raise ValueError("no result rows to plot")
    overall = df[df["round"].isna()]
    per_round = df[df["round"].notna()]
    n_panels = 3 if not per_round.empty else 1
    fig = Figure(figsize=(5.2 * n_panels, 4.2))
    axes = fig.subplots(1, n_panels, squeeze=False)
    ax = axes[0, 0]
    colours = matplotlib.rcParams["axes.prop_cycle"].by_key()["color"]
    oracles = overall[overall["mix"].isna()]
    for j, (name, sub) in enumerate(oracles.groupby("algorithm", sort=True)):
        m = sub.groupby("metric")["value"].mean()
        col = colours[j % len(colours)]
        ax.axvline(m.get("ctr", np.nan), ls="--", lw=1, color=col, label=f"{name} CTR")
        ax.axhline(m.get("fctr", np.nan), ls=":", lw=1, color=col, label=f"{name} FCTR")
    algos = overall[overall["mix"].notna()]
    for j, (name, sub) in enumerate(algos.groupby("algorithm", sort=True)):
        piv = sub.pivot_table(index="mix", columns="metric", values="value", aggfunc="mean")
        piv = piv.sort_index()
        col = colours[(j + 2) % len(colours)]
        ax.plot(piv["ctr"], piv["fctr"], "-o", color=col, label=name, ms=4)
        for mix, r in piv.iterrows():
            ax.annotate(f"{mix:g}", (r["ctr"], r["fctr"]), fontsize=7, xytext=(3, 3),
                        textcoords="offset points")
        if len(piv) > 1:
            a, b = piv.iloc[-2], piv.iloc[-1]
            ax.annotate("", (b["ctr"], b["fctr"]), (a["ctr"], a["fctr"]),
                        arrowprops={"arrowstyle": "->", "color": col})
    ax.set_xlabel("CTR")
    ax.set_ylabel("FCTR")
    ax.set_title(f"{df['scenario'].iloc[0]}: CTR vs FCTR over mix ratios")
    ax.legend(fontsize=7)
    if n_panels == 3:
        mixes = np.array(sorted(per_round["mix"].dropna().unique()))
        chosen = mixes[np.argmin(np.abs(mixes - rounds_mix))] if mixes.size else None
        sel = per_round[per_round["mix"].isna() | (per_round["mix"] == chosen)]
        for ax, met, title in ((axes[0, 1], "ctr", "CTR"), (axes[0, 2], "ps", "Preference Shift")):
            for name, sub in sel[sel["metric"] == met].groupby("algorithm", sort=True):
                curve = sub.groupby("round")["value"].mean()
                ax.plot(curve.index, curve.values, label=name)
            ax.set_xlabel("round")
            ax.set_ylabel(title)
            ax.set_title(f"{title} per round (mix {chosen:g})" if chosen is not None else title)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
