"""The audit engine: specs and TOML configs, the runner, executors, the store, analysis.

Quick start::

    from recaudit.audit import AuditConfig, ModelSpec, run_audit, trial_summary
    cfg = AuditConfig(models=(ModelSpec("gru4rec", {"epochs": 5}),),
                      perturbations=("random-delete",), seeds=(0, 1, 2), output="a.duckdb")
    trial_summary(run_audit(cfg))
"""

from recaudit.audit._analysis import (
    METRICS,
    compare_methods,
    seed_summary,
    trial_summary,
    user_groups,
)
from recaudit.audit._config import config_from_dict, config_to_dict, load_config
from recaudit.audit._engine import plan, run_audit
from recaudit.audit._runner import compare, load_dataset, prepare, run_trial
from recaudit.audit._spec import (
    AuditConfig,
    DatasetSpec,
    ExecutorSpec,
    MetricSpec,
    ModelSpec,
    SplitSpec,
    TrialSpec,
)
from recaudit.audit._store import Store, StoreBusyError

__all__ = ["METRICS", "AuditConfig", "DatasetSpec", "ExecutorSpec", "MetricSpec", "ModelSpec",
           "SplitSpec", "Store", "StoreBusyError", "TrialSpec", "compare", "compare_methods",
           "config_from_dict", "config_to_dict", "load_config", "load_dataset", "plan",
           "prepare", "run_audit", "run_trial", "seed_summary", "trial_summary", "user_groups"]
