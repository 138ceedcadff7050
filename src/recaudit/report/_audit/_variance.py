"""Where each perturbation's variation comes from (:func:`recaudit.audit.variance_shares`),
and the decisions of an audit run until decided (:func:`recaudit.audit.run_until_decided`),
as report tables."""

from __future__ import annotations

from recaudit.report._data import ReportData
from recaudit.report._document import Cell, Table, _mean_ci, _text

__all__ = ["variance_table", "rounds_table"]

_SOURCES = ("seed", "draw", "query", "residual")


def variance_table(data: ReportData) -> Table | None:
    """Per (dataset, model, perturbation): each source's share of one measurement's variance
    and of the mean's (what more seeds or draws would shrink)."""
    from recaudit.audit import variance_shares

    frame = variance_shares(data.source)
    if frame.empty:
        return None
    rows = []
    for r in frame.itertuples():
        rows.append((_text(r.dataset), _text(r.model), _text(r.perturbation),
                     _text(f"{r.seeds} × {r.draws}"),
                     *(Cell(f"{getattr(r, f'share_{k}'):.0%} / "
                            f"{getattr(r, f'mean_share_{k}'):.0%}",
                            float(getattr(r, f"mean_share_{k}"))) for k in _SOURCES)))
    return Table("rls-variance", "Where the variation comes from",
                 ("dataset", "model", "perturbation", "seeds × draws", "seed", "draw",
                  "test query", "seed × query"), tuple(rows), n_labels=4,
                 caption="The variance of each perturbation's per-query RBO split into its "
                         "sources (a random-effects ANOVA over seeds, draws within a seed and "
                         "test queries). Each cell: its share of the variance of one "
                         "per-query RBO (one query in one trial) / its share of the variance "
                         "of the mean RBO the tables report, at these counts — what more "
                         "seeds (or draws) would shrink. seed: a seed moving every query's "
                         "RBO alike; test query: a query's RBO whatever the seed; seed × "
                         "query: a query's own response to the seed (or draw), and noise. "
                         "Both seed columns are the seed's doing: a seed-only floor at seed "
                         "0 % and seed × query 100 % has another seed change which queries' "
                         "lists agree, not their average. A large seed share for a "
                         "perturbation: the seed moves its mean as much as the perturbation "
                         "does.")


def rounds_table(data: ReportData) -> Table | None:
    """The decisions of an audit run with ``--until-decided`` (its plan kept in the store's
    ``rounds``), or None."""
    from recaudit.audit import AuditConfig, comparison_name, decisions_of_rounds

    found = decisions_of_rounds(data.source, AuditConfig.from_dict)
    if found is None:
        return None
    frame, plan, rounds = found
    rows = [(_text(r.dataset), _text(r.model or "–"),
             _text(comparison_name(r, several=False)), _text(r.decision),
             _mean_ci(r.difference, r.low, r.high, signed=True), _text(str(r.look)),
             _text(r.reason)) for r in frame.itertuples()]
    margin = f", equivalence within ±{plan.margin:g}" if plan.margin else ""
    return Table("rls-rounds", "Decided in rounds", ("dataset", "model", "comparison",
                                                      "decision", "ΔRBO", "replicates", "why"),
                 tuple(rows), n_labels=3,
                 caption=f"The audit ran until decided ({len(rounds)} round(s), cap "
                         f"{plan.cap}{margin}): each comparison was tested after every round by "
                         "repeated p-values on the ladder of looks 3, 4, 6, 8, 12, ... "
                         "replicates, Holm over the run's comparisons, so the family-wise "
                         f"error rate stays at {plan.alpha:g} however many rounds ran; the "
                         "interval is the last look's at the level that comparison was "
                         "tested at.")
