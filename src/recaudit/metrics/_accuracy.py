"""Accuracy of rank lists against ground truth: MRR, HR/Recall, Precision, NDCG at k.

Binary relevance. Per-query values are returned by the batch forms (their mean is the usual
dataset-level metric), so user-group analyses (e.g. Oh et al. 2022's high/mid/low-MRR users)
can use them directly.

For next-item prediction (one target per query) ``recall_at_k == hit_rate_at_k``: the recall
denominator ``|R|`` is 1. Both names are provided because both are reported in the literature.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from typing import Any

import numpy as np
from numba import prange

from recaudit._jit import njit
from recaudit.metrics._kernels import PARALLEL_MIN_WORK, kernel_codes
from recaudit.metrics._validate import as_code_matrix, as_ranking, check_k

__all__ = [
    "hit_rate_at_k",
    "hit_rate_at_k_batch",
    "mrr",
    "mrr_batch",
    "ndcg_at_k",
    "ndcg_at_k_batch",
    "precision_at_k",
    "precision_at_k_batch",
    "recall_at_k",
    "recall_at_k_batch",
    "score_ranks",
    "target_ranks",
]

RR, HIT, RECALL, PRECISION, NDCG = 0, 1, 2, 3, 4


@njit(cache=True, nogil=True)
def _accuracy_rows(items, targets, kind, k, lo, hi, out, first):  # pragma: no cover - numba
    """Metric value and 0-based rank of the first relevant item (-1: none) for rows lo..hi-1.

    ``targets[i]`` holds the relevant codes of row i, padded with negative values. Only the
    first ``k`` positions of each row are scanned.
    """
    depth = items.shape[1]
    m = targets.shape[1]
    kk = min(k, depth)
    found = np.zeros(m, np.int64)  # stamp per relevant item: counted once even if repeated
    for i in range(lo, hi):
        stamp = i + 1
        n_rel = 0
        for t in range(m):
            if targets[i, t] >= 0:
                n_rel += 1
        hits = 0
        dcg = 0.0
        f = -1
        for j in range(kk):
            it = items[i, j]
            for t in range(m):
                if targets[i, t] == it:
                    if found[t] != stamp:
                        found[t] = stamp
                        hits += 1
                        dcg += 1.0 / np.log2(j + 2.0)
                        if f < 0:
                            f = j
                    break
        first[i] = f
        if kind == RR:
            out[i] = 0.0 if f < 0 else 1.0 / (f + 1.0)
        elif kind == HIT:
            out[i] = 1.0 if hits > 0 else 0.0
        elif kind == RECALL:
            out[i] = hits / n_rel
        elif kind == PRECISION:
            out[i] = hits / k
        else:
            idcg = 0.0
            for j in range(min(n_rel, k)):
                idcg += 1.0 / np.log2(j + 2.0)
            out[i] = dcg / idcg


@njit(cache=True, parallel=True)
def _accuracy_parallel(items, targets, kind, k):  # pragma: no cover - numba
    n = items.shape[0]
    out = np.empty(n, np.float64)
    first = np.full(n, -1, np.int64)
    n_chunks = min(n, 64)
    for c in prange(n_chunks):
        _accuracy_rows(items, targets, kind, k, c * n // n_chunks, (c + 1) * n // n_chunks, out, first)
    return out, first


@njit(cache=True)
def _accuracy_serial(items, targets, kind, k):  # pragma: no cover - numba
    n = items.shape[0]
    out = np.empty(n, np.float64)
    first = np.full(n, -1, np.int64)
    _accuracy_rows(items, targets, kind, k, np.int64(0), n, out, first)
    return out, first


def _accuracy_kernel(items, targets, kind, k):
    """Serial for small inputs, parallel otherwise; identical values either way."""
    items = kernel_codes(items)
    if items.shape[0] * min(k, items.shape[1]) < PARALLEL_MIN_WORK:
        return _accuracy_serial(items, targets, kind, k)
    return _accuracy_parallel(items, targets, kind, k)


def _as_targets(targets: Any, n: int) -> np.ndarray:
    """Relevant codes as ``int64 [n, m]`` padded with -1; one or more relevant items per row."""
    t = np.asarray(targets)
    if t.dtype.kind not in "iu":
        raise TypeError(f"targets must hold integer item codes, got dtype {t.dtype}")
    if t.ndim == 1:
        t = t.reshape(-1, 1)
    if t.ndim != 2:
        raise ValueError(f"targets must be 1-D [n] or 2-D [n, m] (padded with -1), got shape {t.shape}")
    if t.shape[0] != n:
        raise ValueError(f"targets has {t.shape[0]} rows but the rank array has {n}")
    t = np.ascontiguousarray(t, dtype=np.int64)
    if n and t.shape[1] == 0:
        raise ValueError("targets has no columns; every query needs a relevant item")
    if n:
        n_rel = (t >= 0).sum(axis=1)
        if (n_rel == 0).any():
            row = int(np.flatnonzero(n_rel == 0)[0])
            raise ValueError(
                f"targets row {row} has no relevant item (-1 means unknown); drop queries "
                "without a known target before evaluating"
            )
        if t.shape[1] > 1:
            srt = np.sort(t, axis=1)
            dup = (srt[:, 1:] == srt[:, :-1]) & (srt[:, 1:] >= 0)
            if dup.any():
                row = int(np.flatnonzero(dup.any(axis=1))[0])
                raise ValueError(f"targets row {row} lists a relevant item twice")
    return t


def _batch(items: Any, targets: Any, kind: int, k: int | None) -> tuple[np.ndarray, np.ndarray]:
    im = as_code_matrix(items, name="items")
    t = _as_targets(targets, im.shape[0])
    kk = im.shape[1] if k is None else check_k(k)
    return _accuracy_kernel(im, t, kind, kk)


def _relevant_items(relevant: Any) -> list[Hashable]:
    """The relevant items: a string (or bytes) or any other non-iterable is one item; every
    other iterable (set, list, tuple, array) is a collection of items."""
    if isinstance(relevant, (str, bytes)) or not isinstance(relevant, Iterable):
        items = [relevant]
    else:
        items = relevant.tolist() if isinstance(relevant, np.ndarray) else list(relevant)
    for item in items:
        if not isinstance(item, Hashable):
            raise TypeError(f"relevant items must be hashable, got {type(item).__name__} "
                            f"{item!r}")
    return list(dict.fromkeys(items))


def _scalar(ranking: Sequence[Hashable], relevant: Any, kind: int, k: int | None) -> float:
    r = as_ranking(ranking, name="ranking")
    rel = _relevant_items(relevant)
    if not rel:
        raise ValueError("relevant is empty; a query needs at least one relevant item")
    codes: dict[Hashable, int] = {item: i for i, item in enumerate(r)}
    for item in rel:
        codes.setdefault(item, len(codes))
    items = np.arange(len(r), dtype=np.int32).reshape(1, -1)
    t = np.asarray([[codes[item] for item in rel]], dtype=np.int64)
    kk = len(r) if k is None else check_k(k)
    return float(_accuracy_kernel(items, t, kind, kk)[0][0])


_RELEVANT_DOC = """``relevant`` is one item (a string or any non-iterable value), or any other
    iterable (set, list, tuple, array) of relevant items; an item that is itself a tuple must be
    given inside a set: ``{("a", 1)}``."""
_BATCH_DOC = """``items``: ``[n, depth]`` item codes (or a ``RankLists``), best first; ``targets``:
    ``[n]`` one relevant code per row, or ``[n, m]`` padded with ``-1``. Returns per-query
    ``float64[n]``, bit-identical to the scalar form. Rows of ``items`` are not checked for
    duplicates (``RankLists`` guarantees distinct items); a relevant item counts once."""


def target_ranks(items: Any, targets: Any) -> np.ndarray:
    """0-based position of each row's target in ``items`` (``int64[n]``); ``-1`` if absent.

    With several relevant items per row (``targets`` ``[n, m]``), the position of the first
    one in the list. Rank ``r`` gives reciprocal rank ``1/(r+1)``; "hit at k" is ``0 <= r < k``.
    """
    im = as_code_matrix(items, name="items")
    t = _as_targets(targets, im.shape[0])
    return _accuracy_kernel(im, t, RR, im.shape[1])[1]


def score_ranks(scores: Any, targets: Any) -> np.ndarray:
    """0-based rank of each row's target under dense ``scores`` ``[n, n_items]`` (``int64[n]``):
    the number of items scored strictly higher, so ties are resolved in the target's favour
    (an optimistic rank; no sort, O(n * n_items)). ``1 / (1 + rank)`` is its reciprocal rank."""
    s = np.asarray(scores)
    t = np.asarray(targets, dtype=np.int64)
    if s.ndim != 2 or t.shape != (s.shape[0],):
        raise ValueError(f"scores must be [n, n_items] and targets [n]; got {s.shape} and "
                         f"{t.shape}")
    if len(t) and (t.min() < 0 or t.max() >= s.shape[1]):
        raise ValueError(f"targets must be item codes in [0, {s.shape[1]})")
    own = s[np.arange(len(t)), t]
    return (s > own[:, None]).sum(axis=1).astype(np.int64)


def mrr(ranking: Sequence[Hashable], relevant: Any, k: int | None = None) -> float:
    r"""Reciprocal rank of one query: ``1 / rank`` of the first relevant item (1-based rank),
    0 if none is in the top ``k`` (``k=None``: whole list). The mean over queries is MRR
    (Voorhees, TREC-8 QA 1999)::

        MRR = (1/|Q|) * sum_q 1 / rank_q
    """
    return _scalar(ranking, relevant, RR, k)


def mrr_batch(items: Any, targets: Any, k: int | None = None) -> np.ndarray:
    """Per-query reciprocal ranks; ``.mean()`` is MRR. See :func:`mrr`."""
    return _batch(items, targets, RR, k)[0]


def hit_rate_at_k(ranking: Sequence[Hashable], relevant: Any, k: int) -> float:
    """HR@k of one query: 1 if any relevant item is in the top ``k``, else 0."""
    return _scalar(ranking, relevant, HIT, check_k(k))


def hit_rate_at_k_batch(items: Any, targets: Any, k: int) -> np.ndarray:
    """Per-query HR@k; see :func:`hit_rate_at_k`."""
    return _batch(items, targets, HIT, check_k(k))[0]


def recall_at_k(ranking: Sequence[Hashable], relevant: Any, k: int) -> float:
    """Recall@k = ``|top-k ∩ R| / |R|``; equals HR@k when ``|R| = 1`` (next-item prediction)."""
    return _scalar(ranking, relevant, RECALL, check_k(k))


def recall_at_k_batch(items: Any, targets: Any, k: int) -> np.ndarray:
    """Per-query Recall@k; see :func:`recall_at_k`."""
    return _batch(items, targets, RECALL, check_k(k))[0]


def precision_at_k(ranking: Sequence[Hashable], relevant: Any, k: int) -> float:
    """Precision@k = ``|top-k ∩ R| / k`` (``k`` even if the list is shorter)."""
    return _scalar(ranking, relevant, PRECISION, check_k(k))


def precision_at_k_batch(items: Any, targets: Any, k: int) -> np.ndarray:
    """Per-query Precision@k; see :func:`precision_at_k`."""
    return _batch(items, targets, PRECISION, check_k(k))[0]


def ndcg_at_k(ranking: Sequence[Hashable], relevant: Any, k: int) -> float:
    r"""NDCG@k with binary relevance (Järvelin & Kekäläinen, ACM TOIS 2002)::

        DCG@k  = sum_{r=1}^{k} rel_r / log2(r + 1),
        NDCG@k = DCG@k / IDCG@k,  IDCG@k = sum_{r=1}^{min(|R|, k)} 1 / log2(r + 1)

    With one target at 1-based rank ``r <= k`` it is ``1 / log2(r + 1)``.
    """
    return _scalar(ranking, relevant, NDCG, check_k(k))


def ndcg_at_k_batch(items: Any, targets: Any, k: int) -> np.ndarray:
    """Per-query NDCG@k; see :func:`ndcg_at_k`."""
    return _batch(items, targets, NDCG, check_k(k))[0]


for _f in (mrr, hit_rate_at_k, recall_at_k, precision_at_k, ndcg_at_k):
    _f.__doc__ = (_f.__doc__ or "") + "\n    " + _RELEVANT_DOC + "\n"
for _g in (mrr_batch, hit_rate_at_k_batch, recall_at_k_batch, precision_at_k_batch, ndcg_at_k_batch):
    _g.__doc__ = (_g.__doc__ or "") + "\n\n    " + _BATCH_DOC + "\n"
del _f, _g
