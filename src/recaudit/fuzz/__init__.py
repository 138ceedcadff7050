"""Influence-guided fuzzing of recommender stability (Shriver 2018 Chapter 4).

- :mod:`modifications <recaudit.fuzz._modifications>`: add / remove / change ratings, sets
  applied atomically, :class:`FuzzRecord` (JSON; ``record.apply(original)`` reproduces the log);
- influence models (Table 4.1, eq. 4.9): :func:`user_influence`, :func:`item_influence`,
  :func:`rating_influence`, :func:`attribute_influence`, :func:`modified_attribute_influence`;
- heuristics (Tables 4.2, 4.4) as perturbations of the ``fuzz:`` family, registered with
  :func:`recaudit.perturb.register_family` when :class:`FuzzSpec` is imported (the
  ``recaudit.perturbations`` entry point imports it when a ``fuzz:`` name is first read):
  :class:`FuzzSpec`
  (``FuzzSpec.parse("fuzz:AMR:10").apply(log, rng, recommendations=...)``; in an audit,
  ``perturbations = ["fuzz:AMR:10"]``);
- differential oracles (§4.1.3): :func:`distances`, :class:`Oracle`, :func:`default_delta`;
- the study runner (§4.2): :class:`FuzzStudy`, :func:`run_study`, :func:`significance`,
  :func:`instability_table`, :func:`time_table`.
"""

from typing import TYPE_CHECKING

from recaudit._lazy import exports
from recaudit.fuzz import _schema  # noqa: F401 - declares the tables a store reads

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit.fuzz._heuristics import BASELINE_OF, HEURISTICS, INFLUENCE_OF, KIND_OF, FuzzContext
    from recaudit.fuzz._influence import (
        Recommendations,
        attribute_influence,
        item_attribute_influence,
        item_influence,
        item_mean_ratings,
        modified_attribute_influence,
        rating_influence,
        rating_scale,
        user_influence,
    )
    from recaudit.fuzz._modifications import (
        ADD,
        CHANGE,
        REMOVE,
        FuzzRecord,
        ModificationSet,
        apply_modifications,
        pair_keys,
    )
    from recaudit.fuzz._oracles import DISTANCES, Oracle, Verdict, default_delta, distances
    from recaudit.fuzz._schema import FUZZ_TRIALS, STUDY, read_trials
    from recaudit.fuzz._spec import FuzzSpec
    from recaudit.fuzz._study import FuzzStudy, FuzzTrial, load_results, run_fuzz_trial, run_study
    from recaudit.fuzz._tables import (
        TABLES,
        instability_table,
        portfolio_table,
        significance,
        time_table,
    )

__getattr__, __dir__ = exports(__name__, {
    "._heuristics": ("BASELINE_OF", "HEURISTICS", "INFLUENCE_OF", "KIND_OF", "FuzzContext"),
    "._influence": ("Recommendations", "attribute_influence", "item_attribute_influence",
                    "item_influence", "item_mean_ratings", "modified_attribute_influence",
                    "rating_influence", "rating_scale", "user_influence"),
    "._modifications": ("ADD", "CHANGE", "REMOVE", "FuzzRecord", "ModificationSet",
                        "apply_modifications", "pair_keys"),
    "._oracles": ("DISTANCES", "Oracle", "Verdict", "default_delta", "distances"),
    "._schema": ("FUZZ_TRIALS", "STUDY", "read_trials"),
    "._spec": ("FuzzSpec",),
    "._study": ("FuzzStudy", "FuzzTrial", "load_results", "run_fuzz_trial", "run_study"),
    "._tables": ("TABLES", "instability_table", "portfolio_table", "significance", "time_table"),
})

__all__ = ["ADD", "BASELINE_OF", "CHANGE", "DISTANCES", "FUZZ_TRIALS", "HEURISTICS",
           "INFLUENCE_OF", "KIND_OF", "REMOVE", "STUDY", "TABLES", "FuzzContext", "FuzzRecord",
           "FuzzSpec", "FuzzStudy", "FuzzTrial", "ModificationSet", "Oracle",
           "Recommendations", "Verdict", "apply_modifications", "attribute_influence",
           "default_delta", "distances", "instability_table", "item_attribute_influence",
           "item_influence", "item_mean_ratings", "load_results",
           "modified_attribute_influence", "pair_keys", "portfolio_table", "rating_influence",
           "rating_scale", "read_trials", "run_fuzz_trial", "run_study", "significance",
           "time_table", "user_influence"]
