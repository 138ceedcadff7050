"""Compiled kernel for every prefix-overlap measure (RBO variants, average overlap, Jaccard, TopOut).

All of them are functions of the overlap curve ``X_d = |A[:d] ∩ B[:d]|``. For one pair the curve is
built in ``O(depth)`` with two "seen" marker arrays indexed by item code: when item ``a_d`` enters
``A``'s prefix it adds one to the overlap if ``B`` has already shown it, and symmetrically for
``b_d``. Markers hold a per-row stamp (row index + 1), so they are never cleared between rows.
Rows are processed in parallel chunks (``numba.prange``); each chunk owns its markers. The thread
count is whatever numba is configured with; nothing is set at import.

Duplicates inside the evaluated prefix are detected on the way (a marker already stamped for the
current row) and reported per row through ``err``; the public wrappers raise ``ValueError``.

The depth weights (``p^d / (d+1)``) are computed once per call, so the hot loop is two marker
look-ups per list and one multiply-add per depth (about 2 ns per depth on one core). Inputs
smaller than ``PARALLEL_MIN_WORK`` row-positions run on a serial twin of the parallel kernel;
both call the same compiled ``_pair``, so scalar and batch values are bit-identical.
"""

from __future__ import annotations

import math

import numpy as np
import numba
from numba import prange

from recaudit._jit import njit

__all__: list[str] = []

EXT, MIN, MAX, TRUNC, AO, JACCARD, TOPOUT = 0, 1, 2, 3, 4, 5, 6
KINDS = {"ext": EXT, "min": MIN, "max": MAX, "trunc": TRUNC}
ERR_DUP_A, ERR_DUP_B, ERR_NEGATIVE, ERR_TOO_LARGE = 1, 2, 3, 4
_OUT_OF_RANGE = 5  # internal: a code beyond the marker arrays (grow them and retry the row)
MAX_CODE = 2**26  # codes index marker arrays; larger ones must be encoded densely first


@njit(cache=True)
def weights(p, n, average):  # pragma: no cover - numba
    """``powers[d] = p^d`` (by repeated multiplication) for ``d <= n`` and the per-depth weight
    ``w[d]`` of ``X_{d+1}``: ``p^d / (d + 1)`` (RBO sums), or ``1 / (d + 1)`` (average overlap)."""
    powers = np.empty(n + 1, np.float64)
    w = np.empty(n, np.float64)
    pw = 1.0
    for d in range(n + 1):
        powers[d] = pw
        if d < n:
            w[d] = (1.0 if average else pw) / (d + 1)
        pw *= p
    return powers, w


@njit(cache=True, nogil=True)
def _pair(a, len_a, b, len_b, kind, p, w, powers, tail, stop, mark_a, mark_b, stamp):  # pragma: no cover
    """One pair. Returns (value, error code). For EXT/MIN/MAX the caller ensures len_a <= len_b."""
    x = 0  # overlap X_D after depth D
    acc = 0.0
    both = len_a if len_a < len_b else len_b
    size = mark_a.shape[0]
    same = True  # X_D == D so far: the prefixes are identical
    # depths where both lists advance: the hot loop of every measure
    for d in range(both):
        ia = a[d]
        if ia < 0 or ia >= size:
            return float(ia), _OUT_OF_RANGE
        if mark_a[ia] == stamp:
            return np.nan, 1
        mark_a[ia] = stamp
        if mark_b[ia] == stamp:
            x += 1
        ib = b[d]
        if ib < 0 or ib >= size:
            return float(ib), _OUT_OF_RANGE
        if mark_b[ib] == stamp:
            return np.nan, 2
        mark_b[ib] = stamp
        if mark_a[ib] == stamp:
            x += 1
        acc += w[d] * x
        if x != d + 1:
            same = False
        if (d & 31) == 31 and not same and powers[d + 1] * stop < acc:
            # provably no further effect: see similarity_kernel
            return (1.0 - p) * acc, 0
    s = len_a
    x_s = x  # X_s (EXT, MAX: len_a is the shorter length)
    # depths where only one list advances (lists of different lengths)
    for d in range(both, len_b):
        ib = b[d]
        if ib < 0 or ib >= size:
            return float(ib), _OUT_OF_RANGE
        if mark_b[ib] == stamp:
            return np.nan, 2
        mark_b[ib] = stamp
        if mark_a[ib] == stamp:
            x += 1
        depth = d + 1
        if kind == EXT:
            acc += powers[d] * ((x + (depth - s) * x_s / s) / depth)
        elif kind == MAX:
            acc += powers[d] * ((x + depth - s) / depth)
        else:
            acc += w[d] * x
    for d in range(both, len_a):  # only TOPOUT/JACCARD can have len_a > len_b
        ia = a[d]
        if ia < 0 or ia >= size:
            return float(ia), _OUT_OF_RANGE
        if mark_a[ia] == stamp:
            return np.nan, 1
        mark_a[ia] = stamp
        if mark_b[ia] == stamp:
            x += 1
    if kind == TRUNC:
        return (1.0 - p) * acc, 0
    if kind == AO:
        return acc / both, 0
    if kind == JACCARD:
        return x / (len_a + len_b - x), 0
    if kind == TOPOUT:
        return 1.0 - x, 0
    l = len_b  # noqa: E741 - the paper's name for the longer length
    if same and (kind == EXT or kind == MAX):
        # the shorter list is a prefix of the longer: both are exactly 1 (A_d = 1 at every depth),
        # which the float sum would miss by an ulp
        return 1.0, 0
    if kind == EXT:
        return (1.0 - p) * acc + powers[l] * ((x - x_s) / l + x_s / s), 0
    if kind == MIN:
        return (1.0 - p) * acc + (1.0 - p) / p * x * tail, 0
    # MAX: the residual part, both lists continuing with each other's unseen items, then agreeing
    f = l + s - x
    rest = 0.0
    for depth in range(l + 1, f + 1):
        rest += powers[depth - 1] * ((2 * depth - l - s + x) / depth)
    return (1.0 - p) * (acc + rest) + powers[f], 0


