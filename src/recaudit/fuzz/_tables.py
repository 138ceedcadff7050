"""Study analysis: Welch's t-tests and Tables 4.5-4.9 of Shriver 2018.

:func:`significance` compares, for every (model, size), each heuristic's per-set instability
with the random baseline of the same modification type (add: ARAND, remove: RRAND, change:
CBRAND; ZERO and APORTFOLIO against ARAND, CTRAND against CBRAND) by Welch's t-test
(``scipy.stats.ttest_ind(equal_var=False)``, one-sided in each direction). Marks as in the
thesis: **bold** when the heuristic's expected instability is greater than the baseline's
(``p < alpha``), *italic* when lower, and ``*`` when the mean reaches the threshold ``δ``
(the oracle ``mean < δ`` fails). Two samples without variance give no test (no mark).
Each row also carries the 95 % interval of its mean over the sets and the smallest difference
from the baseline that the sets could have detected (:mod:`recaudit.stats`; 80 % power at
``alpha``, two-sided): with five sets per cell, as the thesis, it is often larger than the
differences the table shows.
"""

from __future__ import annotations

import pandas as pd

from recaudit.fuzz._heuristics import BASELINE_OF, KIND_OF

__all__ = ["significance", "instability_table", "time_table", "portfolio_table", "TABLES"]

#: Column layouts of Tables 4.6 (add), 4.7 (remove), 4.8 (change).
TABLES = {"add": ("ZERO", "ARAND", "AMU", "ALI", "AMR", "AMA"),
          "remove": ("RRAND", "RMU"), "change": ("CBRAND", "CTRAND", "CMU")}


def significance(results: pd.DataFrame, metric: str = "topout", alpha: float = 0.05
                 ) -> pd.DataFrame:
    """One row per (model, size, heuristic): mean, its interval (``ci_low``, ``ci_high``),
    variance, n, delta, baseline, one-sided p-values, ``detectable`` (the difference from the
    baseline detectable at ``alpha`` with 80 % power), the mark (``bold``/``italic``/``""``)
    and ``exceeds`` (mean >= delta)."""
    from recaudit.stats import estimate_mean, welch

    rows = []
    for (model, size), g in results.groupby(["model", "size"], sort=True):
        by = {h: gh[metric].to_numpy(dtype=float) for h, gh in g.groupby("heuristic")}
        kinds = g.groupby("heuristic")["kind"].first().to_dict() if "kind" in g else {}
        delta = float(g["delta"].iloc[0])
        for h, x in sorted(by.items()):
            base = BASELINE_OF.get(h)
            p_gt = p_lt = detectable = float("nan")
            if base is not None and base in by:
                diff = welch(x, by[base])
                if diff.design == "two-sample":  # no test between two constant samples
                    p_gt, p_lt = diff.p_value(0, "greater"), diff.p_value(0, "less")
                    detectable = diff.detectable(alpha)
            mark = "bold" if p_gt < alpha else "italic" if p_lt < alpha else ""
            low, high = estimate_mean(x).interval()
            rows.append({"model": model, "size": int(size), "heuristic": h,
                         "kind": kinds.get(h) or KIND_OF.get(h) or "none", "n": len(x),
                         "mean": x.mean(), "ci_low": low, "ci_high": high,
                         "detectable": detectable,
                         "variance": x.var(ddof=1) if len(x) > 1 else float("nan"),
                         "delta": delta, "baseline": base if base in by else None,
                         "p_greater": p_gt, "p_less": p_lt, "mark": mark,
                         "exceeds": bool(x.mean() >= delta)})
    return pd.DataFrame(rows)


def _cell(row: pd.Series, style: str, digits: int) -> str:
    text = ("*" if row["exceeds"] else "") + f"{row['mean']:.{digits}f}"
    if style == "plain" or not row["mark"]:
        return text
    if style == "markdown":
        return f"**{text}**" if row["mark"] == "bold" else f"_{text}_"
    return f"[bold]{text}[/bold]" if row["mark"] == "bold" else f"[italic]{text}[/italic]"


def _pivot(sig: pd.DataFrame, columns: list[str], style: str, digits: int) -> pd.DataFrame:
    sig = sig[sig["heuristic"].isin(columns)]
    if sig.empty:
        return pd.DataFrame()
    cells = sig.assign(config=sig["model"] + "," + sig["size"].astype(str),
                       cell=[_cell(r, style, digits) for _, r in sig.iterrows()])
    order = cells.sort_values(["model", "size"])["config"].drop_duplicates().tolist()
    table = cells.pivot(index="config", columns="heuristic", values="cell")
    return table.reindex(index=order, columns=[c for c in columns if c in table.columns]).fillna("")


def instability_table(sig: pd.DataFrame, kind: str = "add", *, style: str = "markdown",
                      digits: int = 6, columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """Tables 4.6 / 4.7 / 4.8: rows ``Model,M``, columns the heuristics of one modification
    type, cells the mean instability with marks (``style``: markdown, rich or plain)."""
    cols = list(columns or TABLES.get(kind, ()))
    if columns is None:
        extra = sorted(set(sig["heuristic"]) - set(cols) - {"APORTFOLIO"})
        cols += [h for h in extra if KIND_OF.get(h) == kind]
    return _pivot(sig, cols, style, digits)


def portfolio_table(sig: pd.DataFrame, *, style: str = "markdown", digits: int = 6
                    ) -> pd.DataFrame:
    """Table 4.9: ARAND, the best single add heuristic of each row, APORTFOLIO."""
    rows = []
    for (model, size), g in sig.groupby(["model", "size"], sort=True):
        g = g.set_index("heuristic")
        if "APORTFOLIO" not in g.index:
            continue
        singles = g[(g["kind"] == "add") & ~g.index.isin(["ARAND", "APORTFOLIO"])]
        best = singles["mean"].idxmax() if len(singles) else None
        rows.append({"config": f"{model},{size}",
                     "ARAND": _cell(g.loc["ARAND"], style, digits) if "ARAND" in g.index else "",
                     "Best Heuristic": "" if best is None else
                     f"{_cell(g.loc[best], style, digits)} ({best})",
                     "APORTFOLIO": _cell(g.loc["APORTFOLIO"], style, digits)})
    return pd.DataFrame(rows).set_index("config") if rows else pd.DataFrame()


def time_table(results: pd.DataFrame, *, kind: str | None = "add") -> pd.DataFrame:
    """Table 4.5: mean and variance of the time (s) to generate a set, per heuristic and size
    (``kind`` restricts to one modification type; ``None`` keeps all)."""
    r = results if kind is None else results[results["kind"] == kind]
    if r.empty:
        return pd.DataFrame()
    t = r.groupby(["heuristic", "size"])["gen_seconds"].agg(mean="mean", variance="var")
    return t.unstack("size").swaplevel(axis=1).sort_index(axis=1)
