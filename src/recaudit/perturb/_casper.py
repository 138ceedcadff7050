"""CASPER cascading scores (Oh et al. 2022, Algorithm 1 and section 6.2), exact and fast.

The interaction DAG (IDAG) has one node per training interaction -- with ``max_len = L`` only
each user's latest ``L`` interactions are nodes (the window a model with maximum sequence length
``L`` sees). Rows are in the log's stable ``(timestamp, row)`` order. An edge joins

- consecutive nodes of the same user, and
- consecutive nodes of the same item (among nodes, i.e. skipping interactions outside the window),

only when the timestamp strictly increases along it ("no edges between nodes with the same
timestamp", section 6.2): a consecutive pair with equal timestamps gets *no* edge, and no edge
jumps over it. The cascading score of a zero-in-degree node is its number of descendants
including itself; every other row (non-root nodes, rows outside the window) scores 0, as in
Algorithm 1 which only runs the BFS from roots.

Because every edge goes from a row to a strictly later timestamp, the row order is a topological
order, which both algorithms below use.

``method="exact"`` -- word-parallel reachability. Roots are taken 64 at a time; each node holds a
``uint64`` mask of which of the 64 roots reach it, computed in row order by *pulling*
``mask[v] = mask[user parent of v] | mask[item parent of v]`` (independent reads overlap in the
CPU, where pushing read-modify-writes to the children serialises: about 5x faster measured);
a 64-lane bit-sliced counter adds every non-zero mask (a saturated mask costs one increment),
so one pass over the rows from the first root of the block counts the descendants of 64 roots
at once. A pass stops as soon as no mask can still be pending. Work is ``O(sum over passes of
(n - first root row))`` row visits, i.e. ``O(n * Z / 64)`` for ``Z`` roots in the worst case;
memory ``8 n`` bytes per thread plus the graph (four index arrays); passes run in parallel.

``method="approx"`` -- Cohen (1997), "Size-estimation framework with applications to transitive
closure and reachability": every node draws ``k`` independent ``Exp(1)`` ranks (from a hash of
``seed``, rank set and row, as 32-bit uniforms); in reverse topological order each node keeps
the minimum rank over its descendants (four rank sets per pass, ``16 n`` bytes per thread).
For a root with ``s`` descendants the minimum is ``Exp(s)``, the sum ``S`` of the ``k`` minima
is ``Gamma(k, s)`` and ``(k - 1) / S`` is an unbiased estimator of ``s`` with relative standard
deviation ``1 / sqrt(k - 2)`` (6.3 % for the default ``k = 256``); :func:`casper_error_bound`
gives the exact two-sided probability ``P(|s_hat / s - 1| > eps)``. The 32-bit ranks add a
relative quantisation below ``s / 2**32``. ``O(k n)`` time, ``O(n)`` memory; the result does
not depend on the number of threads.

``method="auto"`` (default) runs exact unless its predicted work exceeds ``exact_budget`` row
visits (default ``1e9``: about 30 s on two shared cores), then approx. Real logs have few
roots (Wikipedia: about 0.4 % of the rows), so exact is the rule up to a few million rows.
Measured (``benchmarks/bench_casper.py``, 2 shared cores): Wikipedia 157k rows exact in
0.1-0.25 s; a 10M-row synthetic log (16-19k roots) exact in 70-110 s, approx in 40-60 s (the
default ``auto`` picks approx there).
"""

from __future__ import annotations

import math

import numba
import numpy as np
from numba import prange

from recaudit._jit import njit
from recaudit.data import Interactions

__all__ = ["casper_scores", "casper_graph", "casper_error_bound"]

_PLANES = 48  # bit-sliced counter width: counts up to 2**48