@njit(cache=True, nogil=True)
def _rows(a, len_a, b, len_b, kind, p, w, powers, tail, stop, size, lo, hi, out, err):  # pragma: no cover
    """Rows lo..hi-1 with chunk-owned markers, grown (and the row retried) when a code exceeds them."""
    mark_a = np.zeros(size, np.int32)
    mark_b = np.zeros(size, np.int32)
    i = lo
    while i < hi:
        v, e = _pair(a[i], len_a, b[i], len_b, kind, p, w, powers, tail, stop, mark_a, mark_b, np.int32(i + 1))
        if e == _OUT_OF_RANGE:
            code = np.int64(v)
            if code < 0 or code >= MAX_CODE:
                out[i] = np.nan
                err[i] = ERR_NEGATIVE if code < 0 else ERR_TOO_LARGE
                i += 1
                continue
            size = max(2 * size, code + 1)
            mark_a = np.zeros(size, np.int32)
            mark_b = np.zeros(size, np.int32)
            continue
        out[i] = v
        err[i] = e
        i += 1


@njit(cache=True, parallel=True)
def _similarity_parallel(a, len_a, b, len_b, kind, p, w, powers, tail, stop, size, n_chunks):  # pragma: no cover
    n = a.shape[0]
    out = np.empty(n, np.float64)
    err = np.zeros(n, np.int8)
    for c in prange(n_chunks):
        lo = c * n // n_chunks
        hi = (c + 1) * n // n_chunks
        _rows(a, len_a, b, len_b, kind, p, w, powers, tail, stop, size, lo, hi, out, err)
    return out, err


@njit(cache=True)
def _similarity_serial(a, len_a, b, len_b, kind, p, w, powers, tail, stop, size):  # pragma: no cover
    n = a.shape[0]
    out = np.empty(n, np.float64)
    err = np.zeros(n, np.int8)
    _rows(a, len_a, b, len_b, kind, p, w, powers, tail, stop, size, np.int64(0), n, out, err)
    return out, err


