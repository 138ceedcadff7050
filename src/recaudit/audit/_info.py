"""The audit as the readers of a results store see it (:data:`STUDY`, listed by
:mod:`recaudit.studies`): its tables, the columns ``recaudit status`` counts trials by, and
its summaries, whose analysis (pandas, scipy.stats) is imported when one is asked for."""

from __future__ import annotations

from typing import Any

from recaudit.audit._store import PERTURBATIONS, QUERY_RESULTS, TRIALS
from recaudit.experiment import Store, StudyInfo

__all__ = ["STUDY"]


def _trial_summary(store: Store) -> Any:
    """:func:`recaudit.audit.trial_summary`."""
    from recaudit.audit._analysis import trial_summary

    return trial_summary(store)


def _decisions(store: Store) -> Any:
    """:func:`recaudit.audit.summary`."""
    from recaudit.audit._decide import summary

    return summary(store)


#: What :mod:`recaudit.studies` lists for the audit.
STUDY = StudyInfo("audit", "stability audit", (TRIALS, QUERY_RESULTS, PERTURBATIONS),
                  breakdown=("dataset", "model_label", "perturbation"), summary=_trial_summary,
                  decisions=_decisions)
