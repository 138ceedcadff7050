"""Top-k set and prefix measures: Jaccard, AOD, TopOut.

Jaccard is used by Oh et al. (CIKM 2022, Oh et al. 2022) for top-10 stability; AOD and TopOut are
Shriver's differential oracles (MS thesis 2018, Shriver 2018, eqs. 4.11-4.13).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

import numpy as np

from recaudit.metrics import _kernels as K
from recaudit.metrics._rbo import _lengths, _similarity
from recaudit.metrics._validate import (
    as_code_matrix,
    check_k,
    check_same_rows,
    encode_rankings,
)

__all__ = ["aod", "aod_batch", "jaccard", "jaccard_batch", "topout", "topout_batch"]


def _prefix(wa: int, wb: int, k: int | None) -> tuple[int, int]:
    if k is None:
        return wa, wb
    k = check_k(k)
    return min(wa, k), min(wb, k)


def jaccard(a: Sequence[Hashable], b: Sequence[Hashable], k: int | None = None) -> float:
    r"""Jaccard similarity of the top-``k`` item sets::

        Jaccard@k = |A_k ∩ B_k| / |A_k ∪ B_k|,   A_k = set(a[:k]), B_k = set(b[:k])

    Oh et al. 2022, Sec. 3; Shriver 2018 eq. 4.12 -- which the thesis
    calls a distance but prints as ``1 - (|∪| - |∩|)/|∪|``, i.e. this similarity; the
    distance is ``1 - jaccard``. ``k=None`` uses the whole lists; a list shorter than ``k``
    contributes all its items. Identical sets give 1, disjoint sets 0.
    """
    ca, cb = encode_rankings(a, b)
    len_a, len_b = _prefix(ca.shape[1], cb.shape[1], k)
    return float(_similarity(ca, len_a, cb, len_b, K.JACCARD, 1.0)[0])


def jaccard_batch(a: np.ndarray, b: np.ndarray, k: int | None = None) -> np.ndarray:
    """:func:`jaccard` of every row pair of two code arrays; ``float64[n]``."""
    am, bm = as_code_matrix(a, name="a"), as_code_matrix(b, name="b")
    check_same_rows(am, bm)
    len_a, len_b = _prefix(am.shape[1], bm.shape[1], k)
    return _similarity(am, len_a, bm, len_b, K.JACCARD, 1.0)


def aod(a: Sequence[Hashable], b: Sequence[Hashable], k: int | None = None) -> float:
    r"""Average overlap distance, Shriver 2018 eq. 4.11::

        AOD@k = 1 - (1/k) * sum_{d=1}^{k} |{i : rank(i) <= d} ∩ {i : rank'(i) <= d}| / d

    i.e. ``1 - average_overlap(a, b, k)``. 0 for identical top-k lists, 1 for disjoint ones.
    Both lists must hold at least ``k`` items (default: the shorter length).
    """
    ca, cb = encode_rankings(a, b)
    len_a, len_b = _lengths(K.AO, ca.shape[1], cb.shape[1], k, "aod")
    return float(1.0 - _similarity(ca, len_a, cb, len_b, K.AO, 1.0)[0])


def aod_batch(a: np.ndarray, b: np.ndarray, k: int | None = None) -> np.ndarray:
    """:func:`aod` of every row pair of two code arrays; ``float64[n]``."""
    am, bm = as_code_matrix(a, name="a"), as_code_matrix(b, name="b")
    check_same_rows(am, bm)
    len_a, len_b = _lengths(K.AO, am.shape[1], bm.shape[1], k, "aod_batch")
    return 1.0 - _similarity(am, len_a, bm, len_b, K.AO, 1.0)


def topout(original: Sequence[Hashable], modified: Sequence[Hashable], k: int | None = None) -> float:
    r"""TopOut, Shriver 2018 eq. 4.13 -- not symmetric::

        TopOut = 0 if r_1 ∈ R'_k else 1

    where ``r_1`` is the top item of the ``original`` ranking and ``R'_k`` the top-``k`` of the
    ``modified`` one (``k=None``: the whole modified list). Returns a float (0.0 or 1.0).
    """
    ca, cb = encode_rankings(original, modified, names=("original", "modified"))
    _, len_b = _prefix(ca.shape[1], cb.shape[1], k)
    return float(_similarity(ca, 1, cb, len_b, K.TOPOUT, 1.0, names=("original", "modified"))[0])


def topout_batch(original: np.ndarray, modified: np.ndarray, k: int | None = None) -> np.ndarray:
    """:func:`topout` of every row pair of two code arrays; ``float64[n]`` of 0.0/1.0."""
    am = as_code_matrix(original, name="original")
    bm = as_code_matrix(modified, name="modified")
    check_same_rows(am, bm, names=("original", "modified"))
    _, len_b = _prefix(am.shape[1], bm.shape[1], k)
    return _similarity(am, 1, bm, len_b, K.TOPOUT, 1.0, names=("original", "modified"))
