"""Rank-list similarity and accuracy metrics.

Every measure has a scalar form on two rankings (sequences of hashable items, best first) and a
batch form ``<name>_batch`` on 2-D integer code arrays ``[n, depth]`` (one ranking per row, or a
:class:`recaudit.data.RankLists`) returning ``float64[n]`` -- bit-identical to the scalar form.
Batch kernels are numba-compiled (cached on disk), run in parallel over rows with numba's
configured thread count, and need ``O(depth)`` time per pair.

Similarity (which quantity is which matters -- see each docstring):

- :func:`rbo` -- rank-biased overlap, Webber et al. 2010: ``"ext"`` (eq. 32, the default),
  ``"min"``/``"max"`` bounds, ``"trunc"`` (the finite sum of Oh et al. 2022); ties (Corsi &
  Urbano 2024) opt-in;
- :func:`average_overlap` -- what CASPER's code calls "RBO" (``p = 1``);
- :func:`frbo` (+ :func:`rbo_at_k_bounds`) -- finite RBO@k of Betello et al.;
- :func:`jaccard`, :func:`aod`, :func:`topout` -- top-k Jaccard, Shriver's AOD and TopOut;
- :func:`kendall_tau` -- for rankings of the same items.

:func:`similarity_panel` / :func:`accuracy_panel` — every measure above that an audit and
``recaudit compare`` report per query, under the names a results store keeps
(:data:`SIMILARITY`, :data:`ACCURACY`).

Accuracy (binary relevance, per-query values): :func:`mrr`, :func:`hit_rate_at_k`,
:func:`recall_at_k`, :func:`precision_at_k`, :func:`ndcg_at_k`, :func:`target_ranks` and
:func:`score_ranks` (the rank of a target under dense scores).
"""

from typing import TYPE_CHECKING

from recaudit._lazy import exports

if TYPE_CHECKING:  # at run time each name is imported on first use (recaudit._lazy)
    from recaudit.metrics._accuracy import (
        hit_rate_at_k,
        hit_rate_at_k_batch,
        mrr,
        mrr_batch,
        ndcg_at_k,
        ndcg_at_k_batch,
        precision_at_k,
        precision_at_k_batch,
        recall_at_k,
        recall_at_k_batch,
        score_ranks,
        target_ranks,
    )
    from recaudit.metrics._frbo import frbo, frbo_batch, rbo_at_k_bounds
    from recaudit.metrics._kendall import kendall_tau, kendall_tau_batch
    from recaudit.metrics._overlap import aod, aod_batch, jaccard, jaccard_batch, topout, topout_batch
    from recaudit.metrics._panel import ACCURACY, SIMILARITY, accuracy_panel, similarity_panel
    from recaudit.metrics._rbo import Variant as RBOVariant
    from recaudit.metrics._rbo import average_overlap, average_overlap_batch, rbo, rbo_batch

__getattr__, __dir__ = exports(__name__, {
    "._accuracy": ("hit_rate_at_k", "hit_rate_at_k_batch", "mrr", "mrr_batch", "ndcg_at_k",
                   "ndcg_at_k_batch", "precision_at_k", "precision_at_k_batch", "recall_at_k",
                   "recall_at_k_batch", "score_ranks", "target_ranks"),
    "._frbo": ("frbo", "frbo_batch", "rbo_at_k_bounds"),
    "._kendall": ("kendall_tau", "kendall_tau_batch"),
    "._overlap": ("aod", "aod_batch", "jaccard", "jaccard_batch", "topout", "topout_batch"),
    "._panel": ("ACCURACY", "SIMILARITY", "accuracy_panel", "similarity_panel"),
    "._rbo": ("Variant as RBOVariant", "average_overlap", "average_overlap_batch", "rbo",
              "rbo_batch"),
})

__all__ = [
    "RBOVariant",
    "ACCURACY",
    "SIMILARITY",
    "accuracy_panel",
    "similarity_panel",
    "aod",
    "aod_batch",
    "average_overlap",
    "average_overlap_batch",
    "frbo",
    "frbo_batch",
    "hit_rate_at_k",
    "hit_rate_at_k_batch",
    "jaccard",
    "jaccard_batch",
    "kendall_tau",
    "kendall_tau_batch",
    "mrr",
    "mrr_batch",
    "ndcg_at_k",
    "ndcg_at_k_batch",
    "precision_at_k",
    "precision_at_k_batch",
    "rbo",
    "rbo_at_k_bounds",
    "rbo_batch",
    "recall_at_k",
    "recall_at_k_batch",
    "score_ranks",
    "target_ranks",
    "topout",
    "topout_batch",
]
