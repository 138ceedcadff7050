"""Input validation and encoding shared by the metric functions.

Scalar forms take rankings as sequences of hashable items; they are encoded to ``int32`` codes
(first appearance order) and evaluated by the same compiled kernels as the batch forms, so a
scalar value and the corresponding batch value are bit-identical.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable, Sequence
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
    seen: set[Hashable] = set()
    for pos, item in enumerate(items):
        try:
            duplicate = item in seen
        except TypeError:
            raise TypeError(f"{name}[{pos}] = {item!r} is not hashable") from None
        if duplicate:
            first = items.index(item)
            raise ValueError(
                f"{name} contains item {item!r} twice (positions {first} and {pos}); a ranking "
                "lists each item once"
            )
        seen.add(item)
    return items


def encode_pair(a: Sequence[Hashable], b: Sequence[Hashable]) -> tuple[np.ndarray, np.ndarray, int]:
    """Encode two validated rankings to ``int32`` codes ``[1, len]`` over their union."""
    codes: dict[Hashable, int] = {}
    for item in a:
        codes.setdefault(item, len(codes))
    for item in b:
        codes.setdefault(item, len(codes))
    ca = np.fromiter((codes[i] for i in a), dtype=np.int32, count=len(a)).reshape(1, -1)
    cb = np.fromiter((codes[i] for i in b), dtype=np.int32, count=len(b)).reshape(1, -1)
    return ca, cb, len(codes)


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
    part = arr[:, :width]
    lo = int(part.min())
    if lo < 0:
        row = int(np.argwhere(part < 0)[0, 0])
        raise ValueError(
            f"{name} row {row} holds a negative item code ({lo}); rank lists hold valid codes "
            "only (no -1 padding)"
        )
    return int(part.max()) + 1


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
