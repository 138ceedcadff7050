"""Inferred influence models (Shriver 2018 §4.1.1, Table 4.1 and eq. 4.9).

Influence is approximated from the training ratings ``D`` and the baseline recommendations
``R`` only (no retraining). ``rank(i, u) != ⊥`` means item ``i`` is in user ``u``'s top-k list.

- **User** ``I^U(u) = #{u' != u : ∃ i. rank(i, u') != ⊥ ∧ rating(u, i)}`` -- the number of
  *other* users recommended at least one item ``u`` rated (the thesis says "impact of a user on
  all other users", so ``u' = u`` is excluded; with seen items excluded from rankings it could
  not count anyway).
- **Item** ``I^I(i) = #{u : ∃ i'. rank(i', u) != ⊥ ∧ rating(u, i)}`` -- users who rated ``i``
  and are recommended at least one item.
- **Rating** ``I^R(r) = #{i : ∃ u. rank(i, u) != ⊥ ∧ |r - avg_u' rating(u', i)| <= ε}`` --
  distinct recommended items whose mean training rating lies within ``ε`` of ``r`` (``r``
  ranges over the rating scale; a ``1e-9`` tolerance absorbs float error at the boundary).
- **Attribute** ``I^A(a) = #{(u, i) : rank(i, u) != ⊥ ∧ a ∈ attr(i)}`` -- recommendation
  slots held by items with attribute ``a`` (attributes of every item in the log count, those
  never recommended score 0).
- **Modified attribute** (eq. 4.9) ``I_2^A(a) = 2 * #{a' : I^A(a) >= I^A(a')} - #A``: the
  rank-based score that is negative for the less influential half; AMA sums it over an
  item's attributes (:func:`item_attribute_influence`).

All functions are vectorised (numpy / ``scipy.sparse``); user influence, a union count per
user, runs in a small numba kernel (see :func:`user_influence`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp

from recaudit._jit import njit
from recaudit.data import Interactions, RankLists

__all__ = ["Recommendations", "user_influence", "item_influence", "rating_influence",
           "attribute_influence", "modified_attribute_influence", "item_attribute_influence",
           "item_mean_ratings", "rating_scale"]

_TOL = 1e-9


@dataclass(frozen=True)
class Recommendations:
    """Baseline top-k lists: row ``j`` holds the items recommended to user ``users[j]``
    (best first; ``-1`` pads a list shorter than ``k``, the thesis' partial ``rank``)."""

    users: np.ndarray
    items: np.ndarray

    def __post_init__(self) -> None:
        users = np.asarray(self.users, dtype=np.int64).ravel()
        items = np.asarray(self.items)
        if items.ndim != 2 or items.shape[0] != len(users):
            raise ValueError(f"recommendations: items must be [len(users), k], got shape "
                             f"{items.shape} for {len(users)} users")
        if len(np.unique(users)) != len(users):
            raise ValueError("recommendations: each user may appear once")
        object.__setattr__(self, "users", users)
        object.__setattr__(self, "items", items.astype(np.int64))

    @classmethod
    def of(cls, users: Any, lists: RankLists | np.ndarray, k: int | None = None
           ) -> Recommendations:
        items = lists.items if isinstance(lists, RankLists) else np.asarray(lists)
        return cls(users, items if k is None else items[:, :k])

    def check(self, train: Interactions) -> Recommendations:
        """Raise ``ValueError`` unless every user and item code lies in ``train``'s code space."""
        if len(self.users) and (self.users.max() >= train.n_users or self.users.min() < 0):
            raise ValueError(f"recommendations name user codes outside [0, {train.n_users})")
        valid = self.items >= 0
        if valid.any() and self.items[valid].max() >= train.n_items:
            raise ValueError(f"recommendations name item codes outside [0, {train.n_items})")
        return self


def _rated(train: Interactions) -> sp.csr_array:
    a = sp.csr_array((np.ones(len(train)), (train.user, train.item)),
                     shape=(train.n_users, train.n_items))
    a.sum_duplicates()
    a.data[:] = 1.0
    return a


@njit(cache=True)
def _user_influence_kernel(rec_users, rec_items, raters_ptr, raters, n_users):  # pragma: no cover
    count = np.zeros(n_users, dtype=np.int64)
    stamp = np.full(n_users, -1, dtype=np.int64)
    for v in range(rec_items.shape[0]):
        other = rec_users[v]
        for s in range(rec_items.shape[1]):
            i = rec_items[v, s]
            if i < 0:
                continue
            for r in range(raters_ptr[i], raters_ptr[i + 1]):
                u = raters[r]
                if stamp[u] != v:
                    stamp[u] = v
                    if u != other:
                        count[u] += 1
    return count


def user_influence(train: Interactions, recs: Recommendations) -> np.ndarray:
    """``I^U`` for every user code (int64 ``[n_users]``).

    Computed from the recommendation side: for every user ``u'``, the raters of the items in
    its list are visited once (a per-``u'`` stamp removes repeats) and each rater other than
    ``u'`` gains one. Time ``O(sum over recommended slots of the item's raters)``, memory
    ``O(users + ratings)``; a compiled (numba) kernel.
    """
    recs.check(train)
    a = _rated(train).tocsc()
    return _user_influence_kernel(recs.users, np.ascontiguousarray(recs.items),
                                  a.indptr.astype(np.int64), a.indices.astype(np.int64),
                                  train.n_users)


def item_influence(train: Interactions, recs: Recommendations) -> np.ndarray:
    """``I^I`` for every item code (int64 ``[n_items]``)."""
    recs.check(train)
    has_rec = np.zeros(train.n_users, dtype=bool)
    has_rec[recs.users[(recs.items >= 0).any(axis=1)]] = True
    a = _rated(train).tocoo()
    return np.bincount(a.col[has_rec[a.row]], minlength=train.n_items).astype(np.int64)


def item_mean_ratings(train: Interactions) -> np.ndarray:
    """Mean training rating of every item (``NaN`` for unrated items)."""
    if train.rating is None:
        raise ValueError(f"{train.name}: rating influence needs a log with ratings")
    sums = np.bincount(train.item, weights=train.rating.astype(np.float64),
                       minlength=train.n_items)
    counts = np.bincount(train.item, minlength=train.n_items)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)


