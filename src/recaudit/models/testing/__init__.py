"""Conformance kit: the checks every recommender (built-in, adapter or your own) must pass.

Use the check functions directly, or subclass :class:`RecommenderConformance` in a test module::

    class TestMyModel(RecommenderConformance):
        def make_model(self):
            return MyModel(epochs=2)

:func:`run_conformance` runs every check on a model factory and returns one
:class:`CheckResult` per check (what ``recaudit models check`` prints); it never raises for a
failing model. Each ``check_*`` raises ``AssertionError`` with a message saying what broke. The kit's data is a
small synthetic log with a planted sequential pattern (:func:`planted_log`) so that a model
that learns anything sequential beats popularity on it (:func:`check_learns`).
"""

from recaudit.models.testing._checks import (
    planted_log,
    leave_last_out,
    next_item_mrr,
    popularity_ranklists,
    check_rank_shapes,
    check_topk_consistent,
    check_determinism,
    check_seed_changes,
    check_deletion_changes,
    check_inputs_not_mutated,
    check_targets_not_read,
    check_query_independence,
    check_learns,
    check_global_rng_untouched,
    check_params_round_trip,
    check_unfitted_use,
    check_pickling,
    check_numpy_seed,
)
from recaudit.models.testing._runner import (CHECKS, CheckResult, conformance_log,
                                              run_conformance)
from recaudit.models.testing._suite import RecommenderConformance

__all__ = ["CHECKS", "CheckResult", "RecommenderConformance", "check_deletion_changes",
           "check_determinism", "check_global_rng_untouched", "check_inputs_not_mutated",
           "check_learns", "check_numpy_seed", "check_params_round_trip", "check_pickling",
           "check_query_independence", "check_rank_shapes", "check_seed_changes",
           "check_targets_not_read", "check_topk_consistent", "check_unfitted_use",
           "conformance_log", "leave_last_out", "next_item_mrr", "planted_log",
           "popularity_ranklists", "run_conformance"]
