"""RBO with tied items: the "w" and "a" treatments of Corsi & Urbano (SIGIR 2024).

M. Corsi and J. Urbano, "The Treatment of Ties in Rank-Biased Overlap", SIGIR 2024.

A tied ranking is a sequence whose elements are items or groups of items (``set``, ``frozenset``,
``list`` or ``tuple``). Flattened, item ``i`` of a group spanning (0-based) positions
``t_i .. b_i`` has a *contribution* ``c_i(d)`` to the prefix at (0-based) depth ``d``:

- ``"w"`` (ties are equality): ``c_i(d) = [d >= t_i]`` -- the whole group enters at once; the
  agreement is ``A_d = 2 X_d / (|S_d| + |L_d|)`` with ``|S_d| = sum_i c_i(d)``;
- ``"a"`` (ties are uncertainty; expected RBO over random tie-breaking):
  ``c_i(d) = min(1, max(0, (d - t_i + 1) / (b_i - t_i + 1)))`` and ``A_d = X_d / (d + 1)``;

with ``X_d = sum_i c^S_i(d) c^L_i(d)``. Beyond the shorter list (length ``s``, depths
``s .. l-1``) the unseen part of ``S`` counts ``d + 1`` items (untied) and adds, to ``X_d``:
nothing (``min``); the contributions of the first ``d - s + 1`` items of ``L`` absent from ``S``
(``max``); ``(d - s + 1) * A_{s-1} * mean{c_j(d) > 0 : j in L \\ S}`` (``ext``). The tail beyond
``l`` is Webber et al.'s for each bound (eqs. 11, 30, 32). Without ties every formula reduces
to the untied RBO of :func:`recaudit.metrics.rbo`.

This is an ``O(n_items * l)`` reference implementation for scalar use (no batch form).
"""

from __future__ import annotations

import math
from collections.abc import Hashable
from typing import Any

import numpy as np

__all__: list[str] = []

_GROUP_TYPES = (set, frozenset, list, tuple)


def _flatten(x: Any, name: str) -> tuple[list[Hashable], np.ndarray, np.ndarray]:
    if isinstance(x, (set, frozenset, dict)):
        raise TypeError(f"{name} must be an ordered sequence of items and tie groups, got a {type(x).__name__}")
    items: list[Hashable] = []
    top: list[int] = []
    bottom: list[int] = []
    for g, element in enumerate(x):
        group = list(element) if isinstance(element, _GROUP_TYPES) else [element]
        if not group:
            raise ValueError(f"{name}[{g}] is an empty tie group")
        start = len(items)
        for item in group:
            items.append(item)
            top.append(start)
            bottom.append(start + len(group) - 1)
    if not items:
        raise ValueError(f"{name} is empty; a ranking needs at least one item")
    seen: set[Hashable] = set()
    for item in items:
        try:
            if item in seen:
                raise ValueError(f"{name} contains item {item!r} twice; a ranking lists each item once")
        except TypeError:
            raise TypeError(f"{name} holds an unhashable item {item!r}") from None
        seen.add(item)
    return items, np.asarray(top, dtype=np.float64), np.asarray(bottom, dtype=np.float64)


def _contrib(t: np.ndarray, b: np.ndarray, d: np.ndarray, ties: str) -> np.ndarray:
    """Contributions ``[len(t), len(d)]`` of items with group span ``t..b`` at depths ``d``."""
    t2, b2, d2 = t[:, None], b[:, None], d[None, :]
    if ties == "w":
        return (d2 >= t2).astype(np.float64)
    return np.clip((d2 - t2 + 1.0) / (b2 - t2 + 1.0), 0.0, 1.0)


def rbo_ties(a: Any, b: Any, p: float, *, variant: str, ties: str) -> float:
    """RBO ``ext``/``min``/``max`` of tied rankings (validated ``p``); see the module docstring."""
    if ties not in ("w", "a"):
        raise ValueError(f"ties must be 'w', 'a' or None, got {ties!r}")
    fa, fb = _flatten(a, "a"), _flatten(b, "b")
    (s_items, s_t, s_b), (l_items, l_t, l_b) = (fa, fb) if len(fa[0]) <= len(fb[0]) else (fb, fa)
    s, l = len(s_items), len(l_items)  # noqa: E741
    s_pos = {item: i for i, item in enumerate(s_items)}
    common = [(s_pos[item], j) for j, item in enumerate(l_items) if item in s_pos]
    ci = np.asarray([c[0] for c in common], dtype=np.intp)
    cj = np.asarray([c[1] for c in common], dtype=np.intp)
    uniq = np.asarray([j for j, item in enumerate(l_items) if item not in s_pos], dtype=np.intp)

    agreement = np.empty(l, dtype=np.float64)
    x_seen = np.empty(l, dtype=np.float64)
    block = max(1, 2_000_000 // max(1, l))
    a_s = 0.0  # agreement at depth s (0-based s - 1), known before section 2 starts
    for d0 in range(0, l, block):
        d = np.arange(d0, min(l, d0 + block), dtype=np.float64)
        cs = _contrib(s_t[ci], s_b[ci], d, ties)
        cl = _contrib(l_t[cj], l_b[cj], d, ties)
        x = (cs * cl).sum(axis=0)
        x_seen[d0 : d0 + d.size] = x
        size_l = _contrib(l_t, l_b, d, ties).sum(axis=0)
        size_s = _contrib(s_t, s_b, d, ties).sum(axis=0)
        in_s1 = d < s
        # section 1: both lists seen
        if ties == "w":
            a1 = 2.0 * x / (size_s + size_l)
        else:
            a1 = x / (d + 1.0)
        # section 2: S exhausted; its unseen part counts d + 1 items
        cu = _contrib(l_t[uniq], l_b[uniq], d, ties)
        if variant == "min":
            extra = np.zeros_like(x)
        elif variant == "max":
            rank_u = np.arange(uniq.size, dtype=np.float64)[:, None]
            extra = np.where(rank_u <= (d - s)[None, :], cu, 0.0).sum(axis=0)
        else:
            if s - 1 >= d0 and s - 1 < d0 + d.size:
                a_s = float(a1[s - 1 - d0])
            n_pos = (cu > 0).sum(axis=0)
            mean_c = np.divide(cu.sum(axis=0), n_pos, out=np.zeros_like(x), where=n_pos > 0)
            extra = (d - s + 1.0) * a_s * mean_c
        if ties == "w":
            a2 = 2.0 * (x + extra) / (d + 1.0 + size_l)
        else:
            a2 = (x + extra) / (d + 1.0)
        agreement[d0 : d0 + d.size] = np.where(in_s1, a1, a2)

    depths = np.arange(1, l + 1, dtype=np.float64)
    head = math.fsum((agreement * p**depths).tolist())
    x_l = float(x_seen[l - 1])
    if variant == "min":
        tail = x_l * (-math.log1p(-p) - math.fsum((p**depths / depths).tolist()))
    elif variant == "max":
        f = int(round(l + s - x_l))
        dd = np.arange(l + 1, f + 1, dtype=np.float64)
        tail = math.fsum(((2 * dd - l - s + x_l) / dd * p**dd).tolist()) + p ** (f + 1) / (1 - p)
    else:
        a_s = float(agreement[s - 1])
        tail = (x_l + (l - s) * a_s) / l * p ** (l + 1) / (1 - p)
    return (1 - p) / p * (head + tail)

