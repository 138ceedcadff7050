"""Kendall's tau between two rankings of the same items."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np
from numba import prange

from recaudit._jit import njit
from recaudit.metrics._kernels import PARALLEL_MIN_WORK, kernel_codes
from recaudit.metrics._validate import (
    as_code_matrix,
    check_codes,
    check_same_rows,
    encode_rankings,
    raise_row_error,
)

__all__ = ["kendall_tau", "kendall_tau_batch"]

_ERR = {
    1: "a lists an item twice",
    2: "b lists an item twice",
    3: "a and b do not rank the same items (Kendall's tau needs permutations of one item set)",
}


@njit(cache=True, nogil=True)
def _inversions(seq, buf):  # pragma: no cover - numba
    """Number of pairs i < j with seq[i] > seq[j] (bottom-up merge sort; sorts seq)."""
    n = seq.shape[0]
    inv = 0
    width = 1
    src, dst = seq, buf
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, o = lo, mid, lo
            while i < mid and j < hi:
                if src[i] <= src[j]:
                    dst[o] = src[i]
                    i += 1
                else:
                    dst[o] = src[j]
                    inv += mid - i
                    j += 1
                o += 1
            while i < mid:
                dst[o] = src[i]
                i += 1
                o += 1
            while j < hi:
                dst[o] = src[j]
                j += 1
                o += 1
        src, dst = dst, src
        width *= 2
    return inv


@njit(cache=True, nogil=True)
def _kendall_rows(a, b, n_codes, lo, hi, out, err):  # pragma: no cover - numba
    m = a.shape[1]
    pairs = m * (m - 1) / 2.0
    stamp_b = np.zeros(n_codes, np.int32)
    stamp_a = np.zeros(n_codes, np.int32)
    pos_b = np.zeros(n_codes, np.int64)
    seq = np.empty(m, np.int64)
    buf = np.empty(m, np.int64)
    for r in range(lo, hi):
        stamp = np.int32(r + 1)
        e = 0
        for j in range(m):
            it = b[r, j]
            if stamp_b[it] == stamp:
                e = 2
                break
            stamp_b[it] = stamp
            pos_b[it] = j
        if e == 0:
            for j in range(m):
                it = a[r, j]
                if stamp_a[it] == stamp:
                    e = 1
                    break
                stamp_a[it] = stamp
                if stamp_b[it] != stamp:
                    e = 3
                    break
                seq[j] = pos_b[it]
        if e != 0:
            err[r] = e
            out[r] = np.nan
            continue
        out[r] = 1.0 - 2.0 * _inversions(seq, buf) / pairs


@njit(cache=True, parallel=True)
def _kendall_parallel(a, b, n_codes):  # pragma: no cover - numba
    n = a.shape[0]
    out = np.empty(n, np.float64)
    err = np.zeros(n, np.int8)
    n_chunks = min(n, 64)
    for c in prange(n_chunks):
        _kendall_rows(a, b, n_codes, c * n // n_chunks, (c + 1) * n // n_chunks, out, err)
    return out, err


@njit(cache=True)
def _kendall_serial(a, b, n_codes):  # pragma: no cover - numba
    n = a.shape[0]
    out = np.empty(n, np.float64)
    err = np.zeros(n, np.int8)
    _kendall_rows(a, b, n_codes, np.int64(0), n, out, err)
    return out, err


def _run(am: np.ndarray, bm: np.ndarray) -> np.ndarray:
    if am.shape[1] != bm.shape[1]:
        raise ValueError(
            f"Kendall's tau needs rankings of the same items; the lists hold {am.shape[1]} and "
            f"{bm.shape[1]} items"
        )
    if am.shape[1] < 2:
        raise ValueError("Kendall's tau needs rankings of at least 2 items")
    n_codes = max(check_codes(am, am.shape[1], name="a"), check_codes(bm, bm.shape[1], name="b"))
    if n_codes > max(1024, 8 * am.shape[1]):
        # sparse codes: remap to 0..u-1 so the per-chunk position arrays stay small
        inverse = np.unique(np.concatenate([am, bm]), return_inverse=True)[1].reshape(-1, am.shape[1])
        am, bm = np.ascontiguousarray(inverse[: am.shape[0]]), np.ascontiguousarray(inverse[am.shape[0] :])
        n_codes = int(inverse.max()) + 1
    kernel = _kendall_parallel if am.size >= PARALLEL_MIN_WORK else _kendall_serial
    out, err = kernel(kernel_codes(am), kernel_codes(bm), n_codes)
    raise_row_error(err, messages=_ERR)
    return out


def kendall_tau(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    r"""Kendall's rank correlation of two rankings of the same ``n >= 2`` items (no ties)::

        tau = (C - D) / (n (n - 1) / 2) = 1 - 4 D / (n (n - 1))

    where ``C``/``D`` count concordant/discordant item pairs (Kendall 1938). ``O(n log n)``
    (inversion count by merge sort). Rankings of different item sets are an error: use
    :func:`rbo` for non-conjoint lists.
    """
    ca, cb = encode_rankings(a, b)
    return float(_run(ca, cb)[0])


def kendall_tau_batch(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """:func:`kendall_tau` of every row pair of two code arrays ``[n, m]``; ``float64[n]``."""
    am, bm = as_code_matrix(a, name="a"), as_code_matrix(b, name="b")
    check_same_rows(am, bm)
    return _run(am, bm)
