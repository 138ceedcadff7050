"""Input validation and encoding shared by the metric functions.

Scalar forms take rankings as sequences of hashable items; they are encoded to ``int32`` codes
(first appearance order) and evaluated by the same compiled kernels as the batch forms, so a
scalar value and the corresponding batch value are bit-identical.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np

__all__: list[str] = []


def check_p(p: float, *, name: str = "p") -> float:
    """``0 < p < 1`` as a Python float, else ``ValueError``."""
    try:
        value = float(p)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number in (0, 1), got {p!r}") from None
    if not (0.0 < value < 1.0) or math.isnan(value):
        raise ValueError(
            f"{name} must satisfy 0 < {name} < 1, got {p!r}; use average_overlap() for the "
            "unweighted (p = 1) average overlap"
        )
    return value


def check_k(k: Any, *, name: str = "k") -> int:
    """A positive integer, else ``ValueError``/``TypeError``."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"{name} must be an integer >= 1, got {k!r}")
    if k < 1:
        raise ValueError(f"{name} must be >= 1, got {k}")
    return int(k)


def as_ranking(x: Any, *, name: str) -> list[Hashable]:
    """A ranking (sequence of distinct hashable items, best first) as a list."""
    if isinstance(x, np.ndarray):
        if x.ndim != 1:
            raise ValueError(f"{name} must be a 1-D ranking, got an array of shape {x.shape}")
        x = x.tolist()
    if isinstance(x, (set, frozenset, dict)) or not isinstance(x, Iterable):
        raise TypeError(f"{name} must be an ordered sequence of items (list, tuple, array), got {type(x).__name__}")
    items = list(x)
    if len(items) == 0:
        raise ValueError(f"{name} is empty; a ranking needs at least one item")
    try:
        distinct = len(set(items))
    except TypeError:
        bad = next(i for i, item in enumerate(items) if not _hashable(item))
        raise TypeError(f"{name}[{bad}] = {items[bad]!r} is not hashable") from None
    if distinct != len(items):
        seen: dict[Hashable, int] = {}
        for pos, item in enumerate(items):
            if item in seen:
                raise ValueError(
                    f"{name} contains item {item!r} twice (positions {seen[item]} and {pos}); a "
                    "ranking lists each item once"
                )
            seen[item] = pos
    return items


def _hashable(item: Any) -> bool:
    try:
        hash(item)
    except TypeError:
        return False
    return True


def _int_codes(x: Any) -> np.ndarray | None:
    """``x`` as a 1-D integer array when it is one (or a list of ints), else ``None``."""
    if isinstance(x, np.ndarray):
        return x if x.ndim == 1 and x.dtype.kind in "iu" else None
    if isinstance(x, list) and x and type(x[0]) is int:
        try:
            arr = np.asarray(x)
        except (ValueError, OverflowError):
            return None
        return arr if arr.ndim == 1 and arr.dtype.kind in "iu" else None
    return None


def _check_int_duplicates(codes: np.ndarray, raw: np.ndarray, name: str) -> None:
    counts = np.bincount(codes)
    if counts.size and counts.max() > 1:
        dup = int(np.flatnonzero(counts > 1)[0])
        pos = np.flatnonzero(codes == dup)[:2].tolist()
        raise ValueError(
            f"{name} contains item {raw[pos[0]]!r} twice (positions {pos[0]} and {pos[1]}); a "
            "ranking lists each item once"
        )


def encode_rankings(a: Any, b: Any, *, names: tuple[str, str] = ("a", "b")) -> tuple[np.ndarray, np.ndarray]:
    """Validate two rankings and encode them as ``int32`` code rows ``[1, len]``.

    Items must be hashable and distinct within a ranking; rankings must be non-empty. The values
    of the metrics never depend on the codes (they only index marker arrays), so relabelling
    items changes nothing. Integer arrays/lists take a vectorised path; other items are encoded
    by position (``a[i] -> i``; an item only in ``b``, at position ``j``, gets ``len(a) + j``).
    """
    ia, ib = _int_codes(a), _int_codes(b)
    if ia is not None and ib is not None and ia.size and ib.size:
        both = np.concatenate([ia.astype(np.int64, copy=False), ib.astype(np.int64, copy=False)])
        if both.min() >= 0 and both.max() < 4 * both.size + 1024:
            codes = both  # small non-negative codes are used as they are
        else:
            codes = np.unique(both, return_inverse=True)[1].reshape(-1)
        ca, cb = codes[: ia.size].astype(np.int32), codes[ia.size :].astype(np.int32)
        _check_int_duplicates(ca, ia, names[0])
        _check_int_duplicates(cb, ib, names[1])
        return ca.reshape(1, -1), cb.reshape(1, -1)
    ra, rb = as_ranking(a, name=names[0]), as_ranking(b, name=names[1])
    na, nb = len(ra), len(rb)
    lookup = dict(zip(rb, range(na, na + nb)))
    lookup.update(zip(ra, range(na)))
    ca = np.arange(na, dtype=np.int32).reshape(1, -1)
    cb = np.fromiter(map(lookup.__getitem__, rb), dtype=np.int32, count=nb).reshape(1, -1)
    return ca, cb


def as_code_matrix(x: Any, *, name: str) -> np.ndarray:
    """A 2-D C-contiguous ``int32``/``int64`` array of item codes (no copy when already so).

    A :class:`recaudit.data.RankLists` is accepted for its ``items``.
    """
    from recaudit.data import RankLists

    if isinstance(x, RankLists):
        x = x.items
    arr = np.asarray(x)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be a 2-D array [n, depth] of item codes, got shape {arr.shape}")
    if arr.shape[1] == 0:
        raise ValueError(f"{name} has depth 0; rankings need at least one item")
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must hold integer item codes, got dtype {arr.dtype}")
    if arr.dtype != np.int32 and arr.dtype != np.int64:
        if arr.size and arr.dtype.kind == "u" and int(arr.max()) > np.iinfo(np.int64).max:
            raise ValueError(f"{name} holds codes too large for int64")
        arr = arr.astype(np.int64)
    return np.ascontiguousarray(arr)


def check_codes(arr: np.ndarray, width: int, *, name: str) -> int:
    """Codes in the evaluated prefix ``arr[:, :width]`` are >= 0; returns ``max code + 1``."""
    if arr.shape[0] == 0:
        return 1
    from recaudit.metrics._kernels import MAX_CODE, min_max

    lo, hi = min_max(arr, width)
    if lo < 0:
        row = int(np.argwhere(arr[:, :width] < 0)[0, 0])
        raise ValueError(
            f"{name} row {row} holds a negative item code ({lo}); rank lists hold valid codes "
            "only (no -1 padding)"
        )
    if hi >= MAX_CODE:
        raise ValueError(f"{name} holds item code {hi} >= {MAX_CODE}; encode items as dense codes 0..n_items-1")
    return int(hi) + 1


def check_same_rows(a: np.ndarray, b: np.ndarray, *, names: tuple[str, str] = ("a", "b")) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(
            f"{names[0]} has {a.shape[0]} rows but {names[1]} has {b.shape[0]}; batch forms "
            "compare row i of one array with row i of the other"
        )


def raise_row_error(err: np.ndarray, *, messages: dict[int, str]) -> None:
    """Raise ``ValueError`` for the first row whose kernel error code is non-zero."""
    bad = np.flatnonzero(err)
    if bad.size:
        row = int(bad[0])
        raise ValueError(f"row {row}: {messages[int(err[row])]} ({bad.size} bad row(s) in all)")
