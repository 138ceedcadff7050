"""The ladder of looks a sequential run reads, and a design's looks on it.

Rung ``k`` (``k >= 1``) is ``3 * 2**((k-1)/2)`` for odd ``k`` and ``4 * 2**((k-2)/2)`` for
even ``k``: 3, 4, 6, 8, 12, 16, 24, 32, 48, ... (a third or a half more replicates each). The
rules of :mod:`recaudit.stats._spending` that spend over the unbounded ladder look at rungs
only; a design with a cap (:func:`looks_for`) looks at the rungs below its cap and at the cap
itself, so that ``--max-seeds 10`` reads all ten.
"""

from __future__ import annotations

import functools

__all__ = ["rung", "rungs_upto", "looks_for"]


def rung(k: int) -> int:
    """The ``k``-th rung of the ladder (``k >= 1``): 3, 4, 6, 8, 12, 16, 24, ..."""
    if k < 1:
        raise ValueError(f"rungs count from 1, got {k}")
    return 3 * 2 ** ((k - 1) // 2) if k % 2 else 4 * 2 ** ((k - 2) // 2)


def rungs_upto(n: int) -> list[int]:
    """Every rung ``<= n``."""
    out, k = [], 1
    while rung(k) <= n:
        out.append(rung(k))
        k += 1
    return out


@functools.lru_cache(maxsize=256)
def looks_for(cap: int) -> tuple[int, ...]:
    """The looks of a design capped at ``cap`` replicates: the rungs below it, then ``cap``
    (``looks_for(32) == (3, 4, 6, 8, 12, 16, 24, 32)``, ``looks_for(10) == (3, 4, 6, 8,
    10)``)."""
    if cap < rung(1):
        raise ValueError(f"a design needs at least {rung(1)} replicates (its first look), "
                         f"got {cap}")
    return tuple(r for r in rungs_upto(cap) if r < cap) + (cap,)
