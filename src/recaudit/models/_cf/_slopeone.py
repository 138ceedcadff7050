"""Slope One (``"slope-one"``; Lemire & Maclachlan 2005), unweighted and weighted.

With ``c_ji`` the number of users who rated both ``j`` and ``i`` and

    dev_ji = sum_{v rated i and j} (r_vj - r_vi) / c_ji,

the prediction for user ``u`` and item ``j`` over ``S_j(u) = {i in R_u, i != j, c_ji > 0}`` is

    unweighted:  s(u, j) = (1 / |S_j(u)|) sum_{i in S_j(u)} (dev_ji + r_ui)
    weighted:    s(u, j) = sum_{i in S_j(u)} c_ji (dev_ji + r_ui) / sum_{i in S_j(u)} c_ji

and ``j`` is unscorable when ``S_j(u)`` is empty. Both are deterministic.

Implementation. With ``B`` the 0/1 rating indicator and ``R`` the ratings (users x items), the
weighted numerator is ``sum_i c_ji dev_ji x_i + sum_i c_ji r_ui`` with ``x = B_u``, which
expands to ``R^T (B x) - B^T (R x) + B^T (B r_u)`` and the denominator to ``B^T (B x)``: the
weighted form needs no item x item matrix at all (sparse x dense products over a user batch;
the ``i = j`` terms are removed for rated ``j``). The unweighted form needs the deviation of
every co-rated pair; a numba kernel builds it as a sparse ``items x items`` matrix in
``O(sum_u |R_u|^2)`` without materialising the three ``items x items`` products.

The prediction follows LensKit's Slope One (and Lemire & Maclachlan's definition) exactly; the
scikit-surprise ``SlopeOne`` replaces the mean of ``r_ui`` over ``S_j(u)`` by the user's overall
mean (the paper's approximation for dense data), so its predictions differ slightly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from recaudit._jit import njit
from recaudit.models._cf._base import RatingConfig, RatingRecommender
from recaudit.models._registry import register

__all__ = ["SlopeOne"]


@njit(cache=True)
def _deviations(c_indptr, c_users, c_vals, r_indptr, r_items, r_vals, n_items):
    """CSR ``items x items`` of ``dev_ji`` over co-rated pairs ``j != i`` (columns sorted).

    Row ``j`` walks the users who rated ``j`` and their ratings: cost ``sum_u |R_u|^2``, dense
    per-row accumulators, two passes (count, then fill).
    """
    mark = np.full(n_items, -1, dtype=np.int64)
    indptr = np.zeros(n_items + 1, dtype=np.int64)
    for j in range(n_items):
        c = 0
        for p in range(c_indptr[j], c_indptr[j + 1]):
            v = c_users[p]
            for q in range(r_indptr[v], r_indptr[v + 1]):
                i = r_items[q]
                if i != j and mark[i] != j:
                    mark[i] = j
                    c += 1
        indptr[j + 1] = indptr[j] + c
    indices = np.empty(indptr[n_items], dtype=np.int32)
    dev = np.empty(indptr[n_items], dtype=np.float64)
    cnt = np.zeros(n_items, dtype=np.int64)
    acc = np.zeros(n_items, dtype=np.float64)
    for j in range(n_items):
        pos = indptr[j]
        for p in range(c_indptr[j], c_indptr[j + 1]):
            v = c_users[p]
            rvj = c_vals[p]
            for q in range(r_indptr[v], r_indptr[v + 1]):
                i = r_items[q]
                if i == j:
                    continue
                if cnt[i] == 0:
                    indices[pos] = i
                    pos += 1
                cnt[i] += 1
                acc[i] += rvj - r_vals[q]
        row = np.sort(indices[indptr[j]:pos])
        for t in range(len(row)):
            i = row[t]
            indices[indptr[j] + t] = i
            dev[indptr[j] + t] = acc[i] / cnt[i]
            cnt[i] = 0
            acc[i] = 0.0
    return indptr, indices, dev


@njit(cache=True)
def _unweighted_scores(users, r_indptr, r_items, r_vals, d_indptr, d_items, d_vals, n_items):
    """Unweighted predictions; uses ``dev_ji = -dev_ij`` (the pattern is symmetric), so row
    ``i`` of every rated item scatters ``-dev_ij + r_ui`` onto the targets ``j``."""
    out = np.full((len(users), n_items), np.nan)
    num = np.zeros(n_items)
    cnt = np.zeros(n_items, dtype=np.int64)
    for b in range(len(users)):
        u = users[b]
        for p in range(r_indptr[u], r_indptr[u + 1]):
            i = r_items[p]
            r = r_vals[p]
            for q in range(d_indptr[i], d_indptr[i + 1]):
                j = d_items[q]
                num[j] += r - d_vals[q]
                cnt[j] += 1
        for j in range(n_items):
            if cnt[j] > 0:
                out[b, j] = num[j] / cnt[j]
                num[j] = 0.0
                cnt[j] = 0
    return out


@dataclass(frozen=True)
class SlopeOneConfig(RatingConfig):
    """Slope One options. weighted: weight each deviation by its co-rating count."""

    weighted: bool = False


@register("slope-one")
class SlopeOne(RatingRecommender):
    """Slope One; ``weighted=True`` weights each deviation by its co-rating count."""

    Config = SlopeOneConfig

    def _fit(self, R: sp.csr_array, rng: np.random.Generator) -> None:
        B = R.copy()
        B.data = np.ones_like(B.data)
        self.B_ = B
        self.n_rated_ = np.bincount(R.indices, minlength=R.shape[1]).astype(np.float64)
        if self.config.weighted:
            return
        C = R.tocsc()
        C.sort_indices()
        indptr, indices, dev = _deviations(
            C.indptr.astype(np.int64), C.indices.astype(np.int64), C.data,
            R.indptr.astype(np.int64), R.indices.astype(np.int64), R.data, R.shape[1])
        shape = (R.shape[1], R.shape[1])
        self.dev_ = sp.csr_array((dev, indices, indptr), shape=shape)

    def _score_users(self, users: np.ndarray) -> np.ndarray:
        if not self.config.weighted:
            d = self.dev_
            return _unweighted_scores(users.astype(np.int64), self.R_.indptr.astype(np.int64),
                                      self.R_.indices.astype(np.int64), self.R_.data,
                                      d.indptr.astype(np.int64), d.indices, d.data,
                                      self.n_items_)
        X = self.B_[users]                       # batch x items indicator
        Y = self.R_[users]                       # batch x items ratings
        BX = self.B_ @ X.T.toarray()             # users x batch: co-rated counts
        RX = self.R_ @ X.T.toarray()
        BY = self.B_ @ Y.T.toarray()
        num = self.R_.T @ BX - self.B_.T @ RX + self.B_.T @ BY   # items x batch
        den = self.B_.T @ BX
        # remove the i = j terms for rated j: c_jj = n_j, dev_jj = 0
        xd = X.toarray().T
        num -= xd * (Y.toarray().T * self.n_rated_[:, None])
        den -= xd * self.n_rated_[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(den > 0.5, num / np.where(den > 0.5, den, 1.0), np.nan)
        return out.T
