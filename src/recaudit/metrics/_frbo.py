"""Finite rank-biased overlap, FRBO@k (Betello, Siciliano, Mishra & Silvestri, arXiv 2307.13165)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from recaudit.metrics import _kernels as K
from recaudit.metrics._rbo import _similarity
from recaudit.metrics._validate import (
    as_code_matrix,
    check_codes,
    check_k,
    check_p,
    check_same_rows,
    encode_rankings,
)

__all__ = ["frbo", "frbo_batch", "rbo_at_k_bounds"]


def rbo_at_k_bounds(k: int, p: float = 0.9, n_items: int | None = None) -> tuple[float, float]:
    r"""``(min, max)`` of ``RBO@k`` over all pairs of ``k``-item rankings (Betello et al.).

    ``max = 1 - p^k`` (Lemma 2, eq. 6): identical lists. ``min`` (Lemma 1, eq. 5) is 0 unless
    the catalogue is small: with ``N = n_items`` and ``k > floor(N/2)`` two top-k lists must share
    at least ``2d - N`` items at every depth ``d > floor(N/2)``, so::

        min = (1-p) * sum_{d=floor(N/2)+1}^{k} p^{d-1} (2d - N) / d

    The paper's printed closed form sums to ``N`` instead of ``k``; that is a slip (for
    ``k < N`` it charges overlap at depths the lists never reach). We sum to ``k``, which is the
    attained minimum (``A = 1..k`` against ``B = N..N-k+1``). ``n_items=None`` means an unbounded
    catalogue (``min = 0``).
    """
    k = check_k(k)
    p = check_p(p)
    if n_items is not None:
        n_items = check_k(n_items, name="n_items")
        if k > n_items:
            raise ValueError(
                f"k = {k} exceeds n_items = {n_items}: a ranking cannot hold more distinct items "
                "than exist"
            )
    # Both bounds are evaluated with the weights and summation order of the RBO@k kernel on the
    # extremal pair (overlap d at depth d for identical lists, max(0, 2d - N) for the minimum),
    # so FRBO is exactly 1 and 0 on those pairs rather than 1 +- 1 ulp.
    _, w = K.weights(p, k, False)
    acc_hi = 0.0
    acc_lo = 0.0
    for d in range(1, k + 1):
        acc_hi += float(w[d - 1]) * d
        if n_items is not None:
            acc_lo += float(w[d - 1]) * max(0, 2 * d - n_items)
    return (1.0 - p) * acc_lo, (1.0 - p) * acc_hi


def _bounds(k: int, p: float, n_items: int | None) -> tuple[float, float]:
    lo, hi = rbo_at_k_bounds(k, p, n_items)
    if not hi > lo:
        raise ValueError(
            f"FRBO@{k} is undefined for n_items = {n_items}: every pair of rankings has the same "
            "RBO@k (a one-item catalogue)"
        )
    return lo, hi


def _check_lengths(wa: int, wb: int, k: int, what: str) -> None:
    if min(wa, wb) < k:
        raise ValueError(
            f"{what} needs both rankings to hold at least k = {k} items; they hold {wa} and {wb}. "
            f"Pass k <= {min(wa, wb)} (FRBO is never silently re-normalised for short lists)"
        )


def frbo(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    k: int,
    p: float = 0.9,
    n_items: int | None = None,
) -> float:
    r"""Finite RBO, ``FRBO@k`` (Betello et al., arXiv 2307.13165, eq. 4)::

        FRBO@k = (RBO@k - min RBO@k) / (max RBO@k - min RBO@k),
        RBO@k  = (1-p) * sum_{d=1}^{k} p^{d-1} |A[:d] ∩ B[:d]| / d

    with the bounds of :func:`rbo_at_k_bounds` (eqs. 5 and 6). It is 1 for identical top-k
    lists and 0 for the least similar pair possible (disjoint lists when ``n_items`` is ``None``
    or ``k <= n_items // 2``). Without ``n_items`` this is the paper's simplified form
    ``RBO@k / (1 - p^k)``.

    Rule for short lists: both rankings must hold at least ``k`` items, otherwise
    ``ValueError``. (The authors' released code silently drops the normalisation for short
    lists, changing the formula; we never do.) Longer lists are cut to their top ``k``.
    With ``n_items`` given, the rankings' items must number at most ``n_items`` in all.
    """
    k = check_k(k)
    p = check_p(p)
    lo, hi = _bounds(k, p, n_items)
    ca, cb = encode_rankings(a, b)
    _check_lengths(ca.shape[1], cb.shape[1], k, "frbo")
    ca, cb = np.ascontiguousarray(ca[:, :k]), np.ascontiguousarray(cb[:, :k])
    n_union = np.union1d(ca, cb).size
    if n_items is not None and n_union > n_items:
        raise ValueError(f"the top-{k} lists hold {n_union} distinct items but n_items = {n_items}")
    raw = _similarity(ca, k, cb, k, K.TRUNC, p)
    return float(((raw - lo) / (hi - lo))[0])


def frbo_batch(
    a: np.ndarray,
    b: np.ndarray,
    k: int,
    p: float = 0.9,
    n_items: int | None = None,
    full_scan: bool = False,
) -> np.ndarray:
    """:func:`frbo` of every row pair of two code arrays; ``float64[n]``, bit-identical to the
    scalar form. With ``n_items`` given, codes must lie in ``[0, n_items)``. ``full_scan`` as
    in :func:`rbo_batch` (the early exit never changes a value)."""
    k = check_k(k)
    p = check_p(p)
    lo, hi = _bounds(k, p, n_items)
    am, bm = as_code_matrix(a, name="a"), as_code_matrix(b, name="b")
    check_same_rows(am, bm)
    _check_lengths(am.shape[1], bm.shape[1], k, "frbo_batch")
    if n_items is not None:
        n_codes = max(check_codes(am, k, name="a"), check_codes(bm, k, name="b"))
        if n_codes > n_items:
            raise ValueError(f"item code {n_codes - 1} is outside [0, n_items = {n_items})")
    raw = _similarity(am, k, bm, k, K.TRUNC, p, full_scan=full_scan)
    return (raw - lo) / (hi - lo)
