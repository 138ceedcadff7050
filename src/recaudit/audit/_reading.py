"""The plain-language reading of an audit's summary, shared by the command line and the
report: one short line per model — which perturbation is the most destabilising, only when the
data decide it, and where the noise floors lie among the perturbations — and, with several
models, one line per pair of models: which is the more stable, where the paired tests decide.
Each perturbation's numbers, with their 95 % intervals and p-values, are in the tables beside
it."""

from __future__ import annotations

from typing import Any

__all__ = ["FEW_QUERIES", "interval_text", "model_reading", "p_text", "reading"]

_FLOOR_WORDS = {"seed_only": "seed-only floor", "rerun": "rerun floor"}
#: Significance level of the reading's words ("more/less destabilising than the floor").
ALPHA = 0.05
#: Fewer test queries than this, and the reading says that its intervals and p-values rest
#: on too few users to trust (a paired test over a handful of queries leans on assumptions
#: it cannot check; Shapiro-Wilk itself needs dozens of values to see a departure).
FEW_QUERIES = 30


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


def _names(names: list[str]) -> str:
    return " and ".join(names)


def _floor(g: Any, name: str) -> str | None:
    """Where the floor ``name`` lies among the perturbations of one model (None: absent)."""
    from recaudit.audit._decide import floor_of

    f = g[g.perturbation.map(floor_of) == name]
    rows = g[g.perturbation.map(floor_of).isna()]
    if not len(f) or not len(rows):
        return None
    base, p = f.rbo.iloc[0], rows.get(f"p_vs_{name}")
    if p is None:
        return None
    sig = (p < ALPHA).to_numpy()
    more = list(rows.perturbation[sig & (rows.rbo < base).to_numpy()])
    n_less = int((sig & (rows.rbo >= base).to_numpy()).sum())
    n, same = len(rows), len(rows) - len(more) - n_less
    head = f"{_FLOOR_WORDS[name]} at RBO {base:.4f}: "
    one = rows.perturbation.iloc[0]
    if len(more) == n or n_less == n:
        side = "more" if len(more) == n else "less"
        every = "both perturbations are" if n == 2 else f"all {n} perturbations are"
        return head + (f"{one} is" if n == 1 else every) + f" {side} destabilising"
    if same == n:
        none = "neither perturbation is" if n == 2 else f"none of the {n} perturbations is"
        return head + (f"{one} is not" if n == 1 else none) + " told apart from it"
    parts = ([f"{_names(more) if len(more) <= 2 else len(more)} more destabilising"]
             if more else []) + ([f"{n_less} less"] if n_less else []) \
        + ([f"{same} not told apart"] if same else [])
    return head + ", ".join(parts) + f" (of {n})"


def reading(frame: Any, verdicts: Any = None) -> list[str]:
    """The reading of :func:`recaudit.audit.summary` in one short line per (dataset, model):
    the most destabilising perturbation when the paired tests decide it (``verdicts``:
    :func:`recaudit.audit.most_destabilising`, Holm-adjusted p against the runner-up), else
    "undecided" with the two it cannot tell apart; then where each noise floor lies among the
    perturbations (significantly more or less destabilising at :data:`ALPHA`, Holm-adjusted,
    or not told apart), or that there is none; and, under :data:`FEW_QUERIES` test queries,
    that they are too few. The numbers behind it are in the summary's tables."""
    from recaudit.audit._decide import floor_of

    lines = []
    for (dataset, model), g in frame.groupby(["dataset", "model"], sort=False):
        perts = g[g.perturbation.map(floor_of).isna()]
        found = verdicts[(verdicts.dataset == dataset) & (verdicts.model == model)] \
            if verdicts is not None and len(verdicts) else None
        if found is not None and len(found):
            v = found.iloc[0]
            said = (f"{v.lowest} is the most destabilising (RBO {v['mean']:.4f}, p = "
                    f"{p_text(v.p)} against {v.runner_up})" if v.decided else
                    f"undecided (lowest: {v.lowest}, RBO {v['mean']:.4f}, not told apart from "
                    f"{v.runner_up}, p = {p_text(v.p)})")
        elif len(perts) == 1:
            said = f"{perts.perturbation.iloc[0]} left RBO {perts.rbo.iloc[0]:.4f}"
        elif len(perts):
            said = "no perturbation could be ranked"
        else:
            said = "floors only"
        floors = [t for t in (_floor(g, name) for name in _FLOOR_WORDS) if t]
        few = int(g.queries.min()) if "queries" in g and len(g) else FEW_QUERIES
        lines.append(f"{model} on {dataset}: {said}; " + ("; ".join(floors) if floors else
                     "no noise floor measured (add -p seed-only to learn what another "
                     "training seed alone changes)")
                     + (f"; only {few} test queries: too few to trust these intervals and "
                        "p-values" if few < FEW_QUERIES else "") + ".")
    return lines


def model_reading(frame: Any) -> list[str]:
    """:func:`recaudit.audit.compare_models` in one line per (dataset, pair of models): under
    which perturbations each model is the more stable (Holm-adjusted p below
    ``compare_models``' ``alpha``), and under which the two are not told apart."""
    lines: list[str] = []
    if frame is None or not len(frame):
        return lines
    for (dataset, a, b), g in frame.groupby(["dataset", "a", "b"], sort=False):
        metric = str(g.metric.iloc[0]).upper()
        parts = []
        for model, other in ((a, b), (b, a)):
            won = g[g.more_stable == model]
            if len(won):
                said = "; ".join(f"{r.perturbation} ({metric} {_pick(r, model):.4f} vs "
                                 f"{_pick(r, other):.4f}, p = {p_text(r.p_holm)})"
                                 for r in won.itertuples())
                parts.append(f"{model} is more stable than {other} under {said}")
        tied = g[g.more_stable == ""]
        if len(tied):
            head = "not told apart under " if parts else f"{a} and {b} are not told apart under "
            if len(tied) <= 3:
                parts.append(head + ", ".join(f"{r.perturbation} (p = {p_text(r.p_holm)})"
                                              for r in tied.itertuples()))
            else:  # a long list says little: how many, and how close the closest came
                others = "the other " if len(parts) else ""
                parts.append(head + f"{others}{len(tied)} perturbations (p >= "
                             f"{p_text(tied.p_holm.min())})")
        lines.append(f"{dataset}: " + "; ".join(parts) + ".")
    return lines


def _pick(row: Any, model: str) -> float:
    return float(row.mean_a if row.a == model else row.mean_b)
