"""Compiled kernel for every prefix-overlap measure (RBO variants, average overlap, Jaccard, TopOut).

All of them are functions of the overlap curve ``X_d = |A[:d] ∩ B[:d]|``. For one pair the curve is
built in ``O(depth)`` with two "seen" marker arrays indexed by item code: when item ``a_d`` enters
``A``'s prefix it adds one to the overlap if ``B`` has already shown it, and symmetrically for
``b_d``. Markers hold a per-row stamp (row index + 1), so they are never cleared between rows.
Rows are processed in parallel chunks (``numba.prange``); each chunk owns its markers. The thread
count is whatever numba is configured with; nothing is set at import.

Duplicates inside the evaluated prefix are detected on the way (a marker already stamped for the
current row) and reported per row through ``err``; the public wrappers raise ``ValueError``.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

__all__: list[str] = []

EXT, MIN, MAX, TRUNC, AO, JACCARD, TOPOUT = 0, 1, 2, 3, 4, 5, 6
KINDS = {"ext": EXT, "min": MIN, "max": MAX, "trunc": TRUNC}
ERR_DUP_A, ERR_DUP_B = 1, 2


@njit(cache=True, nogil=True)
def _pair(a, len_a, b, len_b, kind, p, tail, mark_a, mark_b, stamp):  # pragma: no cover - numba
    """One pair. Returns (value, error code). For EXT/MIN/MAX the caller ensures len_a <= len_b."""
    x = 0  # overlap X_d after step d
    x_s = 0  # X at depth s = len_a (EXT, MAX)
    acc = 0.0
    pw = 1.0  # p ** (depth - 1)
    s = len_a
    n_steps = len_a if len_a > len_b else len_b
    for d in range(n_steps):
        if d < len_a:
            it = a[d]
            if mark_a[it] == stamp:
                return np.nan, 1
            mark_a[it] = stamp
            if mark_b[it] == stamp:
                x += 1
        if d < len_b:
            it = b[d]
            if mark_b[it] == stamp:
                return np.nan, 2
            mark_b[it] = stamp
            if mark_a[it] == stamp:
                x += 1
        depth = d + 1
        if kind == TRUNC:
            acc += pw * x / depth
            pw *= p
        elif kind == AO:
            acc += x / depth
        elif kind == EXT:
            if depth <= s:
                acc += pw * x / depth
                if depth == s:
                    x_s = x
            else:
                acc += pw * ((x + (depth - s) * x_s / s) / depth)
            pw *= p
        elif kind == MIN:
            acc += pw * x / depth
            pw *= p
        elif kind == MAX:
            if depth <= s:
                acc += pw * x / depth
            else:
                acc += pw * ((x + depth - s) / depth)
            pw *= p
    if kind == TRUNC:
        return (1.0 - p) * acc, 0
    if kind == AO:
        return acc / n_steps, 0
    if kind == JACCARD:
        return x / (len_a + len_b - x), 0
    if kind == TOPOUT:
        return 1.0 - x, 0
    l = len_b  # noqa: E741 - the paper's name for the longer length
    if kind == EXT:
        # pw == p ** l here
        return (1.0 - p) * acc + pw * ((x - x_s) / l + x_s / s), 0
    if kind == MIN:
        return (1.0 - p) * acc + (1.0 - p) / p * x * tail, 0
    # MAX: the residual part, both lists continuing with each other's unseen items, then agreeing
    f = l + s - x
    rest = 0.0
    for depth in range(l + 1, f + 1):
        rest += pw * ((2 * depth - l - s + x) / depth)
        pw *= p
    return (1.0 - p) * (acc + rest) + pw, 0


@njit(cache=True, nogil=True)
def _rows(a, len_a, b, len_b, kind, p, tail, n_codes, lo, hi, out, err):  # pragma: no cover
    mark_a = np.zeros(n_codes, np.int32)
    mark_b = np.zeros(n_codes, np.int32)
    for i in range(lo, hi):
        v, e = _pair(a[i], len_a, b[i], len_b, kind, p, tail, mark_a, mark_b, np.int32(i + 1))
        out[i] = v
        err[i] = e


@njit(cache=True, parallel=True)
def _similarity_parallel(a, len_a, b, len_b, kind, p, tail, n_codes):  # pragma: no cover
    n = a.shape[0]
    out = np.empty(n, np.float64)
    err = np.zeros(n, np.int8)
    n_chunks = min(n, 64)
    for c in prange(n_chunks):
        _rows(a, len_a, b, len_b, kind, p, tail, n_codes, c * n // n_chunks, (c + 1) * n // n_chunks, out, err)
    return out, err


@njit(cache=True)
def _similarity_serial(a, len_a, b, len_b, kind, p, tail, n_codes):  # pragma: no cover
    n = a.shape[0]
    out = np.empty(n, np.float64)
    err = np.zeros(n, np.int8)
    _rows(a, len_a, b, len_b, kind, p, tail, n_codes, 0, n, out, err)
    return out, err


PARALLEL_MIN_WORK = 200_000  # row-positions below which waking the thread pool costs more than it saves


def similarity_kernel(a, len_a, b, len_b, kind, p, tail, n_codes):
    """Value per row of ``a``/``b`` (``int32``/``int64`` codes in ``[0, n_codes)``) and error codes.

    Small inputs run serially; both paths evaluate each row with the same compiled ``_pair``, so
    the values are bit-identical whichever path runs.
    """
    if a.shape[0] * max(len_a, len_b) < PARALLEL_MIN_WORK:
        return _similarity_serial(a, len_a, b, len_b, kind, p, tail, n_codes)
    return _similarity_parallel(a, len_a, b, len_b, kind, p, tail, n_codes)


def log_tail(p: float, depth: int) -> float:
    """``sum_{d > depth} p^d / d``, the tail of ``-ln(1 - p)``, summed directly (no cancellation)."""
    if p ** depth > 1e-3:
        # the subtraction loses nothing of consequence while the tail is not small
        head = math.fsum(p**d / d for d in range(1, depth + 1))
        return -math.log1p(-p) - head
    terms = []
    d = depth + 1
    term = p**d / d
    while term > 0.0 and (not terms or term > 1e-18 * terms[0]):
        terms.append(term)
        d += 1
        term = p**d / d
    return math.fsum(terms)
