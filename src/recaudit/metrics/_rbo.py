"""Rank-biased overlap (Webber, Moffat & Zobel, ACM TOIS 28(4), 2010) and average overlap.

Notation (Webber et al. 2010): ``S`` and ``L`` are the shorter and the longer ranking, of lengths
``s <= l``; ``X_d = |S[:d] ∩ L[:d]|`` is the overlap at depth ``d`` (a prefix longer than its list
is the whole list); ``A_d = X_d / d`` is the agreement.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Any, Literal

import numpy as np

from recaudit.metrics import _kernels as K
from recaudit.metrics._validate import (
    as_code_matrix,
    check_k,
    check_p,
    check_same_rows,
    encode_rankings,
    raise_row_error,
)

__all__ = ["average_overlap", "average_overlap_batch", "rbo", "rbo_batch"]

Variant = Literal["ext", "min", "max", "trunc"]


def _dup_messages(name_a: str, name_b: str) -> dict[int, str]:
    return {
        K.ERR_DUP_A: f"{name_a} lists an item twice within the evaluated prefix",
        K.ERR_DUP_B: f"{name_b} lists an item twice within the evaluated prefix",
        K.ERR_NEGATIVE: "a negative item code; rank lists hold valid codes only (no -1 padding)",
        K.ERR_TOO_LARGE: f"an item code >= {K.MAX_CODE}; encode items as dense codes 0..n_items-1",
    }


def _similarity(
    a: np.ndarray,
    len_a: int,
    b: np.ndarray,
    len_b: int,
    kind: int,
    p: float,
    names: tuple[str, str] = ("a", "b"),
    *,
    full_scan: bool = False,
) -> np.ndarray:
    """Validated call of the shared kernel on code matrices (no copies)."""
    if kind in (K.EXT, K.MIN, K.MAX) and len_a > len_b:
        a, b, len_a, len_b, names = b, a, len_b, len_a, (names[1], names[0])
    tail = K.log_tail(p, max(len_a, len_b)) if kind == K.MIN else 0.0
    out, err = K.similarity_kernel(a, len_a, b, len_b, kind, p, tail, full_scan=full_scan)
    raise_row_error(err, messages=_dup_messages(*names))
    return out


def _check_variant(variant: Any) -> int:
    if variant not in K.KINDS:
        raise ValueError(f"variant must be one of {sorted(K.KINDS)}, got {variant!r}")
    return K.KINDS[variant]


def _lengths(kind: int, wa: int, wb: int, depth: int | None, what: str) -> tuple[int, int]:
    """Evaluated lengths. Finite sums (trunc, average overlap) need both lists to reach depth."""
    if depth is not None:
        depth = check_k(depth, name="depth")
    if kind in (K.TRUNC, K.AO):
        if depth is None:
            depth = min(wa, wb)
        elif depth > min(wa, wb):
            raise ValueError(
                f"{what} sums to depth {depth} but the rankings have {wa} and {wb} items; the "
                f"overlap below a list's end is unknown. Pass depth <= {min(wa, wb)}, or use "
                "rbo(variant='ext'|'min'|'max'), which handle lists of different lengths"
            )
        return depth, depth
    if depth is None:
        return wa, wb
    return min(wa, depth), min(wb, depth)


def rbo(
    a: Sequence[Hashable],
    b: Sequence[Hashable],
    p: float = 0.9,
    *,
    variant: Variant = "ext",
    depth: int | None = None,
    ties: Literal["w", "a"] | None = None,
) -> float:
    r"""Rank-biased overlap of two rankings (best first).

    Webber, Moffat & Zobel, "A similarity measure for indefinite rankings", ACM TOIS 2010.
    With ``s = |S| <= l = |L|`` and ``X_d`` the prefix overlap (module docstring):

    - ``"ext"`` -- extrapolated RBO, eq. 32 (exact for lists of different lengths)::

        RBO_ext = (1-p)/p * ( sum_{d=1}^{l} X_d/d p^d + sum_{d=s+1}^{l} X_s (d-s)/(s d) p^d )
                  + ((X_l - X_s)/l + X_s/s) p^l

      It is exactly ``1.0`` when one list is a prefix of the other (identical lists included:
      the agreement is 1 at every depth) and ``0.0`` for disjoint ones. (The ``rbo`` PyPI
      package's ``rbo(ext=True)`` stops at the shorter length; its ``rbo_ext`` agrees with this.)
    - ``"min"`` -- the lower bound (eq. 11; for lists of different lengths the shorter one's
      unseen items, like everything past depth ``l``, are assumed never to match)::

        RBO_min = (1-p)/p * ( sum_{d=1}^{l} X_d/d p^d + X_l sum_{d>l} p^d/d )

    - ``"max"`` -- the upper bound ``RBO_min + RBO_res`` (Webber et al.'s residual): each list
      continues with the other's unseen items, then both agree for ever. With
      ``f = l + s - X_l`` (the same bound as Corsi & Urbano 2024 compute)::

        RBO_max = (1-p)/p * ( sum_{d=1}^{s} X_d/d p^d + sum_{d=s+1}^{l} (X_d + d - s)/d p^d
                  + sum_{d=l+1}^{f} (2d - l - s + X_l)/d p^d ) + p^f

    - ``"trunc"`` -- the finite sum that Oh et al. (CIKM 2022, Oh et al. 2022) write as RBO, to
      ``depth`` (default: the shorter length; a larger depth is an error)::

        RBO@depth = (1-p) * sum_{d=1}^{depth} p^{d-1} |A[:d] ∩ B[:d]| / d

      For identical lists it equals ``1 - p^depth``, not 1 (see :func:`frbo`).

    ``min <= ext <= max`` always. ``depth`` cuts both lists to their first ``depth`` items
    before evaluating (for ``"trunc"`` it is the upper limit of the sum).

    Ties (opt-in, ``"ext"``/``"min"``/``"max"`` only): with ``ties="w"`` or ``ties="a"`` an
    element of a ranking that is a ``set``/``frozenset``/``list``/``tuple`` is a group of tied
    items, following Corsi & Urbano, "The Treatment of Ties in Rank-Biased Overlap", SIGIR 2024:
    ``"w"`` treats tied items as occupying the same rank (ties mean equality; a tied ranking
    has RBO 1 with itself), ``"a"`` gives the expected RBO over random tie-breaking (ties mean
    uncertainty; exactly the permutation average when both rankings hold the same number of
    items, while past the shorter list it extrapolates with mean contributions as the paper
    does). Without ties both reduce to the untied formulas above. ``depth`` cannot be combined
    with ties. Ties run in ``O(n l)`` pure numpy (scalar form only).

    Parameters
    ----------
    a, b:
        Rankings: ordered sequences of distinct hashable items (a ``str`` is a sequence of
        characters). Lengths may differ. Empty rankings are an error.
    p:
        Persistence, ``0 < p < 1``.
    """
    kind = _check_variant(variant)
    p = check_p(p)
    if ties is not None:
        from recaudit.metrics._ties import rbo_ties

        if depth is not None:
            raise ValueError("depth cannot be combined with ties; cut the tied rankings yourself")
        if kind == K.TRUNC:
            raise ValueError("ties are supported for variant 'ext', 'min' and 'max' only")
        return rbo_ties(a, b, p, variant=variant, ties=ties)
    ca, cb = encode_rankings(a, b)
    len_a, len_b = _lengths(kind, ca.shape[1], cb.shape[1], depth, "rbo(variant='trunc')")
    return float(_similarity(ca, len_a, cb, len_b, kind, p)[0])


def rbo_batch(
    a: np.ndarray,
    b: np.ndarray,
    p: float = 0.9,
    *,
    variant: Variant = "ext",
    depth: int | None = None,
    full_scan: bool = False,
) -> np.ndarray:
    """:func:`rbo` of every row pair of two code arrays ``[n, depth_a]``, ``[n, depth_b]``.

    Rows are rankings of non-negative integer item codes (``int32``/``int64`` are used without
    copying; a :class:`~recaudit.data.RankLists` is accepted). The widths may differ (then
    ``"ext"``/``"min"``/``"max"`` treat them as lists of different lengths). Returns
    ``float64[n]``, bit-identical to :func:`rbo` on each row pair. ``O(n * depth)`` time at
    most, ``O(threads * max code)`` extra memory.

    A row's scan stops once the remaining depths provably cannot change its float64 value
    (their weights ``p^d`` fall below half an ulp; near depth 400 for ``p = 0.9``), so long
    rankings cost far less than their length; the value is identical to a full scan.
    Duplicates are detected in the scanned prefix; ``full_scan=True`` scans (and checks)
    every position.
    """
    kind = _check_variant(variant)
    p = check_p(p)
    am, bm = as_code_matrix(a, name="a"), as_code_matrix(b, name="b")
    check_same_rows(am, bm)
    len_a, len_b = _lengths(kind, am.shape[1], bm.shape[1], depth, "rbo_batch(variant='trunc')")
    return _similarity(am, len_a, bm, len_b, kind, p, full_scan=full_scan)


def average_overlap(a: Sequence[Hashable], b: Sequence[Hashable], depth: int | None = None) -> float:
    r"""Average overlap at ``depth`` (Fagin, Kumar & Sivakumar 2003; Webber et al. 2010, Sec. 2)::

        AO@k = (1/k) * sum_{d=1}^{k} |A[:d] ∩ B[:d]| / d

    This is what CASPER's released code (Oh et al. 2022) reports as "RBO": the ``rbo`` package
    with its default ``p = 1``. It is *not* RBO with ``p = 0.9``. ``depth`` defaults to the
    shorter length; a larger depth is an error. Webber et al.'s Fig. 5 example:
    ``average_overlap("abcdefg", "zcavwxy") = 0.3122...``.
    """
    ca, cb = encode_rankings(a, b)
    len_a, len_b = _lengths(K.AO, ca.shape[1], cb.shape[1], depth, "average_overlap")
    return float(_similarity(ca, len_a, cb, len_b, K.AO, 1.0)[0])


def average_overlap_batch(a: np.ndarray, b: np.ndarray, depth: int | None = None) -> np.ndarray:
    """:func:`average_overlap` of every row pair of two code arrays; ``float64[n]``."""
    am, bm = as_code_matrix(a, name="a"), as_code_matrix(b, name="b")
    check_same_rows(am, bm)
    len_a, len_b = _lengths(K.AO, am.shape[1], bm.shape[1], depth, "average_overlap_batch")
    return _similarity(am, len_a, bm, len_b, K.AO, 1.0)
