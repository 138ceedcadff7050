"""The per-query panel: every similarity of two rank lists, and the accuracy of one, under the
names used from these kernels to the results store, the report and the docs.

Similarity of lists ``A`` and ``B`` (best first) of one query (:data:`SIMILARITY`):

- ``rbo`` — RBO_ext with persistence ``p`` (Webber et al. 2010, eq. 32), ``rbo_min`` /
  ``rbo_max`` its bounds, ``rbo_trunc`` the finite sum of Oh et al. 2022 over the compared
  depth;
- ``average_overlap`` — ``(1/d) Σ_{i<=d} |A[:i] ∩ B[:i]| / i`` over the compared depth (what
  CASPER's released code reports as "RBO": the ``rbo`` package's ``p = 1``);
- ``frbo`` — FRBO@k of Betello et al. 2023 (RBO@k min-max normalised); NaN when a list holds
  fewer than ``k`` items (never silently re-normalised);
- ``jaccard`` — ``|A[:k] ∩ B[:k]| / |A[:k] ∪ B[:k]|``.

Accuracy of a list against the query's one target (:data:`ACCURACY`): ``mrr`` (the reciprocal
rank over the compared depth, 0 when the target is not listed; its mean over queries is the
MRR), ``hit`` (1 when the target is in the top ``k``: HR@k, equal to Recall@k with one
target) and ``ndcg`` (NDCG@k with one relevant item).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from recaudit.metrics._rbo import Variant

__all__ = ["SIMILARITY", "ACCURACY", "similarity_panel", "accuracy_panel"]

_RBO: dict[str, Variant] = {"rbo": "ext", "rbo_min": "min", "rbo_max": "max",
                            "rbo_trunc": "trunc"}
SIMILARITY = ("rbo", "rbo_min", "rbo_max", "rbo_trunc", "average_overlap", "frbo", "jaccard")
ACCURACY = ("mrr", "hit", "ndcg")


def similarity_panel(a: np.ndarray, b: np.ndarray, *, k: int, p: float,
                     n_items: int | None = None,
                     measures: tuple[str, ...] = SIMILARITY) -> dict[str, np.ndarray]:
    """``measures`` (a subset of :data:`SIMILARITY`) of every row pair of two code arrays
    ``[n, depth_a]``, ``[n, depth_b]`` as ``float64[n]`` columns (module docstring)."""
    # the kernels (numba) are imported when a panel is computed: the names above are what a
    # reader of a results store needs, and it needs no kernel
    from recaudit.metrics._frbo import frbo_batch
    from recaudit.metrics._overlap import jaccard_batch
    from recaudit.metrics._rbo import average_overlap_batch, rbo_batch

    unknown = set(measures) - set(SIMILARITY)
    if unknown:
        raise ValueError(f"unknown similarity measures {sorted(unknown)}; use {SIMILARITY}")
    out: dict[str, np.ndarray] = {}
    for m in measures:
        if m in _RBO:
            out[m] = rbo_batch(a, b, p=p, variant=_RBO[m])
        elif m == "average_overlap":
            out[m] = average_overlap_batch(a, b)
        elif m == "jaccard":
            out[m] = jaccard_batch(a, b, k=k)
        elif min(np.shape(a)[1], np.shape(b)[1]) >= k:
            out[m] = frbo_batch(a, b, k=k, p=p, n_items=n_items)
        else:
            out[m] = np.full(len(a), np.nan)
    return out


def accuracy_panel(items: np.ndarray, target: np.ndarray, *, k: int) -> dict[str, np.ndarray]:
    """:data:`ACCURACY` of every row of a code array against its target (module docstring)."""
    from recaudit.metrics._accuracy import hit_rate_at_k_batch, mrr_batch, ndcg_at_k_batch

    return {"mrr": mrr_batch(items, target), "hit": hit_rate_at_k_batch(items, target, k),
            "ndcg": ndcg_at_k_batch(items, target, k)}