def rating_scale(train: Interactions) -> np.ndarray:
    """The distinct rating values of the log, ascending (float64)."""
    if train.rating is None or len(train) == 0:
        raise ValueError(f"{train.name}: no ratings to take a rating scale from")
    return np.unique(train.rating.astype(np.float64))


def rating_influence(train: Interactions, recs: Recommendations, values: Any = None, *,
                     epsilon: float = 0.05) -> tuple[np.ndarray, np.ndarray]:
    """``(values, I^R(values))``; ``values`` defaults to :func:`rating_scale`."""
    if not epsilon >= 0:
        raise ValueError(f"epsilon must be >= 0, got {epsilon!r}")
    recs.check(train)
    values = rating_scale(train) if values is None else np.asarray(values, dtype=np.float64)
    means = item_mean_ratings(train)
    rec_items = np.unique(recs.items[recs.items >= 0])
    m = means[rec_items]
    m = m[~np.isnan(m)]
    close = np.abs(values[:, None] - m[None, :]) <= epsilon + _TOL
    return values, close.sum(axis=1).astype(np.int64)


def _attribute_matrix(train: Interactions) -> tuple[sp.csr_array, list[str]]:
    attrs = train.item_attributes
    if not attrs:
        raise ValueError(f"{train.name}: attribute influence needs item attributes "
                         "(e.g. MovieLens genres); this log has none")
    names = sorted({a for labels in attrs.values() for a in labels})
    index = {a: j for j, a in enumerate(names)}
    rows = [i for i, labels in attrs.items() for _ in labels]
    cols = [index[a] for labels in attrs.values() for a in labels]
    m = sp.csr_array((np.ones(len(rows)), (np.asarray(rows, np.int64),
                                           np.asarray(cols, np.int64))),
                     shape=(train.n_items, len(names)))
    return m, names


def attribute_influence(train: Interactions, recs: Recommendations
                        ) -> tuple[list[str], np.ndarray]:
    """``(attribute names, I^A)``; names sorted, influence int64."""
    recs.check(train)
    m, names = _attribute_matrix(train)
    valid = recs.items[recs.items >= 0]
    slots = np.bincount(valid, minlength=train.n_items).astype(np.float64)
    return names, np.rint(m.T @ slots).astype(np.int64)


def modified_attribute_influence(influence: Any) -> np.ndarray:
    """Eq. 4.9: ``2 * #{a' : I(a) >= I(a')} - #A`` for every attribute (int64)."""
    inf = np.asarray(influence)
    at_most = np.searchsorted(np.sort(inf), inf, side="right")
    return 2 * at_most.astype(np.int64) - len(inf)


def item_attribute_influence(train: Interactions, recs: Recommendations) -> np.ndarray:
    """AMA's item score: the sum of :func:`modified_attribute_influence` over the item's
    attributes (0 for items without attributes); float64 ``[n_items]``."""
    m, _ = _attribute_matrix(train)
    _, inf = attribute_influence(train, recs)
    return m @ modified_attribute_influence(inf).astype(np.float64)
