"""The plain-language reading of an audit's summary, shared by the command line and the
report: each perturbation's effect on the rank lists and on MRR with their 95 % intervals,
against the floors it was measured with, then which perturbation is the most destabilising —
only when the data decide it."""

from __future__ import annotations

from typing import Any

__all__ = ["interval_text", "p_text", "reading"]

_FLOOR_WORDS = {"seed_only": "retraining with another seed alone",
                "rerun": "refitting with the same data and seed"}


def interval_text(row: Any, m: str, signed: bool = False, sep: str = " ") -> str:
    """``mean [low, high]`` of measure ``m`` in a :func:`recaudit.audit.summary` row (``sep``
    between the two: a newline stacks them in a table cell)."""
    mean, low, high = row[m], row[f"{m}_ci_low"], row[f"{m}_ci_high"]
    if mean != mean:
        return "–"
    fmt = "{:+.4f}" if signed else "{:.4f}"
    if low != low:
        return fmt.format(mean)
    return f"{fmt.format(mean)}{sep}[{fmt.format(low)}, {fmt.format(high)}]"


def p_text(p: float) -> str:
    return "–" if p != p else (f"{p:.2g}" if p < 0.001 else f"{p:.3f}")


def _n(compared: int) -> str:
    return f"{compared} comparison" + ("" if compared == 1 else "s")


def reading(frame: Any, verdicts: Any = None) -> list[str]:
    """Plain-language reading of :func:`recaudit.audit.summary` (module docstring);
    ``verdicts``: :func:`recaudit.audit.most_destabilising`."""
    from recaudit.audit._decide import floor_of

    lines = []
    for (dataset, model), g in frame.groupby(["dataset", "model"], sort=False):
        for _, r in g.iterrows():
            if floor_of(r.perturbation):
                continue
            text = (f"{model} on {dataset}: {r.perturbation} left the rank lists at RBO "
                    f"{interval_text(r, 'rbo')} and Jaccard@k {interval_text(r, 'jaccard')} (1 = unchanged) "
                    f"while MRR moved by {interval_text(r, 'mrr_change', True)}")
            for name, what in _FLOOR_WORDS.items():
                f = g[g.perturbation.map(floor_of) == name]
                if not len(f):
                    continue
                p = r.get(f"p_vs_{name}", float("nan"))
                side = "more" if r.rbo < f.rbo.iloc[0] else "less"
                text += (f"; {what} gives RBO {f.rbo.iloc[0]:.4f} ("
                         + (f"{r.perturbation} is significantly {side} destabilising"
                            if p < 0.05 else "not distinguishable from "
                            f"{r.perturbation}") + f", p = {p_text(p)})")
            lines.append(text + ".")
        found = verdicts[(verdicts.dataset == dataset) & (verdicts.model == model)] \
            if verdicts is not None and len(verdicts) else None
        if found is not None and len(found):
            v = found.iloc[0]
            lines.append(
                f"{model} on {dataset}: {v.lowest} is the most destabilising perturbation "
                f"(p = {p_text(v.p)} against {v.runner_up}, Holm over {_n(v.compared)})."
                if v.decided else
                f"{model} on {dataset}: no perturbation is the most destabilising at this "
                f"size: the lowest, {v.lowest}, cannot be told apart from {v.runner_up} (p = "
                f"{p_text(v.p)}, Holm over {_n(v.compared)}).")
    return lines
