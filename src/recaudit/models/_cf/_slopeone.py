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
every co-rated pair; it is stored as a sparse ``items x items`` matrix.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from recaudit.errors import ConfigError
from recaudit.models._cf._base import RatingRecommender
from recaudit.models._registry import register

__all__ = ["SlopeOne"]


@dataclass(frozen=True)
class SlopeOneConfig:
    weighted: bool = False
    exclude_seen: bool = True


@register("slope-one")
class SlopeOne(RatingRecommender):
    """Slope One; ``weighted=True`` weights each deviation by its co-rating count."""

    Config = SlopeOneConfig

    def __init__(self, weighted: bool = False, exclude_seen: bool = True) -> None:
        super().__init__(exclude_seen)
        self.config = SlopeOneConfig(weighted, exclude_seen)

    def _validate_config(self) -> None:
        super()._validate_config()
        if not isinstance(self.config.weighted, bool):
            raise ConfigError(f"slope-one: weighted must be a bool, got {self.config.weighted!r}")

    def _fit(self, R: sp.csr_array, rng: np.random.Generator) -> None:
        B = R.copy()
        B.data = np.ones_like(B.data)
        self.B_ = B
        self.n_rated_ = np.bincount(R.indices, minlength=R.shape[1]).astype(np.float64)
        if self.config.weighted:
            return
        # shift ratings to >= 1 so that every co-rated pair gives a non-zero sum: the three
        # products then share one sparsity pattern (scipy drops exact zeros) and align entrywise
        Rp = R.copy()
        Rp.data = R.data - R.data.min() + 1.0 if R.nnz else R.data
        Bt = B.T.tocsr()
        count = (Bt @ B).tocsr()                              # c_ji
        plus = (Rp.T.tocsr() @ B).tocsr()                     # sum r'_vj
        minus = (Bt @ Rp).tocsr()                             # sum r'_vi
        for m in (count, plus, minus):
            m.sort_indices()
        if not (np.array_equal(count.indptr, plus.indptr) and np.array_equal(count.indices,
                plus.indices) and np.array_equal(count.indices, minus.indices)):
            raise RuntimeError("slope-one: co-rating patterns do not align (internal error)")
        coo_c = count.tocoo()
        keep = coo_c.row != coo_c.col                         # i = j is not a neighbour
        rows, cols = coo_c.row[keep], coo_c.col[keep]
        dev = (plus.data[keep] - minus.data[keep]) / count.data[keep]
        shape = count.shape
        self.dev_ = sp.csr_array((dev, (rows, cols)), shape=shape)
        self.mask_ = sp.csr_array((np.ones(len(rows)), (rows, cols)), shape=shape)

    def _score_users(self, users: np.ndarray) -> np.ndarray:
        X = self.B_[users]                       # batch x items indicator
        Y = self.R_[users]                       # batch x items ratings
        if self.config.weighted:
            BX = self.B_ @ X.T.toarray()         # users x batch: co-rated counts
            RX = self.R_ @ X.T.toarray()
            BY = self.B_ @ Y.T.toarray()
            num = self.R_.T @ BX - self.B_.T @ RX + self.B_.T @ BY   # items x batch
            den = self.B_.T @ BX
            # remove the i = j terms for rated j: c_jj = n_j, dev_jj = 0
            xd = X.toarray().T
            num -= xd * (Y.toarray().T * self.n_rated_[:, None])
            den -= xd * self.n_rated_[:, None]
            num, den = num.T, den.T
        else:
            num = (self.dev_ @ X.T + self.mask_ @ Y.T).toarray().T
            den = (self.mask_ @ X.T).toarray().T
        with np.errstate(invalid="ignore", divide="ignore"):
            out = np.where(den > 0.5, num / np.where(den > 0.5, den, 1.0), np.nan)
        return out
