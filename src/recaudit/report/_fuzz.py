"""The fuzzing study's tables (Shriver 2018 Chapter 4): generation times (Table 4.5), mean
instability with Welch marks (Tables 4.6-4.8), the portfolio (Table 4.9) and the setup."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pandas as pd

from recaudit.report._data import ReportData
from recaudit.report._document import Cell, Section, Table, _flatten, _num, _slug, _text

FUZZ_METRIC = "topout"
#: Welch's t-test level of Shriver 2018 §4.2.
FUZZ_ALPHA = 0.05
#: Decimals of a mean instability: the thesis prints six (TopOut means of 0.000011 are common:
#: one user in 100,000 lost their top item), and four would show them as 0.
DECIMALS = 6

def fuzz_significance(data: ReportData) -> dict[str, pd.DataFrame]:
    """:func:`recaudit.fuzz.significance` per dataset of the fuzzing trials (cached)."""
    from recaudit.fuzz import significance

    if data.fuzz is None or data.fuzz.empty:
        return {}
    if "fuzz_sig" not in data._cache:
        data._cache["fuzz_sig"] = {d: significance(g, metric=FUZZ_METRIC, alpha=FUZZ_ALPHA)
                                   for d, g in data.fuzz.groupby("dataset", sort=False)}
    return data._cache["fuzz_sig"]


def _fuzz_title(base: str, dataset: str, n: int) -> str:
    return base if n == 1 else f"{base} · {dataset}"


def fuzz_time_table(data: ReportData) -> list[Table]:
    """Table 4.5: mean and variance of the seconds to generate one modification set, per
    heuristic (rows, grouped by modification type) and size M (columns)."""
    from recaudit.fuzz import KIND_OF, TABLES, time_table

    if data.fuzz is None or data.fuzz.empty:
        return []
    out = []
    datasets = list(dict.fromkeys(data.fuzz.dataset))
    for dataset, res in data.fuzz.groupby("dataset", sort=False):
        t = time_table(res, kind=None)
        if t.empty:
            continue
        sizes = sorted({s for s, _ in t.columns})
        order = [h for kind in TABLES.values() for h in kind]
        kinds = res.groupby("heuristic")["kind"].first().to_dict()
        ranks = {k: i for i, k in enumerate(("none", "add", "remove", "change"))}
        heur = sorted(t.index, key=lambda h: (ranks.get(str(kinds.get(h) or KIND_OF.get(h)), 9),
                                              order.index(h) if h in order else len(order), h))
        rows = []
        for h in heur:
            cells = [_text(kinds.get(h) or KIND_OF.get(h) or ""), _text(h)]
            for s in sizes:
                for stat in ("mean", "variance"):
                    v = _num(t.loc[h, (s, stat)])
                    cells.append(Cell("–" if v is None else f"{v:.3g}", v))
            rows.append(tuple(cells))
        cols = ("type", "heuristic", *(f"M={s} {x}" for s in sizes for x in ("mean s", "var")))
        out.append(Table(f"fuzz-time-{_slug(dataset)}",
                         _fuzz_title("Time to generate a modification set", dataset,
                                     len(datasets)), cols, tuple(rows), n_labels=2,
                         caption="Seconds per set over all models and sets: mean and variance "
                                 "(Shriver 2018 Table 4.5)."))
    return out


def _fuzz_cell(r: pd.Series | None) -> Cell:
    if r is None:
        return Cell("")
    mean = _num(r["mean"])
    mark = r["mark"] or None
    p = _num(r["p_greater"] if mark == "bold" else r["p_less"] if mark == "italic"
             else min(r["p_greater"], r["p_less"]))
    text = ("*" if r["exceeds"] else "") + ("–" if mean is None else f"{mean:.{DECIMALS}f}")
    return Cell(text, mean, mark, mark is not None, p)


def _split_config(config: str) -> tuple[str, str]:
    model, size = str(config).rsplit(",", 1)
    return model, size


def fuzz_instability_tables(data: ReportData) -> list[Table]:
    """Tables 4.6 (add), 4.7 (remove), 4.8 (change): rows (model, M), columns heuristics
    (the layout of :func:`recaudit.fuzz.instability_table`), cells the mean instability."""
    from recaudit.fuzz import instability_table

    out = []
    sigs = fuzz_significance(data)
    names = {"add": "4.6", "remove": "4.7", "change": "4.8"}
    for dataset, sig in sigs.items():
        idx = sig.set_index(["model", "size", "heuristic"])
        for kind, num in names.items():
            layout = instability_table(sig, kind, style="plain")
            if layout.empty:
                continue
            rows = []
            for config in layout.index:
                model, size = _split_config(config)
                cells = [_text(model), Cell(size, float(size))]
                for h in layout.columns:
                    key = (model, int(size), h)
                    cells.append(_fuzz_cell(idx.loc[key] if key in idx.index else None))
                rows.append(tuple(cells))
            out.append(Table(
                f"fuzz-{kind}-{_slug(dataset)}",
                _fuzz_title(f"Mean {FUZZ_METRIC} instability, {kind} modifications", dataset,
                            len(sigs)),
                ("model", "M", *layout.columns), tuple(rows), n_labels=1,
                caption=f"Mean over the modification sets (Shriver 2018 Table {num}). Bold: greater "
                        f"than the random baseline of the same type, italic: lower (Welch's "
                        f"t-test, p < {FUZZ_ALPHA:g}); * = mean ≥ δ = 100 M / |D|."))
    return out


def fuzz_distances_table(data: ReportData) -> list[Table]:
    """Every oracle distance side by side: mean AOD, Jaccard and TopOut per (model, M,
    heuristic). TopOut, the thesis' headline, moves only when a user's top item leaves the
    top-k; AOD and Jaccard register smaller changes (Shriver 2018 §4.2.3 reports that FunkSVD
    retrained alone gives TopOut 0 but AOD 0.004)."""
    from recaudit.fuzz import DISTANCES

    if data.fuzz is None or data.fuzz.empty:
        return []
    out = []
    datasets = list(dict.fromkeys(data.fuzz.dataset))
    for dataset, res in data.fuzz.groupby("dataset", sort=False):
        means = res.groupby(["model", "size", "heuristic"], sort=True)[list(DISTANCES)].mean()
        rows = []
        for (model, size, heuristic), r in means.iterrows():
            rows.append((_text(model), Cell(str(size), float(size)), _text(heuristic),
                         *(Cell(f"{r[d]:.{DECIMALS}f}", float(r[d])) for d in DISTANCES)))
        zero = [d for d in DISTANCES if (means[d] == 0).all()]
        note = (f" Every {', '.join(zero)} mean is 0 here: the modifications changed lists "
                "without moving any user's top item out of the top-k." if zero else "")
        out.append(Table(f"fuzz-distances-{_slug(dataset)}",
                         _fuzz_title("Mean instability by oracle distance", dataset,
                                     len(datasets)),
                         ("model", "M", "heuristic", *DISTANCES), tuple(rows), n_labels=3,
                         caption="Mean over the modification sets of each distance between "
                                 "the top-k lists before and after: AOD (eq. 4.11), Jaccard "
                                 "distance (eq. 4.12), TopOut (eq. 4.13)." + note))
    return out


def fuzz_portfolio_table(data: ReportData) -> list[Table]:
    """Table 4.9: ARAND, the best single add heuristic (named) and APORTFOLIO per (model,
    M), from :func:`recaudit.fuzz.portfolio_table`."""
    from recaudit.fuzz import portfolio_table

    out = []
    sigs = fuzz_significance(data)
    for dataset, sig in sigs.items():
        layout = portfolio_table(sig, style="plain")
        if layout.empty:
            continue
        idx = sig.set_index(["model", "size", "heuristic"])
        rows = []
        for config, r in layout.iterrows():
            model, size = _split_config(config)
            best = re.search(r"\((\w+)\)$", str(r["Best Heuristic"]))

            def cell(h: str | None) -> Cell:
                key = (model, int(size), h)
                return _fuzz_cell(idx.loc[key] if h and key in idx.index else None)

            name = best.group(1) if best else None
            top = cell(name)
            rows.append((_text(model), Cell(size, float(size)), cell("ARAND"),
                         replace(top, text=f"{top.text} ({name})") if name else Cell(""),
                         cell("APORTFOLIO")))
        out.append(Table(
            f"fuzz-portfolio-{_slug(dataset)}",
            _fuzz_title(f"APORTFOLIO: mean {FUZZ_METRIC} instability", dataset, len(sigs)),
            ("model", "M", "ARAND", "best heuristic", "APORTFOLIO"), tuple(rows),
            caption="Round-robin portfolio of add heuristics against the random baseline and "
                    "the best single add heuristic of the row (Shriver 2018 Table 4.9); marks as "
                    "above."))
    return out


def fuzz_setup_table(data: ReportData) -> Table | None:
    """The fuzzing study's configuration and data (``fuzz_meta`` keys ``study``, ``data``),
    flattened to dotted keys."""
    rows = [(_text(f"{key}.{k}"), _text(v)) for key in ("study", "data")
            if isinstance(data.fuzz_meta.get(key), dict)
            for k, v in _flatten(data.fuzz_meta[key])]
    return Table("fuzz-config", "Fuzzing configuration", ("key", "value"), tuple(rows),
                 n_labels=2) if rows else None


def sections(data: ReportData, fig: Any) -> list[Section]:
    """The fuzzing section, where the store holds a fuzzing study."""
    sections: list[Section] = []
    fuzz = Section("fuzz", "Fuzzing: stability under training-data modifications",
                   "Modification sets of size M generated by influence-guided heuristics and "
                   "random baselines; each model is retrained and its top-k lists compared "
                   f"with the original ones ({FUZZ_METRIC}; Shriver 2018 Chapter 4).")
    fuzz.tables += fuzz_time_table(data) + fuzz_instability_tables(data) \
        + fuzz_portfolio_table(data) + fuzz_distances_table(data)
    if fuzz.tables:
        sections.append(fuzz)

    return sections


def facts(data: ReportData) -> list[tuple[str, str]]:
    """The fuzzing study in one line (the report's header)."""
    f = data.fuzz
    if f is None or not len(f):
        return []
    return [("fuzzing", f"{', '.join(dict.fromkeys(f.dataset))} · models "
             f"{', '.join(dict.fromkeys(f.model))} · M = "
             f"{', '.join(str(m) for m in sorted(set(f['size'])))} · "
             f"{f.groupby(['model', 'heuristic', 'size']).size().max()} sets per cell")]