def casper_graph(interactions: Interactions, max_len: int | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The IDAG as arrays aligned with rows: ``(is_node, next_user, next_item)``.

    ``next_user[r]`` / ``next_item[r]`` is the row the edge from ``r`` points to, or ``-1``.
    """
    if max_len is not None and (isinstance(max_len, bool) or int(max_len) != max_len
                                or max_len < 1):
        raise ValueError(f"max_len must be a positive integer or None, got {max_len!r}")
    n = len(interactions)
    ts = interactions.timestamp
    next_user = np.full(n, -1, dtype=np.int64)
    next_item = np.full(n, -1, dtype=np.int64)
    indptr, rows = _group_rows(interactions.user, interactions.n_users)
    if max_len is None:
        is_node = np.ones(n, dtype=bool)
    else:
        users = interactions.user[rows]
        from_end = indptr[users.astype(np.int64) + 1] - 1 - np.arange(n)
        is_node = np.zeros(n, dtype=bool)
        is_node[rows[from_end < max_len]] = True
    # user chains: consecutive rows of the grouped order, same user, both nodes, ts increases
    if n > 1:
        a, b = rows[:-1], rows[1:]
        ok = (interactions.user[a] == interactions.user[b]) & is_node[a] & is_node[b] \
            & (ts[b] > ts[a])
        next_user[a[ok]] = b[ok]
        nodes = np.flatnonzero(is_node)
        items = interactions.item[nodes]
        items.flags.writeable = False  # as interactions.user above: one compiled kernel
        by_item = nodes[_group_rows(items, interactions.n_items)[1]]
        a, b = by_item[:-1], by_item[1:]
        ok = (interactions.item[a] == interactions.item[b]) & (ts[b] > ts[a])
        next_item[a[ok]] = b[ok]
    return is_node, next_user, next_item


def _roots(is_node: np.ndarray, next_user: np.ndarray, next_item: np.ndarray) -> np.ndarray:
    indeg = np.zeros(len(is_node), dtype=np.int64)
    for nxt in (next_user, next_item):
        indeg += np.bincount(nxt[nxt >= 0], minlength=len(is_node))
    return np.flatnonzero(is_node & (indeg == 0)).astype(np.int64)


@njit(cache=True, nogil=True)
def _count_block(prev_user, prev_item, next_user, next_item, roots, lo, hi, mask, out
                 ):  # pragma: no cover - numba
    """Descendant counts of ``roots[lo:hi]`` (at most 64) in one pass, pulling masks."""
    n = len(prev_user)
    planes = np.zeros(_PLANES, dtype=np.uint64)
    one = np.uint64(1)
    zero = np.uint64(0)
    full = (one << np.uint64(hi - lo - 1)) - one + (one << np.uint64(hi - lo - 1))
    n_full = np.int64(0)
    start = roots[lo]
    frontier = roots[hi - 1]
    j = lo
    i = start
    while i < n and i <= frontier:
        m = zero
        c = prev_user[i]
        if c >= start:
            m |= mask[c]
        c = prev_item[i]
        if c >= start:
            m |= mask[c]
        if j < hi and roots[j] == i:
            m |= one << np.uint64(j - lo)
            j += 1
        mask[i] = m
        if m != zero:
            if m == full:
                n_full += 1
            else:
                carry = m
                p = 0
                while carry != zero:
                    t = planes[p] & carry
                    planes[p] ^= carry
                    carry = t
                    p += 1
            c = next_user[i]
            if c > frontier:
                frontier = c
            c = next_item[i]
            if c > frontier:
                frontier = c
        i += 1
    for j in range(lo, hi):
        b = np.uint64(j - lo)
        cnt = np.int64(0)
        for p in range(_PLANES):
            cnt |= np.int64((planes[p] >> b) & one) << p
        out[j] = cnt + n_full


@njit(cache=True, parallel=True)
def _exact_kernel(prev_user, prev_item, next_user, next_item, roots, n_threads
                  ):  # pragma: no cover - numba
    n = len(prev_user)
    out = np.zeros(len(roots), dtype=np.int64)
    n_blocks = (len(roots) + 63) // 64
    for t in prange(n_threads):
        if t < n_blocks:
            mask = np.zeros(n, dtype=np.uint64)
            for c in range(t, n_blocks, n_threads):
                lo = c * 64
                hi = min(lo + 64, len(roots))
                _count_block(prev_user, prev_item, next_user, next_item, roots, lo, hi, mask,
                              out)
    return out


@njit(cache=True)
def _group_rows(keys, n_keys):  # pragma: no cover - numba
    """Stable counting sort: rows grouped by key (CSR ``indptr``, ``rows``)."""
    indptr = np.zeros(n_keys + 1, dtype=np.int64)
    for k in keys:
        indptr[k + 1] += 1
    for k in range(n_keys):
        indptr[k + 1] += indptr[k]
    pos = indptr[:-1].copy()
    rows = np.empty(len(keys), dtype=np.int64)
    for r in range(len(keys)):
        rows[pos[keys[r]]] = r
        pos[keys[r]] += 1
    return indptr, rows


@njit(cache=True, nogil=True)
def _splitmix(x):  # pragma: no cover - numba
    x = (x + np.uint64(0x9E3779B97F4A7C15))
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


_SKETCHES = 4  # rank sets per pass: one random child read serves all of them


@njit(cache=True, parallel=True)
def _approx_kernel(is_node, next_user, next_item, roots, k, seed, n_threads, sketches
                   ):  # pragma: no cover - numba
    """Sum over ``k`` rank sets of each root's minimum descendant rank, as ``Exp(1)`` values.

    Ranks are 32-bit hashes of (seed, set, row) read as uniforms; the minimum is taken on the
    integers and only the roots' minima go through ``-log(1 - u)`` (monotone, so the minimum
    of the transformed ranks is the transform of the minimum: ``Exp(s)`` for ``s``
    descendants).
    """
    n = len(next_user)
    n_groups = (k + sketches - 1) // sketches
    sums = np.zeros((n_groups, len(roots)), dtype=np.float64)  # fixed order: no thread effect
    for t in prange(n_threads):
        mins = np.empty((n, sketches), dtype=np.uint32)
        for g in range(t, n_groups, n_threads):
            base = np.empty(sketches, dtype=np.uint64)
            for b in range(sketches):
                base[b] = _splitmix(np.uint64(seed) ^ _splitmix(np.uint64(g * sketches + b)))
            for i in range(n - 1, -1, -1):
                if not is_node[i]:
                    continue
                cu = next_user[i]
                ci = next_item[i]
                for b in range(sketches):
                    v = np.uint32(_splitmix(base[b] ^ np.uint64(i)) >> np.uint64(32))
                    if cu >= 0 and mins[cu, b] < v:
                        v = mins[cu, b]
                    if ci >= 0 and mins[ci, b] < v:
                        v = mins[ci, b]
                    mins[i, b] = v
            for b in range(sketches):
                if g * sketches + b >= k:
                    break
                for j in range(len(roots)):
                    u = (np.float64(mins[roots[j], b]) + 0.5) * (1.0 / 4294967296.0)
                    sums[g, j] += -math.log1p(-u)
    return sums.sum(axis=0)


def _exact_work(roots: np.ndarray, n: int) -> int:
    """Upper bound on the row visits of the exact method."""
    return int(np.sum(n - roots[::64])) if len(roots) else 0


def casper_error_bound(k: int, eps: float) -> float:
    """Probability that the approximate score of one root is off by more than ``eps`` (relative).

    ``P(|s_hat / s - 1| > eps)`` for ``s_hat = (k - 1) / S``, ``S ~ Gamma(k, rate s)`` -- exact,
    independent of ``s``. E.g. ``k = 256, eps = 0.15`` gives about 0.016.
    """
    from scipy.stats import gamma

    if k < 3:
        raise ValueError(f"k must be >= 3, got {k}")
    lo = (k - 1) / (1 + eps)
    hi = (k - 1) / (1 - eps) if eps < 1 else math.inf
    return float(gamma.cdf(lo, k) + gamma.sf(hi, k))


def casper_scores(
    interactions: Interactions,
    max_len: int | None = None,
    *,
    method: str = "auto",
    k: int = 256,
    seed: int = 0,
    exact_budget: float = 1e9,
    n_threads: int | None = None,
) -> np.ndarray:
    """CASPER cascading score of every row of ``interactions`` (``int64``, aligned with rows).

    ``score[r]`` is the number of IDAG descendants of ``r`` (itself included) when ``r`` is a
    zero-in-degree node, else 0 (see the module docstring for the graph). ``method`` is
    ``"exact"``, ``"approx"`` (Cohen's min-rank estimator with ``k`` ranks per node and ``seed``;
    rounded to integers; relative std ``1/sqrt(k-2)``) or ``"auto"`` (exact unless it would take
    more than ``exact_budget`` row visits). ``n_threads`` defaults to numba's thread count.
    Memory: the graph (four index arrays, ``16 n`` bytes below 2**31 rows) plus ``8 n`` bytes
    per thread.
    """
    if not isinstance(interactions, Interactions):
        raise TypeError(f"interactions must be Interactions, got {type(interactions).__name__}")
    if method not in ("auto", "exact", "approx"):
        raise ValueError(f"method must be 'auto', 'exact' or 'approx', got {method!r}")
    n = len(interactions)
    scores = np.zeros(n, dtype=np.int64)
    if n == 0:
        return scores
    is_node, next_user, next_item = casper_graph(interactions, max_len)
    roots = _roots(is_node, next_user, next_item)
    threads = numba.get_num_threads() if n_threads is None else int(n_threads)
    if threads < 1:
        raise ValueError(f"n_threads must be >= 1, got {n_threads}")
    if method == "auto":
        method = "exact" if _exact_work(roots, n) <= exact_budget else "approx"
    if method == "exact":
        idx = np.int32 if n < 2**31 - 1 else np.int64
        prev_user = np.full(n, -1, dtype=idx)
        prev_item = np.full(n, -1, dtype=idx)
        for nxt, prev in ((next_user, prev_user), (next_item, prev_item)):
            src = np.flatnonzero(nxt >= 0)
            prev[nxt[src]] = src
        scores[roots] = _exact_kernel(prev_user, prev_item, next_user.astype(idx),
                                      next_item.astype(idx), roots.astype(idx), threads)
    else:
        if int(k) != k or k < 3:
            raise ValueError(f"k must be an integer >= 3, got {k!r}")
        sums = _approx_kernel(is_node, next_user, next_item, roots, int(k),
                              int(seed) & (2**63 - 1), threads, _SKETCHES)
        scores[roots] = np.maximum(1, np.rint((k - 1) / sums)).astype(np.int64)
    return scores
