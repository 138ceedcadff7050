"""Neighbourhood collaborative filtering as in LensKit: User-User and Item-Item (explicit).

**User-User** (``"user-user"``; Resnick et al. 1994, LensKit ``UserKNNScorer``): ratings are
centred on the user's mean, rows scaled to unit length, so the similarity of two users is the
cosine of their mean-centred rating vectors. For target user ``u`` and item ``i``, the
neighbours are the (at most ``max_nbrs``) users ``v != u`` most similar to ``u`` who rated
``i`` with ``sim(u, v) >= min_sim``; with at least ``min_nbrs`` of them

    s(u, i) = mean_u + sum_v sim(u, v) (r_vi - mean_v) / sum_v |sim(u, v)|,

otherwise ``i`` is unscorable for ``u``. A user whose ratings all equal their mean (zero
variance) has a zero vector, hence no neighbours and no rank list: the anomaly Shriver 2018 reports
for User-User (§3.5.1, NRANKS(min) = 0).

``negative=True`` also keeps negatively similar neighbours, ``|sim| >= min_sim`` (for both
models): the default of LensKit's Java releases (2.1-3.0), whose user and item similarity
thresholds are an ``AbsoluteThreshold`` of 0. The neighbourhood is still the ``max_nbrs``
*largest* similarities, so negative neighbours enter only where fewer positive ones exist, and
a negative neighbour's below-mean rating raises the score (``sim * (r - mean) > 0``). LensKit's
Python releases, and the default here, keep positive similarities only.

**Item-Item** (``"item-item"``; Sarwar et al. 2001, LensKit ``ItemKNNScorer``): ratings are
centred on the item's mean, columns scaled to unit length; ``sim(i, j)`` is the cosine of the
centred item vectors, kept when ``>= min_sim``. The neighbours of target ``i`` for user ``u``
are the (at most ``max_nbrs``) items ``j`` rated by ``u`` most similar to ``i``:

    s(u, i) = mean_i + sum_j sim(i, j) (r_uj - mean_j) / sum_j |sim(i, j)|.

Both are deterministic (no randomness). Kernels are numba-compiled; the user loop runs in
compiled code over CSR arrays. When several candidates tie on the similarity at the
``max_nbrs`` boundary, the lower user (item) code is kept, as a stable sort by decreasing
similarity keeps it (LensKit leaves this unspecified: its heap order decides). Until
2026-11-27 User-User fed a bounded heap per item in user order, which kept one of the tied
users by the heap's layout and summed the neighbours in heap order; its rank lists and
today's agree on MovieLens-100k and on the 27 Shriver 2018 fuzzing trials checked
(``benchmarks/bench_knn.py``), the scores up to the last bits and such ties.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from recaudit._jit import njit
from recaudit.models._cf._base import RatingConfig, RatingRecommender
from recaudit.models._registry import register

__all__ = ["ItemKNN", "UserKNN"]


@njit(cache=True)
def _worse(buf_s, buf_c, pos, a, b):
    """Entry ``a`` of slot ``pos`` ranks below entry ``b``: a smaller similarity, or the same
    and a larger code (the neighbourhood's order: decreasing similarity, then code)."""
    return buf_s[pos, a] < buf_s[pos, b] or (buf_s[pos, a] == buf_s[pos, b]
                                             and buf_c[pos, a] > buf_c[pos, b])


@njit(cache=True)
def _sift_down(buf_s, buf_c, buf_v, pos, nn, t):
    """Restore the heap order of slot ``pos`` below node ``t``: every node ranks below its
    children, so the root is the lowest-ranked entry. (``t`` has no default: numba would
    compile the function once for an omitted ``t`` and once for a given one.)"""
    while True:
        left = 2 * t + 1
        if left >= nn:
            return
        c = left
        if left + 1 < nn and _worse(buf_s, buf_c, pos, left + 1, left):
            c = left + 1
        if not _worse(buf_s, buf_c, pos, c, t):
            return
        buf_s[pos, c], buf_s[pos, t] = buf_s[pos, t], buf_s[pos, c]
        buf_c[pos, c], buf_c[pos, t] = buf_c[pos, t], buf_c[pos, c]
        buf_v[pos, c], buf_v[pos, t] = buf_v[pos, t], buf_v[pos, c]
        t = c


@njit(cache=True)
def _push(buf_s, buf_c, buf_v, cnt, pos, s, code, v, nn):
    """Keep the ``nn`` highest-ranked neighbours (decreasing similarity, then lower code)
    offered to slot ``pos``: the same ones whatever the order they come in.

    The slot fills up in arrival order; once full it is a heap with the lowest-ranked entry at
    the root, so a candidate that does not outrank it is rejected in O(1) and one that does
    replaces it in O(log nn).
    """
    c = cnt[pos]
    if c < nn:
        buf_s[pos, c] = s
        buf_c[pos, c] = code
        buf_v[pos, c] = v
        cnt[pos] = c + 1
        if c + 1 == nn:                       # heapify
            for start in range(nn // 2 - 1, -1, -1):
                _sift_down(buf_s, buf_c, buf_v, pos, nn, start)
        return
    if s > buf_s[pos, 0] or (s == buf_s[pos, 0] and code < buf_c[pos, 0]):
        buf_s[pos, 0] = s
        buf_c[pos, 0] = code
        buf_v[pos, 0] = v
        _sift_down(buf_s, buf_c, buf_v, pos, nn, np.int64(0))  # from the root


@njit(cache=True)
def _ranked_sums(buf_s, buf_c, buf_v, pos, c):
    """``(sum s v, sum |s|)`` over the ``c`` entries of slot ``pos``, added in rank order
    (sorted in place first): the order, hence the rounding, of a walk down the sorted row."""
    for a in range(1, c):
        s, k, v = buf_s[pos, a], buf_c[pos, a], buf_v[pos, a]
        b = a - 1
        while b >= 0 and (buf_s[pos, b] < s or (buf_s[pos, b] == s and buf_c[pos, b] > k)):
            buf_s[pos, b + 1] = buf_s[pos, b]
            buf_c[pos, b + 1] = buf_c[pos, b]
            buf_v[pos, b + 1] = buf_v[pos, b]
            b -= 1
        buf_s[pos, b + 1] = s
        buf_c[pos, b + 1] = k
        buf_v[pos, b + 1] = v
    num = 0.0
    den = 0.0
    for t in range(c):
        num += buf_s[pos, t] * buf_v[pos, t]
        den += abs(buf_s[pos, t])
    return num, den


@njit(cache=True)
def _user_user_scores(sims, users, indptr, items, cval, umean, n_items, nn, min_nbrs, min_sim,
                      negative):
    """``sims[b, v]``: similarity of batch user b to v; CSR (indptr, items, cval) of centred
    ratings by user. Returns ``[b, n_items]`` scores, NaN where unscorable. A neighbour needs
    ``sim >= min_sim`` (``|sim| >= min_sim`` when ``negative``).

    The candidates of user b are visited once, by decreasing similarity (ties: lower user code
    first, a stable sort); each gives its centred ratings to the items that have fewer than
    ``nn`` neighbours yet. So every item gets its ``nn`` most similar raters, as a bounded
    heap per item would give them, at the cost of one pass over the candidates' ratings
    (``O(nnz)`` per user, no heap: 7-11 times faster, ``benchmarks/bench_knn.py``), and each score
    sums its neighbours in that order."""
    nb = sims.shape[0]
    out = np.full((nb, n_items), np.nan)
    cnt = np.zeros(n_items, dtype=np.int64)
    num = np.zeros(n_items)
    den = np.zeros(n_items)
    for b in range(nb):
        u = users[b]
        row = sims[b]
        order = np.argsort(-row, kind="mergesort")
        cnt[:] = 0
        num[:] = 0.0
        den[:] = 0.0
        for t in range(len(order)):
            v = order[t]
            s = row[v]
            if s < min_sim and not (negative and -s >= min_sim):
                if not negative:
                    break                     # the rest are less similar still
                continue
            if v == u:
                continue
            a = abs(s)
            for p in range(indptr[v], indptr[v + 1]):
                i = items[p]
                if cnt[i] < nn:
                    cnt[i] += 1
                    num[i] += s * cval[p]
                    den[i] += a
        for i in range(n_items):
            c = cnt[i]
            if c >= min_nbrs and c > 0:
                out[b, i] = umean[u] + num[i] / den[i]
    return out


#: A push (a heap offer, scattered over every target's buffer, then the buffer sorted) costs
#: about as much as this many steps of a scan (a walk down a sorted row): 97 and 2.8 ns on
#: MovieLens-100k (``benchmarks/bench_knn.py``: push only 13.4 s, scan only 2.5 s).
_PUSH_COST = 35


@njit(cache=True)
def _item_item_scores(users, r_indptr, r_items, r_cval, s_indptr, s_nbr, s_val, imean,
                      n_items, nn, min_nbrs, strategy=0):
    """Item-item scores for a batch of users; NaN where fewer than ``min_nbrs`` neighbours.

    The rows of the similarity matrix are sorted by decreasing similarity (ties: lower item
    code first); the neighbours of target ``i`` are the first ``nn`` rated items of row ``i``
    in that order, and its score adds them up in that order. Two strategies give exactly
    these numbers (the similarity matrix is symmetric to the bit); each user gets the one
    estimated cheaper (``strategy`` 0; 1 forces push, 2 scan: the tests compare them):

    - *push*: for every rated ``j`` and neighbour ``i`` of ``j``, offer ``(sim, j, r_uj -
      mean_j)`` to ``i``'s bounded buffer of its ``nn`` highest-ranked neighbours (cost ~ the
      rated items' degrees, :data:`_PUSH_COST` each), then sum each buffer in rank order;
    - *scan*: for every target ``i``, walk its sorted row and stop after ``nn`` rated items
      (cost ~ the rows' lengths times ``nn`` / the items rated; cheap for heavy raters).

    Until 2026-11-27 the push buffers ranked by similarity alone (a tie at the boundary kept
    whichever entry the heap's layout kept, against the rule above) and summed in heap order,
    and push was chosen wherever it looked half as costly as a scan. Scoring every user is
    now 1.2 times faster on MovieLens-100k and 1.2-1.4 times on ml-latest-small
    (``benchmarks/bench_knn.py``); of the top-10 lists, none changed on MovieLens-100k (nor
    on 27 of its Shriver 2018 fuzzing trials) and 1 of 671 on ml-latest-small (a boundary
    tie).
    """
    nb = len(users)
    out = np.full((nb, n_items), np.nan)
    buf_s = np.empty((n_items, nn))
    buf_c = np.empty((n_items, nn), dtype=np.int64)
    buf_v = np.empty((n_items, nn))
    cnt = np.zeros(n_items, dtype=np.int64)
    rated = np.full(n_items, np.nan)
    total = s_indptr[n_items]
    for b in range(nb):
        u = users[b]
        n_r = r_indptr[u + 1] - r_indptr[u]
        push_cost = 0
        for p in range(r_indptr[u], r_indptr[u + 1]):
            j = r_items[p]
            push_cost += s_indptr[j + 1] - s_indptr[j]
        scan_cost = total if n_r <= nn else total * nn // n_r
        if strategy == 1 or (strategy == 0 and _PUSH_COST * push_cost <= scan_cost):
            cnt[:] = 0
            for p in range(r_indptr[u], r_indptr[u + 1]):
                j = r_items[p]
                x = r_cval[p]
                for q in range(s_indptr[j], s_indptr[j + 1]):
                    _push(buf_s, buf_c, buf_v, cnt, s_nbr[q], s_val[q], j, x, nn)
            for i in range(n_items):
                c = cnt[i]
                if c >= min_nbrs and c > 0:
                    num, den = _ranked_sums(buf_s, buf_c, buf_v, i, c)
                    out[b, i] = imean[i] + num / den
        else:
            for p in range(r_indptr[u], r_indptr[u + 1]):
                rated[r_items[p]] = r_cval[p]
            for i in range(n_items):
                c = 0
                num = 0.0
                den = 0.0
                for q in range(s_indptr[i], s_indptr[i + 1]):
                    x = rated[s_nbr[q]]
                    if not np.isnan(x):
                        num += s_val[q] * x
                        den += abs(s_val[q])
                        c += 1
                        if c == nn:
                            break
                if c >= min_nbrs and c > 0:
                    out[b, i] = imean[i] + num / den
            for p in range(r_indptr[u], r_indptr[u + 1]):
                rated[r_items[p]] = np.nan
    return out


@njit(cache=True)
def _by_similarity(indptr, data):
    """The order of a CSR matrix's entries that sorts each row by decreasing value, equal
    values keeping their order (a stable sort: by column, the row's indices being sorted). The
    same as ``np.lexsort((indices, -data, row))``, in a quarter of its time on MovieLens-100k's
    1.8 million similarities."""
    out = np.empty(len(data), dtype=np.int64)
    for r in range(len(indptr) - 1):
        a, b = indptr[r], indptr[r + 1]
        out[a:b] = np.argsort(-data[a:b], kind="mergesort") + a
    return out


def _unit_rows(m: sp.csr_array) -> sp.csr_array:
    """Rows scaled to unit L2 norm (zero rows stay zero)."""
    norms = np.sqrt(np.bincount(np.repeat(np.arange(m.shape[0]), np.diff(m.indptr)),
                                weights=m.data ** 2, minlength=m.shape[0]))
    scale = np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 1e-12)
    out = m.copy()
    out.data = out.data * np.repeat(scale, np.diff(m.indptr))
    return out


@dataclass(frozen=True)
class KNNConfig(RatingConfig):
    """Neighbourhood options.

    max_nbrs: most neighbours used per score (20). min_nbrs: fewest neighbours for a score
    (1 <= min_nbrs <= max_nbrs). min_sim: smallest similarity of a neighbour (> 0; with
    ``negative``, smallest absolute similarity). negative: also keep negatively similar
    neighbours (LensKit's Java default; False).
    """

    max_nbrs: int = 20
    min_nbrs: int = 1
    min_sim: float = 1e-6
    negative: bool = False

    def validate(self) -> None:
        if self.max_nbrs < 1:
            raise self.invalid("max_nbrs", f"must be a positive integer, got {self.max_nbrs!r}")
        if not 1 <= self.min_nbrs <= self.max_nbrs:
            raise self.invalid("min_nbrs", f"must be in [1, max_nbrs], got {self.min_nbrs!r}")
        if not self.min_sim > 0:
            raise self.invalid("min_sim", f"must be > 0 (a threshold on the similarity, or on its "
                                          f"absolute value with negative=True), got {self.min_sim!r}")


class _KNNBase(RatingRecommender):
    Config = KNNConfig


@register("user-user")
class UserKNN(_KNNBase):
    """User-User kNN with cosine similarity of mean-centred ratings (LensKit's UserKNN)."""

    def _fit(self, R: sp.csr_array, rng: np.random.Generator) -> None:
        centred = R.copy()
        centred.data = R.data - np.repeat(self.user_mean_, np.diff(R.indptr))
        self.unit_ = _unit_rows(centred)                    # users x items, unit rows
        centred.sort_indices()
        self.centred_ = centred                              # users x items, centred

    def _score_users(self, users: np.ndarray) -> np.ndarray:
        sims = np.asarray((self.unit_[users] @ self.unit_.T).todense(), dtype=np.float64)
        c = self.config
        r = self.centred_
        return _user_user_scores(sims, users.astype(np.int64), r.indptr.astype(np.int64),
                                 r.indices.astype(np.int64), r.data,
                                 self.user_mean_, self.n_items_, c.max_nbrs, c.min_nbrs,
                                 float(c.min_sim), c.negative)


@register("item-item")
class ItemKNN(_KNNBase):
    """Item-Item kNN with cosine similarity of item-mean-centred ratings (LensKit's ItemKNN)."""

    def _fit(self, R: sp.csr_array, rng: np.random.Generator) -> None:
        icounts = np.bincount(R.indices, minlength=R.shape[1])
        isums = np.bincount(R.indices, weights=R.data, minlength=R.shape[1])
        self.item_mean_ = np.divide(isums, icounts, out=np.zeros(R.shape[1]), where=icounts > 0)
        centred = R.copy()
        centred.data = R.data - self.item_mean_[R.indices]
        self.centred_ = centred                              # users x items
        unit = _unit_rows(centred.T.tocsr())                 # items x users, unit rows
        full = (unit @ unit.T).tocoo()
        sim_ok = np.abs(full.data) if self.config.negative else full.data
        keep = (full.row != full.col) & (sim_ok >= self.config.min_sim)
        sim = sp.csr_array((full.data[keep], (full.row[keep], full.col[keep])),
                           shape=full.shape)
        # rows by decreasing similarity, ties by item code (what both kernels rely on)
        sim.sort_indices()
        order = _by_similarity(sim.indptr.astype(np.int64), sim.data)
        self.sim_ = sp.csr_array((sim.data[order], sim.indices[order], sim.indptr),
                                 shape=sim.shape)            # items x items, symmetric

    def _score_users(self, users: np.ndarray) -> np.ndarray:
        c, s, r = self.config, self.sim_, self.centred_
        return _item_item_scores(users.astype(np.int64), r.indptr.astype(np.int64),
                                 r.indices.astype(np.int64), r.data,
                                 s.indptr.astype(np.int64), s.indices.astype(np.int64), s.data,
                                 self.item_mean_, self.n_items_, c.max_nbrs, c.min_nbrs, 0)
