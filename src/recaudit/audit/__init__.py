"""The stability audit (Oh et al. 2022; Betello et al. 2023): specs, the runner, analysis.

Quick start::

    from recaudit.audit import AuditConfig, ModelSpec, run_audit, summary
    cfg = AuditConfig(models=(ModelSpec("gru4rec", {"epochs": 5}),),
                      perturbations=("random-delete", "seed-only"), seeds=(0, 1, 2),
                      output="a.duckdb")
    summary(run_audit(cfg))  # every measure with its 95 % interval, p against the floors
    compare_models(store)    # with several models: which is more stable, paired per query
    dry_run(cfg).hours       # before: fits, wall time from a one-epoch calibration, power

Who is affected: :func:`slices` (stability by user activity, popularity, accuracy, recency or
an attribute, with intervals and tests), :func:`changes` (one user's two lists and the edit
behind them), :func:`most_changed` (the users whose lists moved most) and :func:`exposure`
(which items entered and left the lists; popularity and Gini of exposure).

Retrains (``remove-last-<window>``): :func:`staleness` (churn over staleness, for all users and
those active and inactive in the window, against the floor) and :func:`window_users`.

The shared pieces (dataset/split/model/executor specs, data loading, executors, the results
store) come from :mod:`recaudit.experiment` and are re-exported here for convenience.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from recaudit._lazy import exports
from recaudit.audit import _store  # noqa: F401 - declares the tables a store reads

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit.audit._analysis import METRICS, query_distribution, trial_summary, user_groups
    from recaudit.audit._changes import Edit, ListChange, changes, most_changed
    from recaudit.audit._context import close_context, perturb_context
    from recaudit.audit._decide import (FLOORS, MEASURES, compare_models,
                                        compare_perturbations, floor_of, most_destabilising,
                                        summary, variance_shares)
    from recaudit.audit._dryrun import DryRun, dry_run
    from recaudit.audit._holds import check_store, default_name
    from recaudit.audit._export import export_rank_lists
    from recaudit.audit._exposure import Exposure, exposure
    from recaudit.audit._info import STUDY
    from recaudit.audit._reading import (FEW_QUERIES, interval_text, model_reading, p_text,
                                         reading)
    from recaudit.audit._runner import TrialOutcome, compare, run_trial
    from recaudit.audit._retrain import staleness
    from recaudit.audit._slices import SLICE_KINDS, slices, user_values
    from recaudit.audit._windows import WINDOW, window_users
    from recaudit.audit._spec import (AuditConfig, MetricSpec, TrialSpec, build_model,
                                      load_config, perturbation_label)
    from recaudit.audit._stabilise import stabilisation_summary, stabilised_pairs
    from recaudit.audit._store import (PERTURBATIONS, QUERY_METRICS, QUERY_RESULTS, TRIALS,
                                       AuditStore, write_trial)
    from recaudit.audit._rounds import (Rounds, comparison_name, decisions_of_rounds,
                                        nothing_to_decide, run_until_decided)
    from recaudit.audit._study import AuditJob, AuditStudy, plan, run_audit, validate
    from recaudit.experiment import (DatasetSpec, ExecutorSpec, ModelSpec, SplitSpec, Store,
                                     StoreBusyError, load_dataset, prepare)

#: Reading a finished store (its analysis, statistics and plans: pandas, scipy.stats), checking
#: a config and running trials import different modules: each name is imported when first used,
#: so ``recaudit status`` and an argument error import none of the rest, and a worker of a pool
#: what its trials need.
__getattr__, __dir__ = exports(__name__, {
    "._analysis": ("METRICS", "query_distribution", "trial_summary", "user_groups"),
    "._changes": ("Edit", "ListChange", "changes", "most_changed"),
    "._context": ("close_context", "perturb_context"),
    "._decide": ("FLOORS", "MEASURES", "compare_models", "compare_perturbations", "floor_of",
                 "most_destabilising", "summary", "variance_shares"),
    "._dryrun": ("DryRun", "dry_run"),
    "._holds": ("check_store", "default_name"),
    "._rounds": ("Rounds", "comparison_name", "decisions_of_rounds", "nothing_to_decide",
                 "run_until_decided"),
    "._export": ("export_rank_lists",),
    "._exposure": ("Exposure", "exposure"),
    "._info": ("STUDY",),
    "._reading": ("FEW_QUERIES", "interval_text", "model_reading", "p_text", "reading"),
    "._runner": ("TrialOutcome", "compare", "run_trial"),
    "._retrain": ("staleness",),
    "._slices": ("SLICE_KINDS", "slices", "user_values"),
    "._windows": ("WINDOW", "window_users"),
    "._spec": ("AuditConfig", "MetricSpec", "TrialSpec", "build_model", "load_config",
               "perturbation_label"),
    "._stabilise": ("stabilisation_summary", "stabilised_pairs"),
    "._store": ("PERTURBATIONS", "QUERY_METRICS", "QUERY_RESULTS", "TRIALS", "AuditStore",
                "write_trial"),
    "._study": ("AuditJob", "AuditStudy", "plan", "run_audit", "validate"),
    "recaudit.experiment": ("DatasetSpec", "ExecutorSpec", "ModelSpec", "SplitSpec", "Store",
                            "StoreBusyError", "load_dataset", "prepare"),
})

__all__ = ["FEW_QUERIES", "FLOORS", "MEASURES", "METRICS", "PERTURBATIONS", "QUERY_METRICS",
           "QUERY_RESULTS", "SLICE_KINDS", "STUDY", "TRIALS", "WINDOW", "AuditConfig", "AuditJob",
           "AuditStore", "AuditStudy", "DatasetSpec", "DryRun", "Edit", "ExecutorSpec",
           "Exposure", "ListChange", "MetricSpec", "ModelSpec", "Rounds", "SplitSpec", "Store",
           "StoreBusyError", "TrialOutcome", "TrialSpec", "build_model", "changes", "check_store",
           "compare",
           "compare_models", "compare_perturbations", "comparison_name", "decisions_of_rounds",
           "default_name", "dry_run",
           "export_rank_lists",
           "exposure", "floor_of", "interval_text", "load_config", "load_dataset",
           "model_reading", "most_changed", "most_destabilising", "nothing_to_decide", "p_text",
           "perturb_context", "close_context", "perturbation_label", "plan", "prepare",
           "query_distribution", "reading", "run_audit", "run_trial", "run_until_decided",
           "slices", "stabilisation_summary", "stabilised_pairs", "staleness", "summary",
           "trial_summary", "user_groups", "user_values", "validate", "variance_shares",
           "window_users", "write_trial"]

