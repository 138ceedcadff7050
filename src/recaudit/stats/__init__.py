"""Decisions on audit numbers: intervals over seeds and queries, the papers' paired tests,
Holm's correction, detectable effects.

>>> import numpy as np
>>> from recaudit import stats
>>> rng = np.random.default_rng(0)
>>> seeds, queries = np.repeat([0, 1, 2], 200), np.tile(np.arange(200), 3)
>>> a = 0.8 + 0.05 * rng.standard_normal(600)
>>> est = stats.estimate_mean(a, seeds, queries)
>>> est.design, round(est.mean, 3)
('crossed', 0.799)
>>> b = a - 0.01 + 0.01 * rng.standard_normal(600)
>>> t = stats.paired_test(a, b, seeds, queries)
>>> t.test, [round(x, 4) for x in t.interval()]
('paired-t', [0.008, 0.0128])
>>> t.p_protocol < 1e-60, round(t.p, 4)  # queries alone vs. with the three seeds' spread
(True, 0.0026)

:func:`estimate_mean` gives the mean and its interval over both sources of variation,
:func:`paired_test` the papers' protocol (Shapiro-Wilk, then paired t or Wilcoxon) combined
with the two-level interval, :func:`welch_test` the unpaired test, :func:`holm` the
correction for a table of comparisons, :meth:`Estimate.detectable` the minimum detectable
effect and :meth:`Estimate.replicates_for` the seeds that would resolve an undecided one.
:func:`variance_parts` says where a measure's variation comes from (seeds, draws, queries).
:func:`sequential_family` (and :func:`sequential_test`, :func:`sequential_welch`,
:func:`sequential_decision` for one comparison) decide comparisons that are looked at again
after every round of new seeds, with the family-wise error rate kept under optional stopping
(:class:`SequentialPlan`: repeated p-values on a fixed ladder of looks, Holm across; the
named spending rules in :data:`RULES`).
"""

from typing import TYPE_CHECKING

from recaudit._lazy import exports

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit.stats._estimate import DESIGNS, Estimate, estimate_mean, welch
    from recaudit.stats._sequential import (DECISIONS, DEFAULT_RULE, LEGACY_RULE, RULES,
                                            STOPPED, Sequential, SequentialPlan, looks_for,
                                            replicates_estimator, rung, rungs_upto,
                                            sequential_decision, sequential_family,
                                            sequential_test, sequential_welch, stopped)
    from recaudit.stats._summary import DesignSummary, design_summary
    from recaudit.stats._tests import Test, holm, one_sample_test, paired_test, welch_test
    from recaudit.stats._variance import VarianceParts, variance_parts

__getattr__, __dir__ = exports(__name__, {
    "._estimate": ("DESIGNS", "Estimate", "estimate_mean", "welch"),
    "._sequential": ("DECISIONS", "DEFAULT_RULE", "LEGACY_RULE", "RULES", "STOPPED",
                     "Sequential", "SequentialPlan", "looks_for", "replicates_estimator",
                     "rung", "rungs_upto", "sequential_decision", "sequential_family",
                     "sequential_test", "sequential_welch", "stopped"),
    "._summary": ("DesignSummary", "design_summary"),
    "._tests": ("Test", "holm", "one_sample_test", "paired_test", "welch_test"),
    "._variance": ("VarianceParts", "variance_parts"),
})

__all__ = ["DECISIONS", "DEFAULT_RULE", "DESIGNS", "LEGACY_RULE", "RULES", "STOPPED",
           "DesignSummary", "Estimate", "Sequential", "SequentialPlan", "Test",
           "design_summary", "estimate_mean", "holm", "looks_for", "one_sample_test",
           "paired_test", "replicates_estimator", "rung", "rungs_upto", "sequential_decision",
           "sequential_family", "sequential_test", "sequential_welch", "stopped",
           "VarianceParts", "variance_parts", "welch", "welch_test"]