@njit(cache=True, parallel=True)
def _min_max_parallel(arr, width):  # pragma: no cover - numba
    n = arr.shape[0]
    n_chunks = min(n, 64)
    los = np.empty(n_chunks, np.int64)
    his = np.empty(n_chunks, np.int64)
    for c in prange(n_chunks):
        lo = arr[c * n // n_chunks, 0]
        hi = lo
        for i in range(c * n // n_chunks, (c + 1) * n // n_chunks):
            for j in range(width):
                v = arr[i, j]
                if v < lo:
                    lo = v
                if v > hi:
                    hi = v
        los[c] = lo
        his[c] = hi
    return los.min(), his.max()


def min_max(arr: np.ndarray, width: int) -> tuple[int, int]:
    """Smallest and largest code in ``arr[:, :width]`` (one pass; ``arr`` has >= 1 row)."""
    if arr.shape[0] * width < PARALLEL_MIN_WORK:
        part = arr[:, :width]
        return int(part.min()), int(part.max())
    lo, hi = _min_max_parallel(arr, width)
    return int(lo), int(hi)


PARALLEL_MIN_WORK = 200_000  # row-positions below which waking the thread pool costs more than it saves


def similarity_kernel(a, len_a, b, len_b, kind, p, tail, *, full_scan=False):
    """Value per row of ``a``/``b`` (``int32``/``int64`` codes) and error codes.

    Marker arrays start at ``2 * depth`` entries and grow to the largest code met (no pass over
    the inputs is needed to size them); a negative code, or one ``>= MAX_CODE``, is an error.

    Small inputs run serially; both paths evaluate each row with the same compiled ``_pair``, so
    the values are bit-identical whichever path runs.

    Early exit (RBO sums, unless ``full_scan``): every term still to come after depth ``d`` is at
    most ``p^d`` (``w_j X_j <= p^j``), they sum to at most ``p^d / (1-p)``, and the final terms
    (extrapolation, bound tails) are at most ``2 p^d``. Once ``p^d * 8 * 2^53 / (1-p)^2 < acc``
    each of them is below half an ulp of ``acc`` and of ``(1-p) acc``, so under round-to-nearest
    none of them can change the float64 result: the value is bit-identical to the full scan.
    (For ``p = 0.9`` and a typical RBO this happens near depth 400.) Rows whose prefixes are
    identical so far never stop early, so ``"ext"``/``"max"`` can return exactly 1.0 when the
    shorter list is a prefix of the longer (the float sum would fall an ulp short). Duplicates
    are only detected in the scanned prefix; ``full_scan=True`` checks every position.
    """
    a, b = kernel_codes(a), kernel_codes(b)
    n_steps = max(len_a, len_b)
    powers, w = weights(p, len_a + len_b, kind == AO)
    rbo_sum = kind in (EXT, MIN, MAX, TRUNC)
    stop = np.inf if full_scan or not rbo_sum else 8.0 * 2.0**53 / (1.0 - p) ** 2
    size = max(64, 2 * n_steps)
    if a.shape[0] * n_steps < PARALLEL_MIN_WORK:
        return _similarity_serial(a, len_a, b, len_b, kind, p, w, powers, tail, stop, size)
    n_chunks = min(a.shape[0], 4 * numba.get_num_threads())
    return _similarity_parallel(a, len_a, b, len_b, kind, p, w, powers, tail, stop, size, n_chunks)


def kernel_codes(arr: np.ndarray) -> np.ndarray:
    """Item codes as a kernel takes them: ``int32`` (a copy of ``int64`` codes that fit, the
    rank lists of :class:`~recaudit.data.RankLists` as they are), read-only (:func:`read_only`).
    Numba compiles a kernel once per argument type: a user's ``np.array`` of codes (``int64``)
    beside a model's rank lists (``int32``) compiled every kernel twice, seconds each. Codes
    outside ``int32`` stay ``int64``, so the kernel still sees, and reports, the code as given."""
    i32 = np.iinfo(np.int32)
    if arr.dtype == np.int64 and (not arr.size or i32.min <= arr.min() and arr.max() <= i32.max):
        arr = arr.astype(np.int32)
    return read_only(arr)


def read_only(arr: np.ndarray) -> np.ndarray:
    """A read-only view of ``arr`` (no copy). Numba compiles a kernel once per argument type,
    and writability is part of the type: rank lists read from a store are read-only, those
    a model returns are not, so a kernel given both was compiled twice (seconds each, in
    every fresh checkout); the kernels only read their inputs."""
    if not arr.flags.writeable:
        return arr
    view = arr.view()
    view.flags.writeable = False
    return view


def log_tail(p: float, depth: int) -> float:
    """``sum_{d > depth} p^d / d``, the tail of ``-ln(1 - p)``, summed directly (no cancellation)."""
    if p ** depth > 1e-3:
        # the subtraction loses nothing of consequence while the tail is not small
        head = math.fsum(p**d / d for d in range(1, depth + 1))
        return -math.log1p(-p) - head
    terms: list[float] = []
    d = depth + 1
    term = p**d / d
    while term > 0.0 and (not terms or term > 1e-18 * terms[0]):
        terms.append(term)
        d += 1
        term = p**d / d
    return math.fsum(terms)
