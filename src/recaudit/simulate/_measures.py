"""MIRROR's online and offline metrics (Zhu et al. 2023, §4.2.4, Definitions 4.1-4.6).

Notation: a slate ``D = (d_1, …, d_N)`` is shown to a user; ``M(u, d, D)`` is the click
probability from the action model; ``phi(d) = M(u^0, d, {d})`` is the *initial preference score*
(the click probability of ``d`` alone, for the user's initial state ``u^0``).

* **CTR** (Def. 4.1): ``CTR_D = (1/N) sum_i M(u, d_i, D)``.
* **Favourite set** (Def. 4.2): ``F^K`` = the ``K`` documents of the query's document set with the
  highest ``phi``. Ties at the cut are broken towards the lower document index (the arg max of the
  definition is not unique then; we state our choice).
* **FCTR** (Def. 4.3): ``FCTR_D = sum_i 1(d_i in F) M(u, d_i, D) / sum_i M(u, d_i, D)``
  (``nan`` when no click is possible at all).
* **Unbiased rankings** (Def. 4.4, *redefined*): the paper calls a permutation unbiased when its
  click probabilities are non-increasing down the list. Under a position-biased examination model
  that admits almost every ordering (in §5.1.1's example the decoy ranking ``(d1, d2, d3)``
  itself has non-increasing click probabilities), so the ManiScore of the decoy ranking would be 1. We define
  the unbiased rankings of a slate as its orderings by non-increasing ``phi``, every order within
  ties (exact equality) -- what the paper's Unbiased Oracle does.
* **ManiScore** (Def. 4.5, Eq. 1)::

      ManiScore = exp( max{(FCTR_U - FCTR_D) / (FCTR_U + FCTR_D), 0}
                     + max{(CTR_D - CTR_U) / (CTR_U + CTR_D), 0} )

  with ``FCTR_U = min`` and ``CTR_U = max`` over the unbiased rankings, both evaluated with the
  initial user state; a term whose denominator is 0 is 0. Values lie in ``[1, e^2]``, 1 meaning
  no manipulation.
* **Preference Shift** (Def. 4.6): ``PS_r = 1 - RBO(L_0, L_r, p)`` where ``L_r`` lists the top-K
  documents by the round-``r`` preference score ``M(u^r, d, {d})``, best first. RBO is
  :func:`recaudit.metrics.rbo`; by default its extrapolated variant ``"ext"`` with ``p = 0.9`` (the
  paper does not name a variant; its formula is the infinite sum, which ``"ext"`` estimates).
* Offline **NDCG@k** and **AUC** of a model's scores against logged clicks.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import numpy as np

from recaudit.metrics import RBOVariant as Variant

__all__ = [
    "ctr", "fctr", "favourite_set", "preference_list", "unbiased_rankings", "mani_score",
    "preference_shift", "preference_shift_batch", "click_ndcg", "auc",
]


def _prob_vector(p, name="probabilities") -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1 or p.size == 0:
        raise ValueError(f"{name} must be a non-empty 1-D array (one value per slate position); "
                         f"got shape {p.shape}")
    if not np.all(np.isfinite(p)) or np.any(p < 0) or np.any(p > 1):
        raise ValueError(f"{name} must be probabilities in [0, 1]; got {p.tolist()}")
    return p


def ctr(click_probs) -> float:
    """CTR of one slate (Def. 4.1): the mean click probability over its positions."""
    return float(_prob_vector(click_probs).mean())


def fctr(click_probs, is_favourite) -> float:
    """FCTR of one slate (Def. 4.3): the share of expected clicks that land on favourites."""
    p = _prob_vector(click_probs)
    fav = np.asarray(is_favourite, dtype=bool)
    if fav.shape != p.shape:
        raise ValueError(f"is_favourite must have one flag per position: {fav.shape} != {p.shape}")
    total = p.sum()
    return float(p[fav].sum() / total) if total > 0 else math.nan


def favourite_set(scores, k: int) -> np.ndarray:
    """Indices of the ``k`` highest ``scores`` (Def. 4.2), ties towards the lower index; sorted."""
    return np.sort(preference_list(scores, k))


def preference_list(scores, k: int | None = None) -> np.ndarray:
    """Indices of the top-``k`` ``scores``, best first; ties keep index order (Def. 4.6's
    ``L^K``)."""
    s = np.asarray(scores, dtype=np.float64)
    if s.ndim != 1:
        raise ValueError(f"scores must be 1-D; got shape {s.shape}")
    if k is None:
        k = s.size
    if not 1 <= k <= s.size:
        raise ValueError(f"k must lie in [1, {s.size}] (the number of documents); got {k}")
    return np.argsort(-s, kind="stable")[:k]


def unbiased_rankings(initial_scores, max_rankings: int = 40_320) -> list[tuple[int, ...]]:
    """All unbiased rankings of a slate: its orderings by non-increasing initial preference.

    ``initial_scores[j]`` is ``phi`` of the slate's ``j``-th document; every returned tuple is a
    permutation of ``range(len(initial_scores))`` (document ``j`` first …). Every order within
    groups of exactly equal scores is produced (see the module docstring for why this replaces the
    literal Def. 4.4). Raises ``ValueError`` beyond ``max_rankings`` rankings.
    """
    s = np.asarray(initial_scores, dtype=np.float64)
    if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)):
        raise ValueError("initial_scores must be a non-empty 1-D array of finite numbers")
    order = np.argsort(-s, kind="stable")
    groups: list[list[int]] = []
    for j in order:
        if groups and s[groups[-1][0]] == s[j]:
            groups[-1].append(int(j))
        else:
            groups.append([int(j)])
    count = math.prod(math.factorial(len(g)) for g in groups)
    if count > max_rankings:
        raise ValueError(f"the slate has {count} unbiased rankings (ties among initial scores), "
                         f"more than max_rankings={max_rankings}; raise max_rankings")
    out = []
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        out.append(tuple(j for part in parts for j in part))
    return out


def mani_score(ctr, fctr, ctr_unbiased, fctr_unbiased):
    """ManiScore (Def. 4.5, Eq. 1); scalars or broadcastable arrays; values in ``[1, e^2]``.

    ``ctr, fctr`` are the slate's CTR and FCTR; ``ctr_unbiased`` is the *maximum* CTR and
    ``fctr_unbiased`` the *minimum* FCTR over its unbiased rankings. A term with a zero denominator
    (both values 0) contributes 0.
    """
    arrs = [np.asarray(x, dtype=np.float64) for x in (ctr, fctr, ctr_unbiased, fctr_unbiased)]
    for name, a in zip(("ctr", "fctr", "ctr_unbiased", "fctr_unbiased"), arrs):
        if not np.all(np.isfinite(a)) or np.any(a < 0) or np.any(a > 1):
            raise ValueError(f"{name} must lie in [0, 1]; got {a.tolist()}")
    c, f, cu, fu = np.broadcast_arrays(*arrs)
    with np.errstate(invalid="ignore", divide="ignore"):
        sat = np.where(fu + f > 0, (fu - f) / (fu + f), 0.0)
        rev = np.where(cu + c > 0, (c - cu) / (cu + c), 0.0)
    out = np.exp(np.maximum(sat, 0.0) + np.maximum(rev, 0.0))
    return float(out) if out.ndim == 0 else out


def preference_shift(initial_list: Sequence, current_list: Sequence, p: float = 0.9, *,
                     variant: Variant = "ext") -> float:
    """Preference Shift (Def. 4.6): ``1 - RBO(initial_list, current_list, p)``.

    The lists hold document ids, most preferred first. ``variant`` is passed to
    :func:`recaudit.metrics.rbo` (``"ext"`` = extrapolated RBO, the default; ``"min"``,
    ``"max"``, ``"trunc"`` also accepted). 0 means unchanged preferences.
    """
    from recaudit.metrics import rbo

    if not 0 < p < 1:
        raise ValueError(f"p must lie in (0, 1); got {p}")
    return float(1.0 - rbo(list(initial_list), list(current_list), p=p, variant=variant))


def preference_shift_batch(initial_lists, current_lists, p: float = 0.9, *,
                           variant: Variant = "ext") -> np.ndarray:
    """:func:`preference_shift` of every row pair of two ``[n, k]`` arrays of document ids
    (uses :func:`recaudit.metrics.rbo_batch`; equal to the scalar form row by row)."""
    from recaudit.metrics import rbo_batch

    if not 0 < p < 1:
        raise ValueError(f"p must lie in (0, 1); got {p}")
    a = np.asarray(initial_lists, dtype=np.int64)
    b = np.asarray(current_lists, dtype=np.int64)
    if a.ndim != 2 or b.ndim != 2 or a.shape[0] != b.shape[0]:
        raise ValueError(f"expected two [n, k] arrays with the same n; got {a.shape}, {b.shape}")
    if a.shape[0] == 0:
        return np.zeros(0)
    return 1.0 - rbo_batch(a, b, p=p, variant=variant)


def auc(scores, labels) -> float:
    """ROC AUC of ``scores`` against binary ``labels`` (ties count 1/2); ``nan`` if one class."""
    s = np.asarray(scores, dtype=np.float64).ravel()
    y = np.asarray(labels).ravel().astype(bool)
    if s.shape != y.shape:
        raise ValueError(f"scores and labels differ in size: {s.size} != {y.size}")
    n_pos, n_neg = int(y.sum()), int((~y).sum())
    if n_pos == 0 or n_neg == 0:
        return math.nan
    from scipy.stats import rankdata

    r = rankdata(s)
    return float((r[y].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def click_ndcg(scores, labels, k: int | None = None) -> float:
    """Mean NDCG@k over slates: ``scores``/``labels`` are ``[n_slates, slate_size]``.

    Gains ``2^label - 1``, discount ``1 / log2(rank + 1)``; model order by score (stable); slates
    without a positive label are skipped (``nan`` if none has one).
    """
    s = np.atleast_2d(np.asarray(scores, dtype=np.float64))
    y = np.atleast_2d(np.asarray(labels, dtype=np.float64))
    if s.shape != y.shape:
        raise ValueError(f"scores and labels differ in shape: {s.shape} != {y.shape}")
    k = s.shape[1] if k is None else min(k, s.shape[1])
    disc = 1.0 / np.log2(np.arange(2, k + 2))
    order = np.argsort(-s, axis=1, kind="stable")[:, :k]
    gain = 2.0 ** np.take_along_axis(y, order, axis=1) - 1.0
    best = -np.sort(-y, axis=1)[:, :k]  # labels in descending order
    ideal = 2.0**best - 1.0
    idcg = (ideal * disc).sum(axis=1)
    keep = idcg > 0
    if not keep.any():
        return math.nan
    return float(((gain * disc).sum(axis=1)[keep] / idcg[keep]).mean())
