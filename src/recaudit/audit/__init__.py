"""The stability audit (Oh et al. 2022; Betello et al. 2023): specs, the runner, analysis.

Quick start::

    from recaudit.audit import AuditConfig, ModelSpec, run_audit, trial_summary
    cfg = AuditConfig(models=(ModelSpec("gru4rec", {"epochs": 5}),),
                      perturbations=("random-delete",), seeds=(0, 1, 2), output="a.duckdb")
    trial_summary(run_audit(cfg))

The shared pieces (dataset/split/model/executor specs, data loading, executors, the results
store) come from :mod:`recaudit.experiment` and are re-exported here for convenience.
"""

from recaudit.audit._analysis import (
    METRICS,
    compare_methods,
    paired_query_test,
    query_distribution,
    seed_summary,
    trial_summary,
    user_groups,
)
from recaudit.audit._engine import AuditJob, AuditStudy, plan, run_audit, validate
from recaudit.audit._runner import TrialOutcome, compare, perturb_context, run_trial
from recaudit.audit._spec import (AuditConfig, MetricSpec, TrialSpec, build_model, load_config,
                                  perturbation_label)
from recaudit.audit._stabilise import stabilisation_summary, stabilised_pairs
from recaudit.audit._store import (PERTURBATIONS, QUERY_METRICS, QUERY_RESULTS, TRIALS,
                                   AuditStore, write_trial)
from recaudit.experiment import (
    DatasetSpec,
    ExecutorSpec,
    ModelSpec,
    SplitSpec,
    Store,
    StoreBusyError,
    load_dataset,
    prepare,
)
from recaudit.experiment import StudyInfo as _StudyInfo

#: The audit, as the readers of a store see it (``recaudit status / results / report``).
STUDY = _StudyInfo("audit", "stability audit", (TRIALS, QUERY_RESULTS, PERTURBATIONS),
                   breakdown=("model_label", "perturbation"), summary=trial_summary)

__all__ = ["AuditConfig", "AuditJob", "AuditStore", "AuditStudy", "DatasetSpec",
           "ExecutorSpec", "METRICS", "MetricSpec", "ModelSpec", "PERTURBATIONS",
           "QUERY_METRICS", "QUERY_RESULTS", "STUDY", "SplitSpec", "Store", "StoreBusyError",
           "TRIALS", "TrialOutcome", "TrialSpec", "build_model", "compare", "compare_methods",
           "load_config", "load_dataset", "paired_query_test", "perturb_context",
           "perturbation_label", "plan", "prepare", "query_distribution", "run_audit",
           "run_trial", "seed_summary", "stabilisation_summary", "stabilised_pairs",
           "trial_summary", "user_groups", "validate", "write_trial"]
