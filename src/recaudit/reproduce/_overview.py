"""The reproduction page's first table: per experiment and record, the scale, the repetitions
the record's samples hold and the verdict, then the verdicts counted per scale — those on the
papers' data apart from those on data that stands in for it.

Repetitions are read from the samples (:class:`recaudit.reproduce.Measures`), not from the
scale's plan, so a run cut with ``--seeds`` / ``--draws`` or stopped part-way shows what it
actually holds: replicates ``"<seed>:<draw>"`` give seeds and draws per seed (a perturbation
that draws nothing at random counts one draw), other replicates are seeds; units (test
queries, users, modification sets: :attr:`Experiment.unit`) are counted per key and replicate.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

import pandas as pd

from recaudit.reproduce._experiment import OTHER_DATA_VERDICTS, VERDICTS, Experiment

__all__ = ["overview", "repetitions"]


def _plural(n: int, words: str) -> str:
    """``n`` and ``words`` (``"sets per cell"``), the first word singular for 1."""
    first, _, rest = words.partition(" ")
    if n == 1 and first.endswith("s"):
        first = first[:-1]
    return f"{n:,} {first}" + (f" {rest}" if rest else "")


def _span(values: set[int], word: str) -> str:
    lo, hi = min(values), max(values)
    return _plural(hi, word) if lo == hi else f"{lo:,}-{hi:,} {word}"


def repetitions(exp: Experiment, scope: Mapping[str, Any] | None,
                samples: Mapping[str, pd.DataFrame],
                sequential: Mapping[str, Any] | None = None) -> str:
    """The repetitions behind a record (module docstring), e.g. ``"1 seed × 10 draws, 18,340
    queries"``; ``scope``: the record's (a run cut with ``--seeds`` / ``--draws`` says so);
    ``sequential``: the record's entry of a run until decided (its rounds and cap are said
    instead of the scope the last round reached)."""
    frames = [f for f in samples.values() if len(f)]
    if not frames:
        return "exact values (no samples)" + (f" (the paper: {exp.paper_repetitions})"
                                              if exp.paper_repetitions else "")
    seeds: set[str] = set()
    draws: set[int] = set()
    units: set[int] = set()
    for f in frames:
        # the replicates' few distinct names, not their hundreds of thousands of rows
        codes, names = pd.factorize(f["replicate"].astype(str))
        if all(":" in n for n in names):
            by_seed: dict[str, set[str]] = {}
            for seed, draw in (str(n).split(":", 1) for n in names):
                by_seed.setdefault(seed, set()).add(draw)
            seeds.update(by_seed)
            draws.add(max(len(d) for d in by_seed.values()))
        else:
            seeds.update(str(n) for n in names)
            draws.add(1)
        units.update(int(n) for n in f.groupby(codes)["unit"].nunique())
    text = _plural(len(seeds), "seeds")
    if max(draws) > 1:
        text += f" × {max(draws)} draws" + (" (1 for a perturbation that draws nothing)"
                                             if 1 in draws else "")
    if max(units) > 1:
        text += ", " + _span(units, exp.unit)
    cut = " ".join(f"--{k} {scope[k]}" for k in ("seeds", "draws")
                   if scope and scope.get(k) is not None)
    if sequential:
        n = len(sequential.get("rounds", ()))
        cap = sequential.get("cap")
        most = f", at most {cap:,} {sequential.get('grows', 'seeds')}" if cap else ""
        cut = f"run until decided in {_plural(n, 'rounds')}{most}" if n else ""
    else:
        cut = f"run with {cut}" if cut else ""
    said = ([cut] if cut else []) + \
        ([f"the paper: {exp.paper_repetitions}"] if exp.paper_repetitions else [])
    return text + (f" ({'; '.join(said)})" if said else "")


def _tally(verdicts: list[str]) -> str:
    counts = Counter(verdicts)
    return ", ".join(f"{counts[v]} {v}" for v in VERDICTS if counts[v])


def overview(exps: list[Experiment], recs: Mapping[str, list[dict[str, Any]]],
             anchor) -> list[str]:
    """The first table (one row per record; an experiment without one gets a row saying
    why) and the count of verdicts per scale (module docstring). ``anchor(exp)``: the link
    to the experiment's section."""
    lines = ["| experiment | paper | artefacts | scale | repetitions | verdict |",
             "|---|---|---|---|---|---|"]
    for e in exps:
        head = [f"[{e.name}](#{anchor(e)})", e.paper, e.artefacts]
        rows: list[dict[str, Any] | None] = list(recs[e.name]) or [None]
        for i, r in enumerate(rows):
            cells = head if i == 0 else ["", "", ""]
            if r is None:
                state = "not run" + (" (data unavailable)" if e.unavailable else "")
                cells = cells + ["–", "–", state]
            else:
                cells = cells + [r["scale"], r["repetitions"], r["verdict"]]
            lines.append("| " + " | ".join(cells) + " |")
    lines.append("")
    scales = list(dict.fromkeys(r["scale"] for e in exps for r in recs[e.name]))
    scales.sort(key=lambda s: (s != "paper", s))
    counted = []
    for scale in scales:
        got = [r["verdict"] for e in exps for r in recs[e.name] if r["scale"] == scale]
        own = [v for v in got if v not in OTHER_DATA_VERDICTS]
        other = [v for v in got if v in OTHER_DATA_VERDICTS]
        text = f"- scale **{scale}**: {len(got)} record(s)"
        if own:
            text += f"; on the papers' data: {_tally(own)}"
        if other:
            text += (f"; counted apart, on data that stands in for the paper's: "
                     f"{_tally(other)}")
        counted.append(text)
    unrecorded = [e.name for e in exps if not recs[e.name]]
    if unrecorded:
        counted.append(f"- not recorded: {len(unrecorded)} ({', '.join(unrecorded)})")
    return lines + ["Verdicts per scale (a claim tested on other data than the paper's holds "
                    "or differs there; it is never counted as contradicting the paper):", ""] \
        + counted + [""]
